"""Two tunes the suite measures once and judges twice (tests/conftest.py's session fixtures):
the known server of tests/known_server.py tuned by its URL and by --command, each started,
SIGKILLed once a first-pass trial is stored, resumed to its end, then tuned again with
--quick. tests/test_tune_kept.py judges what the kill, the resume and the second tune left;
tests/test_tune_subjects.py judges the resumed tune's answer against the known capacity (a
second full tune of the same subject would measure the same answer again, for two minutes
or more of the suite)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from tests.conftest import benchlab, benchlab_process, living
from tests.known_server import BURNS, BURNS_COMMAND, known_server

# Each tune's budget: one candidate's search of two replicates (a capacity interval to
# judge) and room for two proof replays. The answer's check beside slow clients (about 35 s)
# is not asked of a command (--behind-proxy); an endpoint has none, and test_tune_subjects'
# Go server is checked.
BUDGET_MIN = "2.5"
PROOF_S = "10"


@dataclass(frozen=True)
class KilledTune:
    """What each step of a killed and resumed tune left, for the tests to judge."""

    args: list[str]
    cwd: Path
    results: Path
    kept: dict[str, int]  # the first pass's trials stored when it was killed, by cell key
    status_when_killed: str  # its run's status then (no handler ran: still 'running')
    run_id: str
    resumed: subprocess.CompletedProcess[str]  # the tune again, with --resume
    report: dict[str, Any] | None  # the resumed tune's JSON (-o), None when it wrote none
    after: dict[str, int]  # the first pass's trials once it was resumed
    left_living: list[psutil.Process]  # what the killed tune started, still running after
    again: subprocess.CompletedProcess[str]  # a second tune of the same subject, --quick
    endpoint_alive: bool | None = None  # an endpoint's server, after the resumed tune


def connect(results: Path) -> sqlite3.Connection:
    """The tune's store, its rows read by column name."""
    db = sqlite3.connect(results)
    db.row_factory = sqlite3.Row
    return db


def first_pass_trials(results: Path) -> dict[str, int]:
    """The first pass's trials stored, by cell key (its load's, not its probes')."""
    try:
        rows = connect(results).execute(
            "SELECT cells.key, COUNT(trials.id) FROM cells JOIN trials ON trials.cell_id ="
            " cells.id AND trials.probe IS NULL WHERE cells.mode = 'closed' GROUP BY cells.key"
        )
        return {key: n for key, n in rows}
    except sqlite3.OperationalError:  # its tables not made yet
        return {}


def killed_and_resumed(
    args: list[str], cwd: Path, results: Path, endpoint_pid: int | None = None
) -> KilledTune:
    """The tune started, SIGKILLed once a first-pass trial is stored, resumed to its end
    (its JSON written with -o), then tuned again with --quick."""
    with benchlab_process(*args, env={}, cwd=cwd) as run:
        said: list[str] = []  # read as it comes: a full pipe would stop the tune mid-line
        reader = threading.Thread(target=said.extend, args=(run.stdout,), daemon=True)
        reader.start()
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and run.poll() is None and not first_pass_trials(results):
            time.sleep(0.3)
        ended = "in 180 s" if run.poll() is None else f"it ended, exit {run.returncode}"
        assert first_pass_trials(results), (
            f"no first-pass trial stored ({ended}); the tune said:\n{''.join(said)[-4000:]}"
        )
        left = psutil.Process(run.pid).children(recursive=True)
        run.kill()
        run.wait(10)
    kept = first_pass_trials(results)
    (run_id, status), *_ = connect(results).execute("SELECT id, status FROM runs").fetchall()
    out = cwd / "resumed.json"
    resumed = benchlab(*args, "--resume", "-f", "json", "-o", str(out), cwd=cwd, timeout=600)
    report = json.loads(out.read_text()) if out.exists() else None
    after = first_pass_trials(results)
    left_living = living(left)
    alive = psutil.pid_exists(endpoint_pid) if endpoint_pid is not None else None
    again = benchlab(*args, "--quick", cwd=cwd, timeout=300)
    return KilledTune(
        args, cwd, results, kept, status, run_id, resumed, report, after, left_living, again,
        alive,
    )  # fmt: skip


def endpoint_tune(where: Path) -> KilledTune:
    """The known server, started outside benchlab, tuned by its URL and its pid."""
    results = where / "r.db"
    with known_server(where) as (port, pid):
        args = [
            "tune", f"http://127.0.0.1:{port}/", "--check-body", "done", "--pid", str(pid),
            "--budget", BUDGET_MIN, "--proof", PROOF_S, "--results", str(results),
        ]  # fmt: skip
        return killed_and_resumed(args, where, results, endpoint_pid=pid)


def command_tune(where: Path) -> KilledTune:
    """The known server's app tuned by --command over one and two threads (two candidates,
    each of what one worker's CPU allows)."""
    (where / "burn.py").write_text(BURNS)
    results = where / "r.db"
    args = [
        "tune", "--command", BURNS_COMMAND, "--grid", "threads=1,2", "--check-body", "done",
        "--behind-proxy", "--budget", BUDGET_MIN, "--proof", PROOF_S, "--results", str(results),
    ]  # fmt: skip
    return killed_and_resumed(args, where, results)
