"""A run's clock and its deadline (a `--budget`, tune's search): no launch starts that would
not finish before it, and what the deadline cut is remembered (planned work left undone makes
a run partial; adaptive rounds it cut leave pairs undecided, which the report names)."""

from __future__ import annotations

import math
from collections.abc import Callable


class RunClock:
    def __init__(
        self, monotonic: Callable[[], float], deadline_s: float | None,
        say: Callable[[str], None],
    ) -> None:  # fmt: skip
        self._monotonic = monotonic
        self._say = say
        self._started = monotonic()
        self._deadline_s = deadline_s  # no launch starts past it (None: any time)
        self.out_of_time = False
        self.cut_short = False  # the deadline left planned work undone: the run is partial

    def start(self) -> None:
        self._started = self._monotonic()

    def elapsed_s(self) -> float:
        return self._monotonic() - self._started

    @property
    def deadline_s(self) -> float | None:
        return self._deadline_s

    def set_deadline(self, seconds: float | None) -> None:
        """Move the deadline (tune's search stops where its proof's time begins)."""
        self._deadline_s = seconds

    def seconds_left(self) -> float:
        """Until the deadline (infinite without one)."""
        return math.inf if self._deadline_s is None else self._deadline_s - self.elapsed_s()

    def time_left(self, needs_s: float = 0.0, planned: bool = True) -> bool:
        """Whether a launch of `needs_s` may start before the deadline (said once when spent);
        `planned`: not an adaptive round (a deadline that cuts one leaves the run partial)."""
        if self.seconds_left() > needs_s:
            return True
        if not self.out_of_time:
            self._say("the budget is spent: no more launches")
        self.out_of_time = True
        self.cut_short = self.cut_short or planned
        return False
