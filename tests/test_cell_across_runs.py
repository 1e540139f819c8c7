"""The same cell across runs: history, compare and the trackers match a cell by its stack,
its scenario and its load (analysis/series_key.py), however long or often each run measured
it, and say what was measured otherwise. On stored runs whose figures the test sets (matching
is logic over stored rows: no load)."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from rich.console import Console

from benchlab.analysis.run_options import RunOptions
from benchlab.analysis.series_key import SeriesKey, series_keys
from benchlab.analysis.summary import summarise
from benchlab.cli import thresholds
from benchlab.cli.reading import finished_runs, history_of
from benchlab.core.errors import ExitCode
from benchlab.report import comparison, history
from benchlab.report.comparison_html import render_html as compare_html
from benchlab.report.history_html import render_history_html
from benchlab.report.json_formats import HISTORY
from benchlab.report.trackers import (
    render_bigger_is_better,
    render_bmf,
    render_smaller_is_better,
)
from benchlab.stacks import CATALOGUE
from benchlab.store import Store
from tests.conftest import REPO, benchlab
from tests.stored_runs import QUICK_LIKE, plan_of, write_run

SLOWER = 0.6  # the newer run's figures: 40 % slower
# A run's own key of a cell (recipe/cells.py): what no reading output may show.
RUN_KEY = re.compile(r"\|c\d+\|t\d+\|d\d+\|w\d+\|")


def _scaled(factor: float) -> dict[str, dict[str, float]]:
    return {s: {k: v * factor for k, v in by.items()} for s, by in QUICK_LIKE.items()}


def _pair(tmp_path: Path, factor: float = SLOWER, **newer: object) -> tuple[Path, Path]:
    """A baseline store and a newer one whose run is `factor` times as fast and measured with
    the `newer` settings (duration, trials, plan)."""
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    write_run(a, plan=plan_of())
    write_run(b, _scaled(factor), **newer)  # type: ignore[arg-type]
    return a, b


def _names() -> list[str]:
    """Each cell of a QUICK_LIKE run in words: its stack once, with its scenario."""
    return [
        f"{CATALOGUE[stack].label(1)} · {scenario} wrk c=64"
        for stack, by in QUICK_LIKE.items()
        for scenario in by
    ]


def _comparison(a: Path, b: Path, fail_above: float | None = None) -> comparison.Comparison:
    before = summarise(Store(a, create=False), None)
    after = summarise(Store(b, create=False), None)
    return comparison.compare_runs(before, after, a, b, fail_above)


@pytest.mark.slow
def test_a_slowdown_measured_for_another_duration_fails_history_and_compare(
    tmp_path: Path,
) -> None:
    """Two stores that differ only by a 40 % slowdown and `--duration 5`: the series do not
    split. history --fail-on-change slower exits 1 and names each cell once, with its
    scenario; compare pairs every cell, notes the changed duration and fails --fail-above."""
    a, b = _pair(tmp_path, duration=5, plan=plan_of())
    stores = ["--results", str(a), "--results", str(b)]
    failed = benchlab("history", "quick", *stores, "--fail-on-change", "slower")
    assert failed.returncode == ExitCode.REGRESSION, failed.stdout + failed.stderr
    (line,) = failed.stderr.splitlines()
    prefix = "FAIL: 12 of 12 cell(s) last moved slower: "
    assert line.startswith(prefix), line
    assert sorted(line.removeprefix(prefix).split(", ")) == sorted(_names())
    # stdout says what the exit code says, and what was measured otherwise.
    assert _moves_line(failed.stdout) == "12 of 12 cell(s) last moved slower, 0 faster"
    assert failed.stdout.count("measured otherwise than the run before: duration 2 s → 5 s") == 12
    series = json.loads(benchlab("history", "quick", *stores, "-f", "json").stdout)["series"]
    assert sorted(s["cell"]["name"] for s in series) == sorted(_names())
    assert all(len(s["points"]) == 2 for s in series)
    assert {p["duration_s"] for s in series for p in s["points"]} == {2.0, 5.0}

    pair = ["compare", "latest", "latest", "--results", str(a), "--results-b", str(b)]
    table = benchlab(*pair, "--fail-above", "10")
    assert table.returncode == ExitCode.REGRESSION, table.stdout + table.stderr
    assert "missing in B" not in table.stdout
    assert "B measured its cells otherwise than A" in table.stdout
    assert "duration 2 s → 5 s" in table.stdout
    data = json.loads(benchlab(*pair, "-f", "json", "--fail-above", "10").stdout)
    assert {c["verdict"] for c in data["cells"]} == {"slower"} and len(data["cells"]) == 12
    assert sorted(data["regressed"]) == sorted(_names())
    assert all(c["measured_otherwise"] == ["duration 2 s → 5 s"] for c in data["cells"])
    assert {"kind": "settings", "name": "duration", "a": "2 s", "b": "5 s"} in data["differences"]
    # Settings are named, never a reason for --strict (machines and versions are).
    assert benchlab(*pair, "--strict").returncode == 0


def test_compare_and_history_pair_cells_across_changed_trials_and_budget(tmp_path: Path) -> None:
    """--trials 5 and --budget 10 in the newer run: every cell paired, each setting named."""
    a, b = _pair(tmp_path, trials=5, plan=plan_of(trials=5, budget_min=10))
    found = _comparison(a, b, fail_above=10)
    assert len(found.changes) == 12 and {c.verdict for c in found.changes} == {"slower"}
    named = {d.text() for d in found.differences}
    assert named == {"trials 3 → 5", "budget (none) → 10 min"}, named
    assert any("trials 3 → 5, budget (none) → 10 min" in w for w in found.warnings())
    assert len(found.regressed) == 12
    past = history_of([a, b], "quick")
    assert len(past.series) == 12 and all(len(s.points) == 2 for s in past.series)
    assert all(s.latest is not None for s in past.series)
    assert {tuple(s.latest.settings_changed) for s in past.series if s.latest} == {
        ("trials 3 → 5", "budget (none) → 10 min")
    }
    assert len(past.latest_change("slower")) == 12
    # A store older than plans records no trials or budget: nothing is claimed of them.
    c = tmp_path / "c.db"
    write_run(c, _scaled(SLOWER), trials=5)
    assert [d.text() for d in _comparison(a, c).differences] == []


def test_a_stored_readme_run_is_matched_to_its_copy_measured_for_5_s(tmp_path: Path) -> None:
    """A store made by an earlier benchlab (tests/data/readme-quick.db) against a copy of it
    whose cells say `--duration 5` (their run keys with d5, as that version wrote them):
    every cell paired, and its duration named."""
    a, b = tmp_path / "readme.db", tmp_path / "copy.db"
    shutil.copy(REPO / "tests" / "data" / "readme-quick.db", a)
    shutil.copy(a, b)
    with closing(sqlite3.connect(b)) as db, db:
        db.execute("UPDATE cells SET key = replace(key, '|d2|', '|d5|'), duration_s = 5")
    found = _comparison(a, b)
    assert found.changes and all(c.verdict != "missing in B" for c in found.changes)
    assert [d.text() for d in found.differences] == ["duration 2 s → 5 s"]


def test_no_reading_output_shows_a_runs_own_key_of_a_cell(tmp_path: Path) -> None:
    """history (table, Markdown, HTML, JSON), compare (table, Markdown, HTML, JSON) and the
    trackers' exports of runs measured for two durations: a cell is named in words."""
    a, b = _pair(tmp_path, duration=5)
    write_run(b, _scaled(SLOWER * 0.9), duration=5)  # a third run: a series with a history
    stores = [Store(path, create=False) for path in (a, b)]
    keys = {r.key for store in stores for run in store.runs() for r in store.cells(run.id)}
    runs = finished_runs([a, b], "quick")  # the newest judged by a threshold, as --threshold does
    newest = thresholds.judged(runs[-1], thresholds.given(["rps>100000"]))
    past = dataclasses.replace(history_of([a, b], "quick"), latest_run=newest)
    assert past.as_json()["thresholds"][0]["cells"], "no threshold judged a cell"
    found = _comparison(a, b, fail_above=10)
    console = Console(file=io.StringIO(), width=200)
    comparison.render_table(found, console)
    summary = summarise(Store(b, create=False), None)
    outputs = {
        "history table": "\n".join(history.render_text(past)),
        "history md": history.render_markdown(past),
        "history html": render_history_html(past),
        "history json": HISTORY.dumps(past.as_json()),
        "history failure": history.failure_text(past, "slower") or "",
        "compare table": console.file.getvalue(),  # type: ignore[attr-defined]
        "compare md": comparison.render_markdown(found),
        "compare html": compare_html(found),
        "compare json": comparison.render_json(found),
        "bmf": render_bmf(summary),
        "gab": render_bigger_is_better(summary) + render_smaller_is_better(summary),
    }
    for name, text in outputs.items():
        assert not RUN_KEY.search(text), (name, RUN_KEY.search(text))
        assert not any(key in text for key in keys), name
    assert "gin w=1 · json wrk c=64" in outputs["history table"]


MOVES = re.compile(r"(\d+) of \d+ cell\(s\) last moved slower, (\d+) faster")


def _moves_line(stdout: str) -> str:
    """The history's line that counts its cells' last moves (after its series)."""
    (line,) = [line for line in stdout.splitlines() if MOVES.match(line)]
    return line


def _fail_count(stdout: str, direction: str) -> int:
    """How many cells the history's count says moved `direction`."""
    found = MOVES.match(_moves_line(stdout))
    assert found is not None
    return int(found[1] if direction == "slower" else found[2])


@pytest.mark.slow
def test_historys_last_line_and_its_exit_code_say_the_same(tmp_path: Path) -> None:
    """Slower, faster, unchanged, and slower by the machine's doing (its sentinel slowed
    alike): for each direction, --fail-on-change fails exactly when the history's last line
    counts a cell moved that way, and its FAIL line names as many."""
    gin, flask = 88_000.0, 4_020.0
    cases = {
        "stack slower": ([gin] * 4, [flask] * 3 + [flask * SLOWER]),
        "stack faster": ([gin] * 4, [flask] * 3 + [flask / SLOWER]),
        "unchanged": ([gin] * 4, [flask] * 4),
        "machine slower": ([gin] * 3 + [gin * SLOWER], [flask] * 3 + [flask * SLOWER]),
    }
    seen = set()
    for case, (gins, flasks) in cases.items():
        path = tmp_path / f"{case.replace(' ', '-')}.db"
        for g, f in zip(gins, flasks, strict=True):
            medians = {"gin": {"json": g}, "flask+gunicorn": {"json": f}}
            write_run(path, medians, options=RunOptions(sentinel="gin"))
        past = history_of([path], "quick")
        for direction in ("slower", "faster"):
            count = _fail_count("\n".join(history.render_text(past)), direction)
            failure = history.failure_text(past, direction)
            if count:
                assert failure is not None, case
                assert failure.startswith(f"FAIL: {count} of 2 cell(s) last moved {direction}: ")
                assert len(failure.split(": ", 2)[2].split(", ")) == count, failure
            else:
                assert failure is None, (case, failure)
            seen.add((case, direction, count))
    assert ("stack slower", "slower", 1) in seen and ("stack faster", "faster", 1) in seen
    assert ("unchanged", "slower", 0) in seen and ("machine slower", "slower", 0) in seen
    # The CLI prints the one and exits by the other: the machine's slowdown is counted apart
    # and does not fail.
    args = ["--results", str(tmp_path / "machine-slower.db"), "--fail-on-change", "slower"]
    done = benchlab("history", "quick", *args)
    assert done.returncode == 0 and "FAIL" not in done.stderr, done.stderr
    assert _moves_line(done.stdout) == (
        "0 of 2 cell(s) last moved slower, 0 faster; "
        "2 other move(s) not the stack's own (the machine's, or undecided)"
    )


def _record_twins(tmp_path: Path) -> list:
    """One run with two load profiles that differ only in their duration (2 and 5 s): their
    cells' results (nothing measured yet)."""
    from benchlab.analysis.cell_result import cell_result
    from benchlab.recipe import Cell
    from benchlab.runner.records import cell_record
    from benchlab.store import RunInfo

    store = Store(tmp_path / "twins.db")
    run_id = store.create_run(
        RunInfo("r.toml", "quick", "", "", "benchlab run", None, (0,), (1,), {}, {})
    )
    for position, duration in enumerate((2, 5)):
        cell = Cell("gin", "json", "wrk", 64, 1, duration, 5, 1)
        store.add_cell(cell_record(run_id, position, cell, "gin w=1"))
    return [cell_result(record, [], [], RunOptions()) for record in store.cells(run_id)]


def test_two_cells_of_one_run_that_differ_only_in_duration_stay_two_series(
    tmp_path: Path,
) -> None:
    records = _record_twins(tmp_path)
    keys = series_keys(records, RunOptions())
    assert len(set(keys.values())) == 2
    assert sorted(k.name for k in keys.values()) == [
        "gin w=1 · json wrk c=64 · 2 s",
        "gin w=1 · json wrk c=64 · 5 s",
    ]
    # Alone in its run, a cell's key says nothing of its duration: the same series.
    alone = [SeriesKey.of(r, RunOptions()) for r in records]
    assert alone[0] == alone[1] and alone[0].name == "gin w=1 · json wrk c=64"
