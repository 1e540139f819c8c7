"""How a WebSocket run's cells are shown beside HTTP's (in process, tests/inprocess.py, and
stores written through the store's API; no load): rates in messages a second where the
scenario's are (Scenario.rate_unit), a hold's refused opens as its finding rather than its
errors, and each scenario's load in its own words (receivers and rounds, steps)."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console

from benchlab.analysis.cell_records import refused_opens, reported_errors
from benchlab.analysis.summary import CellSummary, RunSummary, summarise
from benchlab.core import figures as F
from benchlab.http.scenarios import SCENARIOS
from benchlab.load.ws_requests import REFUSED, STALLED
from benchlab.report.charts import all_charts
from benchlab.report.columns import ERRORS, cell_columns
from benchlab.report.csvfile import render_csv
from benchlab.report.takeaways import takeaways
from benchlab.report.terminal import render_table
from benchlab.report.tune_report import recommendation_lines
from benchlab.store import Store
from tests.inprocess import FakeExecutor, FakeStack, InProcessRun, WsFigures, run_inprocess
from tests.stored_runs import write_run
from tests.test_tune_proof import _tune_run
from tests.test_websocket_ranking import _recipe as ranking_recipe

GO, UVICORN, HYPERCORN = "go-nethttp", "starlette+uvicorn", "starlette+hypercorn"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHLAB_CACHE", str(tmp_path / "cache"))


def _recipe(scenarios: str = '"ws-hold", "ws-echo", "ws-broadcast"', slo: bool = False) -> str:
    """test_websocket_ranking's recipe: 10 connections at 100 msg/s, holds of 4 steps of 100,
    broadcasts to 5 receivers over 10 rounds."""
    return ranking_recipe(scenarios=scenarios) + ("\n    [slo]\n    p99_ms = 10\n" if slo else "")


def _ws_run(tmp_path: Path, recipe: str) -> InProcessRun:
    # uvicorn's server refuses past 250 connections: its hold stops "refused" at step 3.
    stacks = {
        GO: [WsFigures(held=400, echo_p99_ms=1.0)],
        UVICORN: [WsFigures(held=250, echo_p99_ms=2.0, echo_capacity=1_500.0)],
        HYPERCORN: [WsFigures(held=400, echo_p99_ms=6.0, echo_capacity=500.0)],
    }
    executor = FakeExecutor({name: FakeStack(ws=figures) for name, figures in stacks.items()})
    run = run_inprocess(tmp_path, recipe, executor)
    assert run.outcome.status == "complete", run.output
    return run


def _table(summary: RunSummary, wide: bool = False) -> str:
    # the wide table as wide as it needs (a narrower console prints it past the record)
    console = Console(width=1_000 if wide else 100, record=True)
    render_table(summary, console, wide=wide)
    return console.export_text()


def _cell(summary: RunSummary, stack: str, scenario: str) -> CellSummary:
    return next(
        c for c in summary.cells if c.record.stack == stack and c.record.scenario == scenario
    )


def test_a_websocket_cell_rates_are_messages_a_second_an_http_cell_requests(
    tmp_path: Path,
) -> None:
    assert [SCENARIOS[name].rate_unit for name in ("ws-echo", "ws-broadcast", "json")] == [
        "msg/s", "msg/s", "req/s",
    ]  # fmt: skip
    recipe = _recipe('"ws-echo", "ws-broadcast"', slo=True)
    ws = summarise((run := _ws_run(tmp_path, recipe)).store, run.run_id)
    for wide in (False, True):
        shown = _table(ws, wide)
        assert "msg/s" in shown and "req/s" not in shown, shown
    assert re.search(r"capacity\s*\n?.*msg/s", _table(ws)), _table(ws)
    assert re.search(r"By capacity, best first: starlette\+uvicorn", _table(ws))
    drawn = {chart.kind: chart.svg for chart in all_charts(ws)}
    assert "capacity, msg/s" in drawn["capacity"] and "offered rate, msg/s" in drawn["curve"]
    assert not any("req/s" in svg for svg in drawn.values())
    http_path = tmp_path / "http.db"
    http = summarise(Store(http_path), write_run(http_path))
    shown = _table(http, wide=True)
    assert "throughput" in shown and "req/s" in shown and "msg/s" not in shown
    # Cells of both kinds in one table: each rate says its own unit beside its value.
    broadcast, plain = _cell(ws, UVICORN, "ws-broadcast"), http.cells[0]
    mixed = next(c for c in cell_columns([broadcast, plain]) if c.title.startswith("throughput"))
    assert mixed.title == "throughput"
    assert mixed.text(broadcast).endswith(" msg/s") and mixed.text(plain).endswith(" req/s")
    # ... and a rate only one kind has keeps its unit in the title.
    capacity = next(c for c in cell_columns([broadcast, plain, _cell(ws, UVICORN, "ws-echo")])
                    if c.title.startswith("capacity"))  # fmt: skip
    assert capacity.title == "capacity msg/s"
    assert ws.to_json()["cells"][0]["rate_unit"] == "msg/s"
    assert {row["rate_unit"] for row in csv.DictReader(io.StringIO(render_csv(http)))} == {"req/s"}


def test_a_hold_that_stopped_refused_counts_no_errors_and_says_how_many_it_refused(
    tmp_path: Path,
) -> None:
    run = _ws_run(tmp_path, _recipe('"ws-hold"'))
    summary = summarise(run.store, run.run_id)
    hold = _cell(summary, UVICORN, "ws-hold")
    stored = run.store.trials(hold.record.id)
    assert {t.ws_hold_stop for t in stored} == {REFUSED}
    assert all(t.errors_connect > 0 for t in stored)  # the store keeps them as connect errors
    assert hold.result.errors["total"] == 0 and ERRORS.text(hold) == "0"
    assert hold.result.hold_refused == stored[0].errors_connect
    assert "errors" not in [v.name for v in hold.verdicts]
    note = next(n for t in takeaways(summary) for n in t.notes if "refused an upgrade" in n)
    assert f"{UVICORN}[async] w=1 ({hold.result.hold_refused:,} refused)" in note, note
    row = next(
        r for r in csv.DictReader(io.StringIO(render_csv(summary)))
        if r["stack"] == UVICORN
    )  # fmt: skip
    assert row["errors"] == "0" and row["hold_refused"] == str(hold.result.hold_refused)
    # A hold that stopped otherwise: its refused opens are errors still.
    stalled = dataclasses.replace(stored[0], ws_hold_stop=STALLED)
    assert refused_opens(stalled) is None
    assert reported_errors(stalled).connect == stalled.errors_connect > 0


def test_each_websocket_scenario_names_its_own_load_in_its_settings(tmp_path: Path) -> None:
    run = _ws_run(tmp_path, _recipe())
    settings = {t.point.scenario: t.settings for t in takeaways(summarise(run.store, run.run_id))}
    assert settings["ws-broadcast"].startswith("jmeter · 5 receivers · 10 rounds · "), settings
    assert settings["ws-hold"].startswith("jmeter · 4 steps of 100 connections · "), settings
    assert settings["ws-echo"].startswith("jmeter · 10 connections · fixed rate 100 msg/s · "), (
        settings
    )
    assert all("10 connections" not in settings[s] for s in ("ws-broadcast", "ws-hold"))


def test_a_tune_says_the_rate_unit_its_options_store(tmp_path: Path) -> None:
    path = tmp_path / "tune.db"
    run_id = _tune_run(path)
    before = " ".join(recommendation_lines(summarise(Store(path), run_id)))
    assert "run it at up to 978 req/s" in before and "msg/s" not in before
    with sqlite3.connect(path) as db:
        (options,) = db.execute("SELECT options FROM runs WHERE id = ?", (run_id,)).fetchone()
        stored = json.loads(options)
        stored["tune"]["rate_unit"] = F.MSG_S  # as a WebSocket tune stores it
        db.execute("UPDATE runs SET options = ? WHERE id = ?", (json.dumps(stored), run_id))
    summary = summarise(Store(path), run_id)
    lines = " ".join(recommendation_lines(summary))
    assert "run it at up to 978 msg/s" in lines and "req/s" not in lines, lines
    table = _table(summary)
    assert "closed-loop" in table and "msg/s" in table and "req/s" not in table, table
    # Its cells too (their scenario is the tune's own, in no catalogue): JSON and verdicts.
    assert {cell.result.rate_unit for cell in summary.cells} == {F.MSG_S}
