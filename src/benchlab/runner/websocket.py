"""A WebSocket cell on a launched stack, one round: the contract verified over WebSocket,
then the trial of its scenario — the hold (connections held, RSS per 1,000), the echo at
the recipe's fixed rate (p50/p99 from each message's due time; with an [slo], one replicate
of the capacity search, as HTTP's), or the broadcast (p99 over rounds of the time to the last
receiver). Each trial is stored with the server's own counts beside the tool's."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from benchlab.analysis import capacity
from benchlab.core import figures as F
from benchlab.core.errors import LoadToolError
from benchlab.core.modes import Mode
from benchlab.http.scenarios import BROADCAST, ECHO, HOLD
from benchlab.http.ws_verify import ContractBroken, WsCounters
from benchlab.load.jmeter_plans import step_timing
from benchlab.load.live import NoLive
from benchlab.load.ws_requests import (
    AT_LAST_STEP,
    ECHO_PATH,
    BroadcastRequest,
    BroadcastResult,
    EchoRequest,
    EchoResult,
    Endpoint,
    HoldRequest,
    HoldResult,
)
from benchlab.measure.monitor import CoreSteal, TreeUsage
from benchlab.recipe import Cell
from benchlab.runner.estimates import websocket_cost_key, websocket_load_s
from benchlab.runner.failure import FailureKind
from benchlab.runner.session import Session
from benchlab.runner.trial import check_alive
from benchlab.store import TrialRecord, now

if TYPE_CHECKING:
    from benchlab.runner.cell import LaunchRound

CLOSED = "closed"  # the probe name of the search's closed loop (its upper bound)
# Why a fixed-rate echo shows no figure while it runs (said where an HTTP one shows its own).
ECHO_NOT_LIVE = "JMeter's echo samples are read when it ends"


class WebSocketCells:
    """Measures the WebSocket cells; keeps each ws-echo cell's closed-loop rate (the top of
    its capacity search), measured once a cell."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.closed: dict[Cell, float] = {}
        self.verified_cells: set[Cell] = set()  # checked right once in this run

    def run(self, launched: LaunchRound, cell: Cell) -> bool:
        """The cell's trial of this round, stored; whether it was measured (not: it failed)."""
        session = self.session
        if not self.verified(launched, cell, FailureKind.VERIFICATION):
            return False
        kind = session.scenarios[cell.scenario].websocket
        loads = {HOLD: self._hold, ECHO: self._echo_cell, BROADCAST: self._broadcast}
        if kind not in loads:
            raise ValueError(f"{cell.scenario} is no WebSocket scenario")
        try:
            loads[kind](launched, cell)
        except LoadToolError as exc:
            check_alive(session, launched.started.server, cell)
            session.cells.fail(cell, FailureKind.LOAD_TOOL, str(exc))
            return False
        return cell not in session.cells.failed

    def verified(self, launched: LaunchRound, cell: Cell, what: FailureKind) -> bool:
        session = self.session
        with session.costs.timed("verify"):
            problem = session.executor.observe.verify_websocket(
                session.server_address, launched.started.port, self._own_path(cell)
            )
        if problem:
            check_alive(session, launched.started.server, cell)
            session.cells.fail(cell, what, problem)
            return False
        if cell not in self.verified_cells:
            self.verified_cells.add(cell)
            session.reporter.verified(cell, "WebSocket")
        return True

    def _own_path(self, cell: Cell) -> str | None:
        """The user's own echo endpoint (benchlab tune); None: the contract's."""
        return self.session.scenarios[cell.scenario].echo_path

    def _endpoint(self, launched: LaunchRound) -> Endpoint:
        return Endpoint(
            self.session.server_address, launched.started.port, self.session.plan.cores.load
        )

    # --- the three loads ------------------------------------------------------------------

    def _hold(self, launched: LaunchRound, cell: Cell) -> None:
        settings = self.session.plan.recipe.websocket
        request = HoldRequest(
            self._endpoint(launched), settings.hold_step, settings.hold_steps,
            settings.hold_open_rate, settings.hold_settle_s,
        )  # fmt: skip
        started_at, began = now(), self.session.executor.observe.monotonic()
        result = self.session.executor.measure.ws_hold(
            self.session.registry, request, launched.workdir / "ws-hold", launched.started.server,
            settings.rss_limit_mb,
        )  # fmt: skip
        if result.stopped == AT_LAST_STEP:  # one that stopped early took less
            self._learn(cell, self.session.executor.observe.monotonic() - began)
        check_alive(self.session, launched.started.server, cell)
        self._store(launched, cell, hold_record(launched.round_index, started_at, request, result))

    def _echo_request(self, launched: LaunchRound, cell: Cell, rate: float | None) -> EchoRequest:
        settings = self.session.plan.recipe.websocket
        return EchoRequest(
            self._endpoint(launched), cell.connections, rate or settings.rate, cell.duration,
            settings.message_bytes, cell.timeout * 1000, path=self._own_path(cell) or ECHO_PATH,
            closed=rate is None, warmup_s=self._warmup_s(cell),
        )  # fmt: skip

    def _warmup_s(self, cell: Cell) -> float:
        recipe = self.session.plan.recipe
        return float(recipe.warmup if cell.warmup_s is None else cell.warmup_s)

    def _echo_trial(
        self, launched: LaunchRound, cell: Cell, rate: float | None, probe: str | None
    ) -> TrialRecord:
        """One echo load (at `rate`; None: a closed loop), stored; `probe` names a step of
        the search (None: the cell's fixed-rate trial)."""
        request = self._echo_request(launched, cell, rate)
        if rate is not None:
            self.session.reporter.live(cell, NoLive(ECHO_NOT_LIVE))
        with self._watched(launched, cell, counted=self._own_path(cell) is None) as (
            counts, started_at, usage,
        ):  # fmt: skip
            result = self.session.executor.measure.ws_echo(
                self.session.registry, request, launched.workdir / "ws-echo"
            )
        check_alive(self.session, launched.started.server, cell)
        record = echo_record(
            launched.round_index, started_at, result, usage.tree, usage.steal, counts.value,
            probe, closed=rate is None, asked=request.rate,
        )  # fmt: skip
        self._store(launched, cell, record)
        return record

    def _echo_cell(self, launched: LaunchRound, cell: Cell) -> None:
        """A ws-echo cell's trial by its mode: a closed loop (tune's first pass), a fixed
        rate (the recipe's, or the cell's own: a tune's proof), or the fixed rate and a
        replicate of the capacity search (a user's own endpoint: the search alone)."""
        if cell.mode == Mode.CLOSED:
            self._echo_trial(launched, cell, None, None)
            return
        if cell.mode == Mode.RATE and cell.rate is not None:
            self._echo_trial(launched, cell, cell.rate, None)
            return
        if not self._own_path(cell):
            self._echo_trial(launched, cell, self.session.plan.recipe.websocket.rate, None)
        if cell.mode == Mode.SLO and cell not in self.session.cells.failed:
            self._search(launched, cell)

    def _search(self, launched: LaunchRound, cell: Cell) -> None:
        """One replicate of the capacity search under the [slo], as HTTP's (analysis/
        capacity.py): fixed-rate echo loads judged by their p99 from due time, delivery and
        errors; the top from a closed loop at the cell's connections."""
        session, recipe = self.session, self.session.plan.recipe
        assert recipe.slo is not None
        objective = capacity.Objective.of(recipe.slo)
        if cell not in self.closed:
            record = self._echo_trial(launched, cell, None, CLOSED)
            self.closed[cell] = record.achieved_rps or 0.0
            session.store.set_cell_rates(session.cells.ids[cell], None, self.closed[cell])

        def probe(rate: float, kind: str) -> bool:
            if not self.verified(launched, cell, FailureKind.VERIFICATION_BETWEEN_PROBES):
                raise _Failed
            missed = capacity.sustained_miss(
                self._echo_trial(launched, cell, rate, kind), objective
            )
            verdict = "held" if missed is None else f"missed: {missed}"
            session.reporter.status(f"{cell.stack}: {rate:,.0f} {F.MSG_S} {verdict}")
            return missed is None

        cell_id = session.cells.ids[cell]
        previous = [c.capacity_rps for c in session.store.capacities(cell_id)]
        try:
            found = capacity.search(
                launched.round_index, self.closed[cell], previous, probe,
                recipe.target_half_width_pct / 100,
            )  # fmt: skip
        except _Failed:
            return
        session.store.add_capacity(cell_id, found)

    def _broadcast(self, launched: LaunchRound, cell: Cell) -> None:
        settings = self.session.plan.recipe.websocket
        request = BroadcastRequest(
            self._endpoint(launched), settings.receivers, settings.rounds,
            settings.round_interval_ms, message_bytes=settings.message_bytes,
            timeout_ms=cell.timeout * 1000,
            warmup_rounds=round(self._warmup_s(cell) * 1000 / settings.round_interval_ms),
        )  # fmt: skip
        with self._watched(launched, cell) as (counts, started_at, usage):
            result = self.session.executor.measure.ws_broadcast(
                self.session.registry, request, launched.workdir / "ws-broadcast"
            )
        check_alive(self.session, launched.started.server, cell)
        record = broadcast_record(
            launched.round_index, started_at, request, result, usage.tree, usage.steal,
            counts.value,
        )  # fmt: skip
        self._store(launched, cell, record)

    # --- around each load -----------------------------------------------------------------

    @contextlib.contextmanager
    def _watched(
        self, launched: LaunchRound, cell: Cell, counted: bool = True
    ) -> Iterator[tuple[_Counts, str, _Usage]]:
        """What watches a paced load: the server's own counts (`counted`: the contract's
        app has them, a user's has not), its CPU and memory, and what the load cost beyond
        what it asked of the tool."""
        with (
            self._counted(launched, counted) as (counts, started_at),
            self._monitored(launched) as usage,
            self._costed(cell),
        ):
            yield counts, started_at, usage

    @contextlib.contextmanager
    def _counted(self, launched: LaunchRound, counted: bool) -> Iterator[tuple[_Counts, str]]:
        """The server's own counters before and after the load (what the load added)."""
        if not counted:
            yield _Counts(), now()
            return
        address = self.session.server_address
        before = self.session.executor.observe.ws_counters(address, launched.started.port)
        counts = _Counts()
        yield counts, now()
        try:
            counts.value = self.session.executor.observe.ws_counters(
                address, launched.started.port
            ).since(before)
        except ContractBroken:
            counts.value = None

    @contextlib.contextmanager
    def _costed(self, cell: Cell) -> Iterator[None]:
        """What a load took beyond what it asked of the tool (the JVM's start, its results
        read back): learnt as the tool's overhead, which the ETA adds to each WebSocket
        load (runner/estimates.py)."""
        clock = self.session.executor.observe.monotonic
        began = clock()
        yield
        self._learn(cell, clock() - began)

    def _learn(self, cell: Cell, took_s: float) -> None:
        kind = self.session.scenarios[cell.scenario].websocket
        asked = websocket_load_s(
            cell, kind, self.session.plan.recipe.websocket, self._warmup_s(cell)
        )
        self.session.costs.record(websocket_cost_key(cell), took_s - asked)

    @contextlib.contextmanager
    def _monitored(self, launched: LaunchRound) -> Iterator[_Usage]:
        session = self.session
        usage = _Usage()
        with session.executor.measure.monitors(
            launched.started.server, session.hosts.steal_cores(), {}
        ) as m:
            yield usage
        usage.tree, usage.steal = m.usage(), m.steal()

    def _store(self, launched: LaunchRound, cell: Cell, record: TrialRecord) -> None:
        self.session.store.add_trial(self.session.cells.ids[cell], record)
        self.session.cells.measured.add(cell)


class _Failed(Exception):
    """The cell was failed (its reason stored) in the middle of a search."""


@dataclasses.dataclass
class _Counts:
    value: WsCounters | None = None


@dataclasses.dataclass
class _Usage:
    tree: TreeUsage | None = None
    steal: CoreSteal | None = None


# --- trial records: a WebSocket trial in the store's columns ---------------------------------


def _blank(round_index: int, started_at: str, probe: str | None = None) -> TrialRecord:
    return TrialRecord(
        round=round_index, started_at=started_at, requests=0, duration_s=0.0,
        throughput_rps=0.0, bytes=0, latency_min_ms=None, latency_mean_ms=None,
        latency_stdev_ms=None, latency_p50_ms=None, latency_p90_ms=None, latency_p99_ms=None,
        latency_p999_ms=None, latency_max_ms=None, latency_percentiles="{}",
        errors_connect=0, errors_read=0, errors_write=0, errors_timeout=0, errors_non_2xx=0,
        errors_other=0, server_cpu_pct=None, server_rss_mb=None, server_processes=None,
        load_cpu_pct=None, server_steal_pct=None, load_steal_pct=None, probe=probe,
    )  # fmt: skip


# TrialRecord's fields by name, for dataclasses.replace (each value of its field's type)
def _usage(tree: TreeUsage | None, steal: CoreSteal | None) -> dict[str, Any]:
    if tree is None:
        return {}
    return {
        "server_cpu_pct": tree.cpu_pct, "server_rss_mb": tree.peak_rss_mb,
        "server_processes": tree.processes, "server_cpu_s": tree.cpu_s,
        "cpu_source": tree.cpu_source,
        "server_steal_pct": steal.server_pct if steal else None,
        "load_steal_pct": steal.load_pct if steal else None,
    }  # fmt: skip


def _counted(counts: WsCounters | None) -> dict[str, Any]:
    if counts is None:
        return {}
    return {
        "ws_server_frames_in": counts.frames_in, "ws_server_frames_out": counts.frames_out,
        "ws_server_deliveries": counts.deliveries,
    }  # fmt: skip


def hold_record(
    round_index: int, started_at: str, request: HoldRequest, result: HoldResult
) -> TrialRecord:
    last = result.steps[-1]
    _, length = step_timing(request)
    return dataclasses.replace(
        _blank(round_index, started_at),
        requests=last.opened, duration_s=float(length * (len(result.steps) - 1)),
        errors_connect=last.refused, server_rss_mb=last.rss_mb,
        load_cpu_pct=result.load_cpu_pct,
        ws_hold_steps=json.dumps([dataclasses.asdict(step) for step in result.steps]),
        ws_connections_held=result.held, ws_rss_per_1000_mb=result.rss_per_1000_mb,
        ws_hold_stop=result.stopped, ws_tool_sent=last.asked,
    )  # fmt: skip


def echo_record(
    round_index: int,
    started_at: str,
    result: EchoResult,
    tree: TreeUsage | None,
    steal: CoreSteal | None,
    counts: WsCounters | None,
    probe: str | None,
    closed: bool,
    asked: float | None = None,
) -> TrialRecord:
    """The trial of one echo load. Its target rate is the rate asked for (what a capacity
    search's replicate names), else the tool's schedule: JMeter paces in whole-millisecond
    periods, so 5,066 msg/s asked of 50 connections is sent at 5,556 (sent_rate says so)."""
    seconds = result.duration_s
    fixed = not closed and probe is None
    return dataclasses.replace(
        _blank(round_index, started_at, probe),
        requests=result.answered, duration_s=seconds,
        throughput_rps=result.timed / seconds if seconds else 0.0,
        latency_mean_ms=result.mean_ms, latency_p50_ms=result.p50_ms,
        latency_p99_ms=result.p99_ms, latency_max_ms=result.max_ms,
        errors_other=result.errors, errors_connect=result.connect_errors,
        load_cpu_pct=result.load_cpu_pct, **_usage(tree, steal),
        target_rate=None if closed else (asked or result.target_rate),
        sent_rate=result.sent_timed / seconds if seconds else None,
        achieved_rps=result.achieved_rate, schedule_lag_ms=None if closed else result.lag_ms,
        latency_first_ms=result.first_ms, latency_last_ms=result.last_ms,
        latency_histogram=result.histogram,
        window_p99_ms=json.dumps(list(result.windows_p99_ms)) if result.windows_p99_ms else None,
        ws_echo_p50_ms=result.p50_ms if fixed else None,
        ws_echo_p99_ms=result.p99_ms if fixed else None,
        ws_late_share=None if closed else result.late_share, ws_tool_sent=result.sent,
        **_counted(counts),
    )  # fmt: skip


def broadcast_record(
    round_index: int,
    started_at: str,
    request: BroadcastRequest,
    result: BroadcastResult,
    tree: TreeUsage | None,
    steal: CoreSteal | None,
    counts: WsCounters | None,
) -> TrialRecord:
    seconds = request.rounds * request.interval_ms / 1000
    ordered = sorted(result.last_ms)
    return dataclasses.replace(
        _blank(round_index, started_at),
        requests=result.deliveries, duration_s=seconds,
        throughput_rps=result.deliveries / seconds if seconds else 0.0,
        latency_p50_ms=result.p50_ms, latency_p99_ms=result.p99_ms,
        latency_max_ms=ordered[-1] if ordered else None,
        latency_mean_ms=sum(ordered) / len(ordered) if ordered else None,
        errors_read=result.missing, errors_other=result.duplicates,
        load_cpu_pct=result.load_cpu_pct, **_usage(tree, steal),
        ws_broadcast_p99_ms=result.p99_ms, ws_tool_sent=result.rounds, **_counted(counts),
    )  # fmt: skip
