"""The measurement of cells in interleaved rounds: every round visits every cell once, each
stack launched fresh, then adaptive rounds where the ranking is still undecided.

Every round visits every cell once (round-robin), so slow drift of a noisy machine spreads
over all cells instead of biasing the last one; a stack is relaunched for each round so the
spread over trials includes process-to-process variation (as pyperf's worker processes do).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchlab.analysis.cell_result import stored_ranking
from benchlab.analysis.ranking import Ranking, Step
from benchlab.core.modes import Mode
from benchlab.core.service_kinds import Service
from benchlab.http.wire import Wire
from benchlab.recipe import Cell
from benchlab.runner.cell import CellRunner, LaunchRound
from benchlab.runner.estimates import estimate
from benchlab.runner.executor import Started, StartOrder
from benchlab.runner.failure import FailureKind
from benchlab.runner.launch import STATIC, start_timeout
from benchlab.runner.run_services import ServiceDied
from benchlab.runner.session import Session
from benchlab.runner.trial import StackDied, does_not_fit
from benchlab.services.nginx_proxy import start_proxy
from benchlab.stacks import Stack
from benchlab.store import RoundMeasured
from benchlab.system.safe_files import new_dir

DEFAULT_POOL_SIZE = 10

OOM = FailureKind.OUT_OF_MEMORY


# A launch's measurements are stored before it stops, so nothing its graceful shutdown does
# is kept: after this long its tree is killed (gunicorn waited 1.7 s for tornado workers,
# granian 2.3-5 s; uvicorn, sanic and gin exit within 0.3 s).
STACK_STOP_GRACE_S = 0.5


@dataclass(frozen=True)
class MeasureOptions:
    """What `tune` asks beyond a recipe's rounds."""

    # Each closed-loop trial is preceded by one at a single connection (the latency of a
    # request alone).
    measure_alone: bool = False
    # Variables every launch gets (addresses of the services the app was told about); read
    # at each launch, since the services start after the measurer is made.
    extra_env: Callable[[], dict[str, str]] = field(default=dict)
    # A launch starts only if its estimated time fits before the deadline (a run's
    # --budget), rather than whenever the deadline has not passed yet (tune, which keeps
    # its own reserve for the proof).
    launches_fit_deadline: bool = False
    # What the run does after these rounds (a recipe's resilience checks), in seconds: part
    # of the time left it shows.
    then_s: Callable[[], float] = field(default=lambda: 0.0)
    # Run before each launch (tune's --reset-between: the app's data put back as the user
    # wants it; nothing else touches it between candidates).
    before_launch: Callable[[], None] = field(default=lambda: None)


class Measurer:
    """Measures cells of an open session: `measure(cells, rounds, max_rounds)`, as often as
    its caller has cells (tune measures in phases); `seconds_left()` is its honest ETA."""

    def __init__(self, session: Session, options: MeasureOptions | None = None) -> None:
        self.session = session
        self.options = options or MeasureOptions()
        self.cells = CellRunner(session, self.options.measure_alone)
        self.rounds_planned: dict[Cell, int] = {}

    def measure(self, cells: Sequence[Cell], rounds: int, max_rounds: int | None = None) -> None:
        """`rounds` interleaved rounds of the cells, then adaptive ones up to `max_rounds`.
        A cell that already has a round's trial (a resumed run) is not measured again."""
        for cell in cells:
            self.rounds_planned[cell] = rounds
        for round_index in range(rounds):
            self._run_round(round_index, cells)
        self._run_adaptive_rounds(cells, rounds, max_rounds or rounds)

    def done_rounds(self, cell: Cell) -> int:
        """Rounds the cell has finished: its trials, or a search's replicates."""
        store, cell_id = self.session.store, self.session.cells.ids[cell]
        if cell.mode == Mode.SLO:
            return len(store.capacities(cell_id))
        return sum(1 for t in store.trials(cell_id) if t.probe is None)

    def seconds_left(self) -> float:
        """The planned rounds not yet done, at this machine's step costs (this run's own
        folded in as it goes)."""
        failed = self.session.cells.failed
        live = [c for c in self.rounds_planned if c not in failed]
        done = {c: self.done_rounds(c) for c in live}
        left = {c: max(0, self.rounds_planned[c] - done[c]) for c in live}
        recipe = self.session.plan.recipe
        rounds_s = estimate(
            live, left, done, recipe.warmup, self.session.costs, websocket=recipe.websocket
        ).total_s
        return rounds_s + self.options.then_s()

    # --- rounds -----------------------------------------------------------------------------

    def _run_adaptive_rounds(self, cells: Sequence[Cell], rounds: int, max_rounds: int) -> None:
        """More interleaved rounds, up to `max_rounds`, only for the cells whose place the
        run's ranking has not decided (analysis/ranking.py): both sides of every undecided
        adjacent pair, and a cell alone at its point until its interval is within the
        target. The run stops when the ranking says decided."""
        session = self.session
        for round_index in range(rounds, max_rounds):
            ranking = self._ranking()
            pending, waiting = self.still_to_decide(cells, ranking)
            # The whole round or none: a pair is compared only in rounds that measured both.
            if not pending or not session.clock.time_left(
                self._launch_seconds(pending), planned=False
            ):
                session.reporter.ranking(ranking, ())
                return
            session.reporter.ranking(ranking, [c.key for c in pending])
            session.reporter.status(
                f"adaptive round {round_index + 1}: {_waiting_text(waiting, len(pending))}"
            )
            session.reporter.extend(len(pending))
            expected = _rounds_expected(waiting, max_rounds - round_index)
            for cell in pending:
                self.rounds_planned[cell] = round_index + expected.get(cell.key, 1)
            self._run_round(round_index, pending, adaptive=True)
        session.reporter.ranking(self._ranking(), ())  # the rounds it may take are done

    def _ranking(self) -> Ranking:
        session = self.session
        return stored_ranking(session.store, session.run_id, session.run_options)

    def still_to_decide(
        self, cells: Sequence[Cell], ranking: Ranking | None = None
    ) -> tuple[list[Cell], list[Step]]:
        """The cells the next round should measure, as the run's ranking says, and the
        undecided pairs that want them."""
        session = self.session
        ranking = ranking or self._ranking()
        wanted = ranking.still_to_decide(c.key for c in session.cells.failed)
        pending = {c for c in cells if c.key in wanted.entrants and c not in session.cells.failed}
        # Every round that measures a cell measures the sentinel (and its A/A copy) too: a
        # cell's ratio to it is taken within rounds.
        sentinel = session.run_options.sentinel
        if pending and sentinel is not None:
            pending |= {c for c in cells if c.stack == sentinel and c not in session.cells.failed}
        return [c for c in cells if c in pending], list(wanted.pairs)

    def _run_round(self, round_index: int, cells: Sequence[Cell], adaptive: bool = False) -> None:
        failed = self.session.cells.failed
        todo = [c for c in cells if c not in failed and self.done_rounds(c) <= round_index]
        # Under a budget, a round starts only if all of it fits: a pair is compared only in
        # rounds that measured both of its cells.
        if not todo or not self.session.clock.time_left(self._launch_seconds(todo), not adaptive):
            return
        grouped: dict[tuple, list[Cell]] = {}  # by the launch that serves them, in order
        for cell in todo:
            grouped.setdefault(cell.launch_key, []).append(cell)
        launches = list(grouped.values())
        # Rotate the order each round so no stack always runs first (or last) in a round.
        shift = round_index % len(launches)
        for group in launches[shift:] + launches[:shift]:
            live = [c for c in group if c not in failed]
            if live and self.session.clock.time_left(self._launch_seconds(live), not adaptive):
                self._run_launch(live, round_index)

    def _launch_seconds(self, cells: Sequence[Cell]) -> float:
        """What one launch of these cells is expected to take, when launches must fit."""
        if not self.options.launches_fit_deadline or self.session.clock.deadline_s is None:
            return 0.0
        done = {c: self.done_rounds(c) for c in cells}
        recipe, once = self.session.plan.recipe, dict.fromkeys(cells, 1)
        return estimate(
            cells, once, done, recipe.warmup, self.session.costs, websocket=recipe.websocket
        ).total_s

    # --- one launch of a stack, one round ---------------------------------------------------

    def _launch_env(self, stack: Stack, first: Cell) -> dict[str, str]:
        env = self.options.extra_env()
        if stack.isolated_env:
            return env
        static = self.session.files.static_dir
        return {
            **self.session.services.stack_env(),
            "BENCHLAB_POOL_SIZE": str(first.launch_pool or DEFAULT_POOL_SIZE),
            **({"BENCHLAB_FLAVOUR": first.flavour} if first.flavour else {}),
            **({STATIC: str(static)} if static else {}),
            **env,
        }

    def _run_launch(self, cells: list[Cell], round_index: int) -> None:
        session = self.session
        first = cells[0]
        stack = session.catalogue[first.stack]
        self.options.before_launch()
        positions = {cell: i for i, cell in enumerate(session.cells)}
        # The launch's directory: the stack's own inside it (its user's), the load tool's
        # files (root's, closed: a request's headers may hold a token) beside it.
        workdir = new_dir(session.workroot / f"s{positions[first]}r{round_index}", 0o711)
        load_dir = new_dir(workdir / "load", 0o700)
        trials = session.plan.recipe.trials
        session.reporter.status(f"{_round_text(round_index, trials)}: starting {stack.name}")
        with self.started(first, workdir) as up:
            if up.problem is not None:
                for cell in cells:
                    session.cells.fail(cell, up.failed_as, up.problem)
                return
            try:
                alive = self._keeps_alive(first, up.port)
                if self._conforms_here(first, up.proxied):
                    self._conform(stack, up.stack_port)
                launched = LaunchRound(up, load_dir, round_index, alive)
                self._run_cells(launched, cells, positions)
            except StackDied as died:
                session.cells.fail_launch(first, str(died), died.kind)

    def _keeps_alive(self, first: Cell, port: int) -> bool:
        """Whether the stack keeps an HTTP connection open. Learnt over plain HTTP/1.1
        only; over TLS or HTTP/2 it is taken as kept (only siege reads it, and siege speaks
        plain HTTP/1.1 only), and for a WebSocket load (its tool opens its own)."""
        scenario = self.session.scenarios[first.scenario]
        if first.protocol != "h1" or scenario.websocket is not None:
            return True
        path = scenario.load_mix(first.ms)[0].path
        return self.session.executor.observe.keeps_alive(self.session.server_address, port, path)

    @contextlib.contextmanager
    def started(self, first: Cell, workdir: Path) -> Iterator[Started]:
        """`first`'s stack started as its launch starts it (its workers and threads, pinned,
        its own user), behind nginx when the recipe puts it there; stopped afterwards,
        whatever happened. When it does not answer, `Started.problem` says why and nothing
        else is started."""
        session = self.session
        stack = session.catalogue[first.stack]
        proxied = session.plan.recipe.services.proxy_service is Service.NGINX
        # Behind nginx the stack speaks plain HTTP/1.1; nginx speaks the cell's protocol.
        own_wire = Wire() if proxied else session.files.wire(first)
        started = session.executor.launch.start(session.registry, StartOrder(
            stack, session.server_place,
            (first.workers, first.server_threads), workdir, self._launch_env(stack, first),
            start_timeout(stack, session.costs.known.get(f"start:{stack.name}")),
            lambda port: session.reporter.status(
                f"port {port} was taken: starting {stack.name} on another"
            ),
            own_wire, None if proxied else session.files.tls_for(first), session.stack_user(),
        ))  # fmt: skip
        server, proxy = started.server, None
        try:
            if started.problem:
                tail = server.log_tail() or "(empty)"
                problem = f"{stack.name} {started.problem}; last log lines: {tail}"
                # Killed at its memory limit as it began: it does not fit in it.
                if (unfit := does_not_fit(server, stack)) is not None:
                    yield dataclasses.replace(started, problem=unfit, failed_as=OOM)
                    return
                yield dataclasses.replace(started, problem=problem)
                return
            session.costs.record(f"start:{stack.name}", started.seconds)
            port = started.port
            if proxied:
                place = session.hosts.server
                proxy, port = start_proxy(
                    session.registry, workdir, place.cores, started.port, place.host,
                    first.protocol, session.files.tls_for(first),
                )  # fmt: skip
            yield (
                dataclasses.replace(started, port=port, own_port=started.port)
                if proxied
                else (started)
            )
        finally:
            if proxy is not None:
                session.registry.stop(proxy)
            # A stack already stopped (a resilience check's stop under load) costs no stop.
            timed = session.costs.timed(f"stop:{stack.name}") if server.alive() else None
            with timed or contextlib.nullcontext():
                session.executor.launch.stop(session.registry, server, STACK_STOP_GRACE_S)

    def _conforms_here(self, first: Cell, proxied: bool) -> bool:
        """Whether this launch is where its stack's conformance is checked: the recipe asks
        for it, not checked yet, and the stack speaks plain HTTP/1.1 on its own port (always,
        behind nginx)."""
        session = self.session
        return (
            session.plan.recipe.conform
            and first.stack not in session.cells.conformance
            and (proxied or first.protocol == "h1")
        )

    def _conform(self, stack: Stack, port: int) -> None:
        """Every request shape, whole and split at each byte; what it found is kept with
        each of the stack's cells."""
        session = self.session
        session.reporter.status(
            f"checking {stack.name}'s HTTP/1.1 parsing (benchlab conform's request shapes)"
        )
        result = session.executor.observe.conform(session.server_address, port)
        session.cells.conformance[stack.name] = result
        facts = result.facts()
        for cell in session.cells:
            if cell.stack == stack.name:
                session.store.add_cell_facts(session.cells.ids[cell], {"conformance": facts})
        if not result.ranks:
            session.reporter.status(
                f"{stack.name} is nonconformant ({facts['unranking'][0]}): "
                "measured, but kept out of the ranking"
            )

    def _run_cells(
        self, launched: LaunchRound, cells: list[Cell], positions: dict[Cell, int]
    ) -> None:
        # One warm-up per launch and scenario: its later cells find the server warm, and
        # the pools of a scenario that uses them grown to what its load needs.
        session, warmed = self.session, set[str]()
        for cell in cells:
            if cell in session.cells.failed:
                continue
            try:
                measured = self.cells.run(launched, cell, warm=cell.scenario in warmed)
                warmed.add(cell.scenario)
            except ServiceDied as died:
                # Its cells fail; this launch's cells that do not need it go on.
                session.services.died(died.service)
                continue
            if measured:
                session.reporter.trial(
                    positions[cell], len(session.cells), launched.round_index, cell,
                    self.round_measured(cell, launched.round_index), self.seconds_left(),
                )  # fmt: skip

    def round_measured(self, cell: Cell, round_index: int) -> RoundMeasured:
        """What the cell's round stored, read back from the store."""
        session = self.session
        store, cell_id, options = session.store, session.cells.ids[cell], session.run_options
        return RoundMeasured(
            trials=tuple(
                t for t in store.trials(cell_id) if t.round == round_index and t.probe is None
            ),
            replicate=next((c for c in store.capacities(cell_id) if c.round == round_index), None),
            ranked_by=options.figure_for(cell.mode, cell.scenario).key,
            rate_unit=options.rate_unit_of(cell.scenario),
        )


def _round_text(round_index: int, trials: int) -> str:
    """A planned round out of the recipe's, or one past them (an adaptive round)."""
    if round_index < trials:
        return f"round {round_index + 1}/{trials}"
    return f"adaptive round {round_index + 1}"


def _waiting_text(waiting: Sequence[Step], cells: int) -> str:
    """What the round is for: the undecided pair expected to need the most rounds, by name."""
    if not waiting:
        return f"{cells} cell(s) not yet within their target"
    pair = max(waiting, key=lambda p: p.more_rounds if p.more_rounds is not None else 10**6)
    r = pair.ratio
    where = "" if r is None else f": {r.value:.2f}× [{r.low:.2f}–{_bound(r.high)}]"
    others = f"; {len(waiting) - 1} other pair(s) undecided" if len(waiting) > 1 else ""
    return (
        f"deciding {pair.ahead.stack} vs {pair.behind.stack} ({pair.point.scenario}){where}: "
        f"{pair.would_decide}{others}"
    )


def _bound(value: float) -> str:
    return "∞" if value == float("inf") else f"{value:.2f}"


def _rounds_expected(waiting: Sequence[Step], most: int) -> dict[str, int]:
    """Rounds each cell (by key) of an undecided pair is expected to need still (for the ETA),
    at most `most`: the rounds left before max_trials."""
    expected: dict[str, int] = {}
    for pair in waiting:
        need = most if pair.more_rounds is None else max(1, min(most, pair.more_rounds))
        for key in (pair.ahead.key, pair.behind.key):
            expected[key] = max(expected.get(key, 1), need)
    return expected
