"""How a server's resident memory moved during a trial: its RSS samples cut into five equal
stretches of time, each stretch's median, and a line through those five medians (OLS) with a
95 % interval of its slope. Medians of stretches, not every sample, because samples 0.2 s apart
are not independent (memory moves in steps): the interval of a regression on them would be
far too narrow."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

STRETCHES = 5
MB = 2**20


@dataclass(frozen=True)
class MemoryTrend:
    growth_mb: float  # the last stretch's median less the first's
    slope_mb_min: float
    slope_low_mb_min: float  # the low end of the slope's 95 % interval (what `leaks` reads)


def memory_trend(samples: Sequence[tuple[float, int]]) -> MemoryTrend | None:
    """From (seconds since the trial began, RSS bytes) samples; None when there are too few to
    fill every stretch (a trial shorter than about two seconds)."""
    if len(samples) < 2 * STRETCHES:
        return None
    first, last = samples[0][0], samples[-1][0]
    width = (last - first) / STRETCHES
    if width <= 0:
        return None
    stretches: list[list[float]] = [[] for _ in range(STRETCHES)]
    for at, rss in samples:
        stretches[min(int((at - first) / width), STRETCHES - 1)].append(rss / MB)
    if any(not s for s in stretches):
        return None
    xs = [(first + (i + 0.5) * width) / 60 for i in range(STRETCHES)]
    ys = [statistics.median(s) for s in stretches]
    slope, intercept = statistics.linear_regression(xs, ys)
    residual = sum((y - (intercept + slope * x)) ** 2 for x, y in zip(xs, ys, strict=True))
    spread = sum((x - statistics.fmean(xs)) ** 2 for x in xs)
    from scipy.special import stdtrit  # imported here: only trials with RSS samples need it

    half = float(stdtrit(STRETCHES - 2, 0.975)) * math.sqrt(residual / (STRETCHES - 2) / spread)
    return MemoryTrend(ys[-1] - ys[0], slope, slope - half)
