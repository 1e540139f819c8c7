"""WebSockets (issue 60): the contract on every stack that speaks it, a wrong server caught,
the tool's results read back, and known answers on real servers under JMeter: a server that
sleeps a fixed time per message has that time added; one that refuses past K connections
holds K; the tool's message counts match the server's own within 0.1 %."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlab.analysis.verdicts import CLIENT_BOUND, HOLD_STALLED, Setting, verdicts
from benchlab.core import figures as F
from benchlab.core.errors import UserError
from benchlab.core.modes import Mode
from benchlab.http.scenarios import WEBSOCKET_SCENARIOS
from benchlab.http.ws_verify import read_counters, verify_websocket
from benchlab.load import TOOLS, make_ready
from benchlab.load.ws_requests import BroadcastRequest, EchoRequest, Endpoint, HoldRequest
from benchlab.load.ws_results import broadcast_result, echo_result
from benchlab.recipe.checks import check_names
from benchlab.recipe.schema import Recipe
from benchlab.runner import ws_load
from benchlab.stacks import CATALOGUE, Launch, LaunchContext, Stack
from benchlab.system.process import ProcessRegistry
from tests.conftest import short_tmp
from tests.measured import MeasuredCell
from tests.servers import running_stack

QUIRKS = Path(__file__).with_name("apps") / "ws_quirks.py"
SERVER, LOAD = (0,), (1,)
# The stacks whose reference app and server speak the WebSocket contract.
SPEAKERS = (
    "go-nethttp", "starlette+uvicorn", "starlette+uvicorn-wsproto", "starlette+hypercorn",
    "starlette+granian", "starlette+gunicorn-asgi", "fastapi+uvicorn", "sanic", "aiohttp",
    "tornado",
)  # fmt: skip


@pytest.fixture
def workdir() -> Iterator[Path]:
    directory = short_tmp()
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def _quirky(env: dict[str, str]) -> Stack:
    def launch(ctx: LaunchContext) -> Launch:
        argv = [sys.executable, "-m", "uvicorn", "ws_quirks:app", "--host", ctx.host,
                "--port", str(ctx.port), "--log-level", "warning"]  # fmt: skip
        return Launch(argv=argv, env=env, cwd=QUIRKS.parent)

    return Stack(
        name="ws-quirks", framework="test", server="uvicorn", worker_model="asyncio",
        scenarios=WEBSOCKET_SCENARIOS, launch=launch, start_timeout=15,
    )  # fmt: skip


# --- what says who speaks it -----------------------------------------------------------------


def test_every_stack_that_cannot_speak_websocket_says_why() -> None:
    for name in SPEAKERS:
        assert CATALOGUE[name].why_not("ws-echo") is None, name
    assert "WSGI" in (CATALOGUE["flask+gunicorn"].why_not("ws-echo") or "")
    assert "--no-ws" in (CATALOGUE["fastapi+granian"].why_not("ws-hold") or "")
    assert "no WebSocket endpoint" in (CATALOGUE["gin"].why_not("ws-broadcast") or "")
    assert CATALOGUE["go-nethttp"].websocket_ceiling
    assert not CATALOGUE["starlette+uvicorn"].websocket_ceiling


def _recipe(tool: str, scenarios: list[str]) -> Recipe:
    data = {"name": "w", "stacks": ["starlette+uvicorn"], "scenarios": scenarios}
    return Recipe.model_validate({**data, "load": [{"tool": tool}]})


@pytest.mark.parametrize(
    ("tool", "scenarios", "said"),
    [
        ("wrk", ["ws-echo"], "speaks no WebSocket"),
        ("jmeter", ["json"], "loads the WebSocket scenarios only"),
    ],
)
def test_a_websocket_scenario_needs_the_websocket_tool_and_it_nothing_else(
    tool: str, scenarios: list[str], said: str
) -> None:
    with pytest.raises(UserError, match=said):
        check_names(Path("w.toml"), _recipe(tool, scenarios), CATALOGUE)


def _ws_cell(figures: dict[str, float], hold_stop: str | None = "stalled") -> MeasuredCell:
    return MeasuredCell(figures, "ws-echo", 50, mode=Mode.SLO, tool="jmeter", hold_stop=hold_stop)


def _ws_verdicts(cell: MeasuredCell, ceiling: MeasuredCell) -> dict[str, str]:
    setting = Setting(1, 1, None, 0.95, 5.0, ceiling=ceiling, is_ceiling=cell is ceiling)
    return {v.name: v.sentence for v in verdicts(cell, setting)}


def test_what_the_go_ceiling_reaches_is_the_tools_limit_not_the_servers() -> None:
    def stack(capacity: float, broadcast: float, stop: str = "stalled") -> MeasuredCell:
        return _ws_cell({F.CAPACITY.key: capacity, F.BROADCAST_P99.key: broadcast}, stop)

    go, near, slow = stack(5000, 4), stack(4500, 5, "refused"), stack(2000, 20, "refused")
    said = _ws_verdicts(near, go)
    assert "90% of the Go ceiling's" in said[CLIENT_BOUND.name]  # the first reason found
    for figures in ({F.CAPACITY.key: 4500}, {F.BROADCAST_P99.key: 5}):  # each reason alone
        assert CLIENT_BOUND.name in _ws_verdicts(_ws_cell(figures, "refused"), go)
    assert "so did the Go ceiling's" in _ws_verdicts(_ws_cell({}), go)[CLIENT_BOUND.name]
    assert _ws_verdicts(slow, go) == {}  # under the ceiling on every figure, refused on its own
    alone = _ws_verdicts(_ws_cell({}), stack(5000, 4, "refused"))  # stalled, the ceiling not
    assert list(alone) == [HOLD_STALLED.name]
    # The ceiling against itself: only its stalled hold says the tool's pace.
    assert "so did the Go ceiling's" in _ws_verdicts(go, go)[CLIENT_BOUND.name]
    refusing = stack(5000, 4, "refused")
    assert _ws_verdicts(refusing, refusing) == {}


# --- JMeter's samples read back --------------------------------------------------------------

HEADER = 'timeStamp,elapsed,label,responseCode,threadName,success,"got"\n'


def test_an_echo_is_timed_from_its_due_time_so_a_late_send_carries_its_lag(
    tmp_path: Path,
) -> None:
    # Two connections, a period of 10 ms: the second's third message went 25 ms late.
    request = EchoRequest(Endpoint("127.0.0.1", 1, LOAD), 2, 200, 0.03)
    lines = [f"{1000 + 10 * k},2,echo,200,t-1,true,\n" for k in range(3)]
    lines += [f"{1005},1,echo,200,t-2,true,\n", f"{1015},1,echo,200,t-2,true,\n",
              f"{1050},1,echo,200,t-2,true,\n"]  # fmt: skip
    results = tmp_path / "echo.csv"
    results.write_text(HEADER + "".join(lines))
    found = echo_result(results, request)
    assert (found.sent, found.answered, found.errors) == (6, 6, 0)
    assert found.lag_ms == 25 and found.max_ms == 26  # 1050 + 1 − due 1025
    assert found.p50_ms == 2 and found.late_share == pytest.approx(1 / 6)


def test_a_closed_loop_is_timed_while_every_connection_was_sending(tmp_path: Path) -> None:
    # One event loop answers a message every 2 ms: 500 msg/s. The first connection sends
    # alone for 3 s, the second opens then, and the two share the loop for 5 s more.
    request = EchoRequest(Endpoint("127.0.0.1", 1, LOAD), 2, 500, 8, closed=True)
    alone = [f"{10_000 + 2 * k},2,echo,200,t-1,true,\n" for k in range(1500)]
    shared = [f"{13_000 + 2 * k},2,echo,200,t-{1 + k % 2},true,\n" for k in range(2500)]
    results = tmp_path / "closed.csv"
    results.write_text(HEADER + "".join(alone + shared))
    found = echo_result(results, request)
    # Not 4,000 messages over the connections' mean span (8 s and 5 s): 615 msg/s.
    assert found.achieved_rate == pytest.approx(500, rel=0.01)
    assert found.sent == 4000 and found.timed == pytest.approx(2500, abs=2)
    # A connection that opened for the last tenth only: the whole load is timed instead.
    late = [f"{17_200 + 2 * k},2,echo,200,t-3,true,\n" for k in range(400)]
    results.write_text(HEADER + "".join(alone + shared[:2100] + late))
    found = echo_result(results, request)
    assert found.timed == 4000 and found.achieved_rate == pytest.approx(500, rel=0.01)


def test_a_paced_rate_is_never_below_the_rate_asked() -> None:
    # JMeter's periods are whole milliseconds: 5,066 msg/s over 50 connections (9.87 ms) is
    # sent every 9 ms, 5,556 msg/s; a rate that held so held at least what was asked.
    endpoint = Endpoint("127.0.0.1", 1, LOAD)
    for connections, rate in ((50, 5066.0), (50, 1000.0), (20, 333.0), (7, 6999.0), (3, 1.0)):
        request = EchoRequest(endpoint, connections, rate, 1)
        assert request.paced_rate >= rate
        assert 1000.0 * connections / (request.period_ms + 1) < rate or request.period_ms == 1
    assert EchoRequest(endpoint, 50, 5066.0, 1).paced_rate == pytest.approx(5555.6, abs=0.1)
    assert EchoRequest(endpoint, 50, 1000.0, 1).period_ms == 50  # an exact period kept


def test_an_echos_windows_are_judged_by_due_time_as_a_replays(tmp_path: Path) -> None:
    # One connection, a message every 2 ms for 8 s: four 2-s windows of 1,000 messages; the
    # third window's messages each took 30 ms, the others 1 ms.
    request = EchoRequest(Endpoint("127.0.0.1", 1, LOAD), 1, 500, 8)
    lines = [
        f"{10_000 + 2 * k},{30 if 2000 <= k < 3000 else 1},echo,200,t-1,true,\n"
        for k in range(4000)
    ]
    results = tmp_path / "echo.csv"
    results.write_text(HEADER + "".join(lines))
    found = echo_result(results, request)
    assert found.windows_p99_ms == (1.0, 1.0, 30.0, 1.0)
    thin = tmp_path / "thin.csv"  # 90 messages: one window of too few to judge
    thin.write_text(HEADER + "".join(lines[:90]))
    assert echo_result(thin, request).windows_p99_ms == ()


def test_a_broadcast_counts_each_round_once_and_times_its_last_receiver(tmp_path: Path) -> None:
    lines = ["2000,0,post,200,s-1,true,\n", "2020,0,post,200,s-1,true,\n"]
    lines += [f"{1000 + i},{1000 + 3 * i},receive,200,r-{i},true,round 0 x\n" for i in (1, 2)]
    lines += ["2021,4,receive,200,r-1,true,round 1 x\n", "2021,9,receive,200,r-1,true,round 1 x\n"]
    results = tmp_path / "broadcast.csv"
    results.write_text(HEADER + "".join(lines))
    found = broadcast_result(results, receivers=2, rounds=2)
    # round 0: the last read ends at 1002 + 1006 = 2008; round 1: r-2 never read it, r-1 twice
    assert found.last_ms == [8.0] and found.missing == 1 and found.duplicates == 1


# --- the contract on real servers ------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", SPEAKERS)
def test_each_stack_that_speaks_websocket_keeps_the_contract(name: str, workdir: Path) -> None:
    with running_stack(name, workdir, cores=SERVER) as (_, port):
        assert verify_websocket("127.0.0.1", port) is None


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "said"),
    [("drop", "nothing came within"), ("duplicate", "frame 2 came back as")],
)
def test_a_server_that_drops_or_duplicates_a_frame_fails_verification(
    fault: str, said: str, workdir: Path
) -> None:
    with running_stack(_quirky({"WS_FAULT": fault}), workdir, cores=SERVER) as (_, port):
        problem = verify_websocket("127.0.0.1", port)
    assert problem is not None and said in problem, problem


# --- known answers under the real tool -------------------------------------------------------


def _echo(quirks: dict[str, str], workdir: Path, rate: float = 400, warmup_s: float = 0.0):
    """An echo of 20 connections at `rate` for 2 s against the quirky server: the tool's
    result and what the server counted."""
    registry = ProcessRegistry()
    with running_stack(_quirky(quirks), workdir / "s", cores=SERVER) as (_, port):
        try:
            request = EchoRequest(Endpoint("127.0.0.1", port, LOAD), 20, rate, 2, warmup_s=warmup_s)
            before = read_counters("127.0.0.1", port)
            found = ws_load.run_echo(registry, request, workdir / "e")
            return found, read_counters("127.0.0.1", port).since(before)
        finally:
            registry.stop_all()


def _within(tool: int, server: int) -> bool:
    return abs(tool - server) <= (F.WS_COUNT_GAP.threshold or 0) * max(tool, server)


@pytest.mark.slow
@pytest.mark.alone
def test_a_server_that_sleeps_per_message_has_that_time_added_and_counts_agree(
    workdir: Path,
) -> None:
    make_ready(TOOLS["jmeter"], print)
    sleep_ms = 20
    found = {s: _echo({"WS_SLEEP_MS": str(s)}, workdir / f"{s}") for s in (0, sleep_ms)}
    plain, slept = found[0][0], found[sleep_ms][0]
    for result, counts in found.values():
        assert result.errors == 0 and result.answered == result.sent
        assert _within(result.sent, counts.frames_in) and _within(
            result.answered, counts.frames_out
        )
    assert plain.p50_ms is not None and slept.p50_ms is not None
    added = slept.p50_ms - plain.p50_ms
    print(
        f"echo p50 {plain.p50_ms} ms, with a {sleep_ms}-ms sleep {slept.p50_ms} ms; counts", found
    )
    # JMeter times in whole milliseconds, the event loop wakes a little late: the sleep and
    # at most 1.5× it, measured against the same server without it.
    assert sleep_ms - 1 <= added <= 1.5 * sleep_ms, (plain.p50_ms, slept.p50_ms)


@pytest.mark.slow
@pytest.mark.alone
def test_the_connections_schedules_are_spread_over_a_period_not_due_at_once(
    workdir: Path,
) -> None:
    # A server that serves one message at a time, 5 ms each; 20 connections at 100 msg/s, a
    # message every 200 ms each. Spread over the period (one due every 10 ms) none waits
    # for another: about 5 ms. Due at once (a fractional stagger JMeter read as none), the
    # 20th waits behind 19: p99 about 100 ms, p50 about 50.
    make_ready(TOOLS["jmeter"], print)
    block_ms = 5
    found, _ = _echo({"WS_BLOCK_MS": str(block_ms)}, workdir, rate=100, warmup_s=1)
    print(f"echo p50 {found.p50_ms} ms, p99 {found.p99_ms} ms, serving {block_ms} ms each")
    assert found.errors == 0 and found.p99_ms is not None
    assert found.p99_ms < 4 * block_ms, found


@pytest.mark.slow
@pytest.mark.alone
def test_a_server_that_refuses_past_k_connections_is_reported_as_holding_k(workdir: Path) -> None:
    make_ready(TOOLS["jmeter"], print)
    limit = 70
    quirky = _quirky({"WS_MAX_CONNECTIONS": str(limit)})
    registry = ProcessRegistry()
    with running_stack(quirky, workdir / "s", cores=SERVER) as (server, port):
        request = HoldRequest(Endpoint("127.0.0.1", port, LOAD), 30, 4, 300, 1)
        try:
            found = ws_load.run_hold(registry, request, workdir / "h", server, 4096)
        finally:
            registry.stop_all()
    print("hold", found)
    assert found.stopped == "refused" and found.held == limit, found
    assert found.steps[-1].refused == 3 * 30 - limit


@pytest.mark.slow
@pytest.mark.alone
def test_a_broadcast_reaches_every_receiver_once_and_counts_agree(workdir: Path) -> None:
    make_ready(TOOLS["jmeter"], print)
    registry = ProcessRegistry()
    with running_stack("starlette+uvicorn", workdir / "s", cores=SERVER) as (_, port):
        request = BroadcastRequest(Endpoint("127.0.0.1", port, LOAD), 20, 40, 25)
        before = read_counters("127.0.0.1", port)
        try:
            found = ws_load.run_broadcast(registry, request, workdir / "b")
        finally:
            registry.stop_all()
        counts = read_counters("127.0.0.1", port).since(before)
    print("broadcast", found, counts)
    assert found.rounds == 40 and found.missing == 0 and found.duplicates == 0
    assert found.deliveries == 20 * 40 and len(found.last_ms) == 40
    assert _within(found.rounds, counts.frames_in)
    assert _within(found.deliveries, counts.deliveries)
