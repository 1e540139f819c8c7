"""Relative figures: a cell's ranking figure against the baseline stack's at the same grid
point, and its throughput against the machine's ceiling (nginx-static on the same cores),
each with its interval."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchlab.analysis.grid import GridPoint
from benchlab.analysis.stats import Ratio, ratio_interval
from benchlab.analysis.verdicts import VERDICTS
from benchlab.http.scenarios import SCENARIOS
from benchlab.stacks.base import WEBSOCKET_CEILING

CEILING_STACK = "nginx-static"


def is_ceiling_cell(stack: str, scenario: str, facts: Mapping[str, Any] | None) -> bool:
    """Whether a cell stands for its point's ceiling (shown, not ranked): nginx-static's, or
    at a WebSocket scenario the stack whose launch says it is that tool's ceiling
    (go-nethttp: what JMeter reaches against it is JMeter's limit)."""
    if stack == CEILING_STACK:
        return True
    known = SCENARIOS.get(scenario)
    return bool(known and known.websocket and (facts or {}).get(WEBSOCKET_CEILING))


def is_ceiling(stack: str, verdicts: Sequence[str]) -> bool:
    """Whether a cell can stand for the machine's ceiling at its grid point: a ceiling cell
    whose figure is its load tool's limit (not the machine's) does not."""
    return stack == CEILING_STACK and not any(VERDICTS[name].tool_figure for name in verdicts)


@dataclass(frozen=True)
class Comparable:
    """A cell as the relative figures see it."""

    stack: str
    point: GridPoint
    samples: Sequence[float]  # of the figure divided


def reference_cells(cells: Sequence[Comparable], stack: str | None) -> dict[GridPoint, Comparable]:
    """The first cell of `stack` at each point (the reference other cells are divided by)."""
    found: dict[GridPoint, Comparable] = {}
    for cell in cells:
        if stack is not None and cell.stack == stack:
            found.setdefault(cell.point, cell)
    return found


def relative_to(cell: Comparable, references: dict[GridPoint, Comparable]) -> Ratio | None:
    reference = references.get(cell.point)
    if reference is None or not reference.samples or not cell.samples:
        return None
    if reference is cell:
        return Ratio(1.0, 1.0, 1.0, 1.0)  # the baseline itself: 1.00 by definition
    return ratio_interval(cell.samples, reference.samples)
