"""Relative figures: throughput against a baseline stack and against the machine's ceiling
(nginx-static on the same cores), each with its bootstrap interval; requests per CPU-second."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchlab.analysis.stats import Ratio, ratio_interval

CEILING_STACK = "nginx-static"


@dataclass(frozen=True)
class Comparable:
    """A cell as the relative figures see it."""

    stack: str
    point: tuple  # its grid point: the load it faced (and the pool size when swept)
    throughputs: Sequence[float]


def reference_cells(cells: Sequence[Comparable], stack: str | None) -> dict[tuple, Comparable]:
    """The first cell of `stack` at each point (the reference other cells are divided by)."""
    found: dict[tuple, Comparable] = {}
    for cell in cells:
        if stack is not None and cell.stack == stack:
            found.setdefault(cell.point, cell)
    return found


def relative_to(cell: Comparable, references: dict[tuple, Comparable]) -> Ratio | None:
    reference = references.get(cell.point)
    if reference is None or not reference.throughputs or not cell.throughputs:
        return None
    if reference is cell:
        return Ratio(1.0, 1.0, 1.0, 1.0)  # the baseline itself: 1.00 by definition
    return ratio_interval(cell.throughputs, reference.throughputs)


def rps_per_cpu_second(throughput_rps: float | None, server_cpu_pct: float | None) -> float | None:
    """Requests served per second of server CPU: efficiency, whatever the core count."""
    if throughput_rps is None or not server_cpu_pct:
        return None
    return throughput_rps / (server_cpu_pct / 100)
