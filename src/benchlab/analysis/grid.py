"""Grid points: the load a cell faced, whatever the stack. Cells at one point are ranked
against each other, divided by the baseline's, and their ranks compared across points."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

from benchlab.core.modes import Mode
from benchlab.http.scenarios import SCENARIOS
from benchlab.recipe import Cell


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


def grid_point(
    *,
    name: str | None,
    scenario: str,
    tool: str,
    connections: int,
    ms: int | None,
    mode: Mode,
    rate_text: str,
    pool: int | None,
    keepalive: bool,
    protocol: str,
) -> GridPoint:
    """The point a cell is ranked at, from what the cell says of its load (a planned cell
    and a stored one alike); `pool` only when the recipe sweeps the pool size (then no stack
    has a pool of its own: the recipe checks)."""
    return GridPoint(
        name=name,
        scenario=scenario,
        tool=tool,
        connections=connections,
        param=SCENARIOS[scenario].param_text(ms) if scenario in SCENARIOS else "",
        mode=mode,
        rate=rate_text if mode == Mode.RATE else "",
        pool=pool,
        keepalive=keepalive,
        protocol=protocol,
    )


def cell_point(cell: Cell, pool_swept: bool) -> GridPoint:
    """The grid point of a planned cell: the runner's adaptive rounds decide the same
    pairs the report ranks."""
    return grid_point(
        name=cell.point, scenario=cell.scenario, tool=cell.tool, connections=cell.connections,
        ms=cell.ms, mode=cell.mode, rate_text=cell.rate_text,
        pool=cell.pool_size if pool_swept else None, keepalive=cell.keepalive,
        protocol=cell.protocol,
    )  # fmt: skip


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
