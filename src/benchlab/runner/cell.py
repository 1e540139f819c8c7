"""One cell on a launched server, one round: verify, warm up, then a trial — in a closed
loop, at a fixed rate, or one replicate of the capacity search."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchlab.analysis import capacity
from benchlab.core.errors import LoadToolError
from benchlab.core.modes import Mode
from benchlab.http.scenarios import Expectation
from benchlab.http.wire import ExchangeError, Wire
from benchlab.load import LoadRequest
from benchlab.load.base import HttpTarget
from benchlab.recipe import Cell
from benchlab.runner.executor import Started
from benchlab.runner.failure import FailureKind
from benchlab.runner.session import Session
from benchlab.runner.trial import at_rate, check_alive, flush_cache, generate, take_trial
from benchlab.runner.websocket import WebSocketCells
from benchlab.store import TrialRecord

SETTLE_TIMEOUT_S = 120.0

# A trial of the cell's launch: the request (at its rate), and what kind of step it is.
Taker = Callable[[LoadRequest, str | None], TrialRecord]


class _CellFailed(Exception):
    """The cell was failed (its reason stored) in the middle of a search."""


@dataclass(frozen=True)
class LaunchRound:
    """A started stack answering for one launch, in one round: where its cells are measured."""

    started: Started
    workdir: Path
    round_index: int
    keep_alive: bool  # whether it keeps connections open (learnt before its first cell)


def answer_problem(session: Session, cell: Cell, port: int) -> str | None:
    """What is wrong with the answers the stack on `port` gives the cell's requests (None:
    nothing), asked over the cell's protocol."""
    with session.costs.timed("verify"):
        return session.executor.observe.verify(
            session.server_address, port, session.scenarios[cell.scenario].expectations(cell.ms),
            SETTLE_TIMEOUT_S, session.services.read_worlds, session.files.wire(cell),
        )  # fmt: skip


class CellRunner:
    """Measures cells on launched servers. `closed` keeps each cell's closed-loop capacity
    (measured once a cell, the base of its rate share or search) across rounds."""

    def __init__(self, session: Session, measure_alone: bool) -> None:
        self.session = session
        self.measure_alone = measure_alone
        self.closed: dict[Cell, float] = {}
        # The most a search cell's stack carried in another closed loop (tune's first pass,
        # at the candidate's own concurrency): the search's top where its own closed loop
        # carried less (capacity.search_top).
        self.carried: dict[Cell, float] = {}
        # what verification saw (protocol, compression), stored once a cell
        self.negotiated: dict[Cell, tuple[str, float | None]] = {}
        self.websocket = WebSocketCells(session)

    def run(self, launched: LaunchRound, cell: Cell, warm: bool) -> bool:
        """The cell's trial of this round, stored; whether it was measured (not: it failed)."""
        session = self.session
        scenario = session.scenarios[cell.scenario]
        if scenario.websocket:
            return self.websocket.run(launched, cell)
        cold = scenario.needs_cache and scenario.cold_cache  # never a user's app's data
        # Verification sees the miss, then the hit, of this stack's own cache-aside.
        flush_cache(session, cold)
        # Generous timeout: this request may wait behind what the previous cell left queued.
        if not self.verified(launched, cell, FailureKind.VERIFICATION):
            return False
        flush_cache(session, cold)  # the load of every cell starts on a cold cache
        request = self._request(launched, cell)
        try:
            warmup = session.plan.recipe.warmup if cell.warmup_s is None else cell.warmup_s
            if warmup > 0 and not warm:
                # A cell at a known fixed rate warms up at that rate: a closed loop at its
                # connections would leave a queue the trial then inherits.
                known = cell.rate if cell.mode == Mode.RATE else None
                warming = dataclasses.replace(at_rate(request, known), duration_s=warmup)
                generate(session, warming, launched.workdir)
                check_alive(session, launched.started.server, cell)
                # The warm-up leaves requests queued in the listen backlog whose clients are
                # gone; a sync worker serves them all before anything new. One request that
                # waits its turn (the accept queue is first in, first out) lets the trial start
                # on a drained server — and checks it still answers right.
                if not self.verified(launched, cell, FailureKind.VERIFICATION_AFTER_WARMUP):
                    return False
            measured = self._trial(launched, cell, request)
        except LoadToolError as exc:
            check_alive(session, launched.started.server, cell)
            session.cells.fail(cell, FailureKind.LOAD_TOOL, str(exc))
            return False
        return measured and cell not in session.cells.failed

    def _request(self, launched: LaunchRound, cell: Cell) -> LoadRequest:
        scenario = self.session.scenarios[cell.scenario]
        wire = self.session.files.wire(cell)
        base = f"{wire.protocol.scheme}://{self.session.server_address}:{launched.started.port}"
        mix = scenario.load_mix(cell.ms)
        targets = tuple(
            HttpTarget(r.method, f"{base}{r.path}", r.headers, r.request_body, r.weight)
            for r in mix
        )
        plain = len(mix) == 1 and not scenario.requests and mix[0].plain_get
        return LoadRequest(
            url=f"{base}{mix[0].path}",
            targets=() if plain else targets,
            connections=cell.connections,
            threads=cell.threads,
            duration_s=cell.duration,
            timeout_s=cell.timeout,
            cores=self.session.plan.cores.load,
            tool=cell.tool,
            keep_alive=launched.keep_alive and cell.keepalive,
            close_each=not cell.keepalive,
            protocol=cell.protocol,
            ca=str(wire.ca) if wire.ca else None,
        )

    def _trial(self, launched: LaunchRound, cell: Cell, request: LoadRequest) -> bool:
        if cell.mode == Mode.SLO:
            return self._search(launched, cell, request)
        rate = None
        if cell.mode == Mode.RATE:
            rate = self._target_rate(launched, cell, request)
            if rate is None:
                return False
        take = self._taker(launched, cell)
        if self.measure_alone and rate is None:
            take(dataclasses.replace(request, connections=1, duration_s=1), "alone")
        take(at_rate(request, rate), None)
        return True

    def _taker(self, launched: LaunchRound, cell: Cell) -> Taker:
        def take(request: LoadRequest, probe: str | None) -> TrialRecord:
            return take_trial(
                self.session, launched.started.server, cell, launched.round_index, request,
                launched.workdir, probe, launched.started.counters_port,
            )  # fmt: skip

        return take

    def verified(self, launched: LaunchRound, cell: Cell, what: FailureKind) -> bool:
        session = self.session
        expectations = session.scenarios[cell.scenario].expectations(cell.ms)
        wire = session.files.wire(cell)
        problem = answer_problem(session, cell, launched.started.port)
        if problem:
            check_alive(session, launched.started.server, cell)
            session.cells.fail(cell, what, problem)
            return False
        if cell not in self.negotiated:
            self.negotiated[cell] = self._negotiated(launched, expectations, wire)
            session.store.set_cell_wire(session.cells.ids[cell], *self.negotiated[cell])
            session.reporter.verified(cell, self.negotiated[cell][0])
        return True

    def _negotiated(
        self, launched: LaunchRound, expectations: list[Expectation], wire: Wire
    ) -> tuple[str, float | None]:
        """What a client asking over the cell's protocol got ("HTTP/2 over TLSv1.3"), and
        for a compressed answer, the document's size ÷ the size that came."""
        compressed = next((e for e in expectations if e.answer == "gzip"), None)
        asked = compressed or expectations[0]
        try:
            reply = self.session.executor.observe.exchange(
                self.session.server_address, launched.started.port, asked, wire, SETTLE_TIMEOUT_S
            )
        except ExchangeError as exc:
            return f"unknown ({exc})", None
        ratio = None
        if compressed is not None and compressed.body and reply.body:
            ratio = len(compressed.body) / len(reply.body)
        return reply.negotiated, ratio

    def _closed_capacity(self, launched: LaunchRound, cell: Cell, request: LoadRequest) -> float:
        """Successful responses per second in a closed loop at the cell's connections (its
        own capacity, for a share of it or as the top of a search); measured once a cell."""
        known = self.closed.get(cell)
        if known is None:
            record = self._taker(launched, cell)(at_rate(request, None), Mode.CLOSED)
            known = record.successes / record.duration_s if record.duration_s > 0 else 0.0
            self.closed[cell] = known
        return known

    def _target_rate(self, launched: LaunchRound, cell: Cell, request: LoadRequest) -> float | None:
        if cell.rate is not None:
            return cell.rate
        assert cell.rate_share is not None
        first = cell not in self.closed
        closed = self._closed_capacity(launched, cell, request)
        target = round(closed * cell.rate_share / 100, 1)
        if first:
            self.session.store.set_cell_rates(self.session.cells.ids[cell], target, closed)
            if not self.verified(launched, cell, FailureKind.VERIFICATION_AFTER_CLOSED_LOOP):
                return None
        if target <= 0:
            self.session.cells.fail(
                cell, FailureKind.NO_RATE,
                "its closed-loop probe completed no request: no rate to share",
            )  # fmt: skip
            return None
        return target

    def _search(self, launched: LaunchRound, cell: Cell, request: LoadRequest) -> bool:
        """One replicate of the capacity search (see analysis.capacity)."""
        session, recipe = self.session, self.session.plan.recipe
        slo = recipe.slo
        assert slo is not None
        objective = capacity.Objective.of(slo)
        cell_id = session.cells.ids[cell]
        first = cell not in self.closed
        closed = self._closed_capacity(launched, cell, request)
        if first:
            session.store.set_cell_rates(cell_id, None, closed)
        take = self._taker(launched, cell)

        def window(rate: float, kind: str) -> TrialRecord:
            if not self.verified(launched, cell, FailureKind.VERIFICATION_BETWEEN_PROBES):
                raise _CellFailed
            return take(at_rate(request, rate), kind)

        def probe(rate: float, kind: str) -> bool:
            first = window(rate, kind)
            missed = capacity.sustained_miss(first, objective)
            if capacity.needs_a_second_window(first, objective):
                # A latency miss, or one under the hypervisor's steal, counts when a second
                # window misses too.
                session.reporter.status(f"{cell.stack}: {rate:,.0f} req/s {missed}: again")
                missed = capacity.sustained_miss(window(rate, kind), objective) and missed
            verdict = "held" if missed is None else f"missed: {missed}"
            session.reporter.status(f"{cell.stack}: {rate:,.0f} req/s {verdict}")
            return missed is None

        def confirm(rate: float, kind: str) -> bool:
            if not self.verified(launched, cell, FailureKind.VERIFICATION_BETWEEN_PROBES):
                raise _CellFailed
            sustained = dataclasses.replace(request, duration_s=slo.sustain_s)
            missed = capacity.window_miss(take(at_rate(sustained, rate), kind), objective)
            verdict = "held" if missed is None else f"missed: {missed}"
            seconds = slo.sustain_s
            session.reporter.status(f"{cell.stack}: {rate:,.0f} req/s for {seconds} s {verdict}")
            return missed is None

        previous = [c.capacity_rps for c in session.store.capacities(cell_id)]
        top, bounded = capacity.search_top(closed, self.carried.get(cell))
        if first and not bounded:
            session.reporter.status(
                f"{cell.stack}: {closed:,.0f} req/s in a closed loop at {cell.connections} "
                f"connections, less than the {top:,.0f} it carried at fewer: the search starts "
                "from that and climbs until a rate misses"
            )
        try:
            found = capacity.search(
                launched.round_index, top, previous, probe, recipe.target_half_width_pct / 100,
                confirm if slo.sustain_s else None, bounded,
            )  # fmt: skip
        except _CellFailed:
            return False
        session.store.add_capacity(cell_id, found)
        return True
