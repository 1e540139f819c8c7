"""One stopping rule and one wording rule: for random trial sets and options (every `rank_by`,
`min_effect_pct` 0 included, a ceiling beside the contenders, one grid point or two, HTTP's
or the WebSocket scenarios' with the Go ceiling), the runner's stop decision
(`Measurer.still_to_decide`, as its adaptive rounds ask it) and the report's words (the
takeaways, and the JSON's undecided pairs) agree: a run stops exactly when the report says
"undecided" nowhere, and the pairs the runner would still measure are the pairs the report
calls undecided. And one builder: the runner's ranking and the report's are made of each
cell's one `CellResult` (analysis/cell_result.py), the report's Ranking holding the very
results its cells show, and every figure, point and order the JSON states is theirs.

On the code before analysis/ranking.py (05c3a56) a version of this test found four
disagreements: at `min_effect_pct = 0` the runner never decided a tie the report called one;
tiers judged against their head said "undecided" about a run the runner had stopped; a pair
the runner waited on went unnamed by a headline; and the runner decided pairs with the
ceiling, which the report does not rank."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import statistics
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from benchlab.analysis.cell_result import stored_ranking
from benchlab.analysis.ranking import Ranking
from benchlab.analysis.run_options import RunOptions
from benchlab.analysis.summary import RunSummary, summarise
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.http.scenarios import SCENARIOS
from benchlab.recipe import Cell
from benchlab.report.jsonfile import render_json
from benchlab.report.takeaways import takeaways
from benchlab.runner.measurer import Measurer
from benchlab.runner.records import cell_record
from benchlab.stacks import CATALOGUE
from benchlab.store import RunInfo, Store, TrialRecord
from tests.stored_runs import MACHINE

CONTENDERS = ("gin", "sanic", "tornado", "fastapi+uvicorn")
# The WebSocket scenarios rank by their own figures, the Go stack their ceiling.
WS_CONTENDERS = (
    "starlette+uvicorn", "starlette+hypercorn", "starlette+granian", "starlette+gunicorn-asgi"
)  # fmt: skip
RANK_BY = st.sampled_from([None, *(f.key for f in F.RANKABLE)])
MIN_EFFECT = st.sampled_from([None, 0.0, 2.0, 5.0, 10.0])


def _trial(round_index: int, rps: float, p99: float, cpu_s: float) -> TrialRecord:
    requests = int(rps * 2)
    return TrialRecord(
        round=round_index, started_at="2026-11-23T20:00:00+00:00", requests=requests,
        duration_s=2.0, throughput_rps=rps, bytes=requests * 150, latency_min_ms=0.1,
        latency_mean_ms=p99 / 3, latency_stdev_ms=0.1, latency_p50_ms=p99 / 3,
        latency_p90_ms=p99 / 2, latency_p99_ms=p99, latency_p999_ms=p99 * 2,
        latency_max_ms=p99 * 3, latency_percentiles=json.dumps({"50": p99 / 3, "99": p99}),
        errors_connect=0, errors_read=0, errors_write=0, errors_timeout=0, errors_non_2xx=0,
        errors_other=0, server_cpu_pct=90.0, server_rss_mb=40.0, server_processes=2,
        load_cpu_pct=50.0, server_steal_pct=0.0, load_steal_pct=0.0, server_cpu_s=cpu_s,
        cpu_source="cgroup v2", ws_connections_held=int(rps / 10), ws_echo_p99_ms=p99,
        ws_broadcast_p99_ms=p99,
    )  # fmt: skip


Rows = list[tuple[float, float, float]]  # per round: req/s, p99, server CPU seconds


@st.composite
def trial_sets(draw: st.DrawFn) -> dict[tuple[str, str], Rows]:
    """Trials of 2-4 contenders (and maybe the ceiling) at one or two scenarios: each stack
    a chosen distance from the others, a shared movement per round, and noise of its own."""
    websocket = draw(st.booleans())
    pool = WS_CONTENDERS if websocket else CONTENDERS
    names = draw(st.lists(st.sampled_from(pool), min_size=2, max_size=4, unique=True))
    if draw(st.booleans()):
        names.append("go-nethttp" if websocket else "nginx-static")
    choices = [("ws-echo",), ("ws-hold", "ws-broadcast")] if websocket else [
        ("json",), ("json", "plaintext")
    ]  # fmt: skip
    scenarios = draw(st.sampled_from(choices))
    rounds = draw(st.integers(3, 10))
    sd = draw(st.sampled_from([0.002, 0.01, 0.03, 0.1]))
    shared = draw(st.lists(st.floats(-2, 2), min_size=rounds, max_size=rounds))
    found: dict[tuple[str, str], Rows] = {}
    for scenario in scenarios:
        for name in names:
            offset = draw(st.sampled_from([0.0, 0.005, 0.02, 0.05, 0.1, 0.4]))
            noise = draw(st.lists(st.floats(-2.5, 2.5), min_size=3 * rounds, max_size=3 * rounds))
            rows = []
            for r in range(rounds):
                base = math.exp(offset + 0.05 * shared[r])
                rows.append((
                    10_000 * base * math.exp(sd * noise[3 * r]),
                    10.0 / base * math.exp(sd * noise[3 * r + 1]),
                    2.0 / base * math.exp(sd * noise[3 * r + 2]),
                ))  # fmt: skip
            found[(name, scenario)] = rows
    return found


@contextlib.contextmanager
def _stored(trials: dict[tuple[str, str], Rows], options: RunOptions) -> Iterator[SimpleNamespace]:
    """The trials in a store of their own, as a run's session shows them; the store and
    its directory removed afterwards (one an example: a run of the property makes 150)."""
    with tempfile.TemporaryDirectory(prefix="ranking-") as directory:
        store = Store(Path(directory) / "results.db")
        try:
            yield _filled(store, trials, options)
        finally:
            store.close()


def _filled(
    store: Store, trials: dict[tuple[str, str], Rows], options: RunOptions
) -> SimpleNamespace:
    info = RunInfo(
        "r.toml", "r", "", "?", "benchlab run r.toml", None, (0,), (1,), dict(MACHINE),
        options.to_json(),
    )  # fmt: skip
    run_id = store.create_run(info)
    cells = []
    for position, ((name, scenario), rows) in enumerate(trials.items()):
        mode = SCENARIOS[scenario].mode_for(Mode.CLOSED)
        cell = Cell(name, scenario, "jmeter" if mode != Mode.CLOSED else "wrk", 64, 1, 2, 5, 1)
        cell = dataclasses.replace(cell, mode=mode)
        entry = CATALOGUE[name]
        cell_id = store.add_cell(
            cell_record(run_id, position, cell, entry.label(1), facts=entry.facts(1, None))
        )
        for round_index, row in enumerate(rows):
            store.add_trial(cell_id, _trial(round_index, *row))
        cells.append(cell)
    return SimpleNamespace(
        store=store, run_id=run_id, run_options=options, cells=SimpleNamespace(failed={}),
        planned=cells,
    )  # fmt: skip


@settings(
    max_examples=150, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)  # fmt: skip
@given(trial_sets(), MIN_EFFECT, RANK_BY)
def test_the_runner_stops_where_the_report_says_nothing_is_undecided(
    trials: dict[tuple[str, str], Rows], min_effect: float | None, rank_by: str | None
) -> None:
    options = RunOptions(
        adaptive=True, ratio_method="sequential", rank_by=rank_by, min_effect_pct=min_effect
    )
    with _stored(trials, options) as session:
        measurer = Measurer.__new__(Measurer)  # its decision alone: nothing is launched here
        measurer.session = session
        pending, waiting = measurer.still_to_decide(session.planned)

        summary = summarise(session.store, session.run_id)
        words = " ".join(t.sentence for t in takeaways(summary))
        report = json.loads(render_json(summary))
        named = {
            (pair["ahead"], pair["behind"])
            for point in report["rankings"]
            for pair in point["undecided"]
        }
        stops = not pending
        event("the runner stops" if stops else "the runner waits on undecided pairs")
        assert stops == ("undecided" not in words), (stops, words)
        _one_builder(stored_ranking(session.store, session.run_id, options), summary, report)
        assert named == {(s.ahead.key, s.behind.key) for s in waiting}, (named, words)
        # Every pair the runner waits on is named in its point's sentence, as undecided.
        for step in waiting:
            (sentence,) = [t.sentence for t in takeaways(summary) if t.point == step.point]
            assert f"{step.ahead.label.removesuffix(' w=1')} " in sentence
            assert f"(undecided: {step.would_decide})" in sentence


def _one_builder(runner: Ranking, summary: RunSummary, report: dict) -> None:
    """The runner's ranking and the report's rank the same results: each cell's point,
    figure and samples as its one CellResult has them; the report's Ranking holds the very
    results its cells show; the JSON states their figure, order and medians."""
    assert list(runner.points) == list(summary.ranking.points)
    for point, ranked in summary.ranking.points.items():
        theirs = runner.points[point]
        assert [e.key for e in theirs.entrants] == [e.key for e in ranked.entrants]
        assert [p.key for p in theirs.order] == [p.key for p in ranked.order]
        assert [s.call for s in theirs.steps] == [s.call for s in ranked.steps]
        for entrant in ranked.entrants:
            result = summary.cell(entrant.key).result
            assert entrant is result  # a reference to the result the report shows
            assert result.point == point and result.figure is ranked.figure
            assert list(theirs.samples[entrant.key]) == list(result.samples[ranked.figure.key])
    cells = {c["key"]: c for c in report["cells"]}
    for point in report["rankings"]:
        for place in point["ranking"]:
            result = summary.cell(place["key"]).result
            assert cells[place["key"]]["ranked_by"] == point["figure"] == result.figure.key
            assert place["value"] == statistics.median(result.samples[result.figure.key])
