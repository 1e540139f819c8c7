"""Where the next run of a series should fall, given the runs of its segment: a prediction
interval of the run medians (on the log scale: a figure moves by factors), so the newest run
is judged against the spread between runs, not against the narrower interval of their mean.

With n runs of log-median mean m and standard deviation s, the next one falls in
m ± t(0.975, n-1) · s · √(1 + 1/n) with 95 % probability when the runs are alike.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

PREDICTION_CONFIDENCE = 0.95
MIN_RUNS = 2  # a spread needs two runs; with 2 the interval is wide (t = 12.7), honestly


@dataclass(frozen=True)
class Prediction:
    centre: float  # the geometric mean of the runs' medians
    low: float
    high: float
    runs: int

    def holds(self, value: float) -> bool:
        return self.low <= value <= self.high


def predict(medians: Sequence[float]) -> Prediction | None:
    """The 95 % prediction interval of the next run's median; None with too few runs."""
    from scipy.special import stdtrit  # imported here: 0.6 s, and only history needs it

    logs = [math.log(m) for m in medians if m > 0]
    if len(logs) < MIN_RUNS:
        return None
    n, centre = len(logs), statistics.fmean(logs)
    spread = statistics.stdev(logs)
    quantile = float(stdtrit(n - 1, 1 - (1 - PREDICTION_CONFIDENCE) / 2))
    half = quantile * spread * math.sqrt(1 + 1 / n)
    return Prediction(math.exp(centre), math.exp(centre - half), math.exp(centre + half), n)
