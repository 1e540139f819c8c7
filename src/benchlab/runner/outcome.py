"""What a run tells its caller while it goes (the reporter) and when it ends (the outcome)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from benchlab.analysis.ranking import Ranking
from benchlab.load.live import LiveFigure
from benchlab.recipe import Cell, Plan
from benchlab.store import RoundMeasured


class Reporter(Protocol):
    """What a run says as it goes, each in typed values: a terminal's bar or lines, or the
    NDJSON stream (report/stream.py) make of them what they show."""

    def start(self, run_id: str, total_trials: int, plan: Plan) -> None: ...
    def status(self, message: str) -> None: ...
    def verified(self, cell: Cell, negotiated: str) -> None:
        """The cell's answers were checked right, the first time in this run (`negotiated`:
        what a client asking over its protocol got)."""
        ...

    def live(self, cell: Cell, figure: LiveFigure) -> None:
        """A running fixed-rate trial's figures so far (or why it has none until it ends),
        from a thread of the load's."""
        ...

    def trial(
        self,
        position: int,
        cells: int,
        round_index: int,
        cell: Cell,
        measured: RoundMeasured,
        seconds_left: float,
    ) -> None: ...
    def cell_failed(self, cell: Cell, reason: str) -> None: ...
    def ranking(self, ranking: Ranking, next_round: Sequence[str]) -> None:
        """The run's ranking as the runner judged it to choose what to measure next: the
        cells (keys) the next round measures; none: it measures no more."""
        ...

    def extend(self, trials: int) -> None: ...
    def finish(self, status: str, reason: str | None) -> None: ...


@dataclass
class RunOutcome:
    run_id: str
    status: str  # running, complete, partial, interrupted, failed
    reason: str | None = None
