"""A server's own counters in tune's answer (issue 38, item 4): granian's metrics say how long
its threads waited for the GIL, and the reason sentence says so.

In process, the runner reads the counters around each trial from a stand-in server whose
wait the test sets; then a real tune of granian reads its real counters."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from benchlab.analysis.summary import summarise
from benchlab.core.modes import Mode
from benchlab.recipe import Cell, Slo
from benchlab.report.jsonfile import render_json
from benchlab.runner import MeasureOptions, Measurer
from benchlab.stacks.servers import KIND_BY_NAME
from benchlab.store import CapacityRecord, Store
from benchlab.tune.candidates import SCENARIO
from tests.conftest import benchlab
from tests.inprocess import FakeExecutor, FakeStack, Figures
from tests.stored_runs import held_trial
from tests.test_proof_rule import SLO_MS, _tune_session

# granian (WSGI) with 4, 16 and 64 threads: the share of their busy time spent waiting.
WAITS = {4: 0.02, 16: 0.30, 64: 0.55}


def _first_pass_and_search(tmp_path: Path, kind_name: str) -> dict:
    """A first pass (closed loop, counters read around each trial) of `kind_name` at each
    thread count of WAITS, and a search whose three replicates each put t=16 ahead of the
    others by the evidence rule; the tune's JSON."""
    kind = KIND_BY_NAME[kind_name]
    executor = FakeExecutor({kind.name: FakeStack({
        SCENARIO: [Figures(1000.0 * (1 + t / 64), 5.0, gil_wait_share=WAITS[t]) for t in WAITS]
    })})  # fmt: skip
    store = Store(tmp_path / "results.db")
    session = _tune_session(store, executor, Slo(p99_ms=SLO_MS), {})
    closed = [
        Cell(kind.name, SCENARIO, "vegeta", 64, 1, 2, 2, 1, server_threads=t, mode=Mode.CLOSED)
        for t in WAITS
    ]
    with session.running(1):
        session.cells.add(closed)
        Measurer(session, MeasureOptions()).measure(closed, 1)
        for threads, found in ((4, 900.0), (16, 1200.0), (64, 1000.0)):
            search = dataclasses.replace(closed[0], server_threads=threads, mode=Mode.SLO)
            session.cells.add([search])
            searched = session.cells.ids[search]
            # Three replicates each: enough for the evidence rule to put t=16 ahead.
            for replicate in range(3):
                held = found * (1 + 0.01 * replicate)
                store.add_capacity(searched, CapacityRecord(replicate, held, held, held * 1.05, 5))
                store.add_trial(searched, held_trial(replicate, held, probe="search"))
            store.mark_cell(searched, "ok")
        trials = [store.trials(session.cells.ids[c]) for c in closed]
        report = json.loads(render_json(summarise(store, session.run_id)))
    return {"trials": trials, "report": report}


def test_the_counters_are_read_around_each_trial_and_the_reason_uses_them(
    tmp_path: Path,
) -> None:
    measured = _first_pass_and_search(tmp_path, "granian-wsgi")
    for trials, threads in zip(measured["trials"], WAITS, strict=True):
        (trial,) = trials
        assert trial.threads_busy_us == trial.duration_s * 1e6  # what the stand-in counted
        assert trial.gil_wait_us == round(WAITS[threads] * trial.threads_busy_us)
    report = measured["report"]
    shares = {c["threads"]: c["gil_wait_share"] for c in report["candidates"]}
    assert shares == WAITS
    best = report["recommendation"]
    assert best["threads"] == 16, best
    assert (
        "threads beyond 4 wait on the GIL: 30 % of their busy time at t=16 (granian's own "
        "counters, in a closed loop: 2 % at t=4, 30 % at t=16, 55 % at t=64)"
    ) in best["reason"], best["reason"]


def test_a_server_that_keeps_no_counters_is_not_read_and_says_nothing_of_them(
    tmp_path: Path,
) -> None:
    measured = _first_pass_and_search(tmp_path, "gunicorn-gthread")
    assert all(t.gil_wait_us is None and t.threads_busy_us is None
               for trials in measured["trials"] for t in trials)  # fmt: skip
    report = measured["report"]
    assert {c["gil_wait_share"] for c in report["candidates"]} == {None}
    assert "GIL" not in report["recommendation"]["reason"]


CPU_APP = """
def app(environ, start_response):
    body = str(sum(i * i for i in range(20_000))).encode()
    start_response("200 OK", [("Content-Length", str(len(body)))])
    return [body]
"""


@pytest.mark.alone
@pytest.mark.slow
def test_a_real_tune_reads_granians_counters_and_its_command_stays_deployable(
    tmp_path: Path,
) -> None:
    # CPU-bound requests: one thread never waits for another's GIL; sixteen mostly do.
    (tmp_path / "cpu.py").write_text(CPU_APP)
    tmp_path.chmod(0o755)  # as root, the app runs as nobody
    out = tmp_path / "tune.json"
    result = benchlab(
        "tune", "cpu.py:app", "--servers", "granian", "--workers", "1", "--threads", "1,16",
        "--quick", "--results", str(tmp_path / "r.db"), "-f", "json", "-o", str(out),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(out.read_text())
    shares = {c["threads"]: c["gil_wait_share"] for c in report["candidates"]}
    assert shares[1] is not None and shares[16] is not None, report["candidates"]
    assert shares[1] < 0.1 < shares[16], shares
    best = report["recommendation"]
    assert "granian's own counters, in a closed loop" in best["reason"], best["reason"]
    assert "METRICS" not in best["command"] and "--metrics" not in best["command"]
