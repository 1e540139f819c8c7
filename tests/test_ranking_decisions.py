"""A run that stops when its ranking is decided stays honest: simulated grid points with
known effects and known noise, measured round by round only where an adjacent pair is still
undecided and stopped when none is, make a false decision (a wrong order, a difference between
equal stacks, a tie between stacks more than the threshold apart) at most alpha of the time.
Seeded, so the counts are the same on every machine."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from benchlab.analysis.grid import GridPoint
from benchlab.analysis.ranking import Call, PointRanking, Step, rank
from benchlab.analysis.run_options import RunOptions
from benchlab.analysis.samples import Samples
from benchlab.analysis.sequential import ALPHA, rounds_to_decide
from benchlab.core import figures as F
from tests.entrants import Contender

RUNS = 1_000
FIRST_ROUNDS, MAX_ROUNDS = 3, 40
MIN_EFFECT_PCT = 5.0
# Four stacks: two equal, then 30 % and 60 % apart (true throughputs, relative).
TRUE = {"a": 1.0, "b": 1.0, "c": 1.3, "d": 2.08}
POINT = GridPoint(None, "json", "wrk", 64)


def _ranked(
    series: dict[str, dict[int, float]], figure: F.Figure = F.THROUGHPUT,
    min_effect_pct: float = MIN_EFFECT_PCT,
) -> PointRanking:  # fmt: skip
    """The stacks' series at one point, ranked as a run that stops on its data ranks them."""
    entrants = [
        Contender(key, key, POINT, figure, Samples(tuple(s.values()), tuple(s)), ranks=True)
        for key, s in series.items()
    ]
    options = RunOptions(ratio_method="sequential", min_effect_pct=min_effect_pct)
    return rank(entrants, options).points[POINT]


def _adaptive_run(rng: random.Random, own_sd: float, shared_sd: float):
    """Rounds of the stacks still to decide, until none is or MAX_ROUNDS; each round's
    shared movement moves every stack measured in it."""
    series: dict[str, dict[int, float]] = {key: {} for key in TRUE}
    todo = set(TRUE)
    rounds = trials = 0
    for r in range(MAX_ROUNDS):
        shared = rng.gauss(0.0, shared_sd)
        for key in todo:
            series[key][r] = 1000.0 * TRUE[key] * math.exp(shared + rng.gauss(0.0, own_sd))
        rounds, trials = rounds + 1, trials + len(todo)
        if r + 1 < FIRST_ROUNDS:
            continue
        todo = {
            key for step in _ranked(series).undecided for key in (step.ahead.key, step.behind.key)
        }
        if not todo:
            break
    return _ranked(series).steps, rounds, trials


def _false(step: Step) -> bool:
    """Whether a decided pair's decision contradicts the truth: an order (ahead, or a tie
    whose interval still excludes 1: under the threshold) the truth does not have, or a tie
    within the threshold between stacks further apart."""
    truth = TRUE[step.ahead.key] / TRUE[step.behind.key]
    assert step.ratio is not None
    if step.call is Call.AHEAD or step.ratio.significant:
        return truth <= 1.0 if step.ratio.value > 1 else truth >= 1.0
    return abs(math.log(truth)) >= math.log1p(MIN_EFFECT_PCT / 100)


@pytest.mark.slow
def test_stopping_when_the_ranking_is_decided_keeps_false_decisions_under_alpha() -> None:
    rng = random.Random(20261125)
    decided = false = undecided_runs = 0
    rounds, saved = [], []
    for _ in range(RUNS):
        pairs, used, trials = _adaptive_run(rng, own_sd=0.04, shared_sd=0.1)
        rounds.append(used)
        saved.append(1 - trials / (len(TRUE) * used))
        undecided_runs += any(p.call is Call.UNDECIDED for p in pairs)
        for pair in pairs:
            if pair.call is not Call.UNDECIDED:
                decided += 1
                false += _false(pair)
    assert false / decided <= ALPHA, (false, decided)
    # And it stops: most runs decide every pair (a tie within 5 % under 4 % noise a stack
    # takes the most rounds) before the cap, and the rounds after the first go only to the
    # stacks still undecided, not to the pair decided in the first rounds.
    assert undecided_runs / RUNS < 0.1, undecided_runs
    assert statistics.median(rounds) < MAX_ROUNDS, statistics.median(rounds)
    assert statistics.median(saved) > 0.25, statistics.median(saved)


def test_rounds_go_only_to_the_pairs_still_undecided() -> None:
    # c and d are far apart after five rounds; a and b are not yet told apart or tied.
    series = {
        "a": {r: v for r, v in enumerate((1000, 1060, 950, 1040, 990))},
        "b": {r: v for r, v in enumerate((1010, 990, 1020, 980, 1000))},
        "d": {r: v for r, v in enumerate((5000, 5100, 4900, 5050, 4950))},
    }
    ranked = _ranked(series)
    first, second = ranked.steps
    assert (first.ahead.key, first.behind.key) == ("d", second.ahead.key)
    assert first.call is Call.AHEAD
    assert second.call is Call.UNDECIDED
    assert {s.ahead.key for s in ranked.undecided} | {s.behind.key for s in ranked.undecided} == {
        "a",
        "b",
    }
    assert second.more_rounds is not None and second.more_rounds > 0


def test_for_a_latency_lower_is_better_and_rounds_pair_by_index() -> None:
    # p99 in ms: x is lower (better) than y in every shared round; round 9 of x has no y.
    x = {0: 10.0, 1: 11.0, 2: 10.5, 3: 10.2, 4: 10.8, 5: 10.1, 9: 99.0}
    y = {0: 20.0, 1: 21.0, 2: 20.5, 3: 20.2, 4: 20.8, 5: 20.1}
    (pair,) = _ranked({"x": x, "y": y}, F.P99, 5.0).steps
    assert (pair.ahead.key, pair.behind.key) == ("x", "y")
    assert pair.ratio is not None and pair.ratio.fewest == 6  # the rounds both were measured in
    assert pair.call is Call.AHEAD  # x better: its p99 is lower
    assert 1.8 < pair.ratio.value < 2.1  # y ÷ x: how many times lower x's is


def test_the_rounds_a_pair_still_needs_fall_as_its_effect_grows() -> None:
    rng = random.Random(3)
    noise = [rng.gauss(0.0, 0.05) for _ in range(4)]
    far = rounds_to_decide([0.5 + e for e in noise], MIN_EFFECT_PCT)
    near = rounds_to_decide([0.1 + e for e in noise], MIN_EFFECT_PCT)
    assert far is not None and near is not None and far <= near
    assert rounds_to_decide([0.02 + e for e in noise], 0.0) is None or near <= (
        rounds_to_decide([0.02 + e for e in noise], 0.0) or 0
    )
