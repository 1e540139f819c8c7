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

from collections.abc import Sequence
from dataclasses import dataclass

from benchlab.analysis.stats import Ratio, ratio_interval
from benchlab.figures import Figure

MIN_TRIALS = 3


@dataclass(frozen=True)
class Judgement:
    verdict: str  # "a" (a is better), "b", "tie", "none" (nothing to compare)
    ratio: Ratio | None  # a / b
    why: str  # for a tie: the reason there is no winner

    @property
    def decided(self) -> bool:
        return self.verdict in ("a", "b")


@dataclass(frozen=True)
class Evidence:
    min_effect_pct: float
    min_trials: int = MIN_TRIALS

    def describe(self) -> str:
        return (
            f"a difference is declared with {self.min_trials}+ trials a side, an interval that "
            f"excludes 1 and an effect over {self.min_effect_pct:g}%; otherwise it is a tie"
        )

    def judge(self, a: Sequence[float], b: Sequence[float], figure: Figure) -> Judgement:
        ratio = ratio_interval(a, b)
        if ratio is None:
            return Judgement("none", None, "nothing to compare")
        fewest = min(len(a), len(b))
        if fewest < self.min_trials:
            return Judgement("tie", ratio, f"{fewest} trial(s): too few for an interval")
        if not ratio.significant:
            return Judgement("tie", ratio, "within the noise: the interval includes 1")
        effect = 100 * (max(ratio.value, 1 / ratio.value) - 1)
        if effect <= self.min_effect_pct:
            return Judgement(
                "tie", ratio, f"{effect:.1f}% is under the practical threshold of "
                f"{self.min_effect_pct:g}%",
            )  # fmt: skip
        return Judgement("a" if figure.wins(ratio.value) else "b", ratio, "")
