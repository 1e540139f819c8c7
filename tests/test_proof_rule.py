"""tune's rate to run at holds the target in every window a user will see (issue 38): its
proof replays the printed command and steps down while any ~2-s window misses.

No process: the real Session, Measurer and proof loop run on the in-process executor, and
the stack is a model server whose capacity the test sets. Its requests pass through the
real reader of vegeta's records, so the windows are cut and judged as a real replay's."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from benchlab.analysis import capacity
from benchlab.analysis.run_options import RunOptions
from benchlab.analysis.summary import summarise
from benchlab.analysis.tune_options import TuneOptions
from benchlab.core.modes import Mode
from benchlab.http.scenarios import Expectation, Scenario
from benchlab.load import LoadRequest
from benchlab.load.request_records import Generator, csv_lines, read_results
from benchlab.load.result import LoadResult
from benchlab.recipe import Cell, CoreAssignment, LoadProfile, Plan, Recipe, Slo, local_only
from benchlab.report.jsonfile import render_json
from benchlab.report.progress import LineReporter
from benchlab.report.terminal import render_table
from benchlab.resilience.slow_clients import SlowClients, SlowResult, Trial
from benchlab.runner import MeasureOptions, Measurer, SessionOptions
from benchlab.stacks.servers import KIND_BY_NAME
from benchlab.store import CapacityRecord, RunInfo, Store
from benchlab.tune import candidates as tune_candidates
from benchlab.tune import driver
from benchlab.tune.app import AppInfo, AppSpec
from benchlab.tune.at_rate import cheapest_at
from benchlab.tune.candidates import SCENARIO, Candidate
from benchlab.tune.proof import PROOF_S, Searched, proof_warmup_s, prove
from benchlab.tune.proxy_check import check_answer, check_cost_s, parsing_cost_s
from benchlab.tune.session import TuneSession
from tests.inprocess import FakeExecutor, FakeStack
from tests.stored_runs import MACHINE, held_trial

SLO_MS = 100.0
CORES = CoreAssignment((0,), (1,))
ORIGIN_NS = 1_764_000_000 * 10**9
APP = (Expectation("/app", None, None, contract=False),)
KNEE = 0.9  # above this share of its capacity, the model stalls one window in four


def model_server(
    capacity_rps: float, spiky_above_rps: float | None = None
) -> Callable[[LoadRequest], LoadResult]:
    """Requests answered in 5 ms, except above KNEE × capacity, where every fourth 2-s
    window has 4 % of its requests wait 300 ms: its p99 misses, the others' do not, and
    the replay's p99 as a whole stays under the target at 1 % of the requests. Above
    `spiky_above_rps`, two windows of a replay have 4 % of their requests wait 70 ms: under
    the target, not under its headroom."""

    def result(request: LoadRequest) -> LoadResult:
        assert request.rate is not None, "the proof replays at a fixed rate"
        rate, stalls = request.rate, request.rate > KNEE * capacity_rps
        spiky = spiky_above_rps is not None and rate > spiky_above_rps
        rows = []
        for i in range(int(rate * request.duration_s)):
            sent = ORIGIN_NS + i * 10**9 // int(rate)
            window = (sent - ORIGIN_NS) // (2 * 10**9)
            slow = stalls and window % 4 == 3 and i % 25 == 0
            spike = spiky and window in (5, 17) and i % 25 == 0
            latency = 300_000_000 if slow else 70_000_000 if spike else 5_000_000
            rows.append([str(sent), "200", str(latency), "0", "2", "", "", "", str(i), "GET",
                         "http://127.0.0.1/app", ""])  # fmt: skip
        lines = csv_lines(rows)
        return read_results([Generator(lambda: lines, rate)])

    return result


def _info() -> AppInfo:
    spec = AppSpec("app:app", "app", "app", Path("/srv/app"), None)
    servers = {"gunicorn": True}
    return AppInfo(spec, "/venv/bin/python", "3.11.2", "wsgi", servers, 50.0, cwd=spec.directory)


def _runnable(stacks: dict) -> dict:
    return {
        name: dataclasses.replace(
            s, build=None, needs_programs=(), needs_files=(), needs_modules=(), start_timeout=10.0
        )
        for name, s in stacks.items()
    }


def _tune_session(
    store: Store, executor: FakeExecutor, slo: Slo, tune_options: dict[str, object]
) -> TuneSession:
    """A tune's session on the in-process executor, its candidates tune's own stacks."""
    recipe = Recipe(
        name="tune app:app", stacks=["tune"], scenarios=[SCENARIO], slo=slo,
        load=[LoadProfile(tool="vegeta", connections=64, duration=2, timeout=2)],
    )  # fmt: skip
    tune = {"key": "k", "app": "app.py:app", "target": "app:app", "slo_p99_ms": SLO_MS,
            **tune_options}  # fmt: skip
    options = dataclasses.replace(
        RunOptions.from_recipe(recipe), tune=TuneOptions.from_json(tune)
    ).to_json()
    catalogue = _runnable(tune_candidates.catalogue(_info()))
    return TuneSession(
        Plan(recipe, Path("app.py"), "", CORES, (), catalogue, local_only(CORES)), store,
        LineReporter(Console(file=io.StringIO())),
        SessionOptions(
            "benchlab tune app.py:app", deadline_s=900.0, executor=executor,
            scenarios={SCENARIO: Scenario(name=SCENARIO, description="GET /app", requests=APP)},
        ),
        RunInfo("app.py:app", "tune app:app", "", "", "benchlab tune app.py:app", None, (0,),
                (1,), dict(MACHINE), options),
    )  # fmt: skip


def _tune_with_a_proof(
    tmp_path: Path, capacity_rps: float, replicates: list[float],
    slowed: SlowClients | None = None, executor: FakeExecutor | None = None,
    misparses: str | None = None, spiky_above_rps: float | None = None,
    answer_s: float = 0.001,
) -> tuple[Store, str, list[str]]:  # fmt: skip
    """A tune whose search found `replicates` for gthread w=1 t=16, then its proof, then
    (given an executor) its check beside slow clients, which find `slowed`, for an app that
    answers one request alone in `answer_s`."""
    kind = KIND_BY_NAME["gunicorn-gthread"]
    candidate = Candidate.of_kind(kind, 1, 16)
    check = executor is not None
    executor = executor or FakeExecutor({})
    executor.stacks = {
        f"{kind.name}-as-printed": FakeStack(
            result_at=model_server(capacity_rps, spiky_above_rps),
            slowed=slowed,
            misparses=misparses,
        ),
        kind.name: FakeStack(),
    }
    store = Store(tmp_path / "results.db")
    said: list[str] = []
    session = _tune_session(store, executor, Slo(p99_ms=SLO_MS, sustain_s=8), {})
    search = Cell(kind.name, SCENARIO, "vegeta", 64, 1, 2, 2, 1, server_threads=16,
                  mode=Mode.SLO)  # fmt: skip
    closed = dataclasses.replace(search, mode=Mode.CLOSED)
    with session.running(1):
        session.cells.add([closed, search])
        first_pass, searched = session.cells.ids[closed], session.cells.ids[search]
        store.add_trial(first_pass, dataclasses.replace(held_trial(0, 2000.0), target_rate=None))
        store.mark_cell(first_pass, "ok")
        store.set_cell_rates(searched, None, 2000.0)
        for r, found in enumerate(replicates):
            store.add_capacity(searched, CapacityRecord(r, found, found, found * 1.05, 5))
            store.add_trial(searched, held_trial(r, found or 500.0, probe="search"))
        store.mark_cell(searched, "ok")
        measurer = Measurer(session, MeasureOptions())
        proved = prove(session, measurer, [Searched(candidate, search)], CORES, 64, said.append)
        if check and proved is not None:
            check_answer(session, measurer, proved[0], CORES, 64, proved[1], answer_s, said.append)
    return store, session.run_id, said


def test_a_rate_that_misses_one_window_in_four_steps_down_to_one_that_holds_every_window(
    tmp_path: Path,
) -> None:
    # The search's replicates held 1,000–1,080 req/s; the proof starts at 85 % of their
    # median (884, under the lowest replicate) and the model server misses one window in
    # four above 855: it must step down.
    store, run_id, said = _tune_with_a_proof(tmp_path, 950.0, [1040.0, 1000.0, 1080.0])
    report = json.loads(render_json(summarise(store, run_id)))
    proof = report["recommendation"]["proof"]
    first, final = proof["steps"][0], proof["steps"][-1]
    assert first["rate"] == 884.0 and not first["held"], proof
    assert len(first["windows_p99_ms"]) == PROOF_S // 2
    over = [w for w in first["windows_p99_ms"] if w > SLO_MS]
    # One window in four missed, and the replay's p99 as a whole did not: a rule on the
    # whole replay would have passed it.
    assert len(over) == len(first["windows_p99_ms"]) // 4, first
    assert first["p99_ms"] <= SLO_MS, first
    assert f"in {len(over)} of its 30 2-s windows" in first["missed"]
    assert final["held"] and final["rate"] == capacity.step_down(884.0) == 751.0
    assert all(w <= SLO_MS for w in final["windows_p99_ms"])
    best = report["recommendation"]
    assert best["run_at_rps"] == 751.0
    assert best["run_at_margin_pct"] == 100 * (1 - 751 / 1040)  # the capacity's median
    assert best["replicates_rps"] == {"low": 1000.0, "high": 1080.0}
    assert "every ~2-s window" in best["run_at_rule"], best
    assert "85 % of the median" in best["run_at_rule"], best
    assert any("held 751 req/s for 60 s (every one of its 30 windows" in s for s in said), said
    out = io.StringIO()
    render_table(summarise(store, run_id), Console(file=out, width=200))
    text = " ".join(out.getvalue().split())
    assert "run it at up to 751 req/s" in text, text
    assert "(its 30 2-s windows: p99 5.00–5.00 ms; 30 of 30 held)" in text, text
    assert "margin: 751 req/s is 28 % under the capacity's median (1,040 req/s)" in text, text
    assert "its 3 replicates held 1,000–1,080 req/s" in text, text


def test_a_rate_under_the_knee_holds_at_once(tmp_path: Path) -> None:
    store, run_id, _ = _tune_with_a_proof(tmp_path, 2000.0, [1040.0, 1000.0, 1080.0])
    best = json.loads(render_json(summarise(store, run_id)))["recommendation"]
    assert [s["rate"] for s in best["proof"]["steps"]] == [884.0]
    assert best["run_at_rps"] == 884.0


def _tune_at_rate(
    tmp_path: Path, goal: float, models: dict[str, tuple[float, float, float]]
) -> tuple[Store, str, list[str]]:
    """A tune --rate over one candidate per kind: (closed-loop req/s, RSS MB, capacity) each,
    its first pass stored, then the replays at `goal`."""
    kinds = [KIND_BY_NAME[name] for name in models]
    executor = FakeExecutor({
        **{f"{k.name}-as-printed": FakeStack(result_at=model_server(models[k.name][2]))
           for k in kinds},
        **{k.name: FakeStack() for k in kinds},
    })  # fmt: skip
    store = Store(tmp_path / "results.db")
    said: list[str] = []
    session = _tune_session(store, executor, Slo(p99_ms=SLO_MS), {"rate": goal})
    first_pass = []
    with session.running(1):
        for kind in kinds:
            closed_rps, rss_mb, _ = models[kind.name]
            cell = Cell(kind.name, SCENARIO, "vegeta", 16, 1, 2, 5, 1, server_threads=16)
            session.cells.add([cell])
            trial = dataclasses.replace(
                held_trial(0, closed_rps), target_rate=None, server_rss_mb=rss_mb
            )
            store.add_trial(session.cells.ids[cell], trial)
            store.mark_cell(session.cells.ids[cell], "ok")
            first_pass.append(Searched(Candidate.of_kind(kind, 1, 16), cell))
        measurer = Measurer(session, MeasureOptions())
        cheapest_at(session, measurer, first_pass, CORES, 64, goal, said.append)
    return store, session.run_id, said


AT_RATE = {  # closed-loop req/s, RSS MB, capacity
    "gunicorn-gthread": (1000.0, 40.0, 850.0),  # reaches 800 spare, but misses a window in four
    "granian-wsgi": (2500.0, 120.0, 2000.0),  # holds it, in three times the memory
    # The cheapest: its closed loop reaches 800, but not with 15 % to spare (941).
    "waitress": (900.0, 30.0, 850.0),
}


def test_tune_rate_answers_the_cheapest_candidate_that_holds_the_load(tmp_path: Path) -> None:
    store, run_id, said = _tune_at_rate(tmp_path, 800.0, AT_RATE)
    best = json.loads(render_json(summarise(store, run_id)))["recommendation"]
    # waitress's closed loop never reached 800 with 15 % to spare: not replayed. gthread was cheaper
    # than granian and reached it, so it was replayed first, and missed a window in four.
    replayed = [c for c in summarise_cells(store, run_id) if c.endswith("-as-printed")]
    assert replayed == ["gunicorn-gthread-as-printed", "granian-wsgi-as-printed"], said
    assert best["server"] == "granian" and best["run_at_rps"] == 800.0, best
    assert best["rate_goal"] == {"rps": 800.0, "held": True, "short_pct": None}
    assert best["proof"]["held"] and best["proof"]["rate"] == 800.0
    assert "cheaper ones missed it (gunicorn-gthread w=1 t=16)" in best["reason"]
    out = io.StringIO()
    render_table(summarise(store, run_id), Console(file=out, width=200))
    text = " ".join(out.getvalue().split())
    assert "Cheapest that holds 800 req/s for app:app with p99 ≤ 100 ms: granian-wsgi" in text


def test_tune_rate_out_of_reach_says_so_and_how_far(tmp_path: Path) -> None:
    store, run_id, said = _tune_at_rate(tmp_path, 5000.0, AT_RATE)
    assert said == [
        "no candidate reached 5,882 req/s even in a closed loop (5,000 with 15 % to spare; the "
        "most: 2,500): looking for the most that holds instead"
    ]
    best = json.loads(render_json(summarise(store, run_id)))["recommendation"]
    assert best is not None and best["rate_goal"]["held"] is False, best
    assert not [c for c in summarise_cells(store, run_id) if c.endswith("-as-printed")]


def summarise_cells(store: Store, run_id: str) -> list[str]:
    return [cell.stack for cell in store.cells(run_id)]


def test_the_checks_of_an_app_slow_to_answer_wait_for_a_budget_that_holds_them(
    tmp_path: Path,
) -> None:
    """The parsing check waits for the app's answer about a thousand times, one at a time:
    its cost follows the app's answer time, and a check that would overrun the budget does
    not start (a 50-ms app's took 47 s here, where a fixed estimate said 6)."""
    held = SlowClients(32, 100, ())
    quick, slow = FakeExecutor({}), FakeExecutor({})
    _tune_with_a_proof(tmp_path / "quick", 150.0, [150.0], held, quick)
    _, _, overruns = _tune_with_a_proof(tmp_path / "slow", 150.0, [150.0], held, slow, answer_s=1.0)
    assert len(quick.checks) == 1 and not slow.checks
    cost = check_cost_s(parsing_cost_s(APP, 1.0))
    assert cost > 1000, cost  # over a thousand answers of a second each
    assert (
        f"slow clients: no budget left to check gunicorn-gthread w=1 t=16 (about {cost:.0f} s)"
        in (overruns)
    ), overruns


def test_the_answer_is_checked_beside_slow_clients_and_says_when_it_needs_a_proxy(
    tmp_path: Path,
) -> None:
    """After its proof, the printed command beside slow clients trickling their headers, at
    half the rate it held (under the check's own 100 req/s): held by them in every round, the
    answer says to put a buffering proxy in front; unharmed, that none is needed."""
    calm, starved = Trial(5.0, 100.0, 0.0), Trial(None, 0.0, 1.0)
    held = SlowClients(32, 100, (SlowResult("headers", (calm,) * 3, (starved,) * 3),))
    executor = FakeExecutor({})
    store, run_id, said = _tune_with_a_proof(
        tmp_path, 150.0, [150.0, 160.0, 170.0], held, executor, misparses="pipelined"
    )
    best = json.loads(render_json(summarise(store, run_id)))["recommendation"]
    (checked,) = executor.checks
    assert checked.rate == best["run_at_rps"] / 2 < 100, (checked.rate, best["run_at_rps"])
    assert checked.stack.name == "gunicorn-gthread-as-printed"
    assert [r.path for r in checked.requests] == ["/app"]
    assert best["slow_clients"]["needs_proxy"] is True, best
    out = io.StringIO()
    render_table(summarise(store, run_id), Console(file=out, width=200))
    text = " ".join(out.getvalue().split())
    assert "proxy: put a buffering proxy (nginx) in front: harmed by 32 slow clients" in text
    assert any("needs a buffering proxy in front" in line for line in said), said
    # Its parsing, asked for the app's own request: each shape and offset, before the load.
    (asked,) = executor.conformed
    assert asked.follow_up.startswith(b"GET /app HTTP/1.1\r\n")
    assert {shape.raw.split(b" ")[1] for shape in asked.shapes} >= {b"/app"}
    assert best["parsing"]["unranking"] == [
        "answers the request wrong (pipelined, split after byte 7: a wrong answer)"
    ]
    assert (
        "parsing: answers the request wrong (pipelined, split after byte 7: a wrong answer): "
        "put a proxy that parses requests (nginx) in front" in text
    )

    unharmed = tmp_path / "unharmed"
    unharmed.mkdir()
    store, run_id, _ = _tune_with_a_proof(unharmed, 150.0, [150.0], None, FakeExecutor({}))
    best = json.loads(render_json(summarise(store, run_id)))["recommendation"]
    assert best["slow_clients"]["needs_proxy"] is False, best
    out = io.StringIO()
    render_table(summarise(store, run_id), Console(file=out, width=200))
    text = " ".join(out.getvalue().split())
    assert "proxy: none needed beside slow clients" in text
    assert "parsing: every request shape right, whole and split at every byte" in text


def test_a_tune_whose_search_held_nothing_still_renders_every_report(tmp_path: Path) -> None:
    """Every replicate missed even its first confirmation (capacity 0, seen on a noisy
    machine): the answer and every format render, the bar of nothing drawn as none (a log
    axis has no zero)."""
    from benchlab.report.html import render_html
    from benchlab.report.markdown import render_markdown

    store, run_id, _ = _tune_with_a_proof(tmp_path, 1000.0, [0.0, 0.0])
    summary = summarise(store, run_id)
    assert "<svg" in render_html(summary)
    assert render_markdown(summary) and json.loads(render_json(summary))["run"]
    render_table(summary, Console(file=io.StringIO(), width=120))


def test_first_pass_ties_search_the_cheapest_and_the_answer_names_the_others(
    tmp_path: Path,
) -> None:
    # Two tunes of one app (Ariadne, 2026-11-27) searched 1 worker, then 3, on closed loops
    # of 579 vs 463 and then 407 vs 409 req/s: one trial each cannot tell 407 from 409.
    kind = KIND_BY_NAME["gunicorn-gthread"]
    first = {  # workers: closed-loop req/s, RSS MB
        3: (409.0, 139.0), 1: (407.0, 70.0), 2: (300.0, 100.0),  # 2: far from a tie
    }  # fmt: skip
    store = Store(tmp_path / "results.db")
    session = _tune_session(store, FakeExecutor({}), Slo(p99_ms=SLO_MS), {})
    first_pass = []
    with session.running(1):
        for workers, (closed_rps, rss_mb) in first.items():
            cell = Cell(kind.name, SCENARIO, "vegeta", 16, 1, 2, 5, workers, server_threads=16)
            session.cells.add([cell])
            trial = dataclasses.replace(
                held_trial(0, closed_rps), target_rate=None, server_rss_mb=rss_mb
            )
            store.add_trial(session.cells.ids[cell], trial)
            store.mark_cell(session.cells.ids[cell], "ok")
            first_pass.append(Searched(Candidate.of_kind(kind, workers, 16), cell))
        order = [[c.workers for c in driver._survivors(session, first_pass, n)] for n in (1, 3)]
        # The budget's one search goes to the cheaper of the tie, not to the trial ahead.
        assert order == [[1], [1, 3, 2]]
        search = dataclasses.replace(first_pass[1].cell, mode=Mode.SLO)
        session.cells.add([search])
        searched = session.cells.ids[search]
        store.set_cell_rates(searched, None, 2000.0)
        for r, found in enumerate([300.0, 320.0]):
            store.add_capacity(searched, CapacityRecord(r, found, found, found * 1.05, 5))
            store.add_trial(searched, held_trial(r, found, probe="search"))
        store.mark_cell(searched, "ok")
    best = json.loads(render_json(summarise(store, session.run_id)))["recommendation"]
    assert best["workers"] == 1, best
    tie = [f for f in best["findings"] if f.startswith("as fast as")]
    assert tie == [
        "as fast as gunicorn-gthread w=1 t=16 in the first pass (407 req/s; within 10%, one "
        "closed-loop trial each) but not searched, the budget searched fewer: "
        "gunicorn-gthread w=3 t=16 (409 req/s, 139 MB); tune searches the cheapest of such ties"
    ], best["findings"]


def test_a_proof_warms_up_at_its_rate_until_each_worker_has_served_its_share(
    tmp_path: Path,
) -> None:
    # Wagtail's proofs warmed up 1 s (ten requests a worker) and missed only in their first
    # window; the proof warms up at least the acceptance replay's 5 s, longer when its rate
    # over its workers needs it, at most 10 s.
    assert proof_warmup_s(1000.0, 1) == 5.0
    assert proof_warmup_s(50.0, 3) == 6.0
    assert proof_warmup_s(31.0, 3) == 9.7
    assert proof_warmup_s(3.0, 3) == 10.0
    executor = FakeExecutor({})
    _tune_with_a_proof(tmp_path, 2000.0, [1040.0, 1000.0, 1080.0], executor=executor)
    replays = [
        (load.rate, load.duration_s)
        for load in executor.loads
        if load.stack.endswith("-as-printed") and load.rate == 884.0
    ]
    assert replays[:2] == [(884.0, 5.0), (884.0, float(PROOF_S))], executor.loads


def test_a_rate_whose_windows_hold_without_headroom_steps_down(tmp_path: Path) -> None:
    # Every window under the 100-ms target, but two of 30 at 70 ms: where a replay missed,
    # its worst window was up to 1.58× the proof's worst (capacity.PROOF_HEADROOM), so
    # 884 req/s is not proved; 751, whose windows stay at 5 ms, is.
    store, run_id, said = _tune_with_a_proof(
        tmp_path, 2000.0, [1040.0, 1000.0, 1080.0], spiky_above_rps=800.0
    )
    proof = json.loads(render_json(summarise(store, run_id)))["recommendation"]["proof"]
    first, final = proof["steps"][0], proof["steps"][-1]
    assert max(first["windows_p99_ms"]) <= SLO_MS and not first["held"], first
    assert first["missed"].startswith("p99 over 62.5 ms in 2 of its 30 2-s windows"), first
    assert "1.6× headroom" in first["missed"]
    assert final["held"] and final["rate"] == 751.0, proof
    assert any("884 req/s missed" in s and "headroom" in s for s in said), said
