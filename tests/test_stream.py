"""The stream of a run's events (--progress json, --progress-file: report/stream.py): in
order, each line valid against the published schema, each trial's figures what the store
then holds; and a running fixed-rate trial's figures so far, read from vegeta as it writes.

In process first (the real runner on tests/inprocess.py's stand-in executor: the order of
events, adaptive rounds, a failed cell), then a real run of the quick recipe's kind, then a
real vegeta trial followed while it runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.report.stream import StreamReporter
from benchlab.store import Store, TrialRecord
from tests.conftest import check_against_schema
from tests.inprocess import FakeExecutor, FakeStack, Figures, run_inprocess


class Lines:
    """The lines a StreamReporter writes, as they come."""

    def __init__(self) -> None:
        self.written: list[bytes] = []

    def __call__(self, line: bytes) -> None:
        self.written.append(line)

    def events(self) -> list[dict[str, Any]]:
        for line in self.written:
            assert line.endswith(b"\n") and line.count(b"\n") == 1, line
            check_against_schema(line.decode())
        return [json.loads(line) for line in self.written]


def _figures(event: dict[str, Any]) -> dict[str, Any]:
    figures = {f["key"]: f for f in event["figures"]}
    assert len(figures) == len(event["figures"]), "a figure twice"
    for key, figure in figures.items():
        assert key in F.FIGURES, f"{key} is no figure of the registry"
        assert figure["unit"] == F.FIGURES[key].unit, key
    return {key: figure["value"] for key, figure in figures.items()}


def check_stream(events: list[dict[str, Any]], store: Store) -> dict[str, list[TrialRecord]]:
    """What every stream holds, in order: run_started first, run_finished last; each cell
    verified before its first trial; each trial's figures those the store holds for that
    cell's round; a ranking after the last trial. Returns the trials the stream named."""
    kinds = [e["event"] for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished", kinds
    assert kinds.count("run_started") == kinds.count("run_finished") == 1
    run_id = events[0]["run_id"]
    assert {e["run_id"] for e in events} == {run_id}
    planned = {c["key"] for c in events[0]["cells"]}
    cells = {c.key: c for c in store.cells(run_id)}
    assert planned == set(cells)
    verified: set[str] = set()
    named: dict[str, list[TrialRecord]] = {}
    done = 0
    for event in events:
        if event["event"] == "cell_verified":
            assert event["cell"] not in verified, "verified twice"
            verified.add(event["cell"])
        if event["event"] != "trial":
            continue
        assert event["cell"] in verified, "a trial before its cell's check"
        done += 1
        assert event["trials_done"] == done <= event["trials_total"]
        stored = [
            t
            for t in store.trials(cells[event["cell"]].id)
            if t.round == event["round"] and t.probe is None
        ]
        assert [t.started_at for t in stored] == event["started_at"]
        (trial,) = stored
        figures = _figures(event)
        # Each figure by its registry key, as the store holds it (read here by the column the
        # figure's source names, not by the stream's own reading of the registry).
        assert figures["throughput_rps"] == trial.throughput_rps
        assert figures["requests"] == trial.requests
        assert figures["p99"] == trial.latency_p99_ms
        assert figures["p50"] == trial.latency_p50_ms
        assert figures["error_pct"] == trial.error_pct
        assert figures["server_cpu_pct"] == trial.server_cpu_pct
        assert figures["transfer_mb"] == trial.bytes / 2**20
        for key, value in figures.items():
            source = F.FIGURES[key].source
            assert source is not None and source.attr is not None
            held = getattr(trial, source.attr)
            assert value == (held / source.per if source.per and held is not None else held), key
        mode = Mode(cells[event["cell"]].mode)
        trial_figures = (F.Combine.MEDIAN, F.Combine.PEAK, F.Combine.HISTOGRAM, F.Combine.SUM)
        held = {
            f.key
            for f in F.FIGURES.values()
            if f.source and f.source.combine in trial_figures and f.source.applies(mode)
            and getattr(trial, f.source.attr or "") is not None
        }  # fmt: skip
        assert set(figures) == held, "a figure the trial holds is missing, or one it has not"
        named.setdefault(event["cell"], []).append(trial)
    last_trial = max(i for i, kind in enumerate(kinds) if kind == "trial")
    rankings = [i for i, kind in enumerate(kinds) if kind == "ranking"]
    assert rankings and rankings[-1] > last_trial, "no ranking after the last round"
    assert events[rankings[-1]]["next_round"] == []
    finished = events[-1]
    assert finished["trials_done"] == done
    assert finished["status"] == store.run(run_id).status
    return named


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHLAB_CACHE", str(tmp_path / "cache"))


RECIPE = """
name = "streamed"
stacks = ["sanic", "tornado", "broken"]
scenarios = ["json"]
trials = 3
max_trials = 5
warmup = 0
[[load]]
connections = 4
duration = 2
"""


def test_a_runs_stream_holds_its_events_in_order_with_the_stored_figures(tmp_path: Path) -> None:
    """Adaptive rounds for an undecided pair, a cell whose answers are wrong: the stream says
    each, in order, and every trial line holds the figures the store holds."""
    executor = FakeExecutor(
        {
            "sanic": FakeStack({"json": [Figures(20_500), Figures(19_500)]}),
            "tornado": FakeStack({"json": [Figures(19_600), Figures(20_400)]}),
            "broken": FakeStack(wrong={"json": "status 500"}),
        }
    )
    lines = Lines()
    run = run_inprocess(tmp_path, RECIPE, executor, reporter=StreamReporter(lines))
    events = lines.events()
    named = check_stream(events, run.store)
    assert set(named) == {c.key for c in run.store.cells(run.outcome.run_id) if c.stack != "broken"}
    failed = [e for e in events if e["event"] == "cell_failed"]
    assert [e["cell"].split("|")[0] for e in failed] == ["broken"]
    assert "status 500" in failed[0]["reason"]
    judged = [e for e in events if e["event"] == "ranking"]
    # The undecided pair got the adaptive rounds the ranking asked for, and said so.
    asked = [set(e["next_round"]) for e in judged if e["next_round"]]
    assert asked, "no adaptive round was asked for"
    assert all({k.split("|")[0] for k in keys} == {"sanic", "tornado"} for keys in asked)
    assert max(len(trials) for trials in named.values()) > 3
    assert events[-1]["status"] == run.outcome.status == "partial"


def test_every_event_kind_is_in_the_schema_and_a_line_of_another_kind_fails() -> None:
    """The published schema names each event; a line whose `event` it does not know, or
    without a key its event requires, fails validation."""
    import jsonschema

    from benchlab.report import json_formats as jf
    from benchlab.report.json_schemas import json_schema

    schema = json_schema(jf.STREAM)
    kinds = {
        d["properties"]["event"]["const"]
        for d in schema["$defs"].values()
        if "event" in d.get("properties", {})
    }
    assert kinds == {
        "run_started", "cell_verified", "trial_running", "trial", "cell_failed", "ranking",
        "run_finished",
    }  # fmt: skip
    line = {"format": "benchlab-stream", "format_version": 1, "at": "2026-11-29T00:00:00Z",
            "run_id": "r", "event": "cell_failed", "cell": "k", "reason": "why"}  # fmt: skip
    jsonschema.validate(line, schema)
    for broken in (
        {**line, "event": "cell_exploded"},
        {k: v for k, v in line.items() if k != "reason"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema)


# --- a real run ---------------------------------------------------------------------------------

REAL_RECIPE = """
name = "streamed"
stacks = ["nginx-static", "gin"]
scenarios = ["plaintext"]
trials = 2
warmup = 0
[[load]]
tool = "wrk"
connections = 16
duration = 1
[[load]]
tool = "vegeta"
rate = 200
connections = 16
duration = 4
"""
RATE = 200.0


@pytest.mark.alone
@pytest.mark.slow
def test_a_real_runs_stream_on_stdout_and_in_a_file_with_a_fixed_rate_trial_followed(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    """`run --progress json --progress-file F`: stdout holds the stream alone (the table is on
    stderr), the file the same events; in order, valid, each trial's figures the store's; each
    fixed-rate trial followed while it ran (vegeta's own report, once a second): its requests
    growing, its achieved rate at most what was asked, its errors those the store then
    counts, its last figure near the trial's stored one."""
    from tests.conftest import benchlab, write_recipe

    recipe = write_recipe(tmp_path, REAL_RECIPE)
    results, file = tmp_path / "results.db", tmp_path / "events.ndjson"
    run = benchlab(
        "run", str(recipe), "--results", str(results), "--progress", "json",
        "--progress-file", str(file), env={"TMPDIR": str(isolated_tmp)},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "run id:" in run.stderr and "run id:" not in run.stdout  # the table on stderr
    on_stdout = Lines()
    for line in run.stdout.splitlines(keepends=True):
        on_stdout(line.encode())
    in_file = Lines()
    for line in file.read_bytes().splitlines(keepends=True):
        in_file(line)
    events = on_stdout.events()
    assert [{k: v for k, v in e.items() if k != "at"} for e in in_file.events()] == [
        {k: v for k, v in e.items() if k != "at"} for e in events
    ]
    store = Store(results, create=False)
    named = check_stream(events, store)
    assert len(named) == 4 and all(len(trials) == 2 for trials in named.values())
    assert [e["event"] for e in events].count("cell_verified") == 4
    running: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        if event["event"] == "trial_running":
            assert event["no_figure"] is None, event
            running.setdefault(event["cell"], []).append(event)
    rate_cells = {key for key in named if "|vegeta|" in key}
    assert set(running) == rate_cells, "a fixed-rate trial not followed, or another one was"
    for key in rate_cells:
        trials = named[key]
        # Each trial's lines come before its own "trial" line: split them by it.
        order = [
            e for e in events if e.get("cell") == key and e["event"] in ("trial", "trial_running")
        ]
        per_trial: list[list[dict[str, Any]]] = [[]]
        for event in order:
            if event["event"] == "trial":
                per_trial.append([])
            else:
                per_trial[-1].append(event)
        for trial, lines in zip(trials, per_trial, strict=False):
            assert len(lines) >= 2, f"a 4-s trial followed fewer than twice: {lines}"
            counts = [_figures(e)["requests"] for e in lines]
            assert counts == sorted(counts) and counts[-1] <= trial.requests, counts
            for e in lines:
                figures = _figures(e)
                assert 0 < figures["achieved_rps"] <= RATE * 1.05, figures
                assert e["elapsed_s"] <= e["duration_s"] == 4
            last = _figures(lines[-1])
            assert lines[-1]["errors"] <= trial.errors.total
            assert abs(last["achieved_rps"] - trial.achieved_rps) <= 0.25 * trial.achieved_rps


# --- a running trial's figure on the terminal, and when there is none -------------------------


def test_the_bar_shows_a_running_trials_rate_and_errors_and_says_when_there_are_none() -> None:
    """The terminal's progress line (BarReporter's phase) during a fixed-rate trial: its
    achieved rate and errors so far; a trial that cannot be followed says why."""
    import io

    from rich.console import Console

    from benchlab.load.live import LiveLoad, NoLive
    from benchlab.recipe import Cell
    from benchlab.report.progress import BarReporter

    bar = BarReporter(Console(file=io.StringIO(), width=200))
    cell = Cell("gin", "json", "vegeta", 16, 1, 4, 5, 1, rate=200.0)
    bar.live(
        cell, LiveLoad(elapsed_s=2.2, duration_s=4, requests=440, errors=3, achieved_rps=198.6)
    )
    phase = bar.progress.tasks[0].fields["phase"]
    assert phase == "gin: achieved 199 req/s · 3 errors so far (2 of 4 s)", phase
    bar.live(cell, NoLive("its load comes from 2 generators, merged when they end"))
    phase = bar.progress.tasks[0].fields["phase"]
    assert phase == (
        "gin: no figure until the trial ends: its load comes from 2 generators, merged when "
        "they end"
    )


def test_vegetas_report_counts_as_errors_what_it_counts_as_no_success() -> None:
    """A report's status codes: 2xx and 3xx succeed, anything else (0: no response) failed."""
    from benchlab.load.vegeta_live import live_load

    report = {
        "requests": 10,
        "throughput": 7.5,
        "status_codes": {"200": 6, "302": 1, "0": 2, "503": 1},
    }
    figure = live_load(report, 1.0, 4.0)
    assert (figure.requests, figure.errors, figure.achieved_rps) == (10, 3, 7.5)
    assert figure.error_pct == 30.0


@pytest.mark.parametrize(
    ("generators", "tool", "why"),
    [
        (2, "vegeta", "its load comes from 2 generators, merged when they end"),
        (1, "wrk", "wrk gives its figures only when it ends"),
    ],
)
def test_a_fixed_rate_load_that_cannot_be_followed_says_why(
    generators: int, tool: str, why: str, tmp_path: Path
) -> None:
    from benchlab.hosts.base import THIS_MACHINE, Placement
    from benchlab.hosts.generators import _followed
    from benchlab.load import TOOLS, LoadRequest
    from benchlab.load.live import NoLive

    told: list[object] = []
    request = LoadRequest("http://127.0.0.1:1/", 4, 1, 4, 5, (1,), tool, rate=100.0)
    places = [Placement(THIS_MACHINE, (1,))] * generators
    with _followed(
        TOOLS[tool], [request] * generators, places, [tmp_path] * generators, told.append
    ):
        pass
    assert told == [NoLive(why)]
    closed_loop = LoadRequest("http://127.0.0.1:1/", 4, 1, 4, 5, (1,), tool)
    with _followed(TOOLS[tool], [closed_loop], places[:1], [tmp_path], told.append):
        pass
    assert told == [NoLive(why)], "a closed loop is not followed, nor said to be"


def test_a_stream_whose_reader_goes_away_ends_the_stream_never_the_run(tmp_path: Path) -> None:
    """`run --progress json | head -3`: the pipe closes, the stream stops (said once), and the
    run measures and stores everything it planned."""
    written: list[bytes] = []

    def closing(line: bytes) -> None:
        if len(written) == 3:
            raise BrokenPipeError(32, "Broken pipe")
        written.append(line)

    said: list[str] = []
    executor = FakeExecutor({"sanic": FakeStack(), "tornado": FakeStack()})
    recipe = RECIPE.replace('"sanic", "tornado", "broken"', '"sanic", "tornado"')
    run = run_inprocess(tmp_path, recipe, executor, reporter=StreamReporter(closing, said.append))
    assert run.outcome.status == "complete"
    assert len(written) == 3 and said == ["the stream stopped (Broken pipe); the run goes on"]
    assert all(len(run.trials(stack, "json")) >= 3 for stack in ("sanic", "tornado"))


@pytest.mark.alone
@pytest.mark.slow
def test_tunes_stream_says_each_candidate_checked(tmp_path: Path) -> None:
    """`tune --check-only --progress json`: the stream of a tune, each candidate's check in
    it (only its answer asked), every line valid, the table on stderr."""
    import sys

    from tests.conftest import benchlab

    app = tmp_path / "hello.py"
    app.write_text(
        "def app(environ, start_response):\n"
        "    start_response('200 OK', [('Content-Type', 'text/plain')])\n"
        "    return [b'ok']\n"
    )
    done = benchlab(
        "tune", f"{app}:app", "--check-only", "--servers", "gunicorn", "--workers", "1",
        "--python", sys.executable, "--check-body", "ok", "--results", str(tmp_path / "r.db"),
        "--progress", "json", cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = Lines()
    for line in done.stdout.splitlines(keepends=True):
        lines(line.encode())
    events = lines.events()
    kinds = [e["event"] for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished", kinds
    planned = [c["key"] for c in events[0]["cells"]]
    checked = [e["cell"] for e in events if e["event"] == "cell_verified"]
    assert checked == planned and planned, (planned, checked)
    assert {e["negotiated"] for e in events if e["event"] == "cell_verified"} == {""}
    assert events[-1]["status"] == "complete" and "run id:" in done.stderr
