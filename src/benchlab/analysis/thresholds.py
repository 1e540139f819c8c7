"""Thresholds judged on a run's cells (core/thresholds.py declares them): each cell's figure
with its interval over the trials against the bound. A threshold is failed where the whole
interval is beyond its bound, kept where the whole interval is within it, and undecided
where the interval straddles the bound: its trials allow either (more rounds narrow it). A
figure with no interval (a peak, a sum, a single trial) is judged by its value and says so.

A run's cells are judged; a tune's answer is: the replay that proved the rate to run at,
its p99 with the interval of the p99s of its ~2-s windows."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from benchlab.analysis.recommendation import recommend
from benchlab.analysis.stats import median_interval
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.core.thresholds import Threshold

if TYPE_CHECKING:
    from benchlab.analysis.summary import CellSummary, RunSummary


class Outcome(Enum):
    KEPT = "kept"
    FAILED = "failed"
    UNDECIDED = "undecided"
    NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class Spread:
    """A cell's figure as a threshold reads it: the value every table shows, and the
    interval around it (None: it has none)."""

    value: float
    low: float | None = None
    high: float | None = None
    n: int = 1
    # What the interval is over, where it is not the trials: "its 30 windows' p99".
    of: str = ""


@dataclass(frozen=True)
class Judged:
    """One threshold on one cell."""

    cell: str  # the cell's key
    outcome: Outcome
    sentence: str  # what the figure is against the bound, in words
    spread: Spread | None

    def to_json(self) -> dict[str, Any]:
        spread = self.spread
        return {
            "cell": self.cell, "outcome": self.outcome.value,
            "value": spread.value if spread else None,
            "low": spread.low if spread else None, "high": spread.high if spread else None,
            "n": spread.n if spread else 0, "sentence": self.sentence,
        }  # fmt: skip


@dataclass(frozen=True)
class ThresholdResult:
    """A threshold and what it found in each cell it applies to."""

    threshold: Threshold
    judged: tuple[Judged, ...]

    def with_outcome(self, outcome: Outcome) -> list[Judged]:
        return [j for j in self.judged if j.outcome is outcome]

    @property
    def failed(self) -> bool:
        return any(j.outcome is Outcome.FAILED for j in self.judged)

    @property
    def outcome(self) -> Outcome:
        """The threshold's own: failed in one cell, failed; else undecided in one, undecided;
        else kept (where it was measured at all)."""
        for outcome in (Outcome.FAILED, Outcome.UNDECIDED, Outcome.KEPT):
            if self.with_outcome(outcome):
                return outcome
        return Outcome.NOT_MEASURED

    def to_json(self) -> dict[str, Any]:
        return {
            **self.threshold.to_json(), "outcome": self.outcome.value,
            "cells": [j.to_json() for j in self.judged],
        }  # fmt: skip


def spread_of(cell: CellSummary, figure: F.Figure) -> Spread | None:
    """The cell's figure and its interval over the trials (`CellSummary.interval`; a ratio's
    own); None where the cell has no such figure."""
    value = cell.value(figure)
    if value is None:
        return None
    estimate, ratio = cell.interval(figure), cell.ratio(figure)
    if estimate is not None and estimate.n > 1:
        return Spread(value, estimate.low, estimate.high, estimate.n)
    if ratio is not None and ratio.has_interval:
        return Spread(value, ratio.low, ratio.high, ratio.fewest)
    return Spread(value)


def judge(threshold: Threshold, spread: Spread | None) -> tuple[Outcome, str]:
    """What `spread` says of `threshold`, and the sentence that says why (of "it": the
    threshold, named where the sentence is shown)."""
    if spread is None:
        return Outcome.NOT_MEASURED, f"no {threshold.figure.label} was measured"
    shown = _text(threshold, spread)
    if spread.low is None or spread.high is None:
        alone = "a single value" if threshold.figure.kind is F.Kind.VALUE else "one trial"
        if threshold.keeps(spread.value):
            return Outcome.KEPT, f"{shown} ({alone}: no interval) keeps it"
        return Outcome.FAILED, f"{shown} ({alone}: no interval) breaks it"
    low_keeps, high_keeps = threshold.keeps(spread.low), threshold.keeps(spread.high)
    if low_keeps and high_keeps:
        return Outcome.KEPT, f"{shown}: the whole interval keeps it"
    if not low_keeps and not high_keeps:
        return Outcome.FAILED, f"{shown}: the whole interval breaks it"
    return Outcome.UNDECIDED, (
        f"{shown}: the interval straddles {threshold.bound:g}{_unit(threshold)}, so undecided "
        "(more rounds would narrow it)"
    )


def _unit(threshold: Threshold) -> str:
    return threshold.unit if threshold.unit in ("", "%") else f" {threshold.unit}"


def _text(threshold: Threshold, spread: Spread) -> str:
    """p99 8.19 ms [5.78–11.2 over 3 trials]"""
    figure = threshold.figure
    value = f"{figure.label} {figure.format(spread.value)}{_unit(threshold)}"
    if spread.low is None or spread.high is None:
        return value
    of = spread.of or f"{spread.n} trials"
    return f"{value} [{figure.format(spread.low)}–{figure.format(spread.high)} over {of}]"


def applies(figure: F.Figure, mode: Mode) -> bool:
    """Whether a cell of `mode` has the figure at all (a capacity: only a search's)."""
    return figure.source is None or figure.source.applies(mode)


def judge_cells(
    thresholds: Sequence[Threshold], cells: Sequence[CellSummary],
    spreads: dict[tuple[str, str], Spread] | None = None,
) -> tuple[ThresholdResult, ...]:  # fmt: skip
    """Each threshold on every cell whose mode has its figure (the sentinel's second launch,
    a copy of its first, left out); `spreads`: a figure's spread by (cell key, figure key)
    where it is not the cell's own (a tune's answer: its windows)."""
    results = []
    for threshold in thresholds:
        judged = []
        for cell in cells:
            if cell.result.is_aa_copy or not applies(threshold.figure, cell.record.mode):
                continue
            spread = (spreads or {}).get((cell.record.key, threshold.figure.key))
            spread = spread or spread_of(cell, threshold.figure)
            if spread is None and cell.result.has_figure:
                continue  # measured, but its scenario or tool gives no such figure
            if spread is None:
                why = (
                    "the cell failed" if cell.result.status == "failed" else "the run stopped first"
                )
                judged.append(
                    Judged(cell.record.key, Outcome.NOT_MEASURED, f"not measured: {why}", None)
                )
                continue
            judged.append(Judged(cell.record.key, *judge(threshold, spread), spread))
        results.append(ThresholdResult(threshold, tuple(judged)))
    return tuple(results)


def judged(summary: RunSummary, given: Sequence[Threshold] = ()) -> RunSummary:
    """`summary` with its thresholds judged: the recipe's, stored with the run, and those
    `given` (`--threshold`), each once. A tune's are judged on its answer."""
    thresholds = tuple(dict.fromkeys((*summary.options.thresholds, *given)))
    if not thresholds:
        return summary
    if summary.options.tune is not None:
        results = _on_the_answer(summary, thresholds)
    else:
        results = judge_cells(thresholds, summary.cells)
    return dataclasses.replace(summary, thresholds=results)


def _on_the_answer(
    summary: RunSummary, thresholds: Sequence[Threshold]
) -> tuple[ThresholdResult, ...]:
    """A tune's thresholds on the replay that proved its answer (or the last it tried); none
    judged where no replay ran (--quick, or the budget ended first)."""
    found, _ = recommend(summary)
    final = found.proof.final if found is not None and found.proof is not None else None
    if final is None or not final.cell:
        return tuple(ThresholdResult(t, ()) for t in thresholds)
    cell = summary.cell(final.cell)
    windows = windows_spread(cell, final.windows_p99_ms)
    spreads = {(cell.record.key, F.P99.key): windows} if windows is not None else {}
    return judge_cells(thresholds, [cell], spreads)


def windows_spread(cell: CellSummary, windows_p99_ms: Sequence[float]) -> Spread | None:
    """A replay's p99 with the interval of the median of its windows' p99s."""
    value = cell.value(F.P99)
    estimate = median_interval(list(windows_p99_ms))
    if value is None or estimate is None or estimate.n < 2:
        return None
    return Spread(value, estimate.low, estimate.high, estimate.n, f"its {estimate.n} windows' p99")
