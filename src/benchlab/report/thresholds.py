"""Thresholds in words (analysis/thresholds.py judges them): a line per threshold with its
outcome over the cells, a line per cell that broke it or left it undecided (the cells that
kept it are counted), and the one line a command ends with when one failed."""

from __future__ import annotations

from benchlab.analysis.summary import CellSummary, RunSummary
from benchlab.analysis.thresholds import Judged, Outcome, ThresholdResult
from benchlab.report.wording import cell_name


def headline(result: ThresholdResult, tune: bool = False) -> str:
    """p99<200 ms: failed in 2 of 12 cells (1 undecided)."""
    total = len(result.judged)
    count = {o: len(result.with_outcome(o)) for o in Outcome}
    text = result.threshold.text
    if result.outcome is Outcome.NOT_MEASURED:
        if tune and not result.judged:
            return f"{text}: not judged: no replay of the answer ran (the budget ended first)"
        return f"{text}: not judged: no cell measured {result.threshold.figure.label}"
    undecided = count[Outcome.UNDECIDED]
    if result.outcome is Outcome.FAILED:
        also = f" ({undecided} undecided)" if undecided else ""
        return f"{text}: FAILED in {count[Outcome.FAILED]} of {total} cells{also}"
    if result.outcome is Outcome.UNDECIDED:
        return (
            f"{text}: undecided in {undecided} of {total} cells (their intervals straddle it), "
            f"kept by {count[Outcome.KEPT]}"
        )
    unmeasured = count[Outcome.NOT_MEASURED]
    also = f" ({unmeasured} not measured)" if unmeasured else ""
    return f"{text}: kept by {'the' if total == 1 else f'all {total}'} cells measured{also}"


def _cell_line(summary: RunSummary, judged: Judged) -> str:
    return f"{cell_name(summary.cell(judged.cell))}: {judged.sentence}"


def threshold_lines(summary: RunSummary) -> list[str]:
    """Each threshold's headline, then the cells that failed it or left it undecided."""
    lines = []
    for result in summary.thresholds:
        lines.append(headline(result, summary.options.tune is not None))
        shown = [j for j in result.judged if j.outcome is not Outcome.KEPT]
        lines += [f"  {_cell_line(summary, judged)}" for judged in shown]
    return lines


def cell_outcomes(summary: RunSummary, cell: CellSummary) -> str:
    """One cell's outcome of each threshold: `p99<200 ms failed · errors<0.1% kept`."""
    found = [
        f"{result.threshold.text} {judged.outcome.value}"
        for result in summary.thresholds
        for judged in result.judged
        if judged.cell == cell.record.key
    ]
    return " · ".join(found)


def failure_lines(summary: RunSummary) -> list[str]:
    """What a command whose thresholds failed says last (on stderr): a line per failed
    threshold, naming the cells that broke it."""
    lines = []
    for result in summary.thresholds:
        broke = [cell_name(summary.cell(j.cell)) for j in result.with_outcome(Outcome.FAILED)]
        if broke:
            cells = f"{len(broke)} cell{'s' if len(broke) > 1 else ''}"
            lines.append(f"FAIL: threshold {result.threshold.text} broken by {cells}: "
                         + "; ".join(broke))  # fmt: skip
    return lines
