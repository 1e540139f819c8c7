"""A tune of a command or of an endpoint is kept like every run (issue 67 item 4): killed
with SIGKILL (no handler runs) and resumed, its finished trials kept and what it left
cleaned; then, beside a second tune of the same subject, on history and compare (the same
candidate paired across the two), and in the trackers' exports (Bencher's BMF and
github-action-benchmark's) under names that are the same in both runs and hold no run's own
key of a cell."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import jsonschema
import psutil
import pytest

from tests.conftest import benchlab, benchlab_process, living
from tests.test_tune_subjects import BURNS, VENV_BIN, _known_server

SCHEMAS = Path(__file__).parent / "schemas"


def _db(results: Path) -> sqlite3.Connection:
    db = sqlite3.connect(results)
    db.row_factory = sqlite3.Row
    return db


def _first_pass_trials(results: Path) -> dict[str, int]:
    """The first pass's trials stored, by cell key (its load's, not its probes')."""
    try:
        rows = _db(results).execute(
            "SELECT cells.key, COUNT(trials.id) FROM cells JOIN trials ON trials.cell_id ="
            " cells.id AND trials.probe IS NULL WHERE cells.mode = 'closed' GROUP BY cells.key"
        )
        return {key: n for key, n in rows}
    except sqlite3.OperationalError:  # its tables not made yet
        return {}


def _killed_and_resumed(args: list[str], cwd: Path, results: Path) -> dict:
    """The tune started, SIGKILLed once a first-pass trial is stored, and resumed to its
    end: the same run, complete, its finished trials not measured again, nothing it started
    left running. The resumed tune's JSON."""
    with benchlab_process(*args, env={}, cwd=cwd) as run:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not _first_pass_trials(results):
            time.sleep(0.3)
        assert _first_pass_trials(results), "no first-pass trial stored in 180 s"
        left = psutil.Process(run.pid).children(recursive=True)
        run.kill()
        run.wait(10)
    kept = _first_pass_trials(results)
    (run_id, status), *_ = _db(results).execute("SELECT id, status FROM runs").fetchall()
    assert status == "running"  # no handler ran
    out = cwd / "resumed.json"
    resumed = benchlab(*args, "--resume", "-f", "json", "-o", str(out), cwd=cwd, timeout=600)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    said = " ".join(resumed.stderr.split())
    assert "cleaned up after a benchlab killed while running" in said, said
    report = json.loads(out.read_text())
    assert report["run"]["id"] == run_id and report["run"]["status"] == "complete"
    after = _first_pass_trials(results)
    assert all(after[key] == n for key, n in kept.items()), (kept, after)
    assert report["recommendation"] is not None, report["candidates"]
    assert living(left) == [], "what the killed tune started still runs"
    return report


def _kept_like_every_run(args: list[str], cwd: Path, results: Path) -> None:
    """A second tune of the same subject (--quick: its first pass), then history, compare
    and the trackers' exports of the two."""
    again = benchlab(*args, "--quick", cwd=cwd, timeout=300)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    db = _db(results)
    runs = [tuple(r) for r in db.execute("SELECT id, recipe_name FROM runs ORDER BY started_at")]
    assert len(runs) == 2 and runs[0][1] == runs[1][1], runs
    (first, recipe), (second, _) = runs
    keys = {r[0] for r in db.execute("SELECT key FROM cells")}
    labels = {r[0] for r in db.execute("SELECT stack_label FROM cells WHERE run_id = ?", (second,))}
    stores = ["--results", str(results)]

    history = benchlab("history", recipe, *stores, "-f", "json", cwd=cwd)
    assert history.returncode == 0, history.stdout + history.stderr
    series = json.loads(history.stdout)["series"]
    paired = [s for s in series if len(s["points"]) == 2]
    assert paired, series  # each candidate's first pass, in both runs
    assert {label for label in labels if any(label in s["cell"]["name"] for s in paired)} == labels

    compared = benchlab("compare", first, second, *stores, "-f", "json", cwd=cwd)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    cells = json.loads(compared.stdout)["cells"]
    both = [c for c in cells if c["verdict"] not in ("missing in A", "missing in B")]
    assert {c["stack"] for c in both} >= labels, cells

    exported: dict[str, list[set[str]]] = {}
    for fmt, schema in (("bmf", "bmf.json"), ("gab-bigger", "github-action-benchmark.json")):
        for run_id in (first, second):
            done = benchlab("report", run_id, *stores, "-f", fmt, cwd=cwd)
            assert done.returncode == 0, done.stdout + done.stderr
            data = json.loads(done.stdout)
            jsonschema.validate(data, json.loads((SCHEMAS / schema).read_text()))
            names = set(data) if fmt == "bmf" else {entry["name"] for entry in data}
            assert not any(key in name for key in keys for name in names), names
            exported.setdefault(fmt, []).append(names)
        full, quick = exported[fmt]
        # Stable names: each candidate's first pass is named the same in both runs.
        assert quick and quick <= full, (fmt, full, quick)
        assert all(any(label in name for name in quick) for label in labels), (fmt, quick)


@pytest.mark.alone
@pytest.mark.slow
def test_a_command_tune_killed_resumes_and_is_kept_like_every_run(tmp_path: Path) -> None:
    (tmp_path / "burn.py").write_text(BURNS)
    tmp_path.chmod(0o755)
    results = tmp_path / "r.db"
    template = (
        f"{VENV_BIN / 'gunicorn'} -w {{workers}} -k gthread --threads 1 -b {{host}}:{{port}} "
        "burn:app"
    )
    args = [
        "tune", "--command", template, "--grid", "workers=1,2", "--check-body", "done",
        "--budget", "2", "--proof", "10", "--results", str(results),
    ]  # fmt: skip
    report = _killed_and_resumed(args, tmp_path, results)
    assert report["subject"]["kind"] == "command"
    _kept_like_every_run(args, tmp_path, results)


@pytest.mark.alone
@pytest.mark.slow
def test_an_endpoint_tune_killed_resumes_and_is_kept_like_every_run(tmp_path: Path) -> None:
    results = tmp_path / "r.db"
    with _known_server(tmp_path) as (port, pid):
        args = [
            "tune", f"http://127.0.0.1:{port}/", "--check-body", "done", "--pid", str(pid),
            "--budget", "2", "--proof", "10", "--results", str(results),
        ]  # fmt: skip
        report = _killed_and_resumed(args, tmp_path, results)
        assert report["subject"]["kind"] == "endpoint"
        assert psutil.pid_exists(pid), "the endpoint is not benchlab's to stop"
        _kept_like_every_run(args, tmp_path, results)
