"""Where a benchmark's series changed: change points proposed by ruptures' PELT on the runs'
medians, each confirmed (or dropped) by the evidence rule between the trials of the segments
on either side of it.

ruptures (BSD, numpy and scipy only, deterministic) finds where the mean of a series moves
best; it has no significance test of its own, so its penalty is kept low (it proposes) and the
decision is the evidence rule's, the one every compare verdict obeys: enough trials a side,
a ratio interval that excludes 1, an effect over the practical threshold. A run on another
machine (CPU, cores, kernel) starts a new segment: a change across machines is the machine's.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from benchlab.analysis.evidence import Evidence
from benchlab.analysis.stats import Ratio
from benchlab.core.figures import Figure

MIN_SIZE = 2  # the fewest runs a segment between change points may hold


class OnAMachine(Protocol):
    @property
    def machine(self) -> Any: ...  # what tells machines apart; equal on the same machine


@dataclass(frozen=True)
class SeriesPoint:
    """One run of one cell: its trials of the ranked figure and the machine it ran on."""

    run: str
    samples: tuple[float, ...]
    machine: str

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first point after the change
    ratio: Ratio  # after ÷ before, trials of the segments on either side
    direction: str  # faster or slower (better or worse, whichever way the figure is better)


def machine_segments(points: Sequence[OnAMachine]) -> list[range]:
    """Runs of consecutive points on one machine."""
    segments: list[range] = []
    start = 0
    for i in range(1, len(points) + 1):
        if i == len(points) or points[i].machine != points[start].machine:
            segments.append(range(start, i))
            start = i
    return segments


def _proposed(medians: Sequence[float]) -> list[int]:
    """Indices where PELT would start a new segment, on the series scaled by its median (the
    penalty follows the noise: 2 σ² log n, σ from the median absolute first difference)."""
    import numpy as np
    import ruptures

    if len(medians) < 2 * MIN_SIZE:
        return []
    centre = statistics.median(medians)
    scaled = np.array([m / centre for m in medians], dtype=float)
    steps = np.abs(np.diff(scaled))
    sigma = max(float(np.median(steps)) / math.sqrt(2) * 1.4826, 1e-3)
    penalty = 2 * sigma**2 * math.log(len(scaled))
    ends = ruptures.Pelt(model="l2", min_size=MIN_SIZE, jump=1).fit(scaled).predict(pen=penalty)
    return [end for end in ends if end < len(scaled)]


def change_points(
    points: Sequence[SeriesPoint], figure: Figure, evidence: Evidence
) -> list[ChangePoint]:
    """The confirmed change points of a series, machine segment by machine segment."""
    found = []
    for segment in machine_segments(points):
        part = [points[i] for i in segment]
        breaks = _proposed([p.median for p in part])
        bounds = [0, *breaks, len(part)]
        for before_start, at, after_end in zip(bounds, bounds[1:], bounds[2:], strict=False):
            before = [v for p in part[before_start:at] for v in p.samples]
            after = [v for p in part[at:after_end] for v in p.samples]
            judged = evidence.judge(after, before, figure)
            if judged.decided and judged.ratio is not None:
                direction = "faster" if judged.verdict == "a" else "slower"
                found.append(ChangePoint(segment.start + at, judged.ratio, direction))
    return found
