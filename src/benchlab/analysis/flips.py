"""Rankings per grid point, and rank flips: pairs of stacks where one is better at one point
and the other at another, each win declared by the rule of `analysis.evidence`.

Cells are ranked by one figure (throughput, capacity, p99, CPU per request), whichever way
that figure is better; each contender brings that figure's samples (one per trial, or one
per capacity-search replicate)."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from benchlab.analysis.evidence import Evidence
from benchlab.analysis.grid import GridPoint
from benchlab.analysis.stats import Ratio
from benchlab.core.figures import Figure


@dataclass(frozen=True)
class Contender:
    label: str
    point: GridPoint
    samples: Sequence[float]  # of the figure the point ranks by
    figure: Figure


@dataclass(frozen=True)
class Placed:
    """A contender's place in a ranking: its median, and whether it is really behind the
    one before it (False: a tie with it)."""

    label: str
    value: float
    behind: bool


@dataclass(frozen=True)
class Win:
    point: GridPoint
    ratio: Ratio  # winner / loser of the figure (below 1 when lower is better)


@dataclass(frozen=True)
class Flip:
    a: str
    b: str
    a_wins: list[Win]
    b_wins: list[Win]


def rankings(contenders: Sequence[Contender], evidence: Evidence) -> dict[GridPoint, list[Placed]]:
    """Per grid point, the contenders by the median of the figure, best first; each marked
    whether it is behind the one before it by the evidence rule, or tied with it."""
    points: dict[GridPoint, list[Contender]] = {}
    for c in contenders:
        if c.samples:
            points.setdefault(c.point, []).append(c)
    ranked = {}
    for point, group in points.items():
        figure = group[0].figure
        best_first = -1 if figure.wins(2.0) else 1  # higher is better: sort descending
        ordered = sorted(group, key=lambda c: best_first * statistics.median(c.samples))
        ranked[point] = [
            Placed(
                c.label,
                statistics.median(c.samples),
                i > 0 and evidence.judge(ordered[i - 1].samples, c.samples, figure).decided,
            )
            for i, c in enumerate(ordered)
        ]
    return ranked


def _inverse(ratio: Ratio) -> Ratio:
    return Ratio(1 / ratio.value, 1 / ratio.high, 1 / ratio.low, ratio.confidence, ratio.fewest)


def flips(contenders: Sequence[Contender], evidence: Evidence) -> list[Flip]:
    by_label: dict[str, dict[GridPoint, Contender]] = {}
    for c in contenders:
        if c.samples:
            by_label.setdefault(c.label, {})[c.point] = c
    found = []
    for a, b in itertools.combinations(sorted(by_label), 2):
        a_wins, b_wins = [], []
        for point in sorted(set(by_label[a]) & set(by_label[b]), key=lambda p: p.text()):
            first, second = by_label[a][point], by_label[b][point]
            judgement = evidence.judge(first.samples, second.samples, first.figure)
            if judgement.verdict == "a":
                a_wins.append(Win(point, judgement.ratio))
            elif judgement.verdict == "b":
                b_wins.append(Win(point, _inverse(judgement.ratio)))
        if a_wins and b_wins:
            found.append(Flip(a, b, a_wins, b_wins))
    return found
