"""Grid points: the load a cell faced, whatever the stack. Cells at one point are ranked
against each other, divided by the baseline's, and their ranks compared across points."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

from benchlab.core.modes import Mode
from benchlab.http.scenarios import SCENARIOS
from benchlab.store import CellRecord


@dataclass(frozen=True)
class GridPoint:
    name: str | None  # the recipe's named point, if any
    scenario: str
    tool: str
    connections: int
    param: str = ""  # the scenario's parameter: "delay=20ms", "sleep=100ms", "cpu=500µs"
    mode: Mode = Mode.CLOSED
    rate: str = ""  # rate cells: "2,000/s" or "60%"
    pool: int | None = None  # only when the recipe sweeps the pool size
    keepalive: bool = True  # False: a new connection for every request
    protocol: str = "h1"

    def parts(self) -> tuple[str, ...]:
        """The point in short words, one per field (empty where it does not apply)."""
        return (
            f"[{self.name}]" if self.name else "",
            self.scenario,
            f"{self.tool} c={self.connections}",
            self.param,
            {Mode.CLOSED: "", Mode.SLO: "capacity"}.get(self.mode, f"rate {self.rate}"),
            f"pool={self.pool}" if self.pool is not None else "",
            "" if self.keepalive else "no keep-alive",
            "" if self.protocol == "h1" else self.protocol,
        )

    def text(self) -> str:
        return " ".join(part for part in self.parts() if part)

    def as_json(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def stack_words(label: str, pool_size: int | None, point: GridPoint) -> str:
    """A stack as the reports label it, with its pool when its point does not say it."""
    pool = pool_size is not None and point.pool is None
    return label + (f" pool={pool_size}" if pool else "")


def cell_words(label: str, pool_size: int | None, point: GridPoint) -> str:
    """A cell in words, its stack once with the point it was loaded at: "gin w=1 · json wrk
    c=64". Every report that names a cell (a run's, history's, compare's) says it so."""
    return f"{stack_words(label, pool_size, point)} · {point.text()}"


def rate_text(record: CellRecord) -> str:
    """A rate cell's load in words: its share of its own closed-loop figure ("60%"), or the
    rate asked for ("2,000/s"); empty for a closed loop."""
    if record.rate_share is not None:
        return f"{record.rate_share:g}%"
    return "" if record.target_rate is None else f"{record.target_rate:,.0f}/s"


def point_of(record: CellRecord, pool_swept: bool) -> GridPoint:
    """The point a cell is ranked at, from what its record says of its load: the runner's
    adaptive rounds and every report read the same; `pool_swept`: the recipe sweeps the pool
    size (then no stack has a pool of its own: the recipe checks)."""
    scenario = record.scenario
    return GridPoint(
        name=record.point,
        scenario=scenario,
        tool=record.tool,
        connections=record.connections,
        param=SCENARIOS[scenario].param_text(record.ms) if scenario in SCENARIOS else "",
        mode=record.mode,
        rate=rate_text(record) if record.mode == Mode.RATE else "",
        pool=record.pool_size if pool_swept else None,
        keepalive=record.keepalive,
        protocol=record.protocol,
    )


def short_labels(points: Sequence[GridPoint]) -> list[str]:
    """Names for a set of points: only the words that differ between them."""
    if not points:
        return []
    parts = [p.parts() for p in points]
    varying = [i for i in range(len(parts[0])) if len({p[i] for p in parts}) > 1]
    if not varying:
        return [points[0].text() for _ in points]
    # A point whose differing words are all empty (the base of a sweep) is named by its
    # scenario, never by nothing.
    return [" ".join(p[i] for i in varying if p[i]) or p[1] for p in parts]
