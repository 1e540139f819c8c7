"""A run's ranking, built once: who is ranked, at which grid points, in what order (best
first), each adjacent pair's evidence, the tiers, and what is still undecided with the rounds
that would decide it. The runner asks it what to measure next (a run stops when it says
decided); the run's summary stores it; every report reads it and says "undecided" exactly
where it does.

The rule (docs/verdicts.md): at each point the ranked stacks are put in order of the median
of the figure they are ranked by, and each *adjacent* pair is judged by the evidence rule
(`analysis/evidence.py`). A pair is `AHEAD` (the first is better), a `TIE`, or `UNDECIDED`
(a run that stops on its data has not decided it yet). Tiers are cut where a pair is ahead,
so a tier is what the adjacent pairs could not separate: the runner decides exactly the pairs
the tiers are made of.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from benchlab.analysis.cell_records import measured
from benchlab.analysis.combine import samples
from benchlab.analysis.evidence import Evidence
from benchlab.analysis.grid import GridPoint, point_of
from benchlab.analysis.relative import is_ceiling_cell
from benchlab.analysis.run_options import RunOptions
from benchlab.analysis.stats import Ratio, converged
from benchlab.core import figures as F
from benchlab.store import CapacityRecord, CellRecord, Store, TrialRecord

T = TypeVar("T")


def is_ranked(
    stack: str, scenario: str, facts: Mapping[str, Any] | None, sentinel: str | None
) -> bool:
    """Who is ranked: every stack but the run's sentinel (a reference measured in every round,
    and its A/A copy: the noise), the ceiling (the load tool's limit at its point, not a
    contender: nginx-static, or a WebSocket scenario's Go server) and a stack found
    nonconformant (measured and shown, not ranked: a server that gets a client's requests
    wrong can look fast by doing less)."""
    unranking = ((facts or {}).get("conformance") or {}).get("unranking")
    ceiling = is_ceiling_cell(stack, scenario, facts)
    return stack != sentinel and not ceiling and not unranking


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


@dataclass(frozen=True)
class Entrant:
    """A cell as the ranking sees it: where it is ranked, by what, its samples of that figure
    (each knowing its round), whether it competes, and whether rounds can still measure it."""

    key: str
    label: str  # the stack with its launch's settings, as reports name it
    point: GridPoint
    figure: F.Figure
    samples: Sequence[float]
    ranks: bool
    failed: bool = False
    stack: str = ""  # the catalogue's name (the label when not given)

    @property
    def value(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None


def entrant(
    record: CellRecord,
    trials: Sequence[TrialRecord],
    capacities: Sequence[CapacityRecord],
    options: RunOptions,
) -> Entrant:
    """The cell of a stored run as the ranking sees it (the runner's and the report's alike)."""
    figure = options.figure_for(record.mode, record.scenario)
    records = measured(record.mode, trials, capacities)
    return Entrant(
        key=record.key,
        label=record.stack_label,
        point=point_of(record, options.pool_swept),
        figure=figure,
        samples=samples(figure, records.trials, records.capacities),
        ranks=is_ranked(record.stack, record.scenario, record.facts, options.sentinel),
        failed=record.status == "failed",
        stack=record.stack,
    )


class Call(StrEnum):
    """What the evidence says of two neighbours in the order."""

    AHEAD = "ahead"  # the first is better, by the evidence rule
    TIE = "tie"  # not told apart, and no round the run would add is waited for
    UNDECIDED = "undecided"  # a run that stops on its data has not decided it yet


@dataclass(frozen=True)
class Place:
    """A ranked cell's place: its key, its stack's label (and name) and its median figure."""

    key: str
    label: str
    value: float
    stack: str


def better_by(ratio: Ratio, figure: F.Figure) -> Ratio:
    """a / b as 'a is this many times better than b' (inverted when lower is better)."""
    if figure.better is F.Better.LOWER:
        return Ratio(
            _inverse(ratio.value), _inverse(ratio.high), _inverse(ratio.low), ratio.confidence,
            ratio.fewest,
        )  # fmt: skip
    return ratio


def _ratio_json(ratio: Ratio | None) -> dict[str, float | None] | None:
    if ratio is None:
        return None
    # A bound a confidence sequence has not reached yet (0 or ∞) is null.
    low, high = (ratio.low or None), (ratio.high if math.isfinite(ratio.high) else None)
    return {"value": ratio.value, "low": low, "high": high}


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

    def as_json(self) -> dict[str, Any]:
        return {
            "call": self.call.value,
            "ratio": _ratio_json(self.ratio),
            "why": self.why,
            "more_rounds": self.more_rounds,
        }

    @property
    def would_decide(self) -> str:
        """What would decide an undecided pair, in words."""
        if self.more_rounds is None:
            return "more rounds than a run would spend would decide it, at this noise"
        return f"about {self.more_rounds} more round(s) would decide it"


@dataclass(frozen=True)
class Tier:
    """Neighbours no adjacent pair separates; `after` separates the tier from the next."""

    places: tuple[Place, ...]
    within: tuple[Step, ...]  # the ties and undecided pairs inside it
    after: Step | None

    @property
    def undecided(self) -> tuple[Step, ...]:
        return tuple(step for step in self.within if step.call is Call.UNDECIDED)


@dataclass(frozen=True)
class PointRanking:
    """One grid point: every cell there (`cells`, best first, the unmeasured last), the
    ranked ones in order and the evidence between neighbours."""

    point: GridPoint
    figure: F.Figure
    cells: tuple[str, ...]  # every cell's key: ranked or not (the ceiling, the sentinel)
    order: tuple[Place, ...]
    steps: tuple[Step, ...]  # order[i] against order[i + 1]
    samples: Mapping[str, Sequence[float]]  # every cell's, of `figure`, by key
    evidence: Evidence
    # A ranked cell alone at its point whose interval is not yet within the target: the
    # runner's adaptive rounds measure it until it is.
    unsettled: tuple[Place, ...] = ()

    @property
    def undecided(self) -> tuple[Step, ...]:
        return tuple(step for step in self.steps if step.call is Call.UNDECIDED)

    @property
    def tiers(self) -> tuple[Tier, ...]:
        """The order cut where a pair is ahead: each tier what its pairs could not separate."""
        if not self.order:
            return ()
        found: list[Tier] = []
        places = [self.order[0]]
        within: list[Step] = []
        for step in self.steps:
            if step.call is Call.AHEAD:
                found.append(Tier(tuple(places), tuple(within), step))
                places, within = [], []
            else:
                within.append(step)
            places.append(step.behind)
        return (*found, Tier(tuple(places), tuple(within), None))

    def as_json(self) -> dict[str, Any]:
        """The point's order, each place with the evidence against the one before it."""
        before: list[Step | None] = [None, *self.steps]
        return {
            "point": self.point.as_json(),
            "figure": self.figure.key,
            "ranking": [
                {
                    "stack": place.label,
                    "key": place.key,
                    "value": place.value,
                    "tied_with_previous": step is not None and step.call is not Call.AHEAD,
                    "from_previous": None if step is None else step.as_json(),
                }
                for place, step in zip(self.order, before, strict=True)
            ],
            "undecided": [
                {"ahead": s.ahead.key, "behind": s.behind.key, "would_decide": s.would_decide}
                for s in self.undecided
            ],
        }

    def rank_of(self, key: str) -> int | None:
        """The cell's place in the order, 1 for the best; None when it is not ranked here."""
        return next((i + 1 for i, p in enumerate(self.order) if p.key == key), None)

    def tier_of(self, key: str) -> int | None:
        return next((i for i, t in enumerate(self.tiers) if key in {p.key for p in t.places}), None)

    def beats(self, a: str, b: str) -> Ratio | None:
        """a over b ("better by") when a stands in a better tier than b and their own
        evidence declares it too; None otherwise (a rank flip is made of these)."""
        tier_a, tier_b = self.tier_of(a), self.tier_of(b)
        if tier_a is None or tier_b is None or tier_a >= tier_b:
            return None
        judged = self.evidence.judge(self.samples[a], self.samples[b], self.figure)
        if judged.verdict != "a" or judged.ratio is None:
            return None
        return better_by(judged.ratio, self.figure)


@dataclass(frozen=True)
class Ranking:
    """Every grid point's ranking, in the recipe's order, and the run's one figure."""

    points: Mapping[GridPoint, PointRanking]
    figure: F.Figure  # what the run's cells are ranked by, in one figure (a chart's scale)

    @property
    def undecided(self) -> tuple[Step, ...]:
        return tuple(step for point in self.points.values() for step in point.undecided)

    @property
    def decided(self) -> bool:
        """Nothing more rounds could settle: every adjacent pair decided, every cell alone at
        its point within its target. A run that stops on its data stops here."""
        return not self.undecided and not any(p.unsettled for p in self.points.values())

    def to_measure(self, failed: Iterable[str] = ()) -> frozenset[str]:
        """The cells a next round should measure: both sides of every undecided pair, and
        every unsettled cell, but no pair with a side that failed (no round can measure it)."""
        gone = set(failed)
        wanted: set[str] = set()
        for point in self.points.values():
            for step in point.undecided:
                pair = {step.ahead.key, step.behind.key}
                if not pair & gone:
                    wanted |= pair
            wanted |= {p.key for p in point.unsettled if p.key not in gone}
        return frozenset(wanted)

    def at(self, point: GridPoint) -> PointRanking | None:
        return self.points.get(point)


def build(entrants: Sequence[Entrant], options: RunOptions) -> Ranking:
    """The ranking of these cells, by the run's options (rank_by, the practical threshold,
    how ratios get their intervals)."""
    evidence = options.evidence
    points = {
        point: _point(point, group, evidence, options.target_half_width_pct)
        for point, group in by_point(entrants, lambda e: e.point).items()
    }
    figure = options.run_figure([point.mode for point in points])
    return Ranking(points, figure)


def _point(
    point: GridPoint, group: list[Entrant], evidence: Evidence, target_pct: float
) -> PointRanking:
    figure = group[0].figure
    shown = best_first(group, lambda e: e.value, figure)
    ranked = [e for e in shown if e.ranks and e.samples]
    places = {e.key: Place(e.key, e.label, e.value or 0.0, e.stack or e.label) for e in ranked}
    steps = tuple(_step(a, b, places, figure, evidence) for a, b in itertools.pairwise(ranked))
    alone = len(ranked) == 1 and not converged(list(ranked[0].samples), target_pct)
    return PointRanking(
        point, figure, tuple(e.key for e in shown), tuple(places.values()), steps,
        {e.key: e.samples for e in group}, evidence, (places[ranked[0].key],) if alone else (),
    )  # fmt: skip


def _step(
    ahead: Entrant, behind: Entrant, places: dict[str, Place], figure: F.Figure,
    evidence: Evidence,
) -> Step:  # fmt: skip
    judged = evidence.judge(ahead.samples, behind.samples, figure)
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


def stored_ranking(store: Store, run_id: str, options: RunOptions) -> Ranking:
    """The ranking of a stored run as it stands (the runner asks it between rounds)."""
    entrants = [
        entrant(cell, store.trials(cell.id), store.capacities(cell.id), options)
        for cell in store.cells(run_id)
    ]
    return build(entrants, options)
