"""Where this machine's run-to-run variation comes from: within one launch of a stack, between
launches, and the movement a round shares across every stack (the VM's neighbours that
minute). Measured on log throughput, so each component reads as a relative spread.

The design: R rounds; in each, every stack S is launched L times and measured T times per
launch (all interleaved). With y[r][s][l][t] the log throughput,
- within a launch: the pooled variance of trials around their launch's mean;
- between launches: the variance of launch means around their round-and-stack mean, less
  the part the trials' own variance explains (within / T);
- shared by a round: the covariance, across rounds, of different stacks' round means (what
  moves them together: it cancels in a ratio taken within a round);
- drift of one stack: the variance of its round means less what launches explain, less the
  shared part.
Negative estimates (sampling noise around a true 0) are reported as 0.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# rounds × stacks × launches × trials of throughput (req/s)
Measurements = Sequence[Sequence[Sequence[Sequence[float]]]]


@dataclass(frozen=True)
class NoiseComponents:
    within_launch: float  # standard deviations, on the log scale (≈ relative spread)
    between_launches: float
    shared_by_round: float
    own_drift: float
    rounds: int

    @property
    def pairing_helps(self) -> bool:
        """Whether rounds share a movement big enough that a ratio taken within a round (the
        paired design) is tighter than one of independent cells: the shared variance is at
        least a quarter of everything else a round's figure varies by."""
        rest = self.between_launches**2 + self.own_drift**2 + self.within_launch**2
        return self.shared_by_round**2 >= 0.25 * rest and self.shared_by_round > 0

    def as_json(self) -> dict[str, float | int | bool]:
        return {
            "within_launch": self.within_launch, "between_launches": self.between_launches,
            "shared_by_round": self.shared_by_round, "own_drift": self.own_drift,
            "rounds": self.rounds, "pairing_helps": self.pairing_helps,
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: object) -> NoiseComponents | None:
        """The components as `as_json` wrote them (None: not such a value)."""
        try:
            return cls(
                data["within_launch"], data["between_launches"],  # type: ignore[index]
                data["shared_by_round"], data["own_drift"], data["rounds"],  # type: ignore[index]
            )  # fmt: skip
        except (KeyError, TypeError):
            return None


def _sd(variance: float) -> float:
    return math.sqrt(max(variance, 0.0))


def decompose(measured: Measurements) -> NoiseComponents:
    """The components of `measured` (at least 3 rounds, 2 stacks, 2 launches, 2 trials)."""
    logs = [
        [[[math.log(v) for v in launch] for launch in stack] for stack in rnd] for rnd in measured
    ]
    rounds, stacks = len(logs), len(logs[0])
    launches, trials = len(logs[0][0]), len(logs[0][0][0])
    if min(rounds, stacks, launches, trials) < 2 or rounds < 3:
        raise ValueError("decompose needs 3+ rounds and 2+ stacks, launches and trials")
    within = statistics.fmean(
        statistics.variance(launch) for rnd in logs for stack in rnd for launch in stack
    )
    launch_means = [[[statistics.fmean(run) for run in stack] for stack in rnd] for rnd in logs]
    between = (
        statistics.fmean(statistics.variance(stack) for rnd in launch_means for stack in rnd)
        - within / trials
    )
    round_means = [[statistics.fmean(stack) for stack in rnd] for rnd in launch_means]
    per_stack = [[round_means[r][s] for r in range(rounds)] for s in range(stacks)]
    shared = statistics.fmean(
        statistics.covariance(a, b) for a, b in itertools.combinations(per_stack, 2)
    )
    drift = (
        statistics.fmean(statistics.variance(series) for series in per_stack)
        - shared
        - (max(between, 0.0) + within / trials) / launches
    )
    return NoiseComponents(_sd(within), _sd(between), _sd(shared), _sd(drift), rounds)
