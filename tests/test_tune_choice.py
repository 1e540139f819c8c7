"""tune is decided by the Ranking a run is decided by (analysis/tune_choice.py): for drawn
candidates' capacity replicates and first-pass costs, what the tune says of two candidates
("as good within the noise", or the answer holds more) and what a run says of the same two
as stacks (its capacity Ranking's tiers, and the `>` or `≈` its takeaway writes between
them) never disagree; the answer is the cheapest of the run's top tier.

Both sides go the whole way a reader's does: the cells stored (a tune's with its first
pass; a run's as stacks), summarised, and read by `recommend` and by the run's Ranking."""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchlab.analysis.capacity import Objective
from benchlab.analysis.ranking import Call
from benchlab.analysis.recommendation import CANDIDATE_SIZE, recommend
from benchlab.analysis.run_options import RunOptions
from benchlab.analysis.summary import RunSummary, summarise
from benchlab.analysis.tune_choice import capacity_point, cost
from benchlab.analysis.tune_options import TuneOptions
from benchlab.core.modes import Mode
from benchlab.recipe import Cell
from benchlab.runner.records import cell_record
from benchlab.store import CapacityRecord, RunInfo, Store
from tests.stored_runs import MACHINE, held_trial

SLO = Objective(100.0, None, 1.0)
STACK = "gunicorn-gthread"


@dataclass(frozen=True)
class Drawn:
    """A candidate: its workers, its first pass's memory, its search's replicates."""

    workers: int
    rss_mb: float
    replicates: tuple[float, ...]


@st.composite
def candidates(draw: st.DrawFn) -> list[Drawn]:
    """2-4 candidates, each a chosen distance from the others, 1-6 replicates of noise."""
    count = draw(st.integers(2, 4))
    found = []
    for _ in range(count):
        base = draw(st.sampled_from([500.0, 520.0, 600.0, 800.0, 1000.0]))
        noise = draw(st.lists(st.floats(0.9, 1.1), min_size=1, max_size=6))
        found.append(
            Drawn(
                draw(st.integers(1, 3)),
                draw(st.sampled_from([40.0, 60.0, 90.0])),
                tuple(round(base * n, 1) for n in noise),
            )
        )
    return found


def _cell(index: int, drawn: Drawn, mode: Mode) -> Cell:
    # Each candidate its own thread count: its cells are its own launch.
    return Cell(STACK, "app", "vegeta", 64, 1, 2, 5, drawn.workers, server_threads=4 + index,
                mode=mode)  # fmt: skip


def _stored(store: Store, drawn: list[Drawn], tune: TuneOptions | None) -> RunSummary:
    options = dataclasses.replace(RunOptions(slo=SLO), tune=tune).to_json()
    run_id = store.create_run(
        RunInfo("app.py:app", "a", "", "", "benchlab", "0123456789abcdef", (0,), (1,),
                dict(MACHINE), options)
    )  # fmt: skip
    position = 0
    for index, candidate in enumerate(drawn):
        label = f"{STACK} w={candidate.workers} t={4 + index}"
        facts = {"command": label, CANDIDATE_SIZE: [float(candidate.workers)]}
        if tune is not None:  # a tune's first pass: its closed loop and its cost
            first = store.add_cell(
                cell_record(run_id, position, _cell(index, candidate, Mode.CLOSED), label,
                              facts=facts)
            )  # fmt: skip
            position += 1
            trial = dataclasses.replace(
                held_trial(0, 2000.0), target_rate=None, server_rss_mb=candidate.rss_mb
            )
            store.add_trial(first, trial)
            store.mark_cell(first, "ok")
        search = store.add_cell(
            cell_record(run_id, position, _cell(index, candidate, Mode.SLO), label, facts=facts)
        )
        position += 1
        for r, found in enumerate(candidate.replicates):
            store.add_capacity(search, CapacityRecord(r, found, found, found * 1.05, 5))
            store.add_trial(search, held_trial(r, found, probe="search"))
        store.mark_cell(search, "ok")
    store.finish_run(run_id, "complete")
    return summarise(store, run_id)


@contextlib.contextmanager
def _summaries(drawn: list[Drawn]) -> Iterator[tuple[RunSummary, RunSummary]]:
    """The candidates as a tune stores them, and as a run's stacks; removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="tune-choice-") as directory:
        tuned, ran = Store(Path(directory) / "t.db"), Store(Path(directory) / "r.db")
        try:
            tune = TuneOptions(key="k", subject="app:app", slo_p99_ms=100.0)
            yield _stored(tuned, drawn, tune), _stored(ran, drawn, None)
        finally:
            tuned.close()
            ran.close()


@given(candidates())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_tune_and_a_run_say_the_same_of_two_candidates(drawn: list[Drawn]) -> None:
    with _summaries(drawn) as (tuned, ran):
        recommendation, results = recommend(tuned)
        run_point = capacity_point(ran.ranking)
        assert recommendation is not None and run_point is not None
        labels = {p.key: p.label for p in run_point.order}
        tier_of = {labels[p.key]: i for i, t in enumerate(run_point.tiers) for p in t.places}
        top = {p.label for p in run_point.tiers[0].places}
        said_equal = {recommendation.best.label, *(c.label for c in recommendation.equals)}
        # "As good within the noise" is exactly the run's top tier ...
        assert said_equal == top, (said_equal, top, run_point.steps)
        # ... and the answer is its cheapest (fewest workers, then least memory, as drawn:
        # every first pass here costs the same CPU per request), the Ranking's order between
        # equals.
        drawn_cost = {
            f"{STACK} w={d.workers} t={4 + i}": cost((float(d.workers),), d.rss_mb, None)
            for i, d in enumerate(drawn)
        }
        in_order = [p.label for p in run_point.order if p.label in top]
        assert min(in_order, key=lambda label: drawn_cost[label]) == recommendation.best.label
        # Every other candidate: the run puts a `>` between the answer's tier and its own.
        for c in results:
            if c.label in said_equal:
                continue
            assert tier_of[c.label] > tier_of[recommendation.best.label]
            steps = [s for s in run_point.steps if s.call is Call.AHEAD]
            assert steps, run_point.steps
