"""How a run's ratios get their intervals: chosen before the data (the machine's measured noise,
and whether the run stops on its data), and honest under each: a simulation with known noise
checks that each interval covers the true ratio as often as it says. Seeded."""

from __future__ import annotations

import math
import random
import statistics
from pathlib import Path

import pytest

from benchlab.analysis.evidence import Evidence, RatioMethod
from benchlab.analysis.noise import NoiseComponents
from benchlab.analysis.run_options import RunOptions, ratio_method
from benchlab.analysis.samples import Samples, paired
from benchlab.analysis.stats import paired_ratio_interval, ratio_interval
from benchlab.analysis.summary import summarise
from benchlab.core import figures as F
from benchlab.report.takeaways import takeaways
from benchlab.stacks import CATALOGUE
from benchlab.store import Store
from tests.stored_runs import write_run

RUNS = 300
ROUNDS = 8
TRUE_RATIO = 1.2


def _cells(rng: random.Random, own_sd: float, shared_sd: float) -> tuple[Samples, Samples]:
    """Two cells measured in the same ROUNDS rounds: a round's shared movement moves both."""
    a, b = [], []
    for _ in range(ROUNDS):
        shared = rng.gauss(0.0, shared_sd)
        a.append(1000.0 * TRUE_RATIO * math.exp(shared + rng.gauss(0.0, own_sd)))
        b.append(1000.0 * math.exp(shared + rng.gauss(0.0, own_sd)))
    rounds = tuple(range(ROUNDS))
    return Samples(tuple(a), rounds), Samples(tuple(b), rounds)


@pytest.mark.slow
def test_paired_ratios_cover_the_truth_and_are_narrower_when_rounds_share_a_movement() -> None:
    rng = random.Random(20261125)
    covered = 0
    widths_paired, widths_independent = [], []
    for _ in range(RUNS):
        a, b = _cells(rng, own_sd=0.03, shared_sd=0.10)
        pairs = paired(a, b)
        assert pairs is not None
        found = paired_ratio_interval(pairs)
        independent = ratio_interval(a, b)
        assert found is not None and independent is not None
        covered += found.low <= TRUE_RATIO <= found.high
        widths_paired.append(math.log(found.high / found.low))
        widths_independent.append(math.log(independent.high / independent.low))
    # A percentile bootstrap of 8 rounds runs a little under its nominal 95 %.
    assert covered / RUNS >= 0.88, covered
    assert statistics.median(widths_paired) < 0.5 * statistics.median(widths_independent)


def test_a_sequential_judgement_decides_or_says_how_many_rounds_it_lacks() -> None:
    rng = random.Random(5)
    a, b = _cells(rng, own_sd=0.02, shared_sd=0.1)
    evidence = Evidence(5.0, method=RatioMethod.SEQUENTIAL)
    judged = evidence.judge(a, b, F.THROUGHPUT)
    assert judged.verdict == "a" and judged.ratio is not None
    assert judged.ratio.low > 1.05 and judged.ratio.fewest == ROUNDS
    # Three rounds: the sequence cannot exclude anything yet, and says so.
    short = evidence.judge(Samples(a.values[:3], (0, 1, 2)), Samples(b.values[:3], (0, 1, 2)),
                           F.THROUGHPUT)  # fmt: skip
    assert short.verdict == "tie" and "undecided after 3 rounds" in short.why
    # Lower is better for a latency: a's higher p99 makes b the better one.
    assert evidence.judge(a, b, F.P99).verdict == "b"


def test_only_rounds_measured_on_both_sides_are_paired() -> None:
    a = Samples((10.0, 11.0, 12.0, 13.0), (0, 1, 2, 5))
    b = Samples((5.0, 5.5, 6.5), (1, 2, 5))
    assert paired(a, b) == [(11.0, 5.0), (12.0, 5.5), (13.0, 6.5)]
    assert paired(list(a), b) is None  # a plain list knows no rounds: judged as independent
    judged = Evidence(5.0, method=RatioMethod.PAIRED).judge(a, b, F.THROUGHPUT)
    assert judged.verdict == "tie" and judged.why.startswith("3 round(s) measured together")


def test_the_method_is_declared_before_the_data() -> None:
    assert ratio_method(stops_on_its_data=True, rounds_move_together=False) == "sequential"
    assert ratio_method(stops_on_its_data=False, rounds_move_together=True) == "paired"
    assert ratio_method(stops_on_its_data=False, rounds_move_together=False) == "independent"
    shared = NoiseComponents(0.02, 0.03, 0.10, 0.01, rounds=6)
    quiet = NoiseComponents(0.02, 0.08, 0.01, 0.01, rounds=6)
    assert shared.pairing_helps and not quiet.pairing_helps
    # A run stored before the method was: its options have none, and it reads as before.
    old = RunOptions.from_json({"baseline": None, "target_half_width_pct": 5.0})
    assert old.evidence.method is RatioMethod.INDEPENDENT
    assert "each cell's trials on their own" in old.evidence.describe()
    paired_run = RunOptions(ratio_method="paired")
    assert "round by round" in paired_run.evidence.describe()


def test_a_run_that_stopped_on_its_data_is_ranked_by_its_confidence_sequences(
    tmp_path: Path,
) -> None:
    # Eight rounds whose movement (±10 %) every stack shares: independent cells see ±10 %
    # noise; within a round the ratios are exact.
    medians = {"gin": {"json": 50_000}, "sanic": {"json": 10_000},
               "tornado": {"json": 6_100}, "flask+gunicorn": {"json": 1_000}}  # fmt: skip
    moving = (0.9, 1.1, 0.95, 1.05, 1.0, 0.92, 1.08, 1.02)
    found = {}
    for method in ("independent", "sequential"):
        options = RunOptions(baseline="flask+gunicorn", ratio_method=method)
        path = tmp_path / f"{method}.db"
        run_id = write_run(path, medians, trials=8, spread=moving, options=options)
        summary = summarise(Store(path), run_id)
        (only,) = takeaways(summary)
        found[method] = (summary, only)
    independent, sequential = found["independent"][1], found["sequential"][1]
    assert [len(t.places) for t in sequential.tiers] == [1, 1, 1, 1]
    gap = sequential.tiers[1].after  # sanic over tornado: 1.64×, exactly, in every round
    assert gap is not None and gap.ratio is not None
    assert gap.ratio.low == pytest.approx(gap.ratio.high) == pytest.approx(10 / 6.1)
    wide = independent.tiers[1].after
    assert wide is not None and wide.ratio is not None and wide.ratio.high - wide.ratio.low > 0.2
    report = found["sequential"][0].to_json()
    assert "confidence sequence" in report["ratio_method"]
    assert "confidence sequence" in report["evidence"]


def test_a_pair_the_run_stopped_before_deciding_is_called_undecided_not_a_tie(
    tmp_path: Path,
) -> None:
    medians = {"sanic": {"json": 10_000}, "tornado": {"json": 6_100},
               "fastapi+uvicorn": {"json": 5_800}, "flask+gunicorn": {"json": 1_000}}  # fmt: skip
    options = RunOptions(baseline="flask+gunicorn", ratio_method="sequential")
    path = tmp_path / "r.db"
    # Six rounds, each stack's own noise ±4 %: tornado vs fastapi (5 % apart) is neither
    # separated nor tied within 5 % yet.
    own = {"tornado": (0.96, 1.04, 1.0, 0.97, 1.03, 1.01),
           "fastapi+uvicorn": (1.03, 0.98, 0.96, 1.04, 1.0, 0.99)}  # fmt: skip
    run_id = write_run(path, medians, trials=6, options=options, own_spread=own)
    (only,) = takeaways(summarise(Store(path), run_id))
    assert " (undecided: about " in only.sentence, only.sentence
    assert "more round(s) would decide it) ≈ fastapi+uvicorn " in only.sentence, only.sentence
    assert "tie" not in only.sentence
    (tier,) = [t for t in only.tiers_json() if len(t["stacks"]) == 2]
    (undecided,) = tier["undecided"]
    assert undecided.endswith("more round(s) would decide it")


def test_the_report_shows_the_noise_the_run_found_measured(tmp_path: Path) -> None:
    from benchlab.report.html import render_html
    from tests.stored_runs import MACHINE

    noise = {"within_launch": 0.021, "between_launches": 0.064, "shared_by_round": 0.012,
             "own_drift": 0.03, "rounds": 6, "pairing_helps": False,
             "measured_at": "2026-11-25T00:10:00+00:00"}  # fmt: skip
    path = tmp_path / "r.db"
    run_id = write_run(path, machine={**MACHINE, "noise": noise})
    page = render_html(summarise(Store(path), run_id))
    assert "within a launch 2.1 %, between launches 6.4 %, shared by a round 1.2 %" in page
    assert (
        "(relative standard deviations: benchlab selfcheck --noise, 6 rounds, 2026-11-25); "
        "ratios between stacks: ratio of" in page
    )
    plain = write_run(tmp_path / "p.db")
    assert "<b>noise</b>" not in render_html(summarise(Store(tmp_path / "p.db"), plain))


def test_a_lead_the_run_stopped_before_deciding_is_not_called_a_tie(tmp_path: Path) -> None:
    medians = {"sanic": {"json": 10_000}, "tornado": {"json": 9_500},
               "flask+gunicorn": {"json": 1_000}}  # fmt: skip
    options = RunOptions(baseline="flask+gunicorn", ratio_method="sequential")
    path = tmp_path / "r.db"
    own = {"sanic": (0.96, 1.04, 1.0, 0.97, 1.03, 1.01),
           "tornado": (1.03, 0.98, 0.96, 1.04, 1.0, 0.99)}  # fmt: skip
    run_id = write_run(path, medians, trials=6, options=options, own_spread=own)
    (only,) = takeaways(summarise(Store(path), run_id))
    assert "tie" not in only.sentence, only.sentence
    # The lead: sanic, then its ratio to tornado, undecided; then tornado far ahead of flask.
    assert only.sentence.startswith("By throughput, best first: sanic (unstable) 1.0"), (
        only.sentence
    )
    assert "more round(s) would decide it) ≈ tornado 9.5× the next [" in only.sentence, (
        only.sentence
    )


def test_a_budgeted_run_starts_with_the_rounds_a_decision_needs() -> None:
    from benchlab.analysis.sequential import FIRST_DECISIVE_ROUND, t_interval
    from benchlab.cli.run import BUDGET_MAX_TRIALS, _budgeted
    from benchlab.recipe import load_recipe, resolve_recipe

    # The sequence can exclude nothing before FIRST_DECISIVE_ROUND rounds, and can at it.
    assert t_interval(FIRST_DECISIVE_ROUND - 1, 1.0, 0.01) == (-math.inf, math.inf)
    assert math.isfinite(t_interval(FIRST_DECISIVE_ROUND, 1.0, 0.01)[0])
    seed, _ = load_recipe(resolve_recipe("seed-000"), CATALOGUE)
    assert seed.trials > FIRST_DECISIVE_ROUND
    budgeted = _budgeted(seed, trials_given=False)
    assert (budgeted.trials, budgeted.max_trials) == (FIRST_DECISIVE_ROUND, BUDGET_MAX_TRIALS)
    # --trials given on the command line is the user's, and kept.
    assert _budgeted(seed, trials_given=True).trials == seed.trials
    quick, _ = load_recipe(resolve_recipe("quick"), CATALOGUE)
    assert _budgeted(quick, trials_given=False).trials == quick.trials
