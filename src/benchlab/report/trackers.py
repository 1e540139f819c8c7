"""A run in the formats continuous-benchmarking trackers read: Bencher's Metric Format (BMF)
and github-action-benchmark's custom formats (one file per direction: its
`customBiggerIsBetter` and `customSmallerIsBetter` tools each read one).

A benchmark is named as `benchlab history` names a series (`label · key`), so a tracker
follows the same cell from run to run. Each cell gives the figure it is ranked by (throughput,
or capacity under the SLO) and its p99; an interval, where the cell has one, goes with it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from benchlab.analysis.stats import Estimate
from benchlab.analysis.summary import CellSummary, RunSummary
from benchlab.core import figures as F

NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class Measured:
    """One figure of one cell, as a tracker takes it."""

    benchmark: str
    figure: F.Figure
    value: float
    low: float | None
    high: float | None


def _name(cell: CellSummary) -> str:
    return f"{cell.stack_label} · {cell.key}"


def _measured(summary: RunSummary) -> Iterator[Measured]:
    for cell in summary.cells:
        if not cell.measured:
            continue
        for figure in (cell.ranked_by, F.P99):
            # A percentile's interval is over the trials' own (its value: the merged histogram's).
            estimate = cell.estimate(figure) or cell.latency_intervals.get(figure.key)
            value = cell.value(figure)
            if value is None:
                continue
            interval = estimate if isinstance(estimate, Estimate) and estimate.n > 1 else None
            yield Measured(
                _name(cell), figure, value,
                interval.low if interval else None, interval.high if interval else None,
            )  # fmt: skip


# Bencher's built-in Measures: throughput in operations a second, latency in nanoseconds.
_BMF_MEASURE = {F.THROUGHPUT.key: ("throughput", 1.0), F.P99.key: ("latency", NS_PER_MS)}


def render_bmf(summary: RunSummary) -> str:
    """{benchmark: {measure: {value, lower_value, upper_value}}} (https://bencher.dev/docs/
    reference/bencher-metric-format): throughput as Bencher's `throughput` (req/s), p99 as its
    `latency` (ns), any other figure under its own key (capacity_rps, cpu_us_per_request)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for m in _measured(summary):
        measure, scale = _BMF_MEASURE.get(m.figure.key, (m.figure.key, 1.0))
        metric = {"value": m.value * scale}
        if m.low is not None and m.high is not None:
            metric |= {"lower_value": m.low * scale, "upper_value": m.high * scale}
        out.setdefault(m.benchmark, {})[measure] = metric
    return json.dumps(out, indent=2) + "\n"


def _github_action_benchmark(summary: RunSummary, better: F.Better) -> str:
    """[{name, unit, value, range, extra}] (github-action-benchmark's custom tools)."""
    entries = []
    for m in _measured(summary):
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
