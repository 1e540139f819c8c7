"""Whose change a change point is: the stack's, the machine's, or undecided — from three
series judged across it by the evidence rule: the cell's own figure, its ratio to the
sentinel measured in the same rounds, and the sentinel's own figure.

- the stack: its ratio to the sentinel moved, and the sentinel did not move the other way
  (the ratio cancels what a round shares, so it can see a change the figure's own noise
  hides); or the ratio and the figure both moved, the same way;
- the machine: the figure and the sentinel moved the same way, the ratio did not;
- undecided: anything else — the figure alone moved, or the ratio moved only as far as the
  sentinel moved the other way (a stack 10 % slower on a machine 10 % faster looks like that,
  and so does an update of the sentinel alone) — or no sentinel on both sides.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from benchlab.analysis.evidence import Judgement


class Attribution(StrEnum):
    STACK = "stack"
    MACHINE = "machine"
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class Evidence3:
    """The three series judged across one boundary (after against before)."""

    own: Judgement
    ratio: Judgement | None  # None: the sentinel was not measured on both sides
    sentinel: Judgement | None

    @property
    def attribution(self) -> Attribution:
        own, ratio, sentinel = self.own, self.ratio, self.sentinel
        if ratio is None or sentinel is None:
            return Attribution.UNDECIDED
        if ratio.decided:
            sentinel_against = sentinel.decided and sentinel.verdict != ratio.verdict
            if not sentinel_against or (own.decided and own.verdict == ratio.verdict):
                return Attribution.STACK
            return Attribution.UNDECIDED
        if own.decided and sentinel.decided and own.verdict == sentinel.verdict:
            return Attribution.MACHINE
        return Attribution.UNDECIDED

    @property
    def moved(self) -> bool:
        """Whether the stack's figure or its ratio to the sentinel moved at all."""
        return self.own.decided or (self.ratio is not None and self.ratio.decided)

    def lines(self) -> list[tuple[str, Judgement | None]]:
        return [("own", self.own), ("÷ sentinel", self.ratio), ("sentinel", self.sentinel)]
