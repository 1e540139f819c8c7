"""Failures mid-run: nothing finished is lost, nothing started is left running."""

from __future__ import annotations

import io
import os
import signal
import sqlite3
import sys
import time
from pathlib import Path

import psutil
import pytest
from rich.console import Console

from benchlab.analysis.summary import summarise
from benchlab.core.errors import ExitCode
from benchlab.recipe import build_plan, load_recipe
from benchlab.report.html import render_html
from benchlab.report.progress import LineReporter
from benchlab.runner import SessionOptions, run_recipe
from benchlab.stacks import CATALOGUE, Launch, LaunchContext, Stack
from benchlab.store import Store
from tests.conftest import benchlab, benchlab_process, living, write_recipe
from tests.html_table import ReportPage

# Every test here measures or takes the machine: one at a time (tests/alone.py).
pytestmark = pytest.mark.alone

MISBEHAVING = Path(__file__).with_name("apps") / "misbehaving.py"


def _misbehaving_stack(name: str, mode: str) -> Stack:
    def launch(ctx: LaunchContext) -> Launch:
        # Its slowness from the test's own setting, given on purpose: a stack sees none of
        # benchlab's environment but what its launch gives it (as root, system/users.py).
        slow = {"BENCHLAB_SLOW_MS": os.environ.get("BENCHLAB_SLOW_MS", "0")}
        return Launch(
            argv=[sys.executable, str(MISBEHAVING), mode, ctx.host, str(ctx.port)], env=slow
        )

    return Stack(
        name=name,
        framework="test",
        server="http.server",
        worker_model="threads",
        scenarios=("plaintext", "json"),
        launch=launch,
        start_timeout=10,
    )


def _processes_under(directory: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        text = " ".join(proc.info["cmdline"] or []) + " " + (proc.info["cwd"] or "")
        if str(directory) in text:
            found.append(proc)
    return living(found)


def _db(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    return db


def _stored_trials(path: Path) -> int:
    """Trials in a store that benchlab may still be creating: 0 until its tables exist."""
    if not path.exists():
        return 0
    try:
        return _db(path).execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    except sqlite3.OperationalError:  # the file is there, its schema not yet
        return 0


@pytest.mark.slow
def test_wrong_answers_and_crashes_fail_their_cells_and_the_run_goes_on(
    tmp_path: Path, isolated_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalogue = {
        **CATALOGUE, "wrong-body": _misbehaving_stack("wrong-body", "wrong-body"),
        "crashes": _misbehaving_stack("crashes", "crash"),
    }  # fmt: skip
    monkeypatch.setenv("TMPDIR", str(isolated_tmp))
    path = write_recipe(
        tmp_path,
        """
        name = "broken"
        stacks = ["wrong-body", "crashes", "nginx-static"]
        scenarios = ["plaintext", "json"]
        trials = 2
        warmup = 0
        [[load]]
        connections = 4
        duration = 1
        """,
    )
    recipe, text = load_recipe(path, catalogue)
    store = Store(tmp_path / "r.db")
    output = io.StringIO()
    outcome = run_recipe(
        build_plan(path, recipe, text, catalogue),
        store,
        LineReporter(Console(file=output)),
        SessionOptions("test"),
    )
    assert outcome.status == "partial"
    cells = {(c.stack, c.scenario): c for c in store.cells(outcome.run_id)}
    wrong = cells[("wrong-body", "plaintext")]
    assert wrong.status == "failed"
    assert "verification failed: GET /plaintext: body b'Hello, World'" in (wrong.reason or "")
    assert not store.trials(wrong.id)
    assert cells[("wrong-body", "json")].status == "ok"
    assert len(store.trials(cells[("wrong-body", "json")].id)) == 2
    for scenario in ("plaintext", "json"):
        crashed = cells[("crashes", scenario)]
        assert crashed.status == "failed"
        assert "exited while starting" in (crashed.reason or "")
        assert "boom: cannot start" in (crashed.reason or "")
        assert cells[("nginx-static", scenario)].status == "ok"
    assert "FAILED" in output.getvalue()
    assert list(isolated_tmp.iterdir()) == []
    assert _processes_under(MISBEHAVING.parent) == []
    # The HTML report shows each failed cell with its reason, and the measured ones beside.
    page = ReportPage(render_html(summarise(store, outcome.run_id)))
    scenario = page.header.index("scenario")
    rows = {(r["cells"][0].split()[0], r["cells"][scenario]): r for r in page.rows}
    assert len(rows) == 6
    failed = rows[("wrong-body", "plaintext")]
    assert failed["status"] == "failed" and "failed" in failed["badges"]
    assert "verification failed: GET /plaintext" in failed["cells"][-1]
    assert "boom: cannot start" in rows[("crashes", "json")]["cells"][-1]
    assert rows[("nginx-static", "json")]["status"] == "ok"
    assert not {"failed", "not measured"} & set(rows[("nginx-static", "json")]["badges"])


def _wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _named(processes: list[psutil.Process], word: str) -> list[psutil.Process]:
    found = []
    for proc in processes:
        try:
            if word in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


@pytest.mark.slow
def test_a_stack_killed_mid_trial_fails_its_cells_and_the_run_goes_on(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    recipe = write_recipe(
        tmp_path,
        """
        name = "kill"
        stacks = ["flask+gunicorn", "nginx-static"]
        scenarios = ["plaintext"]
        trials = 2
        warmup = 0
        [[load]]
        connections = 8
        duration = 3
        """,
    )
    results = tmp_path / "r.db"
    with benchlab_process(
        "run", str(recipe), "--results", str(results), env={"TMPDIR": str(isolated_tmp)}
    ) as run:
        # flask+gunicorn comes first in round 1; kill its master while wrk measures it.
        master = _wait_for(
            lambda: (
                _named(_children(run.pid), "wrk")
                and [p for p in _named(_children(run.pid), "gunicorn") if p.ppid() == run.pid]
            ),
            60,
            "a trial of flask+gunicorn",
        )[0]
        workers = master.children(recursive=True)
        master.kill()
        output, _ = run.communicate(timeout=120)
    assert run.returncode == ExitCode.PARTIAL, output  # the run went on; one cell failed
    db = _db(results)
    assert db.execute("SELECT status FROM runs").fetchone()["status"] == "partial"
    flask = db.execute("SELECT * FROM cells WHERE stack = 'flask+gunicorn'").fetchone()
    assert flask["status"] == "failed"
    assert "flask+gunicorn exited with code -9 during the plaintext trial" in flask["reason"]
    nginx = db.execute("SELECT * FROM cells WHERE stack = 'nginx-static'").fetchone()
    assert nginx["status"] == "ok"
    assert (
        db.execute("SELECT COUNT(*) FROM trials WHERE cell_id = ?", (nginx["id"],)).fetchone()[0]
        == 2
    )
    assert living([master, *workers]) == [], "gunicorn's orphaned workers are still running"
    assert _processes_under(isolated_tmp) == []
    assert list(isolated_tmp.iterdir()) == []


# SIGHUP: an ssh session that drops ends benchlab as SIGTERM does.
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
@pytest.mark.slow
def test_a_signal_stops_the_run_fast_and_keeps_finished_trials(
    tmp_path: Path, isolated_tmp: Path, sig: signal.Signals
) -> None:
    recipe = write_recipe(
        tmp_path,
        """
        name = "interrupt"
        stacks = ["nginx-static", "fastapi+uvicorn"]
        scenarios = ["plaintext", "json"]
        trials = 3
        warmup = 0
        [[load]]
        connections = 8
        duration = 1
        """,
    )
    results = tmp_path / "r.db"
    with benchlab_process(
        "run", str(recipe), "--results", str(results), env={"TMPDIR": str(isolated_tmp)}
    ) as run:
        _wait_for(lambda: _stored_trials(results) >= 3, 90, "three stored trials")
        started = _children(run.pid)
        assert started, "benchlab should have a server and wrk running"
        sent = time.monotonic()
        run.send_signal(sig)
        output, _ = run.communicate(timeout=30)
        took = time.monotonic() - sent
    # The promise (README, "On a machine it shares"): one 5 s grace period, then SIGKILL.
    assert took < 10, f"took {took:.1f} s to stop"
    assert run.returncode == 130, output
    assert "Traceback" not in output
    db = _db(results)
    run_row = db.execute("SELECT * FROM runs").fetchone()
    assert run_row["status"] == "interrupted"
    assert run_row["ended_at"] is not None
    assert db.execute("SELECT COUNT(*) FROM trials").fetchone()[0] >= 3
    assert living(started) == []
    assert list(isolated_tmp.iterdir()) == []
    report = benchlab("report", "--results", str(results), "--format", "md", timeout=60)
    assert "interrupted" in report.stdout
    # The run wrote its HTML report on the way out; it says the figures are partial.
    page = ReportPage((tmp_path / "interrupt.html").read_text())
    assert any(b.startswith("Partial results: this run was interrupted") for b in page.banners)
    measured = [r for r in page.rows if r["status"] == "ok" or "valid" in r["badges"]]
    assert measured or any(r["status"] in ("pending", "incomplete") for r in page.rows)
    if sig is signal.SIGINT:
        _resumed_to_its_end(results, isolated_tmp)


KILLED_RECIPE = """
name = "killed"
stacks = ["nginx-static", "tornado"]
scenarios = ["plaintext"]
trials = 3
warmup = 0
[[load]]
connections = 8
duration = 1
"""


@pytest.mark.slow
def test_a_run_killed_with_sigkill_mid_round_is_resumed_at_once_to_every_planned_trial(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    """SIGKILL (the OOM killer, a CI timeout, a power loss) runs no handler: the store still
    says `running`. The next `run --resume` cleans what the run left first, so it finds the
    run (now `abandoned`) and ends it `complete` with all its rounds."""
    recipe = write_recipe(tmp_path, KILLED_RECIPE)
    results = tmp_path / "r.db"
    with benchlab_process(
        "run", str(recipe), "--results", str(results), env={"TMPDIR": str(isolated_tmp)}
    ) as run:
        # Mid-round: one of the round's two cells stored, the other's load running.
        _wait_for(
            lambda: _stored_trials(results) % 2 == 1 and _named(_children(run.pid), "wrk"),
            90, "a round half done",
        )  # fmt: skip
        left = _children(run.pid)
        run.kill()
        run.wait(10)
    assert living(left), "the killed run's stack and load tool are still running"
    db = _db(results)
    assert [tuple(r) for r in db.execute("SELECT status FROM runs")] == [("running",)]
    _resumed_to_its_end(results, isolated_tmp, cells=2, cleaned=True)
    assert living(left) == []


def _resumed_to_its_end(
    results: Path, isolated_tmp: Path, cells: int = 4, cleaned: bool = False
) -> None:
    """`run --resume` continues the interrupted run: its finished trials kept as they were,
    only the rounds not done measured, every cell ending with its three rounds, once each."""
    db = _db(results)
    before = {tuple(row) for row in db.execute("SELECT id, cell_id, round, requests FROM trials")}
    run_id = db.execute("SELECT id FROM runs").fetchone()["id"]
    resumed = benchlab(
        "run", "--resume", "--results", str(results), env={"TMPDIR": str(isolated_tmp)},
        timeout=180,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"resuming run {run_id}: its {len(before)} finished trial(s) kept" in resumed.stderr
    if cleaned:
        said = " ".join(resumed.stderr.split())
        assert "cleaned up after a benchlab killed while running" in said, said
        assert f"(run {run_id}, now marked abandoned)" in said, said
    db = _db(results)
    assert [tuple(r) for r in db.execute("SELECT id, status FROM runs")] == [(run_id, "complete")]
    after = {tuple(row) for row in db.execute("SELECT id, cell_id, round, requests FROM trials")}
    assert before <= after and len(after) > len(before)
    rounds = db.execute(
        "SELECT cells.key, GROUP_CONCAT(trials.round) FROM cells JOIN trials ON trials.cell_id"
        " = cells.id AND trials.probe IS NULL GROUP BY cells.id"
    ).fetchall()
    assert len(rounds) == cells and all(
        sorted(map(int, r[1].split(","))) == [0, 1, 2] for r in rounds
    ), [tuple(r) for r in rounds]
    assert list(isolated_tmp.iterdir()) == []
    again = benchlab("run", "--resume", run_id, "--results", str(results))
    assert again.returncode == 2 and f"run {run_id} is complete" in again.stderr, again.stderr
