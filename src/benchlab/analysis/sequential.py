"""Decisions a run may stop on: an anytime-valid confidence sequence for the log-ratio of
two cells, paired round by round.

A run that stops as soon as an interval excludes 1 peeks at every round: with a fixed-n 95 %
interval, a pair with no difference is declared different in about 28 % of runs that peek
at every round from 3 to 40 (docs/research/2026-11-24-stopping-and-change-points.md). A
confidence sequence holds its coverage at every n at once, so a decision taken at whichever
round the data allow is false at most `alpha` of the time.

The sequence is the closed-form t-confidence sequence: a Gaussian mixture over the
standardised effect (prior variance `g`) and a scale-invariant prior on the unknown
variance. Its likelihood ratio for mean m,
    Λ_n(m) = (1 + n g)^(-1/2) · ((1 + r) / (1 + r / (1 + n g)))^(n / 2),  r = n (x̄ − m)² / SS,
is a test martingale under mean m (Lai 1976, Ann. Statist. 4:265; Wang & Ramdas 2023,
arXiv:2310.03722; Lindon et al. 2022, arXiv:2210.08589), so by Ville's inequality
{m : Λ_n(m) < 1/alpha} covers the true mean at every n with probability 1 − alpha. The
running intersection over n is still a confidence sequence.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

ALPHA = 0.05
# Beyond this many more rounds a pair is called out of reach (the report says so) rather than
# given a number no run would spend.
MAX_ROUNDS_AHEAD = 200
# The prior's variance of the standardised effect (effect ÷ a round's noise). Effects
# between web stacks are large in these units (2× apart under ~10 % noise a round: about 7),
# and a run under --budget has few rounds: g = 8 lets an effect of 3.3 noise-sds be decided
# at 4 rounds and 2.4 at 5 (g = 1 needs 5 rounds for anything, and 3.8 sds there), for an
# interval 3-7 % wider after 10 rounds or more. Any g keeps the sequence valid.
PRIOR_G = 8.0


def t_interval(
    n: int, mean: float, ss: float, alpha: float = ALPHA, g: float = PRIOR_G
) -> tuple[float, float]:
    """The sequence's interval at n observations of mean `mean` and sum of squared
    deviations `ss`; unbounded while nothing can be excluded yet."""
    if n < 2:
        return -math.inf, math.inf
    c = 1.0 + n * g
    log_k = (2.0 / n) * (0.5 * math.log(c) - math.log(alpha))
    if log_k >= math.log(c):  # the largest Λ_n, c^((n-1)/2), is still under 1/alpha
        return -math.inf, math.inf
    if ss <= 0.0:  # every observation equal: Λ_n is unbounded for any other mean
        return mean, mean
    k = math.exp(log_k)
    half = math.sqrt((k - 1.0) / (1.0 - k / c) * ss / n)
    return mean - half, mean + half


def first_decisive_round(alpha: float = ALPHA, g: float = PRIOR_G) -> int:
    """The first number of rounds at which the sequence can exclude anything."""
    return next(n for n in range(2, 100) if math.isfinite(t_interval(n, 0.0, 1.0, alpha, g)[0]))


# A run that stops on its data needs no more base rounds than this before its adaptive ones
# (3 at ALPHA 0.05 and g = 8: then only an effect of 10 noise-sds is decided).
FIRST_DECISIVE_ROUND = first_decisive_round()


def confidence_sequence(
    values: Sequence[float], alpha: float = ALPHA, g: float = PRIOR_G
) -> tuple[float, float]:
    """The running intersection of the intervals after each of `values`, in their order."""
    low, high = -math.inf, math.inf
    mean, ss = 0.0, 0.0
    for n, x in enumerate(values, start=1):
        delta = x - mean
        mean += delta / n
        ss += delta * (x - mean)
        lo, hi = t_interval(n, mean, ss, alpha, g)
        low, high = max(low, lo), min(high, hi)
    return low, high


class Decision(Enum):
    FIRST_HIGHER = "first higher"
    SECOND_HIGHER = "second higher"
    TIE = "tie"  # the whole sequence lies within ± the practical threshold
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class PairEvidence:
    """What the rounds so far say of first ÷ second."""

    ratio: float  # exp of the mean log-ratio
    low: float  # the sequence's bounds, as ratios (0 and inf while unbounded)
    high: float
    rounds: int
    decision: Decision


def decide_pair(
    first: Sequence[float], second: Sequence[float], min_effect_pct: float, alpha: float = ALPHA
) -> PairEvidence:
    """Decide first vs second from paired rounds (round i of one with round i of the other:
    what a round shares, the machine's state at that minute, cancels in their ratio)."""
    pairs = [(a, b) for a, b in zip(first, second, strict=False) if a > 0 and b > 0]
    logs = [math.log(a / b) for a, b in pairs]
    low, high = confidence_sequence(logs, alpha)
    threshold = math.log1p(min_effect_pct / 100.0)
    if low > 0:
        decision = Decision.FIRST_HIGHER
    elif high < 0:
        decision = Decision.SECOND_HIGHER
    elif -threshold < low and high < threshold:
        decision = Decision.TIE
    else:
        decision = Decision.UNDECIDED
    mean = sum(logs) / len(logs) if logs else 0.0
    return PairEvidence(
        ratio=math.exp(mean),
        low=0.0 if low == -math.inf else math.exp(low),
        high=math.inf if high == math.inf else math.exp(high),
        rounds=len(logs),
        decision=decision,
    )


def rounds_to_decide(
    logs: Sequence[float], min_effect_pct: float, alpha: float = ALPHA
) -> int | None:
    """How many more paired rounds a pair is expected to need if its log-ratios go on as they
    have (their mean and spread so far): the first n at which the sequence's interval
    would exclude 0 or lie inside ± the threshold. 0 when it is decided already; None when
    not within MAX_ROUNDS_AHEAD or with too few rounds to tell."""
    n = len(logs)
    if n < 2:
        return None
    mean, sd = statistics.fmean(logs), statistics.stdev(logs)
    threshold = math.log1p(min_effect_pct / 100.0)
    for more in range(MAX_ROUNDS_AHEAD + 1):
        total = n + more
        low, high = t_interval(total, mean, sd * sd * (total - 1), alpha)
        if low > 0 or high < 0 or (-threshold < low and high < threshold):
            return more
    return None
