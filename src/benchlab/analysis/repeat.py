"""How far a second tune of the same app on the same machine may move the rate to run at.

A tune's answer rests on launches measured once each; a second tune measures new launches
at another time. On a machine whose noise `selfcheck --noise` measured, a tune's figure
varies between occasions by the launch, the round (the VM's neighbours that minute), the
stack's own drift and the trials (noise.NoiseComponents), and a second tune differs from the
first by that variation twice over. Without a record, the tune's own replicates (separate
launches, minutes apart) give the spread: a lower bound, since they share the tune's hour."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from benchlab.analysis.noise import NoiseComponents

Z95 = 1.96  # both tails of 95 %
MACHINE = "machine"  # from this machine's measured noise (selfcheck --noise)
REPLICATES = "replicates"  # from the tune's own replicates only (a lower bound)


@dataclass(frozen=True)
class Repeat:
    """The range a second tune's rate to run at falls in, 95 % of the time, and its basis."""

    low_rps: float
    high_rps: float
    spread_pct: float  # the range's upper side above the rate to run at, in %
    basis: str  # MACHINE or REPLICATES

    def to_json(self) -> dict[str, float | str]:
        return {
            "low_rps": self.low_rps, "high_rps": self.high_rps,
            "spread_pct": self.spread_pct, "basis": self.basis,
        }  # fmt: skip

    def holds(self, rate: float) -> bool:
        """Whether a second tune's rate to run at is within the range."""
        return self.low_rps <= rate <= self.high_rps


def occasion_sd(noise: NoiseComponents) -> float:
    """One tune's figure's spread between occasions (log scale): every component but none
    shared within a tune."""
    return math.sqrt(
        noise.between_launches**2 + noise.shared_by_round**2 + noise.own_drift**2
        + noise.within_launch**2
    )  # fmt: skip


def replicates_sd(replicates: Sequence[float]) -> float | None:
    """The spread of the search's replicates (log scale); None with fewer than two held."""
    held = [math.log(r) for r in replicates if r > 0]
    return statistics.stdev(held) if len(held) >= 2 else None


def repeat_of(
    run_at: float | None, replicates: Sequence[float], noise: NoiseComponents | None
) -> Repeat | None:
    """The range of a second tune's rate to run at around this one's; None when there is no
    rate to run at or nothing to tell the spread from. The wider of the two bases counts:
    a tune whose replicates spread more than the machine's record did met a noisier hour."""
    if run_at is None or run_at <= 0:
        return None
    own = replicates_sd(replicates)
    machine = occasion_sd(noise) if noise is not None else None
    if own is None and machine is None:
        return None
    sd, basis = max(
        ((s, b) for s, b in ((machine, MACHINE), (own, REPLICATES)) if s is not None),
        key=lambda found: found[0],
    )
    reach = Z95 * math.sqrt(2) * sd  # the difference of two tunes' log figures
    return Repeat(
        low_rps=run_at * math.exp(-reach),
        high_rps=run_at * math.exp(reach),
        spread_pct=100.0 * (math.exp(reach) - 1.0),
        basis=basis,
    )
