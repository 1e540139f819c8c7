"""Relative figures: a cell's figure against another cell's of its run, at the same grid
point, each with its interval — its ranked figure ÷ the baseline stack's, its throughput ÷ the
machine's ceiling (nginx-static on the same cores), and round by round ÷ the sentinel's
(their median). Which cells are a point's ceiling is said here too, once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from benchlab.analysis.combine import FigureValue
from benchlab.analysis.grid import GridPoint
from benchlab.analysis.samples import Samples, per_round_ratios
from benchlab.analysis.stats import Ratio, median_interval, ratio_interval
from benchlab.analysis.verdicts import VERDICTS, Verdict
from benchlab.core import figures as F
from benchlab.http.scenarios import SCENARIOS
from benchlab.stacks.base import WEBSOCKET_CEILING

CEILING_STACK = "nginx-static"


class Ceiling(Enum):
    """A cell that stands for its point's ceiling: shown, not ranked."""

    MACHINE = "machine"  # nginx-static: the machine's limit; others' throughput ÷ its
    TOOL = "tool"  # a WebSocket point's Go server: what the tool reaches against it is its limit


def ceiling_of(stack: str, scenario: str, facts: Mapping[str, Any] | None) -> Ceiling | None:
    """Which ceiling a cell is, if any: nginx-static's cells, or at a WebSocket scenario the
    stack whose launch says it is that tool's ceiling (go-nethttp)."""
    if stack == CEILING_STACK:
        return Ceiling.MACHINE
    known = SCENARIOS.get(scenario)
    if known and known.websocket and (facts or {}).get(WEBSOCKET_CEILING):
        return Ceiling.TOOL
    return None


def tool_limited(verdicts: Sequence[Verdict]) -> Verdict | None:
    """The verdict that makes a machine ceiling's figure its load tool's limit, not the
    machine's (then it is no ceiling to divide by); None: its figure is the machine's."""
    return next((v for v in verdicts if VERDICTS[v.name].tool_figure), None)


@dataclass(frozen=True)
class Comparable:
    """A cell as the relative figures see it: its stack, where, its samples of the figure
    divided."""

    stack: str
    point: GridPoint
    samples: Sequence[float]


@dataclass(frozen=True)
class Relative:
    """A cell's figures against its run's other cells (None: there is no such cell at its
    point, or the figure does not apply)."""

    to_baseline: Ratio | None = None  # its ranked figure ÷ the baseline stack's
    to_ceiling: Ratio | None = None  # its throughput ÷ the machine ceiling's (closed loop)
    to_sentinel: Ratio | None = None  # the median of `sentinel_rounds`, with its interval
    sentinel_rounds: Samples | None = None  # its ranked figure ÷ the sentinel's, round by round

    @property
    def figures(self) -> dict[str, FigureValue]:
        """The relative figures of the registry, by key."""
        return {
            F.RELATIVE.key: self.to_baseline,
            F.CEILING.key: self.to_ceiling,
            F.TO_SENTINEL.key: self.to_sentinel,
        }


def reference_cells(cells: Sequence[Comparable], stack: str | None) -> dict[GridPoint, Comparable]:
    """The first cell of `stack` at each point (the reference other cells are divided by)."""
    found: dict[GridPoint, Comparable] = {}
    for cell in cells:
        if stack is not None and cell.stack == stack:
            found.setdefault(cell.point, cell)
    return found


def relative_to(cell: Comparable, references: Mapping[GridPoint, Comparable]) -> Ratio | None:
    reference = references.get(cell.point)
    if reference is None or not reference.samples or not cell.samples:
        return None
    if reference is cell:
        return Ratio(1.0, 1.0, 1.0, 1.0)  # the baseline itself: 1.00 by definition
    return ratio_interval(cell.samples, reference.samples)


def to_sentinel(
    cell: Sequence[float] | None, sentinel: Sequence[float] | None
) -> tuple[Ratio | None, Samples | None]:
    """A cell's figure ÷ the sentinel's at its point, round by round (the per-round ratios
    history judges), and their median with its interval."""
    ratios = per_round_ratios(cell, sentinel)
    spread = median_interval(list(ratios)) if ratios else None
    if spread is None:
        return None, None
    return Ratio(spread.median, spread.low, spread.high, spread.confidence, spread.n), ratios
