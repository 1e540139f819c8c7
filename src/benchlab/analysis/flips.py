"""Rankings per grid point and the rank flips between them: pairs of stacks where one wins
at some point and the other at another, each win beyond the intervals of both."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from benchlab.analysis.stats import Ratio, ratio_interval


@dataclass(frozen=True)
class Contender:
    label: str
    point: tuple  # the grid point: scenario, tool, connections, ms, (pool size when swept)
    throughputs: Sequence[float]


@dataclass(frozen=True)
class Win:
    point: tuple
    ratio: Ratio  # winner / loser


@dataclass(frozen=True)
class Flip:
    a: str
    b: str
    a_wins: list[Win]
    b_wins: list[Win]


def rankings(contenders: Sequence[Contender]) -> dict[tuple, list[tuple[str, float]]]:
    """Per grid point, the contenders by median throughput, best first."""
    points: dict[tuple, list[tuple[str, float]]] = {}
    for c in contenders:
        if c.throughputs:
            points.setdefault(c.point, []).append((c.label, statistics.median(c.throughputs)))
    return {p: sorted(r, key=lambda item: -item[1]) for p, r in points.items()}


def flips(contenders: Sequence[Contender]) -> list[Flip]:
    by_label: dict[str, dict[tuple, Contender]] = {}
    for c in contenders:
        if c.throughputs:
            by_label.setdefault(c.label, {})[c.point] = c
    found = []
    for a, b in itertools.combinations(sorted(by_label), 2):
        a_wins, b_wins = [], []
        for point in sorted(set(by_label[a]) & set(by_label[b]), key=str):
            ratio = ratio_interval(by_label[a][point].throughputs, by_label[b][point].throughputs)
            if ratio is None or not ratio.significant:
                continue
            if ratio.low > 1:
                a_wins.append(Win(point, ratio))
            else:
                inverse = Ratio(1 / ratio.value, 1 / ratio.high, 1 / ratio.low, ratio.confidence)
                b_wins.append(Win(point, inverse))
        if a_wins and b_wins:
            found.append(Flip(a, b, a_wins, b_wins))
    return found
