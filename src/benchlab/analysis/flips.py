"""Rank flips: pairs of stacks where one is better at one grid point and the other at another,
read from the run's ranking (`analysis/ranking.py`): a win is a stack in a better tier than
the other at a point, which their own evidence declares too."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from benchlab.analysis.grid import GridPoint
from benchlab.analysis.ranking import Ranking
from benchlab.analysis.stats import Ratio


@dataclass(frozen=True)
class Win:
    point: GridPoint
    ratio: Ratio  # how many times better the winner was ("better by": above 1)


@dataclass(frozen=True)
class Flip:
    a: str
    b: str
    a_wins: list[Win]
    b_wins: list[Win]


def flips(ranking: Ranking) -> list[Flip]:
    """Every pair of stacks (by label) each of which wins somewhere."""
    at: dict[str, dict[GridPoint, str]] = {}  # label -> point -> its cell's key there
    for point in sorted(ranking.points.values(), key=lambda p: p.point.text()):
        for place in point.order:
            at.setdefault(place.label, {})[point.point] = place.key
    found = []
    for a, b in itertools.combinations(sorted(at), 2):
        a_wins, b_wins = [], []
        for where in [p for p in at[a] if p in at[b]]:
            point = ranking.points[where]
            if (won := point.beats(at[a][where], at[b][where])) is not None:
                a_wins.append(Win(where, won))
            elif (won := point.beats(at[b][where], at[a][where])) is not None:
                b_wins.append(Win(where, won))
        if a_wins and b_wins:
            found.append(Flip(a, b, a_wins, b_wins))
    return found
