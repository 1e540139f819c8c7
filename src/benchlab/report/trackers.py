"""A run in the formats continuous-benchmarking trackers read: Bencher's Metric Format (BMF)
and github-action-benchmark's custom formats (one file per direction: its
`customBiggerIsBetter` and `customSmallerIsBetter` tools each read one).

A benchmark is named by what its user means to compare, and by nothing else: the recipe and
the cell's series key (analysis/series_key.py, which history and compare match cells by):
the grid point (the named point, the scenario and its parameter, the load tool and its
setting: connections, a rate or the capacity under the SLO, the protocol, keep-alive) and the
stack as the reports label it (its flavour, workers, threads). How long or how often it was
measured (--duration, --trials, --warmup, --budget, the load tool's threads) is not in the
name, so a tracker follows the same series when those change. Each cell gives the figure it
is ranked by (throughput, or capacity under the SLO) and its p99, named as such; an interval,
where the cell has one, goes with it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from benchlab.analysis.series_key import SeriesKey, series_keys
from benchlab.analysis.stats import Estimate
from benchlab.analysis.summary import RunSummary
from benchlab.core import figures as F

NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class TrackedFigure:
    """One figure of one cell, as a tracker takes it."""

    benchmark: str
    figure: F.Figure
    value: float
    low: float | None
    high: float | None


def tracker_name(recipe: str, key: SeriesKey) -> str:
    """`recipe · point · stack`, e.g. `quick · json wrk c=64 · gin w=1`."""
    return f"{recipe} · {key.load_text} · {key.stack_text}" + (f" · {key.twin}" if key.twin else "")


def benchmark_names(summary: RunSummary) -> dict[str, str]:
    """Each cell's benchmark name, by its key within the run."""
    keys = series_keys(summary.results, summary.options)
    return {key: tracker_name(summary.run.recipe_name, found) for key, found in keys.items()}


def _tracked(summary: RunSummary) -> Iterator[TrackedFigure]:
    names = benchmark_names(summary)
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
            entry["range"] = f"± {(m.high - m.low) / 2:.4g}"  # the tables' ±: a half-width
            entry["extra"] = f"interval {m.low:.4g}–{m.high:.4g} {m.figure.unit}"
        entries.append(entry)
    return json.dumps(entries, indent=2) + "\n"


def render_bigger_is_better(summary: RunSummary) -> str:
    return _github_action_benchmark(summary, F.Better.HIGHER)


def render_smaller_is_better(summary: RunSummary) -> str:
    return _github_action_benchmark(summary, F.Better.LOWER)
