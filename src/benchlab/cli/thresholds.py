"""`--threshold` on the commands that judge a run (run, report, history, tune): the bounds
read before anything runs (a mistake is one line, exit 2), judged on the run's summary with
the recipe's own [thresholds], and the line a failed one ends the command with."""

from __future__ import annotations

import sys
from collections.abc import Collection
from typing import TYPE_CHECKING

from benchlab.core.modes import Mode
from benchlab.core.thresholds import Threshold, check_measured, parse_thresholds

if TYPE_CHECKING:
    from benchlab.analysis.summary import RunSummary


def given(texts: list[str] | None, modes: Collection[Mode] | None = None) -> tuple[Threshold, ...]:
    """The `--threshold`s given, read (and, with the `modes` of the cells they will judge,
    each checked to be of a figure those cells measure)."""
    found = parse_thresholds(texts or ())
    if modes is not None:
        check_measured(found, modes)
    return found


def judged(summary: RunSummary, thresholds: tuple[Threshold, ...]) -> RunSummary:
    """The summary with the recipe's [thresholds] and these judged; a stored run's cells are
    known only now: a threshold none of them measures is refused."""
    from benchlab.analysis.thresholds import judged as judge_run

    if summary.options.tune is None:
        check_measured(thresholds, {cell.record.mode for cell in summary.cells})
    return judge_run(summary, thresholds)


def say_failed(summary: RunSummary) -> bool:
    """Whether a threshold failed; if one did, a line for each that names it and the cells
    that broke it, on stderr (what a CI log shows last, whatever stdout holds)."""
    from benchlab.report.thresholds import failure_lines

    lines = failure_lines(summary)
    for line in lines:
        print(line, file=sys.stderr)
    return bool(lines)
