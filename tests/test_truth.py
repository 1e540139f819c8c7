"""Verdicts, adaptive trials, rank flips and compare, each on a real situation beside its
healthy twin (short, bounded runs), plus the same logic on synthetic data."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from benchlab.analysis.evidence import Evidence
from benchlab.analysis.flips import flips
from benchlab.analysis.grid import GridPoint
from benchlab.analysis.ranking import Call, Ranking, rank
from benchlab.analysis.run_options import RunOptions
from benchlab.analysis.stats import ratio_interval
from benchlab.core import figures as F
from benchlab.recipe import build_plan, load_recipe
from benchlab.report.progress import LineReporter
from benchlab.runner import SessionOptions, run_recipe
from benchlab.stacks import CATALOGUE, Stack
from benchlab.store import Store
from tests.conftest import benchlab, write_recipe
from tests.entrants import Contender
from tests.html_table import ReportPage
from tests.measured import MeasuredCell as _Measured
from tests.test_failures import _misbehaving_stack


def _report(results: Path, run: str | None = None) -> dict:
    args = ["report", *([run] if run else []), "--results", str(results), "--format", "json"]
    result = benchlab(*args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _by(report: dict, key: str) -> dict[str, dict]:
    return {c[key]: c for c in report["cells"]}


def _run(tmp_path: Path, tmp: Path, recipe_text: str, name: str = "recipe.toml") -> Path:
    recipe = write_recipe(tmp_path, recipe_text, name)
    results = tmp_path / "results.db"
    result = benchlab("run", str(recipe), "--results", str(results), env={"TMPDIR": str(tmp)})
    assert result.returncode == 0, result.stdout + result.stderr
    return results


def _execute(
    tmp_path: Path, store: Store, recipe_text: str, name: str, stacks: dict[str, Stack]
) -> str:
    """The recipe run in this process, its stacks the catalogue's and the test's own."""
    path = write_recipe(tmp_path, recipe_text, name)
    catalogue = {**CATALOGUE, **stacks}
    recipe, text = load_recipe(path, catalogue)
    reporter = LineReporter(Console(file=io.StringIO()))
    return run_recipe(
        build_plan(path, recipe, text, catalogue), store, reporter, SessionOptions("test")
    ).run_id


# --- synthetic ---------------------------------------------------------------------------


def test_few_trials_give_an_exact_range_interval() -> None:
    disjoint = ratio_interval([12.0, 13.0, 14.0], [9.0, 10.0, 11.0])
    assert disjoint is not None and disjoint.significant
    assert disjoint.low == pytest.approx(12 / 11) and disjoint.high == pytest.approx(14 / 9)
    assert disjoint.confidence == pytest.approx(1 - 2 / 20)  # C(6, 3) = 20
    overlapping = ratio_interval([10.0, 12.0, 14.0], [9.0, 11.0, 13.0])
    assert overlapping is not None and not overlapping.significant
    assert ratio_interval([1.0], [2.0]).confidence == 0.0


def _point(name: str) -> GridPoint:
    return GridPoint(name, "db-delay", "wrk", 64)


def _contender(label: str, point: str, samples: list[float], figure: F.Figure) -> Contender:
    return Contender(f"{label}|{point}", label, _point(point), figure, samples, ranks=True)


def _ranking(grid: list[Contender]) -> Ranking:
    return rank(grid, RunOptions(min_effect_pct=EVIDENCE.min_effect_pct))


def _order(ranking: Ranking, point: str) -> list[str]:
    return [place.label for place in ranking.points[_point(point)].order]


def test_flips_on_a_synthetic_grid() -> None:
    def c(label: str, point: str, value: float) -> Contender:
        factors = (0.98, 1.0, 1.02, 0.99, 1.01, 1.0)
        return _contender(label, point, [value * f for f in factors], F.THROUGHPUT)

    grid = [
        c("async", "many-sessions", 800), c("sync", "many-sessions", 150),
        c("async", "few-sessions", 50), c("sync", "few-sessions", 150),
        c("steady", "many-sessions", 100), c("steady", "few-sessions", 100),
        c("close", "many-sessions", 151), c("close", "few-sessions", 149),
    ]  # fmt: skip
    found = {(f.a, f.b): f for f in flips(_ranking(grid))}
    assert ("async", "sync") in found and ("async", "steady") in found
    flip = found[("async", "sync")]
    assert [w.point for w in flip.a_wins] == [_point("many-sessions")]
    assert [w.point for w in flip.b_wins] == [_point("few-sessions")]
    assert flip.a_wins[0].ratio.value == pytest.approx(800 / 150)
    # within noise of each other everywhere: no flip between sync and close
    assert ("close", "sync") not in found
    assert _order(_ranking(grid), "many-sessions")[:2] == ["async", "close"]


EVIDENCE = Evidence(min_effect_pct=5.0)


def test_one_trial_a_side_declares_nothing_and_shows_no_interval() -> None:
    grid = [
        _contender("a", "x", [800.0], F.THROUGHPUT), _contender("b", "x", [150.0], F.THROUGHPUT),
        _contender("a", "y", [50.0], F.THROUGHPUT), _contender("b", "y", [150.0], F.THROUGHPUT),
    ]  # fmt: skip
    ranking = _ranking(grid)
    assert flips(ranking) == []
    assert all(s.call is Call.TIE for p in ranking.points.values() for s in p.steps)
    judgement = EVIDENCE.judge([800.0], [150.0], F.THROUGHPUT)
    assert judgement.verdict == "tie" and "1 trial(s)" in judgement.why
    assert not judgement.ratio.has_interval
    from benchlab.report.columns import ratio_text

    assert ratio_text(judgement.ratio) == "5.33 (1 trial: no interval)"


def test_a_one_percent_edge_over_six_trials_is_a_tie_and_thirty_percent_is_not() -> None:
    tight = (0.999, 1.0, 1.001, 0.9995, 1.0005, 1.0)
    base = [1000 * f for f in tight]
    edge = EVIDENCE.judge([1010 * f for f in tight], base, F.THROUGHPUT)
    assert edge.ratio.significant and edge.verdict == "tie" and "practical threshold" in edge.why
    clear = EVIDENCE.judge([1300 * f for f in tight], base, F.THROUGHPUT)
    assert clear.verdict == "a" and clear.ratio.value == pytest.approx(1.3)


def test_a_figure_where_lower_wins_ranks_and_flips_the_other_way() -> None:
    """p99 at a fixed rate: the stack with the lower latency wins."""
    factors = (0.98, 1.0, 1.02, 0.99, 1.01, 1.0)
    grid = [
        _contender("a", "x", [10 * f for f in factors], F.P99),
        _contender("b", "x", [30 * f for f in factors], F.P99),
        _contender("a", "y", [90 * f for f in factors], F.P99),
        _contender("b", "y", [20 * f for f in factors], F.P99),
    ]
    ranking = _ranking(grid)
    assert _order(ranking, "x") == ["a", "b"]
    (flip,) = flips(ranking)
    assert [w.point for w in flip.a_wins] == [_point("x")]
    # a win is written as how many times better: a's p99 three times lower
    assert flip.a_wins[0].ratio.value == pytest.approx(30 / 10)


# --- real situations ---------------------------------------------------------------------

SLEEP = """
name = "sleep-verdicts"
stacks = ["flask+gevent-late-patch", "flask+gevent", "flask+gunicorn", "fastapi+uvicorn"]
scenarios = ["sleep"]
trials = 1
warmup = 0
[params]
sleep_ms = 50
[[load]]
connections = 32
duration = 2
"""


@pytest.mark.alone
@pytest.mark.slow
def test_blocked_and_littles_law_verdicts_on_sleep(tmp_path: Path, isolated_tmp: Path) -> None:
    cells = _by(_report(_run(tmp_path, isolated_tmp, SLEEP)), "stack")
    # The late gevent patch: 1000 greenlets that could wait at once, but the sleep blocks. No
    # limit of its own explains that, so the binding-limit verdict (littles-law) stays quiet.
    assert "blocked" in cells["flask+gevent-late-patch"]["verdicts"]
    assert "littles-law" not in cells["flask+gevent-late-patch"]["verdicts"]
    assert "blocked" not in cells["flask+gevent"]["verdicts"]
    assert "littles-law" not in cells["flask+gevent"]["verdicts"]
    # One sync worker can hold one wait: below Little's law, but not blocked: it is its design,
    # and the verdict names that limit.
    assert "littles-law" in cells["flask+gunicorn"]["verdicts"]
    assert (
        "its own concurrency (1 requests at once)"
        in (cells["flask+gunicorn"]["verdict_sentences"]["littles-law"])
    )
    assert "blocked" not in cells["flask+gunicorn"]["verdicts"]
    assert not {"blocked", "littles-law"} & set(cells["fastapi+uvicorn"]["verdicts"])
    sentence = cells["flask+gevent-late-patch"]["verdict_sentences"]["blocked"]
    assert "it could hold 32 requests waiting at once" in sentence  # the clients bind first
    # The HTML report badges the verdicts, each with its sentence.
    page = tmp_path / "report.html"
    results = tmp_path / "results.db"
    html = benchlab("report", "--results", str(results), "-f", "html", "-o", str(page))
    assert html.returncode == 0, html.stderr
    rows = {r["cells"][0]: r for r in ReportPage(page.read_text()).rows}
    late = next(r for label, r in rows.items() if label.startswith("flask+gevent-late-patch"))
    assert late["badges"]["blocked"] == sentence
    assert "littles-law" not in late["badges"] and "valid" not in late["badges"]


POOL = """
name = "pool-verdict"
stacks = ["fastapi+uvicorn", "flask+gunicorn"]
scenarios = ["db-delay"]
trials = 1
warmup = 0
[params]
db_delay_ms = 20
[[load]]
duration = 2
[[points]]
name = "small-pool"
pool_size = 2
connections = 64
[[points]]
name = "big-pool"
pool_size = 16
connections = 4
"""


@pytest.mark.alone
@pytest.mark.slow
def test_pool_exhausted_verdict(tmp_path: Path, isolated_tmp: Path) -> None:
    report = _report(_run(tmp_path, isolated_tmp, POOL))
    cells = _by({"cells": [c for c in report["cells"] if c["stack"] == "fastapi+uvicorn"]}, "point")
    small, big = cells["small-pool"], cells["big-pool"]
    assert small["db_sessions_peak"] == 2 and small["db_pool_limit"] == 2
    assert "pool-exhausted" in small["verdicts"]
    assert "littles-law" not in small["verdicts"], "the pool explains it, once"
    assert big["db_sessions_peak"] <= 4 and "pool-exhausted" not in big["verdicts"]
    # Its twin: one sync worker holds one session at a time; its pool of 2 is never full.
    sync = next(
        c for c in report["cells"] if c["stack"] == "flask+gunicorn" and c["point"] == "small-pool"
    )
    assert sync["db_sessions_peak"] == 1 and sync["db_pool_limit"] == 2
    assert "pool-exhausted" not in sync["verdicts"]


@pytest.mark.alone
@pytest.mark.slow
def test_errors_verdict_on_a_stack_answering_500s(
    tmp_path: Path, isolated_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(isolated_tmp))
    store = Store(tmp_path / "r.db")
    recipe = """
        name = "errors"
        stacks = ["flaky", "nginx-static"]
        scenarios = ["plaintext"]
        trials = 1
        warmup = 0
        [[load]]
        connections = 4
        duration = 1
    """
    flaky = {"flaky": _misbehaving_stack("flaky", "flaky")}
    run_id = _execute(tmp_path, store, recipe, "errors.toml", flaky)
    cells = _by(_report(tmp_path / "r.db", run_id), "stack")
    assert "errors" in cells["flaky"]["verdicts"]
    assert "non_2xx" in cells["flaky"]["verdict_sentences"]["errors"]
    assert "errors" not in cells["nginx-static"]["verdicts"]


@pytest.mark.alone
@pytest.mark.slow
def test_a_stack_that_keeps_what_it_allocates_leaks_and_a_flat_one_does_not(
    tmp_path: Path, isolated_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each request to `leaky` keeps 20 KB; `ok` keeps nothing. Over a 3-s trial the leaky
    server's RSS grows by about what its requests kept between the first and the last fifth
    of the trial (known from the requests it answered), and only it is flagged."""
    monkeypatch.setenv("TMPDIR", str(isolated_tmp))
    store = Store(tmp_path / "r.db")
    recipe = """
        name = "leaks"
        stacks = ["leaky", "ok"]
        scenarios = ["plaintext"]
        trials = 1
        warmup = 0
        [[load]]
        connections = 4
        duration = 3
    """
    stacks = {"leaky": _misbehaving_stack("leaky", "leaky"), "ok": _misbehaving_stack("ok", "ok")}
    run_id = _execute(tmp_path, store, recipe, "leaks.toml", stacks)
    cells = _by(_report(tmp_path / "r.db", run_id), "stack")
    leaky, ok = cells["leaky"], cells["ok"]
    assert "leaks" in leaky["verdicts"] and "leaks" not in ok["verdicts"], (leaky, ok)
    kept_mb = leaky["requests"] * 20_000 / 2**20 * 4 / 5  # first to last fifth's middle
    growth = leaky["rss_growth_mb"]["median"]
    assert 0.5 * kept_mb < growth < 2 * kept_mb, (growth, kept_mb)
    assert abs(ok["rss_growth_mb"]["median"]) < max(1.0, 0.05 * kept_mb)
    assert "MB during a trial" in leaky["verdict_sentences"]["leaks"]


@pytest.fixture
def tmp_dirs(tmp_path: Path) -> Path:
    for sub in ("easy", "hard"):
        (tmp_path / sub).mkdir()
    return tmp_path


FLIP = """
name = "flip"
stacks = ["fastapi+uvicorn", "flask+gunicorn"]
scenarios = ["db-delay"]
trials = 3
warmup = 0
[params]
db_delay_ms = 20
[stack."flask+gunicorn"]
workers = 3
pool_size = 1
[[load]]
connections = 32
duration = 1
[[points]]
name = "few-sessions"
pool_size = 1
[[points]]
name = "many-sessions"
pool_size = 16
"""


@pytest.mark.alone
@pytest.mark.slow
def test_a_real_rank_flip_between_async_and_sync(tmp_path: Path, isolated_tmp: Path) -> None:
    report = _report(_run(tmp_path, isolated_tmp, FLIP))
    flips_found = report["rank_flips"]
    assert len(flips_found) == 1, flips_found
    flip = flips_found[0]
    wins = {flip["a"]: flip["a_wins"], flip["b"]: flip["b_wins"]}
    async_label = next(k for k in wins if k.startswith("fastapi"))
    sync_label = next(k for k in wins if k.startswith("flask"))
    assert [w["point"]["name"] for w in wins[async_label]] == ["many-sessions"]
    assert [w["point"]["name"] for w in wins[sync_label]] == ["few-sessions"]
    assert all(w["low"] > 1 for w in wins[async_label] + wins[sync_label])
    md = benchlab("report", "--results", str(tmp_path / "results.db"), "--format", "md").stdout
    assert "Rank flips" in md and "[few-sessions]" in md


# A run whose unchanged reference (nginx-static) spread more than 1.5x across its own trials
# was disturbed while it ran: seen once in CI, every trial of one run 2-50x slower for half a
# minute, so that run compared nothing. Such a run is measured again (at most twice more);
# the reference, not the machine's speed, says when.
STEADY_REFERENCE_SPREAD = 1.5


def _steady_run(
    tmp_path: Path, store: Store, recipe_text: str, name: str, stacks: dict[str, Stack]
) -> str:
    for attempt in range(3):
        run_id = _execute(tmp_path, store, recipe_text, f"{attempt}-{name}", stacks)
        cells = _report(store.path, run_id)["cells"]
        reference = next(c for c in cells if c["stack"] == "nginx-static")["throughput_rps"]
        if reference["high"] <= STEADY_REFERENCE_SPREAD * reference["low"]:
            break
    return run_id


def _compared(results: Path, first: str, second: str) -> dict:
    done = benchlab("compare", first, second, "--results", str(results), "--format", "json")
    return json.loads(done.stdout)


def _moved_alike(cells: list[dict]) -> bool:
    """The unchanged stack's ratio interval between two runs meets the reference's."""
    reference = next(c for c in cells if c["stack"].startswith("nginx-static"))["ratio"]
    tunable = next(c for c in cells if c["stack"].startswith("tunable"))["ratio"]
    return tunable["low"] <= reference["high"] and tunable["high"] >= reference["low"]


@pytest.mark.alone
@pytest.mark.slow
def test_compare_same_recipe_twice_and_a_slowed_stack(
    tmp_path: Path, isolated_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tunable = {"tunable": _misbehaving_stack("tunable", "slow")}
    monkeypatch.setenv("TMPDIR", str(isolated_tmp))
    results = tmp_path / "r.db"
    store = Store(results)
    recipe = """
        name = "compare"
        stacks = ["tunable", "nginx-static"]
        scenarios = ["json"]
        trials = 3
        warmup = 0
        [[load]]
        connections = 4
        duration = 1
    """
    monkeypatch.setenv("BENCHLAB_SLOW_MS", "0")
    # Two runs one after the other are not interleaved: the whole machine can be slower for
    # the second (a neighbour on the VM; seen: both stacks at 0.77-0.80). nginx-static, which
    # nothing changes, measures that drift; the regression threshold allows it on top of 10 %.
    # That holds while the drift moves both stacks alike; a pair the VM moved apart (seen once
    # in about fifteen suites: nginx-static 1.32x faster in the second run, the Python stack
    # at most 1.13x) is measured again, at most twice more.
    for attempt in range(3):
        first = _steady_run(tmp_path, store, recipe, f"a{attempt}.toml", tunable)
        second = _steady_run(tmp_path, store, recipe, f"b{attempt}.toml", tunable)
        drift = _compared(results, first, second)
        if _moved_alike(drift["cells"]):
            break
    monkeypatch.setenv("BENCHLAB_SLOW_MS", "2")
    slowed = _steady_run(tmp_path, store, recipe, "c.toml", tunable)
    reference = next(c for c in drift["cells"] if c["stack"].startswith("nginx-static"))
    # (--fail-above takes at most 100; past 90 % of drift the machine compares nothing.)
    allowance = min(90.0, 10 + max(0.0, 100 * (1 - reference["ratio"]["low"])))
    threshold = f"{allowance:.0f}"
    same = benchlab("compare", first, second, "--results", str(results), "--fail-above", threshold)
    assert same.returncode == 0, same.stdout
    # Unchanged code moves with the machine: the same way as the reference, within the noise.
    assert _moved_alike(drift["cells"]), drift["cells"]
    # 2 ms of work on a request that took well under one: several times slower, far past any
    # drift the threshold allows.
    worse = benchlab("compare", first, slowed, "--results", str(results), "--fail-above", threshold)
    assert worse.returncode == 1, worse.stdout
    lines = {line.split("│")[1].strip(): line for line in worse.stdout.splitlines() if "│" in line}
    assert "slower" in next(v for k, v in lines.items() if k.startswith("tunable"))
    assert f"FAIL: slower by more than {threshold}% (or failed, or missing): tunable" in (
        worse.stdout
    )
    # A stack that no longer starts is the worst regression, not a cell to skip.
    crashing = {"tunable": _misbehaving_stack("tunable", "crash")}
    broken = _execute(tmp_path, store, recipe, "d.toml", crashing)
    gone = benchlab("compare", first, broken, "--results", str(results), "--fail-above", "10")
    assert gone.returncode == 1, gone.stdout
    assert "failed in B" in gone.stdout and "FAIL" in gone.stdout
    unknown = benchlab("compare", first, "nope", "--results", str(results))
    assert unknown.returncode == 2 and "no run 'nope'" in unknown.stderr


def test_each_verdict_is_declared_once_with_what_it_cautions_about() -> None:
    from benchlab.analysis.verdicts import CAUTIONS, VERDICTS

    assert list(VERDICTS) == [
        "errors", "tool-stalled", "client-bound", "rate-not-delivered", "generator-lag",
        "falling-behind", "server-saturated", "blocked", "littles-law", "pool-exhausted",
        "capacity-unbracketed", "leaks", "nonconformant", "input-limits", "drops", "hangs",
        "needs-proxy", "ws-counts", "sent-late", "hold-stalled", "unstable",
    ]  # fmt: skip
    cautions = {
        "client-bound",
        "tool-stalled",
        "errors",
        "blocked",
        "unstable",
        "rate-not-delivered",
        "capacity-unbracketed",
        "nonconformant",
        "ws-counts",
        "sent-late",
    }
    assert set(CAUTIONS) == cautions
    # Measured and shown, but not ranked: a server that parsed a request wrong.
    assert {name for name, kind in VERDICTS.items() if kind.unranked} == {"nonconformant"}
    # A ceiling cell with one of these measured its load tool, not the machine.
    assert {name for name, kind in VERDICTS.items() if kind.tool_figure} == {
        "client-bound", "tool-stalled"
    }  # fmt: skip


def test_a_cell_that_never_reaches_95_percent_is_reported() -> None:
    from benchlab.analysis.verdicts import Setting, verdicts

    cell = _Measured(
        {F.THROUGHPUT.key: 1000.0, F.REQUESTS.key: 10_000, F.SERVER_CPU.key: 95.0,
         F.LOAD_CPU.key: 40.0},
        scenario="json", connections=8,
    )  # fmt: skip
    setting = Setting(
        server_cores=1, load_cores=1, half_width_pct=1.0, confidence=0.875,
        target_half_width_pct=5.0,
    )  # fmt: skip
    assert [v.name for v in verdicts(cell, replace(setting, adaptive=True))] == ["unstable"]
    assert verdicts(cell, setting) == []


def test_an_undelivered_rate_is_blamed_on_whoever_fell_behind() -> None:
    from benchlab.analysis.verdicts import RATE_NOT_DELIVERED, Bound, Setting, verdicts

    def shortfall(sent_rate: float) -> tuple[str, Bound | None]:
        cell = _Measured(
            {F.THROUGHPUT.key: 200.0, F.REQUESTS.key: 400, F.SERVER_CPU.key: 5.0,
             F.LOAD_CPU.key: 40.0, F.TARGET_RATE.key: 500.0, F.SENT_RATE.key: sent_rate,
             F.RATE_RATIO.key: 0.4},
            scenario="sleep", connections=16, ms=10, mode="rate",
        )  # fmt: skip
        setting = Setting(
            server_cores=1, load_cores=1, half_width_pct=1.0, confidence=0.875,
            target_half_width_pct=50.0,
        )  # fmt: skip
        (found,) = [v for v in verdicts(cell, setting) if v.name == RATE_NOT_DELIVERED.name]
        return found.sentence, found.bound

    # Sent on time at 40 % CPU, answered at 200 of 500: the server did not keep up.
    sentence, bound = shortfall(sent_rate=499.0)
    assert "server-bound" in sentence and bound is Bound.SERVER
    # Sent late at 40 % CPU (a generator whose core the VM gave away): the generator's.
    sentence, bound = shortfall(sent_rate=220.0)
    assert "generator-bound" in sentence and bound is Bound.GENERATOR


def test_a_server_starved_by_the_hypervisor_is_not_called_blocked() -> None:
    from benchlab.analysis.verdicts import BLOCKED, Setting, verdicts

    def named(steal_pct: float) -> list[str]:
        # An app whose request waits 55 ms alone, 256 connections: it could serve 4,655
        # req/s; it served 1,650 with its one core 40 % busy.
        cell = _Measured(
            {F.THROUGHPUT.key: 1650.0, F.REQUESTS.key: 3300, F.SERVER_CPU.key: 40.0,
             F.LOAD_CPU.key: 30.0, F.STEAL.key: steal_pct},
            scenario="app", connections=256, alone_ms=55.0,
        )  # fmt: skip
        setting = Setting(
            server_cores=1, load_cores=1, half_width_pct=1.0, confidence=0.875,
            target_half_width_pct=50.0,
        )  # fmt: skip
        return [v.name for v in verdicts(cell, setting)]

    assert BLOCKED.name in named(steal_pct=0.0)  # its CPU idle: something blocks
    assert BLOCKED.name not in named(steal_pct=30.0)  # its CPU taken away: not its doing
