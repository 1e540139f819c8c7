"""tune's decisions, read off the Ranking a run is decided by (analysis/ranking.py), so that
what a tune says of two candidates and what a run says of the same two as stacks cannot
disagree (tests/test_tune_choice.py draws candidates' replicates and checks it).

- The answer: the candidates a capacity search measured are the entrants of a capacity
  Ranking (its search cells, at the search's one grid point); the answer is the cheapest
  of its top tier — the tier no adjacent pair's evidence separates (3+ replicates a side,
  an interval excluding 1, an effect over the practical threshold) — and the rest of that
  tier is "as good within the noise". The tune's proof replays the answer this gives while
  it runs, and its report names the same one.
- The screen: the first pass measures each candidate once, in a closed loop. One trial a
  side is too few for the evidence rule (its ranking of the first pass is one tier), so
  the first pass only screens, by stated bounds: a candidate under SURVIVE of the first
  place is dropped (its capacity cannot come close), and those within FIRST_PASS_TIE of
  the first place — what two closed-loop trials of one candidate differ by here — are
  searched cheapest first, then the rest in the Ranking's order.
- What the reports say of two candidates reads these rules too: a first-pass candidate the
  screen left behind (`left_behind`), the capacity Ranking's evidence between two searched
  ones (`Choice.ranked.beats`), and whether more workers of one kind carried more in the
  first pass (`more_workers_carry_more`).
- Cheapest: what a candidate is given (its workers, or a command's knob values), then its
  memory, then its CPU per request, as its first pass measured them (`cost`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from benchlab.analysis.grid import GridPoint
from benchlab.analysis.ranking import Call, PointRanking, Ranking, rank
from benchlab.analysis.run_options import RunOptions
from benchlab.core import figures as F
from benchlab.core.modes import Mode

SURVIVE = 0.5  # a candidate under half of the first place's closed loop is dropped
# More workers of one kind "carry more" in the first pass when their closed loop is this much
# over one worker's: past what one closed-loop trial each varies by (FIRST_PASS_TIE) with room
# for a server's own overhead of more processes on the same cores.
WORKERS_CARRY_MORE = 1.3
# Two first-pass closed loops this close are not told apart: one closed-loop trial each, and
# this VM's trials vary 5–15 % (two tunes of one app: 407 vs 409 req/s one time, 579 vs 463
# the next). tune searches the cheapest of such ties first, and the answer names the rest.
FIRST_PASS_TIE = 0.10

Cost = tuple[float, ...]


def cost(size: Sequence[float], rss_mb: float | None, cpu_us: float | None) -> Cost:
    """What a candidate costs to run, to be sorted cheapest first: what it is given (`size`:
    its workers, or a command's knob values), then its memory, then its CPU per request, as
    its first pass measured them (a figure it lacks costs the most)."""
    return (*size, rss_mb or math.inf, cpu_us or math.inf)


# --- the answer: the capacity Ranking's top tier, cheapest first ---------------------------


@dataclass(frozen=True)
class Choice:
    """The answer of a searched tune: `best` (a search cell's key), the rest of its tier
    cheapest first, and the capacity Ranking it was read from."""

    best: str
    equals: tuple[str, ...]
    ranked: PointRanking

    def beats(self, key: str) -> bool:
        """Whether the evidence puts the answer's tier ahead of `key`'s (a run would say
        "ahead" of the two as stacks)."""
        tier = self.ranked.tier_of(key)
        return tier is not None and tier > 0


def capacity_point(ranking: Ranking) -> PointRanking | None:
    """The search's point: where the candidates are ranked by capacity."""
    found = [p for point, p in ranking.points.items() if point.mode == Mode.SLO and p.order]
    return max(found, key=lambda p: len(p.order), default=None)


def choose(ranking: Ranking, costs: Mapping[str, Cost], eligible: set[str]) -> Choice | None:
    """The cheapest candidate of the capacity Ranking's top tier, among `eligible` search
    cells (not failed, a capacity above 0); None when none was searched."""
    point = capacity_point(ranking)
    if point is None:
        return None
    for tier in point.tiers:
        keys = sorted(
            (p.key for p in tier.places if p.key in eligible), key=lambda k: costs.get(k, ())
        )
        if keys:
            return Choice(keys[0], tuple(keys[1:]), point)
    return None


def capacity_order(ranking: Ranking) -> list[str]:
    """The searched candidates in the capacity Ranking's order, best first."""
    point = capacity_point(ranking)
    return [p.key for p in point.order] if point is not None else []


def pair_call(choice: Choice, a: str, b: str) -> Call:
    """What the capacity Ranking says of two searched candidates: AHEAD when `a`'s tier is
    ahead of `b`'s, TIE when one tier holds both (the tune: "as good within the noise")."""
    tier_a, tier_b = choice.ranked.tier_of(a), choice.ranked.tier_of(b)
    if tier_a is None or tier_b is None or tier_a == tier_b:
        return Call.TIE
    return Call.AHEAD if tier_a < tier_b else Call.TIE


# --- the first pass: a screen ---------------------------------------------------------------

FIRST_PASS_POINT = GridPoint(None, "app", "first pass", 0)


@dataclass(frozen=True)
class FirstPass:
    """A candidate's first pass: its cell's key, its closed-loop throughput, its cost. It is
    the first pass's Ranking's entrant (analysis/ranking.Entrant), ranked by its throughput."""

    key: str
    closed_rps: float
    cost: Cost

    @property
    def label(self) -> str:
        return self.key

    @property
    def stack(self) -> str:
        return self.key

    @property
    def point(self) -> GridPoint:
        return FIRST_PASS_POINT

    @property
    def figure(self) -> F.Figure:
        return F.THROUGHPUT

    @property
    def samples(self) -> Mapping[str, Sequence[float]]:
        return {F.THROUGHPUT.key: (self.closed_rps,)}

    @property
    def ranks(self) -> bool:
        return True


def first_pass_order(measured: Sequence[FirstPass], options: RunOptions) -> list[FirstPass]:
    """The first pass in the Ranking's order (one trial each: by the medians, one tier)."""
    by_key = {m.key: m for m in measured}
    point = rank(measured, options, figure=F.THROUGHPUT).at(FIRST_PASS_POINT)
    return [by_key[p.key] for p in point.order] if point is not None else []


def tied_with_first(rps: float, first: float) -> bool:
    """One closed-loop trial each cannot tell these apart (FIRST_PASS_TIE)."""
    return rps >= (1 - FIRST_PASS_TIE) * first


def screen(measured: Sequence[FirstPass], most: int, options: RunOptions) -> list[str]:
    """The candidates to search, at most `most`: those tied with the first place cheapest
    first, then the rest above SURVIVE of it in the Ranking's order."""
    order = first_pass_order(measured, options)
    if not order:
        return []
    first = order[0].closed_rps
    tied = [m for m in order if tied_with_first(m.closed_rps, first)]
    rest = [m for m in order if m.closed_rps >= SURVIVE * first and m not in tied]
    tied.sort(key=lambda m: m.cost)
    return [m.key for m in (tied + rest)[:most]]


def left_behind(measured: Sequence[FirstPass], options: RunOptions) -> set[str]:
    """The candidates the screen drops whatever the budget: under SURVIVE of the first
    pass's first place (their capacity cannot come close to its)."""
    order = first_pass_order(measured, options)
    if not order:
        return set()
    return {m.key for m in order if m.closed_rps < SURVIVE * order[0].closed_rps}


def more_workers_carry_more(one: FirstPass, most: FirstPass) -> bool:
    """Whether `most` (more workers of one kind) carried more than `one` in the first pass
    (WORKERS_CARRY_MORE): the app waits more than it computes; else it is bound by CPU."""
    return most.closed_rps >= WORKERS_CARRY_MORE * one.closed_rps


def unsearched_ties(
    best: FirstPass, measured: Sequence[FirstPass], searched: set[str]
) -> list[FirstPass]:
    """Candidates the first pass could not tell from the answer's that were not searched (the
    budget searched fewer), cheapest first: the answer is one of them, not the only one."""
    ties = [
        m for m in measured
        if m.key not in searched and m.key != best.key
        and (tied_with_first(m.closed_rps, best.closed_rps)
             and tied_with_first(best.closed_rps, m.closed_rps))
    ]  # fmt: skip
    return sorted(ties, key=lambda m: m.cost)
