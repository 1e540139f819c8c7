"""Two runs of one recipe, cell by cell: the ratio B/A of the figure cells are ranked by,
with its interval and a verdict; when both runs measured a sentinel, the same for each cell's
ratio to it and for the sentinel itself, and whose change it is (analysis/attribution.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from benchlab.analysis.attribution import Attribution, Evidence3
from benchlab.analysis.environment import Difference
from benchlab.analysis.evidence import Evidence
from benchlab.analysis.series_key import Measurement, SeriesKey
from benchlab.analysis.stats import Ratio
from benchlab.core.figures import Better, Figure


@dataclass(frozen=True)
class Side:
    """A cell of one run as compare sees it."""

    key: SeriesKey  # what it is matched by
    measurement: Measurement  # how long and how often it was measured
    samples: Sequence[float]  # of the figure compared
    params: str = ""  # the grid point's parameters, when the recipe has them
    to_sentinel: Sequence[float] = ()  # its ratio to the sentinel, round by round
    sentinel: Sequence[float] = ()  # the sentinel's figure at its grid point


@dataclass(frozen=True)
class CellChange:
    key: SeriesKey
    ratio: Ratio | None  # B / A
    # faster, slower (better, worse, whichever way the figure is better), no significant
    # change; failed in B, missing in B (A measured it); not comparable (A has no trials)
    verdict: str
    figure: Figure
    why: str = ""  # for no significant change: too few trials, within the noise, too small
    params: str = ""
    evidence: Evidence3 | None = None  # with a sentinel in both runs: the three series judged
    measured_otherwise: list[Difference] = field(default_factory=list)  # B's settings, not A's

    @property
    def label(self) -> str:
        """The stack as the reports label it (and a twin's duration: see SeriesKey)."""
        return self.key.label + (f" · {self.key.twin}" if self.key.twin else "")

    @property
    def scenario(self) -> str:
        return self.key.point.scenario

    @property
    def connections(self) -> int:
        return self.key.point.connections

    @property
    def attribution(self) -> Attribution | None:
        """Whose change it is; None when nothing moved (or no sentinel in both runs)."""
        if self.evidence is None or not self.evidence.moved:
            return None
        return self.evidence.attribution

    def regressed_beyond(self, pct: float) -> bool:
        """Worse by more than `pct` % even at the best end of its interval, or broken in B;
        not when the sentinel says the machine moved it."""
        if self.verdict in LOST:
            return True
        if self.verdict != "slower" or self.ratio is None:
            return False
        if self.attribution is Attribution.MACHINE:
            return False
        if self.figure.better is Better.LOWER:
            return self.ratio.low > 1 + pct / 100
        return self.ratio.high < 1 - pct / 100


LOST = ("failed in B", "missing in B")


def compare_cells(
    a: Sequence[Side], b: Sequence[Side], figure: Figure, evidence: Evidence
) -> list[CellChange]:
    """Cells are matched by their series key (the stack, the scenario and its load, however
    long or often each run measured them: what differs is named); a change is declared by the
    evidence rule (enough trials, an interval, a practical effect)."""
    after = {side.key: side for side in b}
    changes = []
    for cell in a:
        before = list(cell.samples)
        other = after.get(cell.key)
        values = list(other.samples) if other else []
        judgement = evidence.judge(values, before, figure) if before and values else None
        ratio = judgement.ratio if judgement else None
        why = ""
        if before and other is None:
            verdict = "missing in B"
        elif before and not values:
            verdict = "failed in B"
        elif judgement is None or ratio is None:
            verdict = "not comparable"
        elif not judgement.decided:
            verdict, why = "no significant change", judgement.why
        else:
            verdict = "faster" if judgement.verdict == "a" else "slower"
        judged = None
        if judgement is not None and other is not None and _with_sentinel(cell, other):
            judged = Evidence3(
                judgement,
                evidence.judge(other.to_sentinel, cell.to_sentinel, figure),
                evidence.judge(other.sentinel, cell.sentinel, figure),
            )
        otherwise = cell.measurement.differences(other.measurement) if other else []
        changes.append(
            CellChange(cell.key, ratio, verdict, figure, why, cell.params, judged, otherwise)
        )
    return changes


def _with_sentinel(a: Side, b: Side) -> bool:
    return bool(a.to_sentinel and b.to_sentinel and a.sentinel and b.sentinel)
