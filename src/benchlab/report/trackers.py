"""A run in the formats continuous-benchmarking trackers read: Bencher's Metric Format (BMF)
and github-action-benchmark's custom formats (one file per direction: its
`customBiggerIsBetter` and `customSmallerIsBetter` tools each read one).

A benchmark is named by what its user means to compare, and by nothing else: the recipe, the
grid point (the named point, the scenario and its parameter, the load tool and its setting:
connections, a rate or the capacity under the SLO, the protocol, keep-alive) and the stack as
the reports label it (its flavour, workers, threads). How long or how often it was measured
(--duration, --trials, --warmup, --budget, the load tool's threads) is not in the name, so a
tracker follows the same series when those change. Each cell gives the figure it is ranked by
(throughput, or capacity under the SLO) and its p99, named as such; an interval, where the
cell has one, goes with it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from benchlab.analysis.stats import Estimate
from benchlab.analysis.summary import CellSummary, RunSummary
from benchlab.core import figures as F
from benchlab.core.modes import Mode

NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class TrackedFigure:
    """One figure of one cell, as a tracker takes it."""

    benchmark: str
    figure: F.Figure
    value: float
    low: float | None
    high: float | None


def benchmark_name(summary: RunSummary, cell: CellSummary) -> str:
    """`recipe · point · stack`, e.g. `quick · json wrk c=64 · gin w=1`: stable across the
    options that only change how long or how often a cell is measured."""
    point = cell.result.point
    load = point.text()
    if cell.record.mode is Mode.SLO and summary.options.slo is not None:
        load += f" ({summary.options.slo.describe()})"
    stack = cell.record.stack_label
    if cell.record.pool_size is not None and point.pool is None:
        stack += f" pool={cell.record.pool_size}"
    return f"{summary.run.recipe_name} · {load} · {stack}"


def _names(summary: RunSummary) -> dict[str, str]:
    """Each cell's benchmark name, by its key; two cells a name would not tell apart (two
    load profiles that differ only in their duration) have their duration added."""
    names = {cell.record.key: benchmark_name(summary, cell) for cell in summary.cells}
    counts = Counter(names.values())
    for cell in summary.cells:
        if counts[names[cell.record.key]] > 1:
            names[cell.record.key] += f" · {cell.record.duration_s:g} s"
    return names


def _tracked(summary: RunSummary) -> Iterator[TrackedFigure]:
    names = _names(summary)
    for cell in summary.cells:
        if not cell.result.has_figure:
            continue
        for figure in (cell.result.figure, F.P99):
            # A percentile's interval is over the trials' own (its value: the merged histogram's).
            estimate = cell.estimate(figure) or cell.result.latency_intervals.get(figure.key)
            value = cell.value(figure)
            if value is None:
                continue
            interval = estimate if isinstance(estimate, Estimate) and estimate.n > 1 else None
            yield TrackedFigure(
                names[cell.record.key], figure, value,
                interval.low if interval else None, interval.high if interval else None,
            )  # fmt: skip


# Bencher's Measures: throughput is its built-in one (operations a second); a latency is named
# with its percentile, in nanoseconds as Bencher's built-in `latency` (Bencher makes a Measure
# the first time it sees its name).
_BMF_MEASURE = {F.THROUGHPUT.key: ("throughput", 1.0), F.P99.key: ("latency_p99", NS_PER_MS)}


def render_bmf(summary: RunSummary) -> str:
    """{benchmark: {measure: {value, lower_value, upper_value}}} (https://bencher.dev/docs/
    reference/bencher-metric-format): throughput as Bencher's `throughput` (req/s), p99 as
    `latency_p99` (ns), any other figure under its own key (capacity_rps)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for m in _tracked(summary):
        measure, scale = _BMF_MEASURE.get(m.figure.key, (m.figure.key, 1.0))
        metric = {"value": m.value * scale}
        if m.low is not None and m.high is not None:
            metric |= {"lower_value": m.low * scale, "upper_value": m.high * scale}
        out.setdefault(m.benchmark, {})[measure] = metric
    return json.dumps(out, indent=2) + "\n"


def _github_action_benchmark(summary: RunSummary, better: F.Better) -> str:
    """[{name, unit, value, range, extra}] (github-action-benchmark's custom tools)."""
    entries = []
    for m in _tracked(summary):
        if m.figure.better is not better:
            continue
        entry: dict[str, object] = {
            "name": f"{m.benchmark} ({m.figure.label})",
            "unit": m.figure.unit,
            "value": m.value,
        }
        if m.low is not None and m.high is not None:
            entry["range"] = f"± {max(m.value - m.low, m.high - m.value):.4g}"
            entry["extra"] = f"interval {m.low:.4g}–{m.high:.4g} {m.figure.unit}"
        entries.append(entry)
    return json.dumps(entries, indent=2) + "\n"


def render_bigger_is_better(summary: RunSummary) -> str:
    return _github_action_benchmark(summary, F.Better.HIGHER)


def render_smaller_is_better(summary: RunSummary) -> str:
    return _github_action_benchmark(summary, F.Better.LOWER)
