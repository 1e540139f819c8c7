"""The WebSocket figures through the one Ranking, run in process (tests/inprocess.py): each
scenario ranked by its own figure (the hold by connections held, the echo by its p99 at the
fixed rate or its capacity under an [slo], the broadcast by its p99), the Go ceiling shown
and not ranked, the same takeaway words as HTTP's, and the runner's adaptive rounds
deciding exactly what the report says is decided."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from benchlab.analysis.ranking import Call
from benchlab.analysis.summary import RunSummary, summarise
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.report.csvfile import render_csv
from benchlab.report.html import render_html
from benchlab.report.takeaways import takeaways
from benchlab.report.terminal import render_table
from tests.html_table import ReportPage
from tests.inprocess import FakeExecutor, FakeStack, InProcessRun, WsFigures, run_inprocess

GO, UVICORN, HYPERCORN = "go-nethttp", "starlette+uvicorn", "starlette+hypercorn"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHLAB_CACHE", str(tmp_path / "cache"))


def _recipe(trials: int = 3, extra: str = "", scenarios: str = "") -> str:
    scenarios = scenarios or '"ws-hold", "ws-echo", "ws-broadcast"'
    return f"""
    name = "ws"
    stacks = ["{GO}", "{UVICORN}", "{HYPERCORN}"]
    scenarios = [{scenarios}]
    trials = {trials}
    warmup = 0
    {extra}
    [[load]]
    tool = "jmeter"
    connections = 10
    duration = 2
    [websocket]
    rate = 100
    hold_step = 100
    hold_steps = 4
    receivers = 5
    rounds = 10
    round_interval_ms = 20
    """


def _wobble(**figures: float) -> list[WsFigures]:
    """Three launches a few per cent apart (intervals with a width) around `figures`."""
    return [
        WsFigures(**{k: type(v)(v * f) for k, v in figures.items()})  # type: ignore[arg-type]
        for f in (1.0, 1.02, 0.98)
    ]


def _run(tmp_path: Path, stacks: dict[str, list[WsFigures]], recipe: str) -> InProcessRun:
    executor = FakeExecutor({name: FakeStack(ws=figures) for name, figures in stacks.items()})
    run = run_inprocess(tmp_path, recipe, executor)
    assert run.outcome.status == "complete", run.output
    assert executor.running() == []
    return run


def _sentence(summary: RunSummary, scenario: str) -> str:
    return next(t.sentence for t in takeaways(summary) if t.point.scenario == scenario)


def test_each_websocket_scenario_is_ranked_by_its_own_figure_the_ceiling_not_at_all(
    tmp_path: Path,
) -> None:
    stacks = {
        GO: _wobble(held=400, echo_p99_ms=1.0, broadcast_p99_ms=3.0),
        # uvicorn: the lower echo p99, refused past 250 connections; broadcasts alike
        UVICORN: _wobble(held=250, echo_p99_ms=2.0, broadcast_p99_ms=5.0, rss_per_1000_mb=20.0),
        HYPERCORN: _wobble(held=400, echo_p99_ms=6.0, broadcast_p99_ms=5.0),
    }
    run = _run(tmp_path, stacks, _recipe())
    summary = summarise(run.store, run.run_id)
    by_scenario = {p.point.scenario: p for p in summary.ranking.points.values()}
    assert {s: p.figure for s, p in by_scenario.items()} == {
        "ws-hold": F.CONNECTIONS_HELD, "ws-echo": F.ECHO_P99, "ws-broadcast": F.BROADCAST_P99,
    }  # fmt: skip
    for point in by_scenario.values():  # the ceiling is at every point, ranked at none
        assert [p.stack for p in point.order] != [] and GO not in [p.stack for p in point.order]
        assert any(e.key.startswith(GO) for e in point.entrants)
    echo = _sentence(summary, "ws-echo")
    assert re.fullmatch(
        r"By echo p99, lowest first: "
        r"starlette\+uvicorn\S* 3\.0× lower than the next \[\S+\] > starlette\+hypercorn\S*\.",
        echo,
    ), echo
    hold = _sentence(summary, "ws-hold")
    assert re.fullmatch(
        r"By held, best first: starlette\+hypercorn\S* 1\.60× the next \[\S+\] > "
        r"starlette\+uvicorn\S*\.",
        hold,
    ), hold
    assert "≈" in _sentence(summary, "ws-broadcast")  # 5.0 ms each: a tie
    assert by_scenario["ws-broadcast"].steps[0].call is Call.TIE
    hold_cell = next(
        c for c in summary.cells if c.record.stack == UVICORN and c.record.scenario == "ws-hold"
    )
    assert hold_cell.record.mode == Mode.CLOSED and hold_cell.value(F.CONNECTIONS_HELD) == 250
    rss = hold_cell.estimate(F.RSS_PER_1000)
    assert rss is not None and rss.low < rss.median < rss.high  # RSS per 1,000 with its interval


def test_the_websocket_points_print_through_the_http_table_and_takeaways(tmp_path: Path) -> None:
    stacks = {
        GO: _wobble(held=400, echo_p99_ms=1.0),
        UVICORN: _wobble(held=250, echo_p99_ms=2.0),
        HYPERCORN: _wobble(held=400, echo_p99_ms=6.0),
    }
    run = _run(tmp_path, stacks, _recipe())
    console = Console(width=100, record=True)
    render_table(summarise(run.store, run.run_id), console)
    text = console.export_text()
    assert "→ By echo p99, lowest first" in text and "→ By held, best first" in text
    assert "go-nethttp w=1 (ceiling)" in text
    assert "verdicts" in text and "held" in text and "RSS/1k conns" in text
    # What only a hold has: why its steps ended.
    assert re.search(r"held until the server refused an upgrade: starlette\+uvicorn\S* w=1", text)


def test_with_an_slo_the_echo_is_ranked_by_its_capacity(tmp_path: Path) -> None:
    stacks = {
        GO: _wobble(echo_capacity=5_000.0),
        UVICORN: _wobble(echo_capacity=1_500.0),
        HYPERCORN: _wobble(echo_capacity=500.0),
    }
    recipe = _recipe(extra="", scenarios='"ws-echo"') + "\n    [slo]\n    p99_ms = 10\n"
    run = _run(tmp_path, stacks, recipe)
    summary = summarise(run.store, run.run_id)
    (point,) = summary.ranking.points.values()
    assert point.figure is F.CAPACITY and point.point.mode == Mode.SLO
    assert [p.stack for p in point.order] == [UVICORN, HYPERCORN]
    assert point.steps[0].call is Call.AHEAD
    assert _sentence(summary, "ws-echo").startswith("By capacity, best first: starlette+uvicorn")


def test_adaptive_rounds_decide_the_websocket_pairs_the_report_calls_undecided(
    tmp_path: Path,
) -> None:
    # The echo pair alternates (undecided): it gets the adaptive rounds, up to max_trials;
    # the hold pair is clear after three rounds and gets none.
    stacks = {
        GO: [WsFigures(held=400, echo_p99_ms=1.0)],
        UVICORN: [WsFigures(held=250, echo_p99_ms=2.0), WsFigures(held=250, echo_p99_ms=3.0)],
        HYPERCORN: [WsFigures(held=400, echo_p99_ms=3.0), WsFigures(held=400, echo_p99_ms=2.0)],
    }
    recipe = _recipe(extra="max_trials = 6", scenarios='"ws-hold", "ws-echo"')
    run = _run(tmp_path, stacks, recipe)
    assert "adaptive round 4: deciding" in run.output and "(ws-echo)" in run.output
    for stack in (UVICORN, HYPERCORN):
        assert len(run.trials(stack, "ws-echo")) == 6
        assert len(run.trials(stack, "ws-hold")) == 3
    assert len(run.trials(GO, "ws-echo")) == 3  # the ceiling decides nothing
    summary = summarise(run.store, run.run_id)
    for point in summary.ranking.points.values():
        said = _sentence(summary, point.point.scenario)
        assert ("undecided" in said) == bool(point.undecided), said
    echo = next(p for p in summary.ranking.points.values() if p.point.scenario == "ws-echo")
    assert echo.undecided and summary.ranking.still_to_decide().entrants


def test_counts_that_do_not_match_the_servers_are_a_verdict(tmp_path: Path) -> None:
    lost = [WsFigures(dropped_echoes=50)]
    run = _run(tmp_path, {GO: [WsFigures()], UVICORN: [WsFigures()], HYPERCORN: lost}, _recipe(
        scenarios='"ws-echo"'
    ))  # fmt: skip
    summary = summarise(run.store, run.run_id)
    verdicts = {c.record.stack: [v.name for v in c.verdicts] for c in summary.cells}
    assert "ws-counts" in verdicts[HYPERCORN]
    assert "ws-counts" not in verdicts[UVICORN]


def test_the_html_json_and_csv_carry_the_websocket_figures(tmp_path: Path) -> None:
    stacks = {
        GO: _wobble(held=400, echo_p99_ms=1.0),
        UVICORN: _wobble(held=250, echo_p99_ms=2.0, rss_per_1000_mb=20.0),
        HYPERCORN: _wobble(held=400, echo_p99_ms=6.0),
    }
    run = _run(tmp_path, stacks, _recipe())
    summary = summarise(run.store, run.run_id)
    html = render_html(summary)
    page = ReportPage(html)
    for title in ("held conns", "RSS/1k conns MB", "echo p99 ms", "broadcast p99 ms"):
        assert title in page.header, page.header
    held, rss = page.header.index("held conns"), page.header.index("RSS/1k conns MB")
    label, scenario = page.header.index("stack"), page.header.index("scenario")
    rows = {r["cells"][label]: r["cells"] for r in page.rows if r["cells"][scenario] == "ws-hold"}
    (uvicorn,) = [cells for name, cells in rows.items() if name.startswith(UVICORN)]
    assert uvicorn[held].startswith("250 [") and uvicorn[rss].startswith("20.0 [")
    # Its takeaways, and a chart of each point's own figure.
    assert "By held, best first" in html and "By echo p99, lowest first" in html
    assert 'data-chart="ws_connections_held"' in html and 'data-chart="ws_echo_p99_ms"' in html
    report = run.report()
    hold = next(c for c in report["cells"] if c["stack"] == UVICORN and c["scenario"] == "ws-hold")
    assert hold["ws_connections_held"]["median"] == 250 and hold["hold_stop"] == "refused"
    assert hold["ranked_by"] == "ws_connections_held"
    assert hold["ws_rss_per_1000_mb"]["low"] < hold["ws_rss_per_1000_mb"]["high"]
    assert {p["figure"] for p in report["rankings"]} == {
        "ws_connections_held", "ws_echo_p99_ms", "ws_broadcast_p99_ms",
    }  # fmt: skip
    rows_csv = list(csv.DictReader(io.StringIO(render_csv(summary))))
    held_csv = {r["stack"]: r for r in rows_csv if r["scenario"] == "ws-hold"}
    assert float(held_csv[UVICORN]["ws_connections_held_median"]) == 250
    assert held_csv[UVICORN]["hold_stop"] == "refused"
    assert float(held_csv[UVICORN]["ws_count_gap"]) == 0.0
