"""Rankings per grid point, and rank flips: pairs of stacks where one is better at one point
and the other at another, each win beyond the intervals of both.

Cells are ranked by one figure (throughput, capacity, p99, CPU per request), whichever way
that figure is better; each contender brings that figure's samples (one per trial, or one
per capacity-search replicate)."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from benchlab.analysis.grid import GridPoint
from benchlab.analysis.stats import Ratio, ratio_interval
from benchlab.figures import Figure


@dataclass(frozen=True)
class Contender:
    label: str
    point: GridPoint
    samples: Sequence[float]


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


def rankings(
    contenders: Sequence[Contender], figure: Figure
) -> dict[GridPoint, list[tuple[str, float]]]:
    """Per grid point, the contenders by the median of the figure, best first."""
    points: dict[GridPoint, list[tuple[str, float]]] = {}
    for c in contenders:
        if c.samples:
            points.setdefault(c.point, []).append((c.label, statistics.median(c.samples)))
    best_first = -1 if figure.wins(2.0) else 1  # higher is better: sort descending
    return {p: sorted(r, key=lambda item: best_first * item[1]) for p, r in points.items()}


def _inverse(ratio: Ratio) -> Ratio:
    return Ratio(1 / ratio.value, 1 / ratio.high, 1 / ratio.low, ratio.confidence)


def flips(contenders: Sequence[Contender], figure: Figure) -> list[Flip]:
    by_label: dict[str, dict[GridPoint, Contender]] = {}
    for c in contenders:
        if c.samples:
            by_label.setdefault(c.label, {})[c.point] = c
    found = []
    for a, b in itertools.combinations(sorted(by_label), 2):
        a_wins, b_wins = [], []
        for point in sorted(set(by_label[a]) & set(by_label[b]), key=lambda p: p.text()):
            ratio = ratio_interval(by_label[a][point].samples, by_label[b][point].samples)
            if ratio is None or not ratio.significant:
                continue
            if figure.wins(ratio.value):
                a_wins.append(Win(point, ratio))
            else:
                b_wins.append(Win(point, _inverse(ratio)))
        if a_wins and b_wins:
            found.append(Flip(a, b, a_wins, b_wins))
    return found
