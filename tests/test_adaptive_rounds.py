"""The adaptive rounds decide what the report ranks by: the recipe's `rank_by` (else the
mode's figure), at the report's grid points. In process: the rounds' trials are written
by a stand-in for the launches (a scheduling test: no figure here is a measurement)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchlab.analysis.run_options import RunOptions
from benchlab.recipe import Cell
from benchlab.runner.measurer import Measurer
from benchlab.runner.records import cell_record
from benchlab.store import RunInfo, Store
from tests.stored_runs import _trial

ROUNDS, MAX_ROUNDS = 3, 8
# Throughput far apart (every pair decided by it in three rounds); CPU per request of the
# first two within a few % of each other with noise (undecided by it), the third far off.
THROUGHPUT = {"gin": 40_000.0, "sanic": 20_000.0, "tornado": 5_000.0}
CPU_US = {"gin": 100.0, "sanic": 103.0, "tornado": 400.0}


class RoundsWritten(Measurer):
    """Measures a round by writing each cell's trial: the figures the test chose, with a
    round-to-round noise of a few % on CPU per request."""

    def __init__(self, session: SimpleNamespace, rng: random.Random) -> None:
        super().__init__(session)  # type: ignore[arg-type]
        self.rng = rng
        self.measured_in: dict[int, list[str]] = {}

    def _run_round(self, round_index: int, cells, adaptive: bool = False) -> None:
        for cell in cells:
            if self.done_rounds(cell) > round_index:
                continue
            rps = THROUGHPUT[cell.stack] * self.rng.uniform(0.995, 1.005)
            trial = _trial(round_index, rps, cell.connections, 50.0)
            cpu_us = CPU_US[cell.stack] * self.rng.uniform(0.9, 1.1)
            trial = dataclasses.replace(trial, server_cpu_s=cpu_us * trial.requests / 1e6)
            self.session.store.add_trial(self.session.cells.ids[cell], trial)
            self.session.cells.measured.add(cell)
            self.measured_in.setdefault(round_index, []).append(cell.stack)


def _session(tmp_path: Path, rank_by: str | None) -> SimpleNamespace:
    store = Store(tmp_path / "results.db")
    run_id = store.create_run(_run_info())
    cells = [Cell(stack, "json", "wrk", 64, 1, 2, 5, 1) for stack in THROUGHPUT]
    options = RunOptions(rank_by=rank_by, min_effect_pct=1.0, ratio_method="sequential")
    ids = {c: store.add_cell(cell_record(run_id, i, c, c.stack)) for i, c in enumerate(cells)}
    return SimpleNamespace(
        store=store,
        run_id=run_id,
        run_options=options,
        cells=SimpleNamespace(ids=ids, failed={}, measured=set(), planned=cells),
        plan=SimpleNamespace(recipe=SimpleNamespace(warmup=0)),
        costs=None,
        clock=SimpleNamespace(deadline_s=None, time_left=lambda needs_s=0.0, planned=True: True),
        reporter=SimpleNamespace(
            status=lambda text: None, extend=lambda n: None, ranking=lambda r, cells: None
        ),
    )


def _run_info() -> RunInfo:
    return RunInfo("r.toml", "r", "", "q", "benchlab run r.toml", "0" * 16, (0,), (1,), {}, {})


def _stacks_in_adaptive_rounds(tmp_path: Path, rank_by: str | None) -> set[str]:
    session = _session(tmp_path, rank_by)
    measurer = RoundsWritten(session, random.Random(7))
    measurer.measure(session.cells.planned, ROUNDS, MAX_ROUNDS)
    return {
        stack
        for round_index, stacks in measurer.measured_in.items()
        if round_index >= ROUNDS
        for stack in stacks
    }


def test_extra_rounds_decide_the_figure_the_recipe_ranks_by(tmp_path: Path) -> None:
    # Ranked by CPU per request: gin and sanic are within noise of each other, so the
    # extra rounds go to them (and only them: tornado is decided, far off).
    assert _stacks_in_adaptive_rounds(tmp_path, "cpu_us_per_request") == {"gin", "sanic"}


@pytest.mark.parametrize("rank_by", [None, "throughput_rps"])
def test_without_rank_by_the_mode_figure_decides(tmp_path: Path, rank_by: str | None) -> None:
    # Throughput separates every pair in the first rounds: no adaptive round is needed.
    assert _stacks_in_adaptive_rounds(tmp_path, rank_by) == set()
