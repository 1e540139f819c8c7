"""What a run still has to decide at one grid point: the order of its stacks, pair by adjacent
pair, each pair judged by the confidence sequence of its per-round ratios (sequential.py), so
that a run may stop as soon as every adjacent pair is decided (a separation, or a tie within
`min_effect_pct`) without its decisions growing less honest for having peeked.

A round's figures of two cells are paired: what the machine did that minute moves both, and
cancels in their ratio. Only rounds in which both cells were measured count for a pair.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from benchlab.analysis.sequential import ALPHA, Decision, PairEvidence, decide_pair, t_interval

# Beyond this many more rounds a pair is called out of reach (the report says so) rather than
# given a number no run would spend.
MAX_ROUNDS_AHEAD = 200

K = TypeVar("K", bound=Hashable)

# One cell's figure per round: round index -> figure.
Series = Mapping[int, float]


@dataclass(frozen=True)
class AdjacentPair(Generic[K]):
    """Two neighbours in the current order: `ahead` has the better median figure."""

    ahead: K
    behind: K
    evidence: PairEvidence  # of ahead ÷ behind (for a lower-is-better figure: behind ÷ ahead)
    more_rounds: int | None  # rounds more it is expected to need; None when out of reach

    @property
    def decided(self) -> bool:
        return self.evidence.decision is not Decision.UNDECIDED


def _paired(a: Series, b: Series) -> tuple[list[float], list[float]]:
    rounds = sorted(set(a) & set(b))
    return [a[r] for r in rounds], [b[r] for r in rounds]


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


def adjacent_pairs(
    series: Mapping[K, Series], higher_is_better: bool, min_effect_pct: float
) -> list[AdjacentPair[K]]:
    """The cells in order of their median figure, best first, and each adjacent pair's
    evidence. Cells with no figure yet are left out."""
    measured = {key: s for key, s in series.items() if s}
    order = sorted(
        measured, key=lambda k: statistics.median(measured[k].values()), reverse=higher_is_better
    )
    pairs = []
    for ahead, behind in itertools.pairwise(order):
        better, worse = measured[ahead], measured[behind]
        first, second = _paired(better, worse) if higher_is_better else _paired(worse, better)
        evidence = decide_pair(first, second, min_effect_pct)
        logs = [math.log(a / b) for a, b in zip(first, second, strict=True) if a > 0 and b > 0]
        more = (
            0
            if evidence.decision is not Decision.UNDECIDED
            else rounds_to_decide(logs, min_effect_pct)
        )
        pairs.append(AdjacentPair(ahead, behind, evidence, more))
    return pairs


def still_to_decide(pairs: Sequence[AdjacentPair[K]]) -> set[K]:
    """The cells a next round should measure: both sides of every undecided pair."""
    return {key for pair in pairs if not pair.decided for key in (pair.ahead, pair.behind)}
