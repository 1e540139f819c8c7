"""tune's answer is a rate a user can run at, proved by replaying the printed command: the
rules that choose and judge it, and what every format makes of a proof (no load: the
store's own API; the real replay is in test_tune.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from benchlab.analysis import capacity
from benchlab.analysis.capacity import Objective
from benchlab.analysis.proof_record import ProofJudgement
from benchlab.analysis.run_options import RunOptions
from benchlab.analysis.stats import median_interval
from benchlab.analysis.tune_options import TuneOptions
from benchlab.recipe import Cell
from benchlab.runner.records import cell_record
from benchlab.store import CapacityRecord, RunInfo, Store
from benchlab.tune.plan import TunePlan, fit_search, replicate_overrun_s, search_cost
from benchlab.tune.proof import proof_cost_s
from benchlab.tune.proxy_check import check_cost_s
from tests.conftest import benchlab
from tests.stored_runs import MACHINE, held_trial

SLO = Objective(100.0, None, 1.0)
LABEL = "gunicorn-gthread w=1 t=16"
COMMAND = "gunicorn app:app --bind 0.0.0.0:8000 --workers 1 --worker-class gthread --threads 16"


def test_the_rate_to_run_at_is_one_every_replicate_held_with_spare_capacity() -> None:
    # Replicates close together: 85 % of their median (1197.5) is under the lowest.
    replicates = [1205.0, 1150.0, 1260.0, 1190.0, 1230.0, 1175.0]
    rate = capacity.rate_to_run_at(replicates)
    assert rate == 1018.0
    interval = median_interval(replicates)
    assert interval is not None and rate <= interval.low < interval.median
    # Replicates far apart: the lowest is under 85 % of the median, and binds.
    assert capacity.rate_to_run_at([700.0, 1000.0, 1100.0]) == 700.0
    assert capacity.rate_to_run_at([0.0, 0.0]) is None  # nothing held: no rate to run at
    assert capacity.step_down(1150.0) < 1150.0


def test_a_sustained_window_holds_only_if_no_queue_grew_through_it() -> None:
    steady = dataclasses.replace(held_trial(0, 1000.0), latency_first_ms=2.0, latency_last_ms=2.5)
    assert capacity.sustained_miss(steady, SLO) is None
    # Its p99 is under the target, but the last quarter waited 20× the first: a queue.
    growing = dataclasses.replace(steady, latency_last_ms=40.0)
    assert capacity.misses(growing, SLO) is None
    assert "a queue" in (capacity.sustained_miss(growing, SLO) or "")
    # The search judges its steps by the same rule; a trend alone is a latency miss, which a
    # second window must confirm.
    assert capacity.needs_a_second_window(growing, SLO)
    assert not capacity.needs_a_second_window(steady, SLO)
    slow = dataclasses.replace(steady, latency_p99_ms=130.0)
    assert capacity.sustained_miss(slow, SLO) == "p99 130.0 ms > 100 ms"


def test_a_first_pass_slower_than_planned_shrinks_the_search() -> None:
    left = 3 * search_cost(4) + proof_cost_s() + replicate_overrun_s()
    assert fit_search(3, left) == (3, 4)
    assert fit_search(3, left - 1) != (3, 4)  # the proof's room includes a replicate's overrun
    survivors, replicates = fit_search(3, left, slower=1.6) or (0, 0)
    assert survivors * search_cost(replicates) < 3 * search_cost(4)
    # Without the proof's reserve the same seconds hold more.
    assert fit_search(3, 3 * search_cost(4), proofs=1) != (3, 4)
    assert fit_search(3, 3 * search_cost(4), proofs=0) == (3, 4)
    # The answer's check beside slow clients is kept room for only when asked.
    assert fit_search(3, left, check=True) != (3, 4)
    assert fit_search(3, left + check_cost_s(), check=True) == (3, 4)
    # A plan without room for the proof does not promise there will be none: the search may
    # leave time (a resumed tune's first pass was partly done), and the proof then runs.
    line = TunePlan([], 1, 1, 60.0, proofs=0, proof_s=10).describe(1.5)
    assert "the 10-s proof of the answer only if the search leaves time" in line, line


HELD_SECOND = ((1150.0, 130.0, False), (978.0, 35.0, True))


def _tune_run(path: Path, steps: tuple[tuple[float, float, bool], ...] = HELD_SECOND) -> str:
    """A tune whose best candidate held 1,150–1,260 req/s in its search, then (by default)
    missed over the proof's 20 s at 1,150 and held at 978."""
    store = Store(path)
    tune = {"key": "k", "app": "app.py:app", "target": "app:app", "slo_p99_ms": 100.0}
    options = dataclasses.replace(RunOptions(slo=SLO), tune=TuneOptions.from_json(tune)).to_json()
    run_id = store.create_run(
        RunInfo("app.py:app", "tune app:app", "", "", "benchlab tune app.py:app",
                "0123456789abcdef", (0,), (1,), dict(MACHINE), options)
    )  # fmt: skip
    facts = {
        "framework": "your app", "server": "gunicorn (gthread)", "worker_class": "gthread",
        "worker_model": "a thread per request, N threads per process", "command": COMMAND,
    }  # fmt: skip
    closed = Cell("gunicorn-gthread", "app", "vegeta", 64, 1, 2, 5, 1, server_threads=16)
    cell_id = store.add_cell(cell_record(run_id, 0, closed, LABEL, facts=facts))
    for r in range(2):
        store.add_trial(cell_id, dataclasses.replace(held_trial(r, 2000.0), target_rate=None))
    store.mark_cell(cell_id, "ok")
    search = dataclasses.replace(closed, mode="slo")
    cell_id = store.add_cell(cell_record(run_id, 1, search, LABEL, facts=facts))
    store.set_cell_rates(cell_id, None, 2000.0)
    for r, found in enumerate((1205.0, 1150.0, 1260.0, 1190.0, 1230.0, 1175.0)):
        store.add_capacity(cell_id, CapacityRecord(r, found, found, found * 1.05, 5))
        store.add_trial(cell_id, held_trial(r, found, probe="search"))
    store.mark_cell(cell_id, "ok")
    for step, (rate, p99, held) in enumerate(steps):
        cell = Cell("gunicorn-gthread-as-printed", "app", "vegeta", 64, 1, 20, 2, 1,
                    server_threads=16, mode="rate", rate=rate)  # fmt: skip
        cell_id = store.add_cell(cell_record(run_id, 2 + step, cell, LABEL, facts=facts))
        trial = dataclasses.replace(held_trial(0, rate), latency_p99_ms=p99, duration_s=20.0)
        store.add_trial(cell_id, trial)
        missed = None if held else f"p99 {p99:.1f} ms > 100 ms"
        windows = [12.0, 15.0, 260.0, 14.0] if held else [p99] * 4
        judged = {"of": LABEL, "step": step, "held": held, "missed": missed}
        store.add_cell_facts(cell_id, {"proof": {**judged, "windows_p99_ms": windows}})
        store.mark_cell(cell_id, "ok")
    store.finish_run(run_id, "complete")
    store.close()
    return run_id


@pytest.mark.slow
def test_the_proof_and_the_rate_to_run_at_stand_beside_the_recommendation(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.db"
    _tune_run(path)
    report = json.loads(benchlab("report", "--results", str(path), "-f", "json").stdout)
    best = report["recommendation"]
    assert best["command"] == COMMAND
    proof = best["proof"]
    assert proof["held"] is True and proof["rate"] == 978.0 and proof["p99_ms"] == 35.0
    assert proof["errors"] == 0 and proof["delivered"] == 1.0 and proof["duration_s"] == 20.0
    assert [s["held"] for s in proof["steps"]] == [False, True]
    assert best["run_at_rps"] == 978.0  # what the proof held, not the capacity's median
    assert best["capacity_rps"]["median"] > 1150
    table = benchlab("report", "--results", str(path), env={"COLUMNS": "100"}).stdout
    flat = " ".join(table.split())
    assert "run it at up to 978 req/s" in flat, table
    assert "1,150 req/s missed (p99 130.0 ms > 100 ms); 978 req/s: p99 35" in flat, table
    assert "— held" in flat, table
    assert "(its 5-s windows: 12.0, 15.0, 260, 14.0 ms; 3 of 4 held)" in flat, table
    assert proof["windows_p99_ms"] == [12.0, 15.0, 260.0, 14.0]
    markdown = benchlab("report", "--results", str(path), "-f", "md").stdout
    assert "proof: the command as printed" in markdown


@pytest.mark.slow
def test_a_proof_that_held_no_rate_gives_no_rate_to_run_at(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    _tune_run(path, ((1150.0, 130.0, False), (978.0, 120.0, False), (831.0, 110.0, False)))
    report = json.loads(benchlab("report", "--results", str(path), "-f", "json").stdout)
    best = report["recommendation"]
    assert best["proof"]["held"] is False and best["proof"]["rate"] == 831.0
    assert best["run_at_rps"] is None  # not the replicates' 1,150, which the proof missed
    table = " ".join(benchlab("report", "--results", str(path)).stdout.split())
    assert "run it at up to" not in table and "no rate tried held: run below 831" in table


def test_a_proof_is_judged_window_by_window_and_every_window_must_hold() -> None:
    from benchlab.load.request_records import Generator, csv_lines, read_results

    def windows(latencies_us: list[int]) -> tuple[float, ...]:
        """The windows' p99 of requests sent 10 ms apart (a record of each, as vegeta's)."""
        rows = [
            [str(i * 10_000_000), "200", str(us * 1000), "0", "2", "", "", "", str(i), "GET",
             "u", ""]
            for i, us in enumerate(latencies_us)
        ]  # fmt: skip
        lines = csv_lines(rows)
        return read_results([Generator(lambda: lines, 100.0)]).window_p99_ms

    # 8 s at 100 req/s: four 2-s windows of 200 requests; a stall of 300 ms on 10 requests
    # in the third.
    latencies = [2_000] * 800
    latencies[450:460] = [300_000] * 10
    assert windows(latencies) == pytest.approx((2.0, 2.0, 300.0, 2.0), rel=1e-3)
    # Fewer than 200 requests a window: fewer, longer windows (here one, the whole).
    assert windows([2_000] * 399) == pytest.approx((2.0,), rel=1e-3)
    stalled = dataclasses.replace(
        held_trial(0, 1000.0), latency_p99_ms=150.0, duration_s=8.0,
        window_p99_ms="[2.0, 2.0, 300.0, 2.0]",
    )  # fmt: skip
    assert capacity.misses(stalled, SLO) is not None
    # One window over the target is a miss: a user's window can be that one (issue 38).
    assert capacity.proof_miss(stalled, SLO) == (
        "p99 over 100 ms in 1 of its 4 2-s windows (worst 300 ms)"
    )
    steady = dataclasses.replace(stalled, latency_p99_ms=3.0, window_p99_ms="[2.0, 2.5, 3.0, 2.0]")
    assert capacity.proof_miss(steady, SLO) is None


def test_a_proof_names_the_cell_it_replayed_and_old_runs_match_by_label() -> None:
    judged = ProofJudgement("gunicorn|-|app|c64", "gunicorn w=2", 1, False, "p99 over", (3.0,))
    assert ProofJudgement.of_facts(judged.facts()) == judged
    # Two candidates may read alike; the cell's key tells them apart.
    assert judged.proves("gunicorn|-|app|c64", "another label")
    assert not judged.proves("uvicorn|-|app|c64", "gunicorn w=2")
    stored_before = ProofJudgement.of_facts({"proof": {"of": "gunicorn w=2", "held": True}})
    assert stored_before is not None and stored_before.proves("any key", "gunicorn w=2")
    assert ProofJudgement.of_facts({}) is None


# The proof windows measured on 2026-11-26 (examples/README.md), each replayed independently
# afterwards at the same rate: 3 × 10 s and 60 s (examples/acceptance/replay.py).
WAGTAIL_41 = [77, 24, 30, 21, 17, 17, 18, 17, 23, 50, 57, 64]  # replay: 2 of 9 windows over
KINTO_237 = [81, 19, 44, 50, 61, 22, 27, 26, 26, 24, 22, 28, 24, 23, 26, 16, 16, 18, 60, 30,
             16, 27, 21, 23, 30, 98, 56, 27, 100, 30]  # fmt: skip  # replay: 9 of 9 held
DATASETTE_157 = [42, 13, 46, 14, 10, 9, 11, 18, 41, 29, 20, 46, 12, 9, 21, 20, 50, 24, 14, 32,
                 23, 31, 28, 24, 29, 29, 36, 27, 25, 38]  # fmt: skip  # replay: 9 of 9 held
RADICALE_44 = [72, 22, 25, 20, 22, 25, 29, 39, 34, 39, 30, 20, 21]  # replay: 9 of 9 held
HTTPBIN_300 = [38, 5, 8, 5, 6, 4, 15, 10, 5, 15, 10, 17, 12, 6, 19]
HTTPBIN_300 += [
    35,
    20,
    10,
    23,
    21,
    15,
    59,
    15,
    22,
    15,
    26,
    53,
    86,
    19,
    29,
]  # replay: 1 of 9 over (111 ms)


def test_a_tail_that_rises_through_the_replay_is_a_miss_and_single_spikes_are_not() -> None:
    def judged(windows: list[int]) -> str | None:
        trial = dataclasses.replace(
            held_trial(0, 40.0), latency_p99_ms=float(max(windows)), duration_s=60.0,
            window_p99_ms=json.dumps([float(w) for w in windows]),
        )  # fmt: skip
        return capacity.proof_miss(trial, SLO)

    # Every window under 100 ms, but its last quarter at 2.9× (and 1.9×) the windows before.
    assert judged(WAGTAIL_41) == (
        "its tail rose through the replay: p99 57 ms in its last 3 windows against 20 ms "
        "before (it drifts toward the target)"
    )
    assert (judged(HTTPBIN_300) or "").startswith("its tail rose through the replay")
    for held in (KINTO_237, DATASETTE_157, RADICALE_44):
        assert capacity.tail_rose(held) is None, held
    assert judged(DATASETTE_157) is None
    # The proof keeps headroom too (capacity.PROOF_HEADROOM): three of Kinto's 30 windows
    # (81, 98, 100 ms) are over 62.5 ms, and its replay held: the headroom's price, a step
    # down. A capacity search's sustained window is judged without it (window_miss).
    assert "1.6× headroom" in (judged(KINTO_237) or "")
    windows = json.dumps([float(w) for w in KINTO_237])
    trial = dataclasses.replace(held_trial(0, 40.0), duration_s=60.0, window_p99_ms=windows)
    assert capacity.window_miss(trial, SLO) is None
    assert capacity.tail_rose([5.0] * 4 + [50.0] * 3) is None  # too few windows for a trend
