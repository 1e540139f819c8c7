"""Median and its distribution-free confidence interval over trials.

The interval is the exact order-statistic (binomial) interval for the median, from
scipy.stats.quantile_test: no assumption of normality, honest with few trials. With fewer
than 6 trials no pair of order statistics reaches 95 %, so the interval is [min, max] and
its real coverage (1 - 2 * 0.5**n: 75 % for 3 trials) is reported instead of pretending.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

TARGET_CONFIDENCE = 0.95
METHOD = "median with exact distribution-free (order-statistic) interval"


@dataclass(frozen=True)
class Estimate:
    median: float
    low: float
    high: float
    confidence: float  # the coverage the interval really has
    n: int

    @property
    def half_width_pct(self) -> float:
        if self.median == 0:
            return math.inf
        return 100.0 * (self.high - self.low) / 2.0 / abs(self.median)


def median_interval(
    values: Sequence[float], confidence: float = TARGET_CONFIDENCE
) -> Estimate | None:
    data = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    n = len(data)
    if n == 0:
        return None
    median = float(np.median(data))
    if n == 1:
        return Estimate(median, median, median, 0.0, 1)
    ci = stats.quantile_test(data, q=median, p=0.5).confidence_interval(confidence)
    if math.isnan(ci.low) or math.isnan(ci.high):
        return Estimate(median, float(data.min()), float(data.max()), min_max_coverage(n), n)
    return Estimate(median, float(ci.low), float(ci.high), confidence, n)


def min_max_coverage(n: int) -> float:
    """Probability that [min, max] of n samples covers the true median."""
    return 1.0 - 2.0 * 0.5**n
