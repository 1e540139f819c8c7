"""Two runs of one recipe, cell by cell: the ratio B/A of the figure cells are ranked by,
with its interval and a verdict."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchlab.analysis.evidence import Evidence
from benchlab.analysis.stats import Ratio
from benchlab.figures import Better, Figure


@dataclass(frozen=True)
class Side:
    """A cell of one run as compare sees it."""

    key: str
    label: str
    scenario: str
    connections: int
    samples: Sequence[float]  # of the figure compared
    params: str = ""  # the grid point's parameters, when the recipe has them


@dataclass(frozen=True)
class CellChange:
    key: str
    label: str
    scenario: str
    connections: int
    ratio: Ratio | None  # B / A
    # faster, slower (better, worse, whichever way the figure is better), no significant
    # change; failed in B, missing in B (A measured it); not comparable (A has no trials)
    verdict: str
    figure: Figure
    why: str = ""  # for no significant change: too few trials, within the noise, too small
    params: str = ""

    def regressed_beyond(self, pct: float) -> bool:
        """Worse by more than `pct` % even at the best end of its interval, or broken in B."""
        if self.verdict in LOST:
            return True
        if self.verdict != "slower" or self.ratio is None:
            return False
        if self.figure.better is Better.LOWER:
            return self.ratio.low > 1 + pct / 100
        return self.ratio.high < 1 - pct / 100


LOST = ("failed in B", "missing in B")


def compare_cells(
    a: Sequence[Side], b: Sequence[Side], figure: Figure, evidence: Evidence
) -> list[CellChange]:
    """Cells are matched by their key (stack, flavour, scenario, load, parameters); a change
    is declared by the evidence rule (enough trials, an interval, a practical effect)."""
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
        changes.append(
            CellChange(
                cell.key,
                cell.label,
                cell.scenario,
                cell.connections,
                ratio,
                verdict,
                figure,
                why,
                cell.params,
            )
        )
    return changes
