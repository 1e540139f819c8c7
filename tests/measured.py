"""A cell as the verdicts read it (analysis/verdicts.py's `JudgedCell`; the summary's
`CellFigures` is one), made of the figures a test sets: its own record and result."""

from __future__ import annotations

from dataclasses import dataclass, field

from benchlab.core import figures as F
from benchlab.http.scenarios import rate_unit_of


@dataclass(frozen=True)
class MeasuredCell:
    figures: dict[str, float]
    scenario: str
    connections: int
    ms: int | None = None
    mode: str = "closed"
    tool: str = ""
    errors: dict[str, int] = field(default_factory=lambda: {"total": 0})
    concurrency_limit: int | None = None
    db_pool_limit: int | None = None
    alone_ms: float | None = None
    trials: int = 3
    unbracketed: int = 0
    conformance: dict[str, list[str]] | None = None
    drain: None = None
    slow_clients: None = None
    hold_stop: str | None = None  # a WebSocket hold's: why its steps ended

    @property
    def record(self) -> MeasuredCell:
        return self

    @property
    def result(self) -> MeasuredCell:
        return self

    @property
    def rate_unit(self) -> str:
        return rate_unit_of(self.scenario)

    def value(self, figure: F.Figure) -> float | None:
        return self.figures.get(figure.key)
