"""A run's ranking, built once from its cells' results: who is ranked, at which grid points, in
what order (best first), each adjacent pair's evidence, the tiers, and what is still undecided
with the rounds that would decide it. It holds references to the results it ranks (any
`Entrant`: a run's `CellResult`, as tune's candidates will be). The runner asks it what to
measure next (a run stops when nothing is left to decide); the run's summary stores it; every
report reads it and says "undecided" exactly where it does.

The rule (docs/verdicts.md): at each point the ranked cells are put in order of the median of
the figure they are ranked by, and each *adjacent* pair is judged by the evidence rule
(`analysis/evidence.py`). A pair is `AHEAD` (the first is better), a `TIE`, or `UNDECIDED` (a
run that stops on its data has not decided it yet). Tiers are cut where a pair is ahead, so a
tier is what the adjacent pairs could not separate: the runner decides exactly the pairs the
tiers are made of.

What a ranking writes in a run's JSON is declared once, as the records at the end of this
module (`RankingStep`, `RankingPlace`, `UndecidedPair`, `PointRankingJson`, `TierJson`): the
writer writes their fields (`dataclasses.asdict`), and report/json_schemas.py makes the
published schema of them.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from benchlab.analysis.evidence import Evidence
from benchlab.analysis.grid import GridPoint
from benchlab.analysis.run_options import RunOptions
from benchlab.analysis.stats import Ratio, median_interval, settled
from benchlab.core import figures as F

T = TypeVar("T")


class Entrant(Protocol):
    """A cell as the ranking reads it: where it is ranked, by what, its samples of every figure
    it can be ranked by (each knowing its round), and whether it competes."""

    @property
    def key(self) -> str: ...
    @property
    def label(self) -> str: ...  # the stack with its launch's settings, as reports name it
    @property
    def stack(self) -> str: ...  # the catalogue's name
    @property
    def point(self) -> GridPoint: ...
    @property
    def figure(self) -> F.Figure: ...  # what it is ranked by
    @property
    def samples(self) -> Mapping[str, Sequence[float]]: ...  # by figure key
    @property
    def ranks(self) -> bool: ...  # not the sentinel, a ceiling or a nonconformant stack


def best_first(items: Iterable[T], value: Callable[[T], float | None], figure: F.Figure) -> list[T]:
    """`items` best first by `figure`'s direction; those without a value last, in their
    order (a sort is stable: equal values keep the recipe's order)."""
    listed = list(items)
    known = [(item, v) for item in listed if (v := value(item)) is not None]
    sign = -1.0 if figure.better is F.Better.HIGHER else 1.0
    ordered = [item for item, _ in sorted(known, key=lambda pair: sign * pair[1])]
    return ordered + [item for item in listed if value(item) is None]


def by_point(items: Iterable[T], point: Callable[[T], GridPoint]) -> dict[GridPoint, list[T]]:
    """Items grouped by their grid point, the points in the order the items first name them
    (the recipe's)."""
    grouped: dict[GridPoint, list[T]] = {}
    for item in items:
        grouped.setdefault(point(item), []).append(item)
    return grouped


class Call(StrEnum):
    """What the evidence says of two neighbours in the order."""

    AHEAD = "ahead"  # the first is better, by the evidence rule
    TIE = "tie"  # not told apart, and no round the run would add is waited for
    UNDECIDED = "undecided"  # a run that stops on its data has not decided it yet


@dataclass(frozen=True, eq=False)
class Place:
    """A ranked entrant's place: the entrant and its median of the point's figure (one
    place is one object: compared by identity, as the entrant it holds)."""

    entrant: Entrant
    value: float

    @property
    def key(self) -> str:
        return self.entrant.key

    @property
    def label(self) -> str:
        return self.entrant.label

    @property
    def stack(self) -> str:
        return self.entrant.stack


def better_by(ratio: Ratio, figure: F.Figure) -> Ratio:
    """a / b as 'a is this many times better than b' (inverted when lower is better)."""
    if figure.better is F.Better.LOWER:
        return Ratio(
            _inverse(ratio.value), _inverse(ratio.high), _inverse(ratio.low), ratio.confidence,
            ratio.fewest,
        )  # fmt: skip
    return ratio


def _inverse(x: float) -> float:
    """1 / x, where a bound not yet reached (0 or ∞: a sequence still unbounded) stays one."""
    return math.inf if x == 0 else 0.0 if math.isinf(x) else 1 / x


@dataclass(frozen=True)
class Step:
    """Two neighbours in the order and the evidence between them."""

    point: GridPoint
    ahead: Place
    behind: Place
    call: Call
    ratio: Ratio | None  # how many times better `ahead` is ("better by": ≥ 1 when ahead)
    why: str  # a tie's reason ("within the noise", "under the practical threshold")
    more_rounds: int | None = None  # undecided: rounds more it is expected to need
    too_few: bool = False  # a tie only for want of trials (or paired rounds) to judge by

    @property
    def would_decide(self) -> str:
        """What would decide an undecided pair, in words."""
        if self.more_rounds is None:
            return "more rounds than a run would spend would decide it, at this noise"
        return f"about {self.more_rounds} more round(s) would decide it"

    def as_json(self) -> RankingStep:
        return RankingStep(self.call, OpenRatio.of(self.ratio), self.why, self.more_rounds)


@dataclass(frozen=True)
class Tier:
    """Neighbours no adjacent pair separates; `after` separates the tier from the next."""

    places: tuple[Place, ...]
    within: tuple[Step, ...]  # the ties and undecided pairs inside it
    after: Step | None

    @property
    def undecided(self) -> tuple[Step, ...]:
        return tuple(step for step in self.within if step.call is Call.UNDECIDED)

    def as_json(self) -> TierJson:
        return TierJson(
            [place.key for place in self.places],
            OpenRatio.of(self.after.ratio if self.after else None),
            [step.would_decide for step in self.undecided],
        )


@dataclass(frozen=True)
class PointRanking:
    """One grid point: every entrant there (best first, the unmeasured last), the ranked ones
    in order and the evidence between neighbours."""

    point: GridPoint
    figure: F.Figure
    entrants: tuple[Entrant, ...]  # every one here: ranked or not (the ceiling, the sentinel)
    order: tuple[Place, ...]
    steps: tuple[Step, ...]  # order[i] against order[i + 1]
    evidence: Evidence
    # A ranked entrant alone at its point whose interval is not yet within the target: the
    # runner's adaptive rounds measure it until it is.
    unsettled: tuple[Place, ...] = ()

    @property
    def samples(self) -> dict[str, Sequence[float]]:
        """Every entrant's samples of the point's figure, by key."""
        return {e.key: e.samples.get(self.figure.key, ()) for e in self.entrants}

    @property
    def undecided(self) -> tuple[Step, ...]:
        return tuple(step for step in self.steps if step.call is Call.UNDECIDED)

    @property
    def tiers(self) -> tuple[Tier, ...]:
        """The order cut where a pair is ahead: each tier what its pairs could not separate."""
        if not self.order:
            return ()
        found: list[Tier] = []
        places: list[Place] = [self.order[0]]
        within: list[Step] = []
        for step in self.steps:
            if step.call is Call.AHEAD:
                found.append(Tier(tuple(places), tuple(within), step))
                places, within = [], []
            else:
                within.append(step)
            places.append(step.behind)
        return (*found, Tier(tuple(places), tuple(within), None))

    def as_json(self) -> PointRankingJson:
        """The point's order, each place with the evidence against the one before it."""
        before: list[Step | None] = [None, *self.steps]
        return PointRankingJson(
            self.point.as_json(),
            self.figure.key,
            [
                RankingPlace(
                    place.label,
                    place.key,
                    place.value,
                    step is not None and step.call is not Call.AHEAD,
                    None if step is None else step.as_json(),
                )
                for place, step in zip(self.order, before, strict=True)
            ],
            [UndecidedPair(s.ahead.key, s.behind.key, s.would_decide) for s in self.undecided],
        )

    def tier_of(self, key: str) -> int | None:
        return next((i for i, t in enumerate(self.tiers) if key in {p.key for p in t.places}), None)

    def beats(self, a: str, b: str) -> Ratio | None:
        """a over b ("better by") when a stands in a better tier than b and their own
        evidence declares it too; None otherwise (a rank flip is made of these)."""
        tier_a, tier_b = self.tier_of(a), self.tier_of(b)
        if tier_a is None or tier_b is None or tier_a >= tier_b:
            return None
        samples = self.samples
        judged = self.evidence.judge(samples[a], samples[b], self.figure)
        if judged.verdict != "a" or judged.ratio is None:
            return None
        return better_by(judged.ratio, self.figure)

    def separated(self) -> frozenset[str]:
        """The ranked entrants the evidence puts ahead of the one after them and behind the
        one before them: their place is decided whatever their own spread."""
        if len(self.order) < 2:
            return frozenset()
        calls = [Call.AHEAD, *(step.call for step in self.steps), Call.AHEAD]
        return frozenset(
            place.key
            for i, place in enumerate(self.order)
            if calls[i] is Call.AHEAD and calls[i + 1] is Call.AHEAD
        )


@dataclass(frozen=True)
class StillToDecide:
    """What more rounds could settle: the entrants a next round should measure, and the
    undecided pairs that want them."""

    entrants: frozenset[str]
    pairs: tuple[Step, ...]


@dataclass(frozen=True)
class Ranking:
    """Every grid point's ranking, in the recipe's order, and the run's one figure."""

    points: Mapping[GridPoint, PointRanking]
    figure: F.Figure  # what the run's cells are ranked by, in one figure (a chart's scale)

    @property
    def undecided(self) -> tuple[Step, ...]:
        return tuple(step for point in self.points.values() for step in point.undecided)

    def still_to_decide(self, failed: Iterable[str] = ()) -> StillToDecide:
        """Both sides of every undecided pair and every unsettled entrant, but no pair with a
        side that failed (no round can measure it): empty when a run that stops on its data
        is done."""
        gone = set(failed)
        wanted: set[str] = set()
        pairs: list[Step] = []
        for point in self.points.values():
            for step in point.undecided:
                pair = {step.ahead.key, step.behind.key}
                if not pair & gone:
                    wanted |= pair
                    pairs.append(step)
            wanted |= {p.key for p in point.unsettled if p.key not in gone}
        return StillToDecide(frozenset(wanted), tuple(pairs))

    def separated(self) -> frozenset[str]:
        """Every point's entrants the evidence puts apart from both neighbours."""
        return frozenset(key for point in self.points.values() for key in point.separated())

    def at(self, point: GridPoint) -> PointRanking | None:
        return self.points.get(point)


def rank(
    entrants: Sequence[Entrant], options: RunOptions, figure: F.Figure | None = None
) -> Ranking:
    """The ranking of these entrants by the run's options (the practical threshold, how ratios
    get their intervals, the target a lone entrant's interval must reach): each by the figure
    it is ranked by, or by `figure` when given (tune ranks its candidates by capacity)."""
    evidence = options.evidence
    points = {
        point: _point(point, group, figure or group[0].figure, evidence, options)
        for point, group in by_point(entrants, lambda e: e.point).items()
    }
    run_figure = figure or options.run_figure([point.mode for point in points])
    return Ranking(points, run_figure)


def _median(entrant: Entrant, figure: F.Figure) -> float | None:
    samples = entrant.samples.get(figure.key)
    return statistics.median(samples) if samples else None


def _point(
    point: GridPoint, group: list[Entrant], figure: F.Figure, evidence: Evidence,
    options: RunOptions,
) -> PointRanking:  # fmt: skip
    shown = best_first(group, lambda e: _median(e, figure), figure)
    ranked = [e for e in shown if e.ranks and e.samples.get(figure.key)]
    places = {e.key: Place(e, _median(e, figure) or 0.0) for e in ranked}
    steps = tuple(
        _step(a, b, places, figure, evidence) for a, b in itertools.pairwise(ranked)
    )  # fmt: skip
    alone = len(ranked) == 1 and not settled(
        median_interval(list(ranked[0].samples[figure.key])), options.target_half_width_pct
    )
    return PointRanking(
        point, figure, tuple(shown), tuple(places.values()), steps, evidence,
        (places[ranked[0].key],) if alone else (),
    )  # fmt: skip


def _step(
    ahead: Entrant, behind: Entrant, places: dict[str, Place], figure: F.Figure,
    evidence: Evidence,
) -> Step:  # fmt: skip
    judged = evidence.judge(ahead.samples[figure.key], behind.samples[figure.key], figure)
    if judged.undecided:
        call = Call.UNDECIDED
    elif judged.verdict == "a":
        call = Call.AHEAD
    else:  # a tie; or "b": the evidence disagrees with the medians' order, so no winner
        call = Call.TIE
    ratio = better_by(judged.ratio, figure) if judged.ratio is not None else None
    why = judged.why or ("the rounds disagree with the medians' order" if call is Call.TIE else "")
    return Step(
        ahead.point, places[ahead.key], places[behind.key], call, ratio, why, judged.more_rounds,
        judged.too_few,
    )  # fmt: skip


# --- what a ranking writes in a run's JSON, declared once --------------------------------------


@dataclass(frozen=True)
class OpenRatio:
    """A ratio with its interval; a bound a confidence sequence has not reached yet is null."""

    value: float
    low: float | None
    high: float | None

    @classmethod
    def of(cls, ratio: Ratio | None) -> OpenRatio | None:
        if ratio is None:
            return None
        return cls(
            ratio.value, ratio.low or None, ratio.high if math.isfinite(ratio.high) else None
        )


@dataclass(frozen=True)
class RankingStep:
    """What the evidence says of a stack against the one before it in the order."""

    call: Call
    ratio: OpenRatio | None  # how many times better the one before is (above 1: ahead)
    why: str
    more_rounds: int | None  # undecided: the rounds more it is expected to need (null: none)


@dataclass(frozen=True)
class RankingPlace:
    """A ranked stack and the evidence against the one before it."""

    stack: str  # the stack's label
    key: str
    value: float  # its median of the point's figure
    tied_with_previous: bool
    from_previous: RankingStep | None


@dataclass(frozen=True)
class UndecidedPair:
    """A pair a run that stops on its data left undecided, and what would decide it."""

    ahead: str
    behind: str
    would_decide: str


@dataclass(frozen=True)
class PointRankingJson:
    """One grid point's order, best first: only the ranked stacks (not the ceiling, the
    sentinel or a nonconformant stack)."""

    point: dict[str, Any]
    figure: str
    ranking: list[RankingPlace]
    undecided: list[UndecidedPair]


@dataclass(frozen=True)
class TierJson:
    """Neighbours no adjacent pair separates, and what separates them from the next tier."""

    stacks: list[str]  # cell keys, best first: neighbours no adjacent pair separates
    ratio_to_next: OpenRatio | None  # its last over the next tier's first
    undecided: list[str]  # what would decide each pair inside it the run left undecided
