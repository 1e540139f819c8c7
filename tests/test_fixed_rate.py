"""Load at a fixed rate, its validity, exact CPU per request, and the capacity under a
latency target: each on a server whose answer is known (short, bounded runs)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from benchlab.load.request_records import Generator, csv_lines, read_results
from benchlab.load.result import LoadResult
from benchlab.recipe import build_plan, load_recipe
from benchlab.report.progress import LineReporter
from benchlab.runner import SessionOptions, run_recipe
from benchlab.stacks import CATALOGUE
from benchlab.store import Store
from tests.conftest import benchlab, write_recipe
from tests.test_failures import _misbehaving_stack


def _run(directory: Path, tmp: Path, body: str) -> dict:
    recipe = write_recipe(directory, body)
    results = directory / "results.db"
    run = benchlab("run", str(recipe), "--results", str(results), env={"TMPDIR": str(tmp)})
    assert run.returncode == 0, run.stdout + run.stderr
    report = benchlab("report", "--results", str(results), "--format", "json")
    assert report.returncode == 0, report.stderr
    assert list(tmp.iterdir()) == [], "the run left a temp directory behind"
    return json.loads(report.stdout)


# --- the schedule: due times, lag and coordinated omission (known answers) ------------------


def _read(rows: list[list[str]], rate: float) -> LoadResult:
    lines = csv_lines(rows)
    return read_results([Generator(lambda: lines, rate)])


def _row(seq: int, sent_ns: int, latency_ns: int, code: int = 200, error: str = "") -> list[str]:
    return [
        str(sent_ns),
        str(code),
        str(latency_ns),
        "0",
        "2",
        error,
        "",
        "",
        str(seq),
        "GET",
        "u",
        "",
    ]


def test_a_request_sent_late_counts_from_when_it_was_due() -> None:
    # 10 req/s: request n is due at (n + 1) × 100 ms. Number 5 goes out 50 ms late.
    rows = [
        _row(n, (n + 1) * 100_000_000 + (50_000_000 if n == 5 else 0), 1_000_000) for n in range(10)
    ]
    result = _read(rows, rate=10.0)
    assert result.schedule_lag_ms == pytest.approx(50.0)
    assert result.latency.max == pytest.approx(51.0, rel=0.01)  # 1 ms of latency + 50 of lag
    assert result.latency.p50 == pytest.approx(1.0, rel=0.01)
    assert result.requests == 10 and result.errors.total == 0


def test_errors_are_classified_and_a_timeout_keeps_its_latency() -> None:
    timeout = "Get ...: context deadline exceeded (Client.Timeout exceeded)"
    refused = "Get ...: dial tcp 127.0.0.1:1: connect: connection refused"
    rows = [
        _row(0, 100_000_000, 1_000_000),
        _row(1, 200_000_000, 2_000_000_000, 0, timeout),
        _row(2, 300_000_000, 100_000, 0, refused),
        _row(3, 400_000_000, 1_000_000, 500),
    ]
    result = _read(rows, rate=10.0)
    assert (result.errors.timeout, result.errors.connect, result.errors.non_2xx) == (1, 1, 1)
    assert result.requests == 2 and result.successes == 1
    assert result.latency.max == pytest.approx(2000.0, rel=0.01)  # the timeout, not dropped


# --- a server of known capacity: gunicorn sync, 2 workers, 10 ms per request: 200 req/s ------

RATES = """
name = "rates"
stacks = ["flask+gunicorn"]
scenarios = ["sleep"]
trials = 1
warmup = 0
[params]
sleep_ms = 10
[stack."flask+gunicorn"]
workers = 2
[cores]
server = [0]
load = [1]
[[load]]
tool = "vegeta"
rate = [100, 400]
connections = 64
duration = 3
"""


@pytest.mark.alone
@pytest.mark.slow
def test_a_rate_below_capacity_is_delivered_and_one_above_is_flagged(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    cells = {c["target_rate"]: c for c in _run(tmp_path, isolated_tmp, RATES)["cells"]}
    held, over = cells[100.0], cells[400.0]
    assert held["mode"] == "rate" and held["rate_ratio"]["median"] >= 0.97
    # The 10 ms sleep is a floor. Above it, at half the capacity a request waits little,
    # while twice the capacity builds a queue of seconds: the reference is that queue.
    assert held["latency_ms"]["p50"] >= 10
    assert held["latency_ms"]["p99"] < over["latency_ms"]["p50"] / 10, (held, over)
    # Nothing says the server fell short. (The generator may be flagged late on a VM that
    # stalls it for a moment: seen once, 17 ms late at 13 % CPU; that is about the load side.)
    server_side = {"rate-not-delivered", "falling-behind", "server-saturated", "errors"}
    assert not server_side & set(held["verdicts"]), held["verdict_sentences"]
    assert held["latency_source"] == "merged histogram"
    # Twice what two workers serve: the queue grows all trial long.
    assert over["rate_ratio"]["median"] < 0.6
    assert "rate-not-delivered" in over["verdicts"] and "falling-behind" in over["verdicts"]
    assert "server-bound" in over["verdict_sentences"]["rate-not-delivered"]
    assert over["latency_ms"]["p99"] > 1000  # 200 req/s too many for 3 s: 600 queued


SLO = """
name = "slo"
stacks = ["flask+gunicorn"]
scenarios = ["sleep"]
trials = 1
warmup = 0
[params]
sleep_ms = 10
[stack."flask+gunicorn"]
workers = 2
[cores]
server = [0]
load = [1]
[slo]
p99_ms = 100
[[load]]
tool = "vegeta"
connections = 64
duration = 2
timeout = 2
"""


@pytest.mark.alone
@pytest.mark.slow
def test_the_capacity_search_finds_the_known_capacity(tmp_path: Path, isolated_tmp: Path) -> None:
    (cell,) = _run(tmp_path, isolated_tmp, SLO)["cells"]
    assert cell["mode"] == "slo" and cell["ranked_by"] == "capacity_rps"
    # Two workers, each request 10 ms asleep: 200 req/s at most, less what each request
    # costs beside its sleep on this machine; the closed loop measures that in the same run.
    closed, found = cell["closed_capacity_rps"], cell["capacity_rps"]["median"]
    assert closed <= 200 * 1.1, closed  # 10 % for the trial's own timing
    # A p99 of 100 ms leaves room for a queue of ten requests: the search's steps (25, 50,
    # 75, 90 % of the closed loop) reach 75 % of it at least. Above, the two workers' 200
    # (the closed loop itself can fall short of what a fixed rate holds: seen 171 vs 186).
    assert 0.7 * closed <= found <= 200 * 1.05, (found, closed)
    assert cell["latency_ms"]["p99"] <= 100  # at the capacity it reports, the SLO held
    curve = cell["curve"]
    assert len(curve) >= 5 and any(p["held"] for p in curve), curve
    # The search stops at 1.2x the closed loop (what its connections carry). A closed loop
    # that fell short (seen in CI: 146 req/s, so the search held everything up to 176) leaves
    # no missed rate: the figure must then say it is a lower bound, never call it the capacity.
    if not any(not p["held"] for p in curve):
        assert cell["capacity_rps"]["bracketed"] is False, cell["capacity_rps"]


GENERATOR_BOUND = """
name = "generator-bound"
stacks = ["nginx-static"]
scenarios = ["plaintext"]
trials = 1
warmup = 0
[cores]
server = [0]
load = [1]
[[load]]
tool = "vegeta"
rate = 200000
connections = 256
duration = 2
"""


@pytest.mark.alone
@pytest.mark.slow
def test_a_rate_beyond_the_generator_is_blamed_on_the_generator(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    (cell,) = _run(tmp_path, isolated_tmp, GENERATOR_BOUND)["cells"]
    # 200,000 req/s is over ten times what one core of vegeta sends (about 18,000 here).
    assert cell["rate_ratio"]["median"] < 0.5
    sentence = cell["verdict_sentences"]["rate-not-delivered"]
    assert "generator-bound" in sentence and "says nothing about the server" in sentence
    # Whose the shortfall is follows from when requests were sent, not from the generator's
    # CPU: starved by the VM's neighbours, vegeta used 87 % of its core and still sent late.
    assert cell["sent_rate"]["median"] < 0.95 * 200_000


CPU = """
name = "cpu-per-request"
stacks = ["gin", "fastapi+uvicorn"]
scenarios = ["cpu"]
trials = 3
warmup = 0
[params]
cpu_us = [0, 10000]
[stack."fastapi+uvicorn"]
workers = 2
[cores]
server = [0]
load = [1]
[[load]]
tool = "vegeta"
rate = 40
connections = 16
duration = 2
"""


@pytest.mark.alone
@pytest.mark.slow
def test_cpu_per_request_is_the_known_cost_counted_over_the_whole_tree(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    # Each request of one cell burns 10 ms of its thread's CPU time, the other's none, on the
    # same launch at the same rate: what the server adds around a request (waking up,
    # parsing, answering: 0.3-2.3 ms at 40 req/s, depending on the machine) is in both, so
    # the difference is the burn, plus what burning costs the runtime beside it (Go's
    # scheduler hands its processor off while a goroutine holds a thread: about 2 ms here).
    # What must not happen: a tree counted in part (fastapi's two workers under their
    # master: the difference near 0) or twice (a child's time added again through its
    # parent: 20 ms or more).
    cells = _run(tmp_path, isolated_tmp, CPU)["cells"]
    cost = {(c["stack"], c["ms"]): c["cpu_us_per_request"] for c in cells}
    for cell in cells:
        assert cell["cpu_source"].startswith("cgroup"), cell["cpu_source"]
    for stack in ("gin", "fastapi+uvicorn"):
        burnt, idle = cost[(stack, 10_000)], cost[(stack, 0)]
        added = burnt["median"] - idle["median"]
        # Below: thread CPU time is never short of the 10 ms burnt, so only the idle
        # overhead's own spread from trial to trial may take something off.
        assert added >= 10_000 * 0.98 - (idle["high"] - idle["low"]), (stack, burnt, idle)
        # Above: halfway to counting the burn twice.
        assert added <= 10_000 * 1.5, (stack, burnt, idle)


@pytest.mark.alone
@pytest.mark.slow
def test_percentiles_of_a_known_distribution_are_neither_the_mean_nor_the_max(
    tmp_path: Path, isolated_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalogue = {**CATALOGUE, "mix": _misbehaving_stack("mix", "mix")}
    monkeypatch.setenv("TMPDIR", str(isolated_tmp))
    path = write_recipe(
        tmp_path,
        """
        name = "known-distribution"
        stacks = ["mix"]
        scenarios = ["json"]
        trials = 1
        warmup = 0
        [[load]]
        tool = "vegeta"
        rate = 100
        connections = 32
        duration = 4
        """,
    )
    recipe, text = load_recipe(path, catalogue)
    store = Store(tmp_path / "r.db")
    reporter = LineReporter(Console(file=io.StringIO()))
    run_id = run_recipe(
        build_plan(path, recipe, text, catalogue), store, reporter, SessionOptions("test")
    ).run_id
    report = benchlab("report", run_id, "--results", str(tmp_path / "r.db"), "--format", "json")
    (cell,) = json.loads(report.stdout)["cells"]
    latency = cell["latency_ms"]
    # Of every 200 requests: 192 wait 5 ms, 7 wait 50 ms, 1 waits 200 ms. The waits are
    # floors (a sleep is never shorter); above them only the server's own overhead, which
    # the 4×-10× gaps between the groups leave room for on any machine: the median is a
    # 5-ms request, the p99 a 50-ms one, neither the mean (7.55 ms + overhead) nor the max.
    assert 5 <= latency["p50"] < 50, latency
    assert 50 <= latency["p99"] < 200, latency
    assert latency["mean"] < latency["p99"] / 2 and latency["max"] >= 200, latency
    assert latency["p99"] not in (latency["mean"], latency["max"])
