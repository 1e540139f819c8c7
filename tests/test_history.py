"""benchlab history: every run of a recipe as a series per cell, and the change points the
evidence confirms — on stored runs whose figures the test sets (no load: the store's API)."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager, nullcontext
from pathlib import Path

import pytest
from rich.console import Console

from benchlab.core.errors import ExitCode
from benchlab.recipe import build_plan, load_recipe
from benchlab.report.history_html import SEGMENT_SHADES
from benchlab.report.progress import LineReporter
from benchlab.runner import SessionOptions, run_recipe
from benchlab.stacks import CATALOGUE, Stack
from benchlab.store import Store
from tests.browser import open_page
from tests.conftest import REPO, SLOWABLE_RECIPE, benchlab, short_tmp, write_recipe
from tests.stored_runs import MACHINE, with_machine, write_run
from tests.test_failures import _misbehaving_stack

FAST, SLOW = 4_020.0, 3_200.0
SHADED = SEGMENT_SHADES[0]
ARTIFACTS = REPO / "test-artifacts"


def _eight_runs(path: Path, flask: list[float], machines: list[dict] | None = None) -> None:
    for i, rps in enumerate(flask):
        medians = {"gin": {"json": 88_000.0}, "flask+gunicorn": {"json": rps}}
        write_run(path, medians, machine=(machines or [MACHINE] * 8)[i])


def _history(*stores: Path, fmt: str = "json") -> dict:
    args = [a for s in stores for a in ("--results", str(s))]
    done = benchlab("history", "quick", *args, "-f", fmt)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _series(history: dict, stack: str) -> dict:
    return next(s for s in history["series"] if s["cell"]["stack"].startswith(f"{stack} "))


@pytest.mark.slow
def test_a_slowdown_from_the_fifth_run_is_one_change_point_at_the_fifth(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    flask_updated = with_machine(packages={"flask": "3.2.0"})
    _eight_runs(path, [FAST] * 4 + [SLOW] * 4, [MACHINE] * 4 + [flask_updated] * 4)
    history = _history(path)
    assert history["runs"] == 8
    flask = _series(history, "flask+gunicorn")
    assert [round(p["median"]) for p in flask["points"]] == [round(FAST)] * 4 + [round(SLOW)] * 4
    (change,) = flask["change_points"]
    assert change["index"] == 4 and change["run"] == flask["points"][4]["run"]
    assert change["direction"] == "slower"
    assert change["ratio"]["high"] < 1 and abs(change["ratio"]["value"] - SLOW / FAST) < 0.01
    assert change["versions_changed"] == ["flask 3.1.3 → 3.2.0"]
    # Each point names the versions that define its cell (benchlab's and its stack's packages).
    points = flask["points"]
    assert points[3]["versions"]["flask"] == "3.1.3" and points[4]["versions"]["flask"] == "3.2.0"
    assert "flask" not in _series(history, "gin")["points"][0]["versions"]
    assert _series(history, "gin")["change_points"] == []  # nothing moved it
    text = benchlab("history", "quick", "--results", str(path)).stdout
    assert "▼3,200" in text and "run 5" in text and "changed there: flask 3.1.3 → 3.2.0" in text
    failed = benchlab("history", "quick", "--results", str(path), "--fail-on-change", "slower")
    assert failed.returncode == 1 and "flask+gunicorn" in failed.stderr


@pytest.mark.slow
def test_eight_runs_with_no_change_have_no_change_point(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    _eight_runs(path, [FAST, FAST * 1.01, FAST * 0.99, FAST, FAST * 1.02, FAST, FAST * 0.98, FAST])
    history = _history(path)
    assert all(s["change_points"] == [] for s in history["series"])
    ok = benchlab("history", "quick", "--results", str(path), "--fail-on-change", "slower")
    assert ok.returncode == 0


@pytest.mark.slow
def test_another_machine_starts_a_segment_not_a_change(tmp_path: Path) -> None:
    first, second = tmp_path / "ci.db", tmp_path / "laptop.db"
    bigger = with_machine(cores=8, cpu="Intel Xeon")
    _eight_runs(first, [FAST] * 4, [MACHINE] * 4)
    _eight_runs(second, [SLOW] * 4, [bigger] * 4)  # slower figures, but another machine
    history = _history(first, second)
    flask = _series(history, "flask+gunicorn")
    assert len(flask["points"]) == 8 and flask["change_points"] == []
    assert {p["machine"]["cores"] for p in flask["points"]} == {2, 8}
    text = benchlab("history", "quick", "--results", str(first), "--results", str(second)).stdout
    assert " | " in text  # the segment boundary is shown


@pytest.mark.slow
def test_a_recipe_with_no_run_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    write_run(path)
    done = benchlab("history", "seed-000", "--results", str(path))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "no finished run of recipe 'seed-000'" in done.stderr


def _history_page(tmp_path: Path) -> Path:
    """The HTML history of eight runs, slowed from the fifth."""
    path = tmp_path / "history.db"
    _eight_runs(path, [FAST] * 4 + [SLOW] * 4)
    page = tmp_path / "history.html"
    done = benchlab("history", "quick", "--results", str(path), "-f", "html", "-o", str(page))
    assert done.returncode == 0, done.stderr
    return page


@pytest.mark.slow
def test_the_history_page_has_one_timeline_per_cell(tmp_path: Path) -> None:
    text = _history_page(tmp_path).read_text()
    assert text.count("<svg") == 2 and "flask+gunicorn" in text and "▼" in text
    assert "<script" not in text and not re.search(r'(src|href)="https?:', text)  # offline


@pytest.mark.slow
def test_each_machine_of_a_timeline_is_a_stretch_shaded_apart_from_the_next(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "ci.db", tmp_path / "laptop.db"
    _eight_runs(first, [FAST] * 4, [MACHINE] * 4)
    _eight_runs(second, [FAST] * 4, [with_machine(cores=8)] * 4)
    page = tmp_path / "history.html"
    args = ["--results", str(first), "--results", str(second), "-f", "html", "-o", str(page)]
    assert benchlab("history", "quick", *args).returncode == 0
    charts = page.read_text().split("<svg")[1:]
    # Two machines, two stretches: one shaded, the next not (alike, they would read as one).
    assert len(charts) == 2 and all(c.count(f"fill: {SHADED}") == 1 for c in charts), charts[0]


@pytest.mark.slow
def test_a_branch_run_is_judged_against_mains_current_segment(tmp_path: Path) -> None:
    main, branch = tmp_path / "main.db", tmp_path / "branch.db"
    _eight_runs(main, [FAST] * 5)
    write_run(branch, {"gin": {"json": 88_000.0}, "flask+gunicorn": {"json": SLOW}})
    history = _history(main, branch)
    flask, gin = _series(history, "flask+gunicorn"), _series(history, "gin")
    assert flask["latest"]["in_segment"] is False and flask["latest"]["direction"] == "slower"
    assert flask["latest"]["segment_runs"] == 5 and flask["change_points"] == []
    assert gin["latest"]["in_segment"] is True
    args = ["--results", str(main), "--results", str(branch), "--fail-on-change", "slower"]
    failed = benchlab("history", "quick", *args)
    assert failed.returncode == 1 and "flask+gunicorn" in failed.stderr


@pytest.mark.slow
def test_the_history_page_renders_in_chromium_with_a_timeline_per_cell(tmp_path: Path) -> None:
    with open_page(_history_page(tmp_path)) as browser:
        charts = browser.evaluate(
            """Array.from(document.querySelectorAll("figure svg")).map(svg => {
                   const box = svg.getBoundingClientRect();
                   return {label: svg.getAttribute("aria-label"), width: box.width,
                           height: box.height, marks: svg.querySelectorAll("path").length};
               })"""
        )
        ARTIFACTS.mkdir(exist_ok=True)
        browser.screenshot(ARTIFACTS / "history.png")
        errors = browser.console_errors()
    assert errors == []
    assert sorted(c["label"].split(" w=")[0] for c in charts) == ["flask+gunicorn", "gin"]
    assert all(c["width"] > 300 and c["height"] > 100 and c["marks"] > 8 for c in charts), charts


# Separate runs on this VM differ by 5-25 % (README; seen here: 895, 841, 849, 812 req/s for
# the same stack, a 7 % step between runs 2 and 3 confirmed as a change at the default 5 %,
# and a first slowed run 20 % under the three after it). The history claims a change between
# runs only past 50 %: the 4x slowdown (0.26-0.28x) and the machine's halving are far past it.
# The sentinel is the same server at a fixed 1 ms of work a request, whatever the test sets.
# Two trials a run: a side of a change pools eight.
HISTORY_RECIPE = SLOWABLE_RECIPE.format(name="history-test").replace(
    "trials = 3\n", 'trials = 2\nmin_effect_pct = 50\nsentinel = "steady"\n'
)
HOG = "import time\nend = time.monotonic() + 600\nwhile time.monotonic() < end:\n    pass"


@contextmanager
def _busy(cores: tuple[int, ...]) -> Iterator[None]:
    """A slower machine: a busy process on each of the server's cores (for 10 minutes at
    most), so that every stack served there gets about half its CPU."""
    hogs = [
        subprocess.Popen(["taskset", "-c", str(core), sys.executable, "-c", HOG]) for core in cores
    ]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def _history_stacks() -> dict[str, Stack]:
    """The catalogue with the slowable stack (its work set by $BENCHLAB_SLOW_MS) and the
    sentinel, fixed at 1 ms."""
    steady = _misbehaving_stack("steady", "slow")
    steady = dataclasses.replace(
        steady,
        launch=lambda ctx, launch=steady.launch: dataclasses.replace(
            launch(ctx), env={"BENCHLAB_SLOW_MS": "1"}
        ),
    )
    return {**CATALOGUE, "slowable": _misbehaving_stack("slowable", "slow"), "steady": steady}


def _real_runs(
    recipe: Path, results: Path, monkeypatch: pytest.MonkeyPatch, slow_ms: list[int],
    busy: bool = False,
) -> None:  # fmt: skip
    """Runs of HISTORY_RECIPE through benchlab's runner in this process (real stacks, real
    load, no HTML page), the stack's work set per run, the server's cores busy or not."""
    store, catalogue = Store(results), _history_stacks()
    for run, ms in enumerate(slow_ms):
        monkeypatch.setenv("BENCHLAB_SLOW_MS", str(ms))
        loaded, text = load_recipe(recipe, catalogue)
        plan = build_plan(recipe, loaded, text, catalogue)
        with _busy(plan.cores.server) if busy else nullcontext():
            outcome = run_recipe(
                plan, store, LineReporter(Console(file=io.StringIO())), SessionOptions("test")
            )
        assert outcome.status == "complete", run


@pytest.fixture(scope="module")
def four_steady_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first four runs both eight-run tests begin with (1 ms a request, nothing busy),
    measured once: each test adds its own four to a copy."""
    directory, temp = tmp_path_factory.mktemp("four_steady_runs"), short_tmp()
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("TMPDIR", str(temp))
        recipe, results = write_recipe(directory, HISTORY_RECIPE), directory / "history.db"
        try:
            _real_runs(recipe, results, monkeypatch, [1] * 4)
        finally:
            shutil.rmtree(temp, ignore_errors=True)
    return results


def _eight_real_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first_four: Path, slow_ms: list[int],
    busy: bool,
) -> dict:  # fmt: skip
    """The four steady runs and four more, the stack's work set per run, the server's cores
    busy or not; the history's series of the slowable stack."""
    recipe, results = write_recipe(tmp_path, HISTORY_RECIPE), tmp_path / "history.db"
    with closing(sqlite3.connect(first_four)) as source, closing(sqlite3.connect(results)) as to:
        source.backup(to)
    _real_runs(recipe, results, monkeypatch, slow_ms, busy)
    args = ["history", "history-test", "--results", str(results)]
    history = json.loads(benchlab(*args, "-f", "json").stdout)
    return next(s for s in history["series"] if s["cell"]["stack"].startswith("slowable "))


@pytest.mark.alone
@pytest.mark.slow
def test_eight_real_runs_where_only_the_stack_slows_from_the_fifth_are_the_stacks_change(
    tmp_path: Path, isolated_tmp: Path, monkeypatch: pytest.MonkeyPatch, four_steady_runs: Path
) -> None:
    """The stack's speed is set by the test (1 ms of work a request, then 4 from run 5), the
    sentinel's stays: one change point, at the fifth run, slower, the stack's — and
    --fail-on-change slower exits with the regression code."""
    monkeypatch.setenv("TMPDIR", str(isolated_tmp))
    series = _eight_real_runs(tmp_path, monkeypatch, four_steady_runs, [4] * 4, busy=False)
    assert len(series["points"]) == 8
    (change,) = series["change_points"]
    assert change["index"] == 4 and change["direction"] == "slower", series
    assert change["ratio"]["high"] < 1 and change["attribution"] == "stack", change
    args = ["--results", str(tmp_path / "history.db"), "--fail-on-change", "slower"]
    failed = benchlab("history", "history-test", *args)
    assert failed.returncode == ExitCode.REGRESSION, failed.stderr
    print("\n".join(failed.stdout.splitlines()[:8]))  # the change points as printed (-s)


@pytest.mark.alone
@pytest.mark.slow
def test_eight_real_runs_on_a_machine_slowed_from_the_fifth_are_the_machines_change(
    tmp_path: Path, isolated_tmp: Path, monkeypatch: pytest.MonkeyPatch, four_steady_runs: Path
) -> None:
    """The server's cores busy from the fifth run, for the stack and the sentinel alike: the
    figure halves, its ratio to the sentinel does not — the machine's change, not a
    failure."""
    monkeypatch.setenv("TMPDIR", str(isolated_tmp))
    series = _eight_real_runs(tmp_path, monkeypatch, four_steady_runs, [1] * 4, busy=True)
    (change,) = series["change_points"]
    assert change["index"] == 4 and change["direction"] == "slower", series
    assert change["attribution"] == "machine", change
    args = ["--results", str(tmp_path / "history.db"), "--fail-on-change", "slower"]
    done = benchlab("history", "history-test", *args)
    assert done.returncode == 0, done.stderr
    assert "the machine's" in done.stdout
    print("\n".join(done.stdout.splitlines()[:8]))
