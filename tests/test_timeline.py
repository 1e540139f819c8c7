"""A fixed-rate trial's latency over time (what `vegeta plot` draws): counted second by second
while vegeta's records are read, stored compactly with the trial, carried by the JSON report
and drawn in the HTML one small chart per fixed-rate cell. Known answers first (records made
by hand), then a real server that pauses 300 ms every 5 s under real vegeta."""

from __future__ import annotations

import dataclasses
import itertools
import json
import sqlite3
from pathlib import Path

import pytest
from hdrh.log import HistogramLogReader

from benchlab.core.latency_timeline import Timeline
from benchlab.core.modes import Mode
from benchlab.load import histogram
from benchlab.load import timeline as timeline_module
from benchlab.load.request_records import Generator, csv_lines, read_results
from benchlab.load.result import LoadResult
from benchlab.recipe import Cell
from benchlab.runner.records import cell_record
from benchlab.stacks import CATALOGUE
from benchlab.store import TABLES, RunInfo, Store
from tests.browser import open_page
from tests.conftest import REPO, benchlab, run_and_report, write_recipe
from tests.stored_runs import MACHINE, held_trial
from tests.test_failures import _misbehaving_stack

SCREENS = REPO / "test-artifacts"
PAUSE_MS, PAUSE_EVERY_S = 300.0, 5.0  # tests/apps/misbehaving.py's "pauses"


def _row(seq: int, sent_ns: int, latency_ns: int, code: int = 200, error: str = "") -> list[str]:
    return [str(sent_ns), str(code), str(latency_ns), "0", "2", error, "", "", str(seq), "GET",
            "u", ""]  # fmt: skip


def _paused(rate: int, seconds: int, pauses: dict[float, float], **failures: int) -> LoadResult:
    """`rate` req/s for `seconds`, each answered in 1 ms, except those due in a pause (start
    s -> length s), answered when it ends; `failures`: request number -> status."""
    rows = []
    for n in range(rate * seconds):
        due = (n + 1) * 1_000_000_000 // rate
        wait = next(
            (start + length - due / 1e9 for start, length in pauses.items()
             if start <= due / 1e9 < start + length),
            0.0,
        )  # fmt: skip
        code = failures.get(str(n), 200)
        rows.append(_row(n, due, 1_000_000 + int(wait * 1e9), code))
    lines = csv_lines(rows)
    return read_results([Generator(lambda: lines, float(rate))])


def test_a_pause_shows_in_its_second_and_nowhere_else() -> None:
    # 100 req/s for 12 s, the first sent at 10 ms; the server stops 300 ms at 3.5 s and 8.5 s.
    result = _paused(100, 12, {3.5: 0.3, 8.5: 0.3}, **{"700": 500})
    line = result.timeline
    assert line is not None and line.step_s == 1 and line.t_s == tuple(range(12))
    # Step 3 holds the requests sent from 3.01 to 4.01 s: the first pause's 30, waiting 300
    # ms down to 10 (the p99 of 100 is the second worst: 290 ms, plus the 1 ms answer).
    p99 = dict(enumerate(line.p99_ms))
    assert p99[3] == pytest.approx(291, rel=0.01) and p99[8] == pytest.approx(291, rel=0.01)
    assert all(p99[s] == pytest.approx(1.0, rel=0.01) for s in p99 if s not in (3, 8)), p99
    assert all(p50 == pytest.approx(1.0, rel=0.01) for p50 in line.p50_ms)
    # Every answer came in the second it was sent but for the pause's: 100 a second.
    assert sum(line.achieved_rps) == pytest.approx(result.successes, abs=1)
    assert line.achieved_rps[5] == 100
    # Request 700, sent at 7.01 s, failed: counted in the step it came back in (step 7).
    assert line.errors == tuple(1 if s == 7 else 0 for s in range(12))
    # A closed loop has no schedule: no series.
    lines = csv_lines([_row(n, (n + 1) * 10_000_000, 1_000_000) for n in range(50)])
    assert read_results([Generator(lambda: lines, None)]).timeline is None


def test_a_long_trial_gets_longer_steps_and_bounded_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # MAX_STEPS at 10 so that a 31-s trial needs steps of 4 s (and holds 8 histograms).
    monkeypatch.setattr(timeline_module, "MAX_STEPS", 10)
    line = _paused(20, 32, {20.0: 0.3}).timeline
    assert line is not None and line.step_s == 4 and len(line.p99_ms) == 8
    assert line.t_s == (0, 4, 8, 12, 16, 20, 24, 28)
    # Step 4 holds the requests sent from 16.05 to 20.05 s: the pause's first (300 ms) is
    # one of 80, the one a p99 leaves out. Step 5 holds the other four: 250, 200, 150 and
    # 100 ms; its p99 is the second worst.
    assert line.p99_ms[4] == pytest.approx(1.0, rel=0.01)
    assert line.p99_ms[5] == pytest.approx(201, rel=0.01)
    assert line.achieved_rps[2] == 20  # per second, over a step of four


def test_the_stored_form_is_compact_and_reads_back() -> None:
    # A minute at 200 req/s, latencies spread over 1-12 ms (every figure three digits).
    rows = [
        _row(n, (n + 1) * 5_000_000, 1_000_000 + (n * 7_919) % 11_000_000, 500 if n % 97 else 200)
        for n in range(12_000)
    ]
    lines = csv_lines(rows)
    line = read_results([Generator(lambda: lines, 200.0)]).timeline
    assert line is not None and len(line.p99_ms) == 60
    text = line.stored()
    # Six numbers a second: a minute in under 1.6 KB (an HdrHistogram a second: about 9 KB).
    assert len(text) < 1_600, len(text)
    assert Timeline.from_json(json.loads(text)) == line


def _fixed_rate_run(path: Path, with_timeline: bool = True) -> str:
    """A stored run of two fixed-rate cells (gin and flask at 500 req/s), two trials each,
    gin's second with a pause at 4 s; `with_timeline` False: stored as before schema 9."""
    store = Store(path)
    run_id = store.create_run(
        RunInfo("r.toml", "rates", 'name = "rates"\n', "Which holds 500 req/s?",
                "benchlab run r.toml", None, (0,), (1,), dict(MACHINE))
    )  # fmt: skip
    for position, stack in enumerate(("gin", "flask+gunicorn")):
        cell = Cell(stack, "json", "vegeta", 64, 1, 10, 5, 1, mode=Mode.RATE, rate=500.0)
        entry = CATALOGUE[stack]
        cell_id = store.add_cell(
            cell_record(run_id, position, cell, entry.label(1), facts=entry.facts(1, None))
        )
        for round_index in range(2):
            pause = {4.0: 0.3} if (stack, round_index) == ("gin", 1) else {}
            line = _paused(500, 10, pause).timeline
            assert line is not None
            stored = line.stored() if with_timeline else None
            trial = dataclasses.replace(held_trial(round_index, 500.0), latency_timeline=stored)
            store.add_trial(cell_id, trial)
        store.mark_cell(cell_id, "ok")
    store.finish_run(run_id, "complete")
    store.close()
    return run_id


@pytest.mark.slow  # the report command
def test_the_json_report_carries_each_trials_series(tmp_path: Path) -> None:
    results = tmp_path / "r.db"
    run_id = _fixed_rate_run(results)
    report = benchlab("report", run_id, "--results", str(results), "-f", "json")  # schema-checked
    assert report.returncode == 0, report.stderr
    cells = {c["stack"]: c for c in json.loads(report.stdout)["cells"]}
    gin = cells["gin"]["timeline"]
    assert [t["round"] for t in gin] == [0, 1] and {t["target_rate"] for t in gin} == {500.0}
    assert gin[0]["t_s"] == list(range(10)) and gin[0]["step_s"] == 1
    # The pause (due from 4.0 s, the first request sent at 2 ms) where it was, in the trial
    # that had it.
    slow = [t for t, p99 in zip(gin[1]["t_s"], gin[1]["p99_ms"], strict=True) if p99 > 100]
    assert slow == [4] and max(gin[0]["p99_ms"]) < 100
    assert len(cells["flask+gunicorn"]["timeline"]) == 2
    trials = benchlab("report", run_id, "--results", str(results), "-f", "json", "--trials")
    (first, _) = json.loads(trials.stdout)["cells"][0]["trial_values"]
    shown = {k: v for k, v in gin[0].items() if k not in ("round", "target_rate")}
    assert first["latency_timeline"] == shown


def test_an_older_store_gains_the_column_and_its_trials_have_no_series(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    for table, columns in TABLES.items():
        kept = [c for c in columns if c[0] != "latency_timeline"]
        old.execute(f"CREATE TABLE {table} ({', '.join(f'{n} {k}' for n, k in kept)})")
    old.execute("INSERT INTO meta VALUES ('schema_version', '8')")
    old.commit()
    old.close()
    run_id = _fixed_rate_run(path, with_timeline=False)  # written: brought up to date
    columns = {row[1] for row in sqlite3.connect(path).execute("PRAGMA table_info(trials)")}
    assert "latency_timeline" in columns
    store = Store(path, create=False)
    (cell, _) = store.cells(run_id)
    assert [t.timeline for t in store.trials(cell.id)] == [None, None]


@pytest.mark.slow  # Chromium, and the report command
def test_the_page_draws_one_chart_per_fixed_rate_cell_on_a_laptop_and_a_phone(
    tmp_path: Path,
) -> None:
    results, page = tmp_path / "r.db", tmp_path / "rates.html"
    run_id = _fixed_rate_run(results)
    done = benchlab("report", run_id, "--results", str(results), "-o", str(page))
    assert done.returncode == 0, done.stderr
    for width, name in ((1280, "timeline-stored.png"), (390, "timeline-stored-phone.png")):
        with open_page(page, width=width, height=900) as browser:
            seen = browser.evaluate(_CHARTS_SEEN)
            browser.screenshot(SCREENS / name)
            assert browser.console_errors() == []
        charts = [c for c in seen["charts"] if c["kind"] == "timeline"]
        assert [c["title"].split()[0] for c in charts] == ["gin:", "flask+gunicorn"], charts
        for chart in charts:
            # Drawn, in the page's width, its axes labelled; one caption for the point's.
            assert 300 < chart["width"] <= width and chart["height"] > 150, chart
            assert chart["marks"] > 10 and "seconds into the trial" in chart["text"], chart
        assert seen["page_width"] <= width, "the page scrolls sideways"
        assert seen["caption"].startswith("Each second of each trial")


_CHARTS_SEEN = """(() => ({
  charts: Array.from(document.querySelectorAll("figure.chart")).map(f => {
    const svg = f.querySelector("svg"), box = svg.getBoundingClientRect();
    return {kind: f.dataset.chart, title: f.querySelector("h4").textContent,
            width: box.width, height: box.height,
            marks: svg.querySelectorAll("path, use").length, text: svg.textContent};
  }),
  caption: document.querySelector("details.timelines p.note").textContent,
  page_width: document.documentElement.scrollWidth,
}))()"""


PAUSES = """
name = "pauses"
stacks = ["pauses"]
scenarios = ["json"]
trials = 1
warmup = 0
[cores]
server = [0]
load = [1]
[[load]]
tool = "vegeta"
rate = 100
connections = 64
duration = 16
"""


@pytest.mark.alone
@pytest.mark.slow
def test_a_server_that_pauses_every_5_s_shows_its_pauses_in_the_series(
    tmp_path: Path, isolated_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real server that stops 300 ms every 5 s, loaded by real vegeta at 100 req/s for
    16 s: its JSON series has a second with a p99 of about the pause each 5 s, the others
    far below; the page draws it."""
    monkeypatch.setenv("TMPDIR", str(isolated_tmp))
    results = tmp_path / "r.db"
    catalogue = {**CATALOGUE, "pauses": _misbehaving_stack("pauses", "pauses")}
    report = run_and_report(write_recipe(tmp_path, PAUSES), results, catalogue)
    (cell,) = report["cells"]
    (trial,) = cell["timeline"]
    assert trial["step_s"] == 1 and len(trial["t_s"]) == 16 and trial["target_rate"] == 100
    p99 = dict(zip(trial["t_s"], trial["p99_ms"], strict=True))
    # A pause's requests wait from 300 ms down to nothing, 10 ms apart: the second holding its
    # start has the second worst of its 100 (290 ms at least, wherever the pause falls in
    # it; 280 when the pause starts one request before the second ends and the next second
    # holds the rest). So a pause is a second, or two in a row, of p99 over 240 ms.
    paused = [t for t, value in p99.items() if value is not None and value >= 0.8 * PAUSE_MS]
    starts = [t for t in paused if t - 1 not in paused]
    assert len(starts) >= 3, p99  # 16 s hold three pause starts, 5 s apart
    assert all(b - a in (4, 5, 6) for a, b in itertools.pairwise(starts)), p99
    # Every other second's p99 far under the pause: the server answers at once.
    quiet = [value for t, value in p99.items() if t not in paused and t - 1 not in paused]
    assert quiet and max(quiet) < PAUSE_MS / 3, p99
    # The answers kept up with the rate asked (a pause delays them by under a second).
    assert sum(trial["achieved_rps"]) >= 0.95 * 100 * 15 and sum(trial["errors"]) == 0, trial
    # Its histogram, exported as HdrHistogram's log and read back by HdrHistogram's own
    # Python reader: the run's p99 within one bucket (the pauses are in it).
    log = tmp_path / "pauses.hlog"
    done = benchlab(
        "report", "--results", str(results), "--histogram", "pauses json", "-o", str(log)
    )
    assert done.returncode == 0, done.stderr
    reader = HistogramLogReader(str(log), histogram.new())
    merged = histogram.new()
    while (interval := reader.get_next_interval_histogram()) is not None:
        merged.add(interval)
    reader.close()
    p99_us, report_us = merged.get_value_at_percentile(99), round(cell["latency_ms"]["p99"] * 1000)
    assert merged.values_are_equivalent(p99_us, report_us), (p99_us, report_us)
    # 30 of each 5 s's 500 requests come due in a pause and wait 300 ms down to nothing: the
    # 99th percentile is one of them, far above a quiet second's answers.
    assert p99_us >= PAUSE_MS / 2 * 1000, p99_us
    page = tmp_path / "pauses.html"
    done = benchlab("report", "--results", str(results), "-o", str(page))
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert html.count('data-chart="timeline"') == 1 and "seconds into the trial" in html
