"""When one cell may be called better than another: the rule every ranking order, rank
flip and compare verdict obeys.

A difference is declared only when (1) each side has at least MIN_TRIALS trials — with
fewer there is no interval worth the name (the exact range interval of a ratio of 3 trials
a side covers 90 %; of 2 a side, 67 %; of 1, nothing) —, (2) the ratio's interval excludes
1, and (3) the effect is larger than a practical threshold (the recipe's `min_effect_pct`,
by default its `target_half_width_pct`): intervals of a few trials can exclude each other by
luck at 0.4 %, and no reader would call that a win. Everything else is a tie, shown with its
ratio and interval.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from benchlab.analysis.samples import paired
from benchlab.analysis.sequential import ALPHA, Decision, decide_pair, rounds_to_decide
from benchlab.analysis.stats import RATIO_METHOD, Ratio, paired_ratio_interval, ratio_interval
from benchlab.core.figures import Figure

MIN_TRIALS = 3
# Paired, the few-rounds interval is the range of the per-round ratios, which misses their
# median with probability 2 / 2^n: 5 rounds make it 94 %, as 3 trials a side make the
# unpaired range 90 %.
PAIRED_MIN_ROUNDS = 5


def effect_pct(ratio: float) -> float:
    """How large a change a ratio is, in %, whichever way it goes (0.8 and 1.25 both 25 %)."""
    return 100 * (max(ratio, 1 / ratio) - 1)


@dataclass(frozen=True)
class Judgement:
    verdict: str  # "a" (a is better), "b", "tie", "none" (nothing to compare)
    ratio: Ratio | None  # a / b
    why: str  # for a tie: the reason there is no winner
    # A run that stops on its data has not decided this pair yet (it is reported undecided,
    # not tied): more rounds measured together would decide it.
    undecided: bool = False
    more_rounds: int | None = None  # how many more it is expected to need; None: out of reach
    # A tie only because too few trials (or rounds measured together) give no interval yet:
    # nothing was found equal.
    too_few: bool = False

    @property
    def decided(self) -> bool:
        return self.verdict in ("a", "b")


class RatioMethod(StrEnum):
    """How the ratio of two cells of one run gets its interval; declared before the data (from
    the machine's measured noise, and whether the run stops on its data), printed with it."""

    INDEPENDENT = "independent"  # each cell's trials resampled on their own
    PAIRED = "paired"  # per-round ratios: what a round shares cancels (selfcheck --noise)
    SEQUENTIAL = "sequential"  # paired, anytime-valid: the run stopped when it was decided

    @property
    def words(self) -> str:
        return {
            RatioMethod.INDEPENDENT: "ratios resample each cell's trials on their own",
            RatioMethod.PAIRED: "ratios are taken round by round (this machine's rounds move "
            "every stack together: benchlab selfcheck --noise)",
            RatioMethod.SEQUENTIAL: "ratios are taken round by round, with a confidence "
            "sequence that stays valid however many rounds the run chose to measure",
        }[self]

    @property
    def detail(self) -> str:
        """How the interval of a ratio between two of the run's cells is computed."""
        return {
            RatioMethod.INDEPENDENT: RATIO_METHOD,
            RatioMethod.PAIRED: (
                "median of the per-round ratios (rounds both cells were measured in); with 6+ "
                "rounds a percentile bootstrap resampling whole rounds; with fewer, their range "
                "(it misses with probability 2 / 2^n: 94% for 5 rounds)"
            ),
            RatioMethod.SEQUENTIAL: (
                "mean per-round log-ratio with a t-confidence sequence (95% at every round at "
                "once: Wang & Ramdas 2023), so intervals stay honest in a run that stopped "
                "when its ranking was decided"
            ),
        }[self]


@dataclass(frozen=True)
class Evidence:
    min_effect_pct: float
    min_trials: int = MIN_TRIALS
    method: RatioMethod = RatioMethod.INDEPENDENT

    def describe(self) -> str:
        return (
            f"a difference is declared with {self.min_trials}+ trials a side, an interval that "
            f"excludes 1 and an effect over {self.min_effect_pct:g}%; otherwise it is a tie "
            f"({self.method.words})"
        )

    def judge(self, a: Sequence[float], b: Sequence[float], figure: Figure) -> Judgement:
        """a against b by the rule. Samples that know their rounds (analysis/samples.py) are
        paired by round when the method says so; others are judged as independent cells."""
        pairs = paired(a, b) if self.method is not RatioMethod.INDEPENDENT else None
        if pairs is not None and self.method is RatioMethod.SEQUENTIAL:
            return self._sequential(pairs, figure)
        ratio = paired_ratio_interval(pairs) if pairs is not None else ratio_interval(a, b)
        if ratio is None:
            return Judgement("none", None, "nothing to compare")
        fewest = ratio.fewest if pairs is not None else min(len(a), len(b))
        what = "round(s) measured together" if pairs is not None else "trial(s)"
        least = max(self.min_trials, PAIRED_MIN_ROUNDS) if pairs is not None else self.min_trials
        if fewest < least:
            return Judgement(
                "tie", ratio, f"{fewest} {what}: too few for an interval", too_few=True
            )
        if not ratio.significant:
            return Judgement("tie", ratio, "within the noise: the interval includes 1")
        return self.by_effect(ratio, figure)

    def with_noise_floor(self, floors: Iterable[float | None]) -> Evidence:
        """This rule with its practical threshold raised to the largest of `floors` (runs'
        A/A noise): a change smaller than two launches of one stack came apart is not one."""
        known = [floor for floor in floors if floor is not None]
        if not known or max(known) <= self.min_effect_pct:
            return self
        return dataclasses.replace(self, min_effect_pct=max(known))

    def by_effect(self, ratio: Ratio, figure: Figure) -> Judgement:
        """A ratio whose interval already excludes 1 (or its like), judged by the practical
        threshold alone."""
        effect = effect_pct(ratio.value)
        if effect <= self.min_effect_pct:
            return Judgement(
                "tie", ratio, f"{effect:.1f}% is under the practical threshold of "
                f"{self.min_effect_pct:g}%",
            )  # fmt: skip
        return Judgement("a" if figure.wins(ratio.value) else "b", ratio, "")

    def _sequential(self, pairs: list[tuple[float, float]], figure: Figure) -> Judgement:
        if not pairs:  # never measured in one round: rounds that measure both would decide it
            return Judgement("none", None, "no round measured both", undecided=True)
        first, second = [a for a, _ in pairs], [b for _, b in pairs]
        found = decide_pair(first, second, self.min_effect_pct)
        ratio = Ratio(found.ratio, found.low, found.high, 1 - ALPHA, found.rounds)
        if found.decision is Decision.TIE:
            return Judgement("tie", ratio, f"within ±{self.min_effect_pct:g}%, decided")
        if found.decision is Decision.UNDECIDED:
            more = rounds_to_decide(
                [math.log(x / y) for x, y in pairs if x > 0 and y > 0], self.min_effect_pct
            )
            return Judgement(
                "tie", ratio, f"undecided after {found.rounds} rounds", undecided=True,
                more_rounds=None if more is None else max(1, more),
            )  # fmt: skip
        return self.by_effect(ratio, figure)
