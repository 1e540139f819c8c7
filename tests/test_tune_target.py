"""`tune` answers for the app as its owner deploys it (issue 58): the app runs as the owner of
its files, root included, writing where it writes; the data its --with services hold is
kept between candidates unless the user asks for a reset; the app is imported with its
services' addresses already set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import benchlab
from tests.known_server import SERVICE_S
from tests.spec_tune import ONE_CPU, SpecTune

# A tune that measures or checks takes the machine's run lock: one at a time (tests/alone.py).
ALONE = (pytest.mark.alone, pytest.mark.slow)


def alone(test):  # type: ignore[no-untyped-def]
    for mark in ALONE:
        test = mark(test)
    return test


WRITES_BESIDE_ITSELF = """
import os, secrets
KEY = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".sesskey")
if not os.path.exists(KEY):
    with open(KEY, "w") as out:  # as many web apps do on their first import
        out.write(secrets.token_hex(16))

def app(environ, start_response):
    body = b"signed"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "6")])
    return [body]
"""

READS_REDIS = """
import os
import redis

CLIENT = redis.Redis.from_url(os.environ["REDIS_URL"])  # at import, as apps do

def app(environ, start_response):
    body = CLIENT.get("greeting") or b"missing"
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]
"""

FILLS_REDIS = """
import os, redis
redis.Redis.from_url(os.environ["REDIS_URL"]).set("greeting", "hello from setup")
"""

COUNTS_RESETS = """
import os, sys
with open(sys.argv[1], "a") as out:
    out.write("reset\\n")
"""


def _app(where: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (where / name).write_text(textwrap.dedent(text).lstrip())


@alone
def test_an_app_that_writes_beside_itself_tunes_as_its_owner(tmp_path: Path) -> None:
    _app(tmp_path, {"app.py": WRITES_BESIDE_ITSELF})
    done = benchlab(
        "tune", "app.py:app", "--check-only", "--servers", "gunicorn-sync,waitress",
        "--workers", "1", "--check-body", "signed", "--results", "results.db", "-f", "json",
        cwd=tmp_path, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert {c["status"] for c in report["candidates"]} == {"checked"}, report["candidates"]
    owner = "root" if os.geteuid() == 0 else report["run"]["machine"]["stacks_run_as"]
    assert report["run"]["machine"]["stacks_run_as"] == owner
    assert f"run as {owner}" in " ".join(done.stderr.split())  # the plan line says whom
    assert (tmp_path / ".sesskey").stat().st_uid == os.geteuid()


@alone
def test_the_apps_redis_keeps_what_setup_put_there_for_every_candidate(tmp_path: Path) -> None:
    """--with redis: the app reads REDIS_URL at import (it is set before the app is first
    imported) and answers with what --setup stored; benchlab flushes nothing between
    candidates, and --reset-between runs before each one."""
    _app(tmp_path, {"app.py": READS_REDIS, "fill.py": FILLS_REDIS, "count.py": COUNTS_RESETS})
    resets = tmp_path / "resets.log"
    done = benchlab(
        "tune", "app.py:app", "--quick", "--servers", "gunicorn-sync,waitress", "--workers",
        "1", "--with", "redis", "--setup", f"{sys.executable} fill.py",
        "--reset-between", f"{sys.executable} count.py {resets}",
        "--check-body", "hello from setup", "--budget", "3", "--results", "results.db",
        "-f", "json", cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    statuses = {c["label"]: c["status"] for c in report["candidates"]}
    # Every candidate answered what --setup stored, before and after its load (a flush
    # between candidates failed each one's check: "body b'missing'").
    assert len(statuses) >= 2 and "failed" not in statuses.values(), report["candidates"]
    # Each candidate's launch was preceded by the user's reset, and by nothing of benchlab's.
    assert resets.read_text().count("reset") >= len(statuses)


@alone
def test_an_app_that_reads_database_url_at_import_tunes(tmp_path: Path) -> None:
    _app(
        tmp_path,
        {
            "app.py": """
            import os
            import psycopg

            DSN = os.environ["DATABASE_URL"]  # read at import: set before the first import

            def app(environ, start_response):
                with psycopg.connect(DSN) as db:
                    (one,) = db.execute("SELECT 1").fetchone()
                body = str(one).encode()
                start_response("200 OK", [("Content-Type", "text/plain"),
                                          ("Content-Length", str(len(body)))])
                return [body]
            """
        },
    )
    done = benchlab(
        "tune", "app.py:app", "--check-only", "--servers", "gunicorn-sync", "--workers", "1",
        "--with", "postgres", "--check-body", "1", "--results", "results.db", "-f", "json",
        cwd=tmp_path, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (candidate,) = json.loads(done.stdout)["candidates"]
    assert candidate["status"] == "checked", candidate


# --- first contact: the app's own environment, and mistakes told before anything starts -----

ONLY_IN_ITS_VENV = """
import onlyhere

def app(environ, start_response):
    body = onlyhere.WORD.encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
"""


@alone
def test_an_app_with_its_own_venv_is_tuned_in_it_without_python(tmp_path: Path) -> None:
    """A project with its own .venv (gunicorn and a module only it has): `tune app.py:app`
    with no --python imports and serves the app there, and says which interpreter it took."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'shop'\nversion = '1'\n")
    uv = Path(sys.executable).with_name("uv")
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, project / ".venv"], check=True)
    subprocess.run(
        [uv, "pip", "install", "-q", "--python", project / ".venv" / "bin" / "python",
         "gunicorn==27.0.1"],
        check=True, timeout=300,
    )  # fmt: skip
    site = next((project / ".venv" / "lib").glob("python3*/site-packages"))
    (site / "onlyhere.py").write_text("WORD = 'its own'\n")
    _app(project / "src", {"app.py": ONLY_IN_ITS_VENV})
    done = benchlab(
        "tune", "src/app.py:app", "--check-only", "--servers", "gunicorn-sync", "--workers",
        "1", "--check-body", "its own", "--results", str(tmp_path / "r.db"), "-f", "json",
        cwd=project, timeout=300, env={"VIRTUAL_ENV": ""},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{project / '.venv'}/bin/python: the virtualenv" in done.stderr, done.stderr
    (candidate,) = json.loads(done.stdout)["candidates"]
    assert candidate["status"] == "checked", candidate


@pytest.mark.slow
def test_first_contact_mistakes_are_told_before_the_machine_is_claimed(tmp_path: Path) -> None:
    store = tmp_path / "r.db"
    _app(tmp_path, {"io.py": WRITES_BESIDE_ITSELF, "needs.py": "import not_installed_here\n"})
    mistyped = benchlab("tune", "ap.py:app", "--results", str(store), cwd=tmp_path, timeout=60)
    assert mistyped.returncode == 2 and "no file" in mistyped.stderr, mistyped.stderr
    shadowed = benchlab("tune", "io.py:app", "--results", str(store), cwd=tmp_path, timeout=60)
    assert shadowed.returncode == 2, shadowed.stderr
    assert "rename the file" in shadowed.stderr and "io_app.py" in shadowed.stderr
    missing = benchlab("tune", "needs.py:app", "--results", str(store), cwd=tmp_path, timeout=60)
    assert missing.returncode == 2 and "--python" in missing.stderr, missing.stderr
    assert not store.exists(), "a mistake left a results store behind"


# --- the target: a CPU quota and a memory limit, as the container's ---------------------------

BURNS_CPU = """
import time

def app(environ, start_response):
    # A fixed CPU time per request, whatever the machine: 2 ms of this process's CPU.
    end = time.process_time() + 0.002
    while time.process_time() < end:
        pass
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "4")])
    return [b"done"]
"""

GROWS = """
# 160 MB, touched, as the app starts: a candidate limited to less cannot hold it.
HELD = bytearray(160 * 2**20)
for i in range(0, len(HELD), 4096):
    HELD[i] = 1

def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]
"""


def _quick_rps(where: Path, cpus: str) -> float:
    done = benchlab(
        "tune", "app.py:app", "--quick", "--servers", "gunicorn-sync", "--workers", "1",
        "--cpus", cpus, "--check-body", "done", "--budget", "2", "--results", "r.db",
        "-f", "json", cwd=where, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (candidate,) = json.loads(done.stdout)["candidates"]
    return float(candidate["closed_loop_rps"])


@alone
@pytest.mark.skipif(os.geteuid() != 0, reason="a CPU quota is set on a control group by root")
def test_half_a_cpu_holds_half_of_what_one_cpu_holds(tmp_path: Path) -> None:
    """The app costs a fixed CPU time per request: under a quota of 0.5 CPU one sync worker
    serves half of what it serves under 1 CPU (each quick pass is one closed-loop trial: the
    ratio is judged within this VM's noise between two trials, ±15 %)."""
    _app(tmp_path, {"app.py": BURNS_CPU})
    whole, half = _quick_rps(tmp_path, "1"), _quick_rps(tmp_path, "500m")
    assert 0.5 * 0.85 <= half / whole <= 0.5 * 1.15, (half, whole)


@alone
@pytest.mark.skipif(os.geteuid() != 0, reason="a memory limit is set on a control group by root")
def test_a_candidate_past_its_memory_limit_does_not_fit(tmp_path: Path) -> None:
    _app(tmp_path, {"app.py": GROWS})
    done = benchlab(
        "tune", "app.py:app", "--check-only", "--servers", "gunicorn-sync", "--workers", "1",
        "--memory", "96M", "--results", "r.db", cwd=tmp_path, timeout=180,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "does not fit in 96 MB" in done.stderr, done.stderr


FIXED_CPU_S = 0.004  # the CPU an answer of BURNS_FIXED costs the app itself

BURNS_FIXED = f"""
import time

def app(environ, start_response):
    end = time.process_time() + {FIXED_CPU_S}  # this process's CPU, whatever the machine
    while time.process_time() < end:
        pass
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "4")])
    return [b"done"]
"""


def _tuned(where: Path, cpus: str, p99_ms: int) -> dict:
    done = benchlab(
        "tune", "app.py:app", "--servers", "gunicorn-sync", "--workers", "1", "--cpus", cpus,
        "--slo-p99-ms", str(p99_ms), "--check-body", "done", "--budget", "2.5", "--proof", "10",
        "--behind-proxy",
        "--results", "r.db", "-f", "json", cwd=where, timeout=420,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def _holds_what_its_quota_holds(report: dict, share: float, app_cpu_s: float) -> None:
    """The capacity of an app of fixed CPU a request is its quota's share of 1 ÷ (its CPU a
    request: the app's own `app_cpu_s` and the server's work, counted by the control group),
    within 15 %, and bracketed by a rate that missed; the answer states its repeat range."""
    (candidate,) = report["candidates"]
    capacity, cpu_s = candidate["capacity_rps"], candidate["cpu_us_per_request"] / 1e6
    assert app_cpu_s <= cpu_s <= 1.5 * app_cpu_s, candidate
    known = share / cpu_s
    assert capacity["bracketed"] is True, capacity
    assert abs(capacity["median"] - known) <= 0.15 * known, (capacity, known)
    repeat = report["recommendation"]["repeat"]
    assert repeat is not None and repeat["basis"] in ("replicates", "machine"), repeat


# p99 100 ms: under half a CPU the kernel lets the app run 50 ms of every 100, and a request
# that meets the quota spent waits up to 50 ms, so a target of 50 ms sits on that gap (here:
# 8-s windows of 50.2 and 51.0 ms at 72 and 90 req/s); at 1 CPU a 50-ms target is met near
# the known answer on a quiet core (233 of 231 req/s) but one stall of the core's other
# processes misses a sustained window there (75 ms at 185 req/s).
@alone
@pytest.mark.skipif(os.geteuid() != 0, reason="a CPU quota is set on a control group by root")
def test_a_fixed_cpu_app_is_searched_up_to_what_its_quota_holds(tmp_path: Path) -> None:
    """Issue 66: one sync worker under half a CPU carried 118 req/s at 2 connections and 58
    at 256 (its queue past the load tool's timeout), and the search stopped at '≥ 68'. The
    capacity of an app of fixed CPU a request is its quota's share of 1 ÷ (its CPU a
    request), within 15 %, bracketed by a rate that missed. (A second tune's rate to run at
    against the first's repeat range is not asked here: with no noise record the range comes
    from the tune's own replicates, a lower bound the report says is one, and two tunes of
    this app missed it by 2-8 % while their replicates agreed within 2 %: docs/tune.md.)"""
    _app(tmp_path, {"app.py": BURNS_FIXED})
    _holds_what_its_quota_holds(_tuned(tmp_path, "500m", 100), 0.5, FIXED_CPU_S)


@alone
@pytest.mark.skipif(os.geteuid() != 0, reason="a CPU quota is set on a control group by root")
def test_an_app_of_fixed_cpu_under_one_cpu_holds_what_one_cpu_holds(
    app_tuned_by_spec: SpecTune,
) -> None:
    """The same known answer at one CPU, on the known server's app (5 ms of CPU a request,
    one gthread worker of one thread) by its app spec, the tune test_tune_subjects compares
    with the same app's by --command (tests/spec_tune.py): 1 ÷ its CPU a request, within
    15 %, bracketed."""
    assert app_tuned_by_spec.cpus == ONE_CPU
    _holds_what_its_quota_holds(app_tuned_by_spec.report, 1.0, SERVICE_S)


# --- a stored answer, proved again ---------------------------------------------------------

ANSWER_SERVICE_S = 0.005  # one sync worker then serves at most 200 req/s

ANSWERS = f"""
import time


def app(environ, start_response):
    time.sleep({ANSWER_SERVICE_S})
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]
"""


def _stored(where: Path, rate: float) -> Path:
    """An answer as `tune -f json` writes it (the keys --check-answer reads)."""
    answer = where / f"answer-{rate:g}.json"
    answer.write_text(json.dumps({
        "format": "benchlab-tune", "slo": {"p99_ms": 100},
        "recommendation": {"candidate": "gunicorn-sync", "workers": 1, "threads": None,
                           "run_at_rps": rate},
    }))  # fmt: skip
    return answer


@alone
def test_a_stored_answer_is_proved_again_and_fails_when_it_no_longer_holds(
    tmp_path: Path,
) -> None:
    _app(tmp_path, {"app.py": ANSWERS})

    def check(rate: float) -> subprocess.CompletedProcess[str]:
        return benchlab(
            "tune", "app.py:app", "--check-answer", str(_stored(tmp_path, rate)), "--proof",
            "10", "--results", "r.db", cwd=tmp_path, timeout=240,
        )  # fmt: skip

    most = 1 / ANSWER_SERVICE_S
    held = check(most / 4)  # a quarter of what its one sync worker can serve
    assert held.returncode == 0, held.stdout + held.stderr
    assert "holds here" in " ".join(held.stderr.split())
    # Ten times what the worker can serve: its queue grows and the latency with it. (Not a
    # rate past what the load tool can send here: that answer is "not proved", exit 2.)
    missed = check(10 * most)
    assert missed.returncode == 1, missed.stdout + missed.stderr
    assert "no longer holds here" in " ".join(missed.stderr.split())
