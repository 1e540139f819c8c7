"""What a run tells its caller while it goes (the reporter) and when it ends (the outcome)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from benchlab.recipe import Cell, Plan


class Reporter(Protocol):
    def start(self, run_id: str, total_trials: int, plan: Plan) -> None: ...
    def status(self, message: str) -> None: ...
    def trial(
        self,
        position: int,
        cells: int,
        round_index: int,
        cell: Cell,
        figure: str,
        seconds_left: float,
    ) -> None: ...
    def cell_failed(self, cell: Cell, reason: str) -> None: ...
    def extend(self, trials: int) -> None: ...
    def finish(self) -> None: ...


@dataclass
class RunOutcome:
    run_id: str
    status: str  # running, complete, partial, interrupted, failed
    reason: str | None = None
