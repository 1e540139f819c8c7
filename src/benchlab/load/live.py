"""What a running trial's load tool says while it runs: its figures so far (`LiveLoad`), or
why it says nothing (`NoLive`). A tool that can (vegeta, at a fixed rate) is followed as it
goes (vegeta_live.py); the others give their figures only when they end."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# How often a followed tool's figures are read (vegeta's report -every).
LIVE_EVERY_S = 1.0


@dataclass(frozen=True)
class LiveLoad:
    """A running trial's load so far, as its tool counts it: responses, those that failed
    (a transport error or a status outside 2xx-3xx: the tool's own definition), and
    successful responses per second since the first request."""

    elapsed_s: float
    duration_s: float  # the trial's
    requests: int
    errors: int
    achieved_rps: float

    @property
    def error_pct(self) -> float:
        return 100.0 * self.errors / self.requests if self.requests else 0.0


@dataclass(frozen=True)
class NoLive:
    """Why a running trial shows no figure until it ends."""

    reason: str


LiveFigure = LiveLoad | NoLive
# Where a running trial's figures go as they come (from a thread of benchlab's own).
Follow = Callable[[LiveFigure], None]
