"""Median and its distribution-free confidence interval over trials.

The interval is the exact order-statistic (binomial) interval for the median: for n sorted
trials, [x(k), x(n-k+1)] covers the true median with probability 1 - 2·P(Bin(n, ½) < k);
k is the largest that keeps that at 95 % or more. No assumption of normality, honest with
few trials. With fewer than 6 trials no pair reaches 95 %, so the interval is [min, max]
and its real coverage (75 % for 3 trials) is reported instead of pretending.

(scipy.stats.quantile_test gives the same interval, but importing scipy.stats takes about
4 s on a small machine: too much for every `benchlab report`.)
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

TARGET_CONFIDENCE = 0.95
METHOD = "exact distribution-free (order-statistic) interval of the median"


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


def reaches_confidence(confidence: float) -> bool:
    """Whether an interval covers the median with 95 %: 6 trials at least."""
    return confidence >= TARGET_CONFIDENCE


def within_target(half_width_pct: float, target_half_width_pct: float) -> bool:
    """Whether an interval is no wider than the target around its median."""
    return half_width_pct <= target_half_width_pct


def settled(estimate: Estimate | None, target_half_width_pct: float) -> bool:
    """Whether a cell needs no more trials: its interval reaches 95 % and is within the
    target (the Ranking's rule for a cell alone at its point; the `unstable` verdict names
    which half failed)."""
    return (
        estimate is not None
        and reaches_confidence(estimate.confidence)
        and within_target(estimate.half_width_pct, target_half_width_pct)
    )


def order_statistic_coverage(n: int, k: int) -> float:
    """Coverage of [x(k), x(n-k+1)] for the median of n samples (k counts from 1)."""
    below: float = sum(math.comb(n, i) for i in range(k)) / 2**n
    return 1.0 - 2.0 * below


def median_interval(
    values: Sequence[float | None], confidence: float = TARGET_CONFIDENCE
) -> Estimate | None:
    data = sorted(v for v in values if v is not None and math.isfinite(v))
    n = len(data)
    if n == 0:
        return None
    median = statistics.median(data)
    if n == 1:
        return Estimate(median, median, median, 0.0, 1)
    k = 1
    while k + 1 <= (n + 1) // 2 and order_statistic_coverage(n, k + 1) >= confidence:
        k += 1
    return Estimate(median, data[k - 1], data[n - k], order_statistic_coverage(n, k), n)


BOOTSTRAP_RESAMPLES = 4000
BOOTSTRAP_MIN_TRIALS = 6
RATIO_METHOD = (
    "ratio of medians; with 6+ trials a side, a percentile bootstrap (trials resampled in each "
    "cell); with fewer, the range [min B / max A, max B / min A], whose coverage is exact: "
    "1 - 2 / C(nA + nB, nA) (90% for 3 trials a side)"
)


@dataclass(frozen=True)
class Ratio:
    value: float  # median(b) / median(a)
    low: float
    high: float
    confidence: float
    fewest: int = 2  # trials on the side with fewer: with 1, there is no interval at all

    @property
    def has_interval(self) -> bool:
        return self.fewest > 1

    @property
    def significant(self) -> bool:
        """The interval excludes 1: the two differ beyond what their trials' spread allows."""
        return self.has_interval and (self.low > 1.0 or self.high < 1.0)


def ratio_interval(
    numerator: Sequence[float],
    denominator: Sequence[float],
    confidence: float = TARGET_CONFIDENCE,
    seed: int = 20261121,
) -> Ratio | None:
    """median(numerator) / median(denominator) with a bootstrap interval.

    Each cell's trials are resampled on their own (the cells were measured independently);
    the seed is fixed so a report of the same data always shows the same interval.
    """
    top = [v for v in numerator if v is not None and math.isfinite(v)]
    bottom = [v for v in denominator if v is not None and math.isfinite(v) and v > 0]
    if not top or not bottom:
        return None
    value = statistics.median(top) / statistics.median(bottom)
    if min(len(top), len(bottom)) < BOOTSTRAP_MIN_TRIALS:
        # Too few trials for a bootstrap to be honest (it would be too narrow). The ranges
        # miss each other by chance, when nothing changed, with probability 2 / C(nA+nB, nA).
        chance = 2 / math.comb(len(top) + len(bottom), len(bottom))
        return Ratio(
            value,
            min(top) / max(bottom),
            max(top) / min(bottom),
            max(0.0, 1 - chance),
            min(len(top), len(bottom)),
        )
    rng = random.Random(seed)
    ratios = sorted(
        statistics.median(rng.choices(top, k=len(top)))
        / statistics.median(rng.choices(bottom, k=len(bottom)))
        for _ in range(BOOTSTRAP_RESAMPLES)
    )
    tail = (1.0 - confidence) / 2.0
    low = ratios[int(tail * (len(ratios) - 1))]
    high = ratios[int((1.0 - tail) * (len(ratios) - 1))]
    return Ratio(value, low, high, confidence, min(len(top), len(bottom)))


def paired_ratio_interval(
    pairs: Sequence[tuple[float, float]],
    confidence: float = TARGET_CONFIDENCE,
    seed: int = 20261125,
) -> Ratio | None:
    """The median of per-round ratios a / b of two cells measured in the same rounds, with
    a bootstrap interval that resamples whole rounds: what a round shares (the machine's state
    that minute) moves both sides and cancels in each ratio, so it adds nothing to the
    interval. With few rounds, the range of the per-round ratios (a sign-test interval: it
    misses the median ratio with probability 2 / 2^n)."""
    ratios = sorted(a / b for a, b in pairs if a > 0 and b > 0 and math.isfinite(a / b))
    if not ratios:
        return None
    n = len(ratios)
    value = statistics.median(ratios)
    if n < BOOTSTRAP_MIN_TRIALS:
        return Ratio(value, ratios[0], ratios[-1], max(0.0, 1 - 2 / 2**n), n)
    rng = random.Random(seed)
    medians = sorted(
        statistics.median(rng.choices(ratios, k=n)) for _ in range(BOOTSTRAP_RESAMPLES)
    )
    tail = (1.0 - confidence) / 2.0
    low = medians[int(tail * (len(medians) - 1))]
    high = medians[int((1.0 - tail) * (len(medians) - 1))]
    return Ratio(value, low, high, confidence, n)
