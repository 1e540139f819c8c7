"""The measurement of cells in interleaved rounds: every round visits every cell once, each
stack launched fresh, then adaptive rounds for the cells not yet within their target.

Every round visits every cell once (round-robin), so slow drift of a noisy machine spreads
over all cells instead of biasing the last one; a stack is relaunched for each round so the
spread over trials includes process-to-process variation (as pyperf's worker processes do).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from benchlab.analysis.stats import converged
from benchlab.estimates import estimate
from benchlab.recipe import Cell
from benchlab.runner.cell import CellRunner, Launched
from benchlab.runner.launch import start_answering, start_timeout
from benchlab.runner.session import ServiceDied, Session
from benchlab.runner.trial import StackDied
from benchlab.services.nginx_proxy import start_proxy
from benchlab.stacks import Stack
from benchlab.verify import keeps_alive

DEFAULT_POOL_SIZE = 10


@dataclass(frozen=True)
class MeasureOptions:
    """What `tune` asks beyond a recipe's rounds."""

    # Each closed-loop trial is preceded by one at a single connection (the latency of a
    # request alone).
    measure_alone: bool = False
    # Variables every launch gets (addresses of the services the app was told about); read
    # at each launch, since the services start after the measurer is made.
    extra_env: Callable[[], dict[str, str]] = field(default=dict)


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
        store, cell_id = self.session.store, self.session.cell_ids[cell]
        if cell.mode == "slo":
            return len(store.capacities(cell_id))
        return sum(1 for t in store.trials(cell_id) if t.probe is None)

    def seconds_left(self) -> float:
        """The planned rounds not yet done, at this machine's step costs (this run's own
        folded in as it goes)."""
        failed = self.session.failed
        live = [c for c in self.rounds_planned if c not in failed]
        done = {c: self.done_rounds(c) for c in live}
        left = {c: max(0, self.rounds_planned[c] - done[c]) for c in live}
        warmup = self.session.plan.recipe.warmup
        return estimate(live, left, done, warmup, self.session.costs).total_s

    # --- rounds -----------------------------------------------------------------------------

    def _run_adaptive_rounds(self, cells: Sequence[Cell], rounds: int, max_rounds: int) -> None:
        """More interleaved rounds for the cells whose interval is still wider than the
        target (or that cannot reach 95 % yet), up to `max_rounds`."""
        session = self.session
        target = session.plan.recipe.target_half_width_pct
        for round_index in range(rounds, max_rounds):
            pending = [
                cell for cell in cells
                if cell in session.measured and cell not in session.failed
                and not self._converged(cell)
            ]  # fmt: skip
            if not pending:
                return
            session.reporter.status(
                f"adaptive round {round_index + 1}: {len(pending)} cell(s) not yet within "
                f"±{target:g}%"
            )
            session.reporter.extend(len(pending))
            for cell in pending:
                self.rounds_planned[cell] = round_index + 1
            self._run_round(round_index, pending)

    def _converged(self, cell: Cell) -> bool:
        """Whether the figure the cell is measured for is within the target: throughput
        (closed loop), p99 (fixed rate), the capacity (a search)."""
        store, cell_id = self.session.store, self.session.cell_ids[cell]
        if cell.mode == "slo":
            values = [c.capacity_rps for c in store.capacities(cell_id)]
        else:
            trials = [t for t in store.trials(cell_id) if t.probe is None]
            values = [t.latency_p99_ms if cell.mode == "rate" else t.throughput_rps for t in trials]
        return converged(values, self.session.plan.recipe.target_half_width_pct)

    def _run_round(self, round_index: int, cells: Sequence[Cell]) -> None:
        failed = self.session.failed
        todo = [c for c in cells if c not in failed and self.done_rounds(c) <= round_index]
        if not todo:
            return
        grouped: dict[tuple, list[Cell]] = {}  # by the launch that serves them, in order
        for cell in todo:
            grouped.setdefault(cell.launch_key, []).append(cell)
        launches = list(grouped.values())
        # Rotate the order each round so no stack always runs first (or last) in a round.
        shift = round_index % len(launches)
        for group in launches[shift:] + launches[:shift]:
            live = [c for c in group if c not in failed]
            if live and self.session.time_left():
                self._run_launch(live, round_index)

    # --- one launch of a stack, one round ---------------------------------------------------

    def _launch_env(self, stack: Stack, first: Cell) -> dict[str, str]:
        env = self.options.extra_env()
        if stack.isolated_env:
            return env
        services = self.session.services
        return {
            **(services.stack_env() if services else {}),
            "BENCHLAB_POOL_SIZE": str(first.launch_pool or DEFAULT_POOL_SIZE),
            **({"BENCHLAB_FLAVOUR": first.flavour} if first.flavour else {}),
            **env,
        }

    def _run_launch(self, cells: list[Cell], round_index: int) -> None:
        session = self.session
        first = cells[0]
        stack = session.catalogue[first.stack]
        positions = {cell: i for i, cell in enumerate(session.cells)}
        workdir = session.workroot / f"s{positions[first]}r{round_index}"
        workdir.mkdir()
        trials = session.plan.recipe.trials
        session.reporter.status(f"round {round_index + 1}/{trials}: starting {stack.name}")
        started = start_answering(
            session.registry, stack, session.server_place,
            (first.workers, first.server_threads), workdir, self._launch_env(stack, first),
            start_timeout(stack, session.costs.known.get(f"start:{stack.name}")),
            lambda port: session.reporter.status(
                f"port {port} was taken: starting {stack.name} on another"
            ),
        )  # fmt: skip
        server, proxy = started.server, None
        try:
            if started.problem:
                tail = server.log_tail() or "(empty)"
                for cell in cells:
                    session.fail(cell, f"{stack.name} {started.problem}; last log lines: {tail}")
                return
            session.costs.record(f"start:{stack.name}", started.seconds)
            port = started.ctx.port
            if session.plan.recipe.services.proxy == "nginx":
                place = session.hosts.server
                proxy, port = start_proxy(
                    session.registry, workdir, place.cores, started.ctx.port, place.host
                )
            first_path = session.scenarios[first.scenario].load_mix(first.ms)[0].path
            alive = keeps_alive(session.server_address, port, first_path)
            launched = Launched(server, port, workdir, round_index, alive)
            self._run_cells(launched, cells, positions)
        except StackDied as died:
            session.fail_launch(first, str(died))
        finally:
            if proxy is not None:
                session.registry.stop(proxy)
            with session.costs.timed(f"stop:{stack.name}"):
                session.registry.stop(server)

    def _run_cells(self, launched: Launched, cells: list[Cell], positions: dict[Cell, int]) -> None:
        # One warm-up per launch and scenario: its later cells find the server warm, and
        # the pools of a scenario that uses them grown to what its load needs.
        session, warmed = self.session, set[str]()
        for cell in cells:
            if cell in session.failed:
                continue
            try:
                figure = self.cells.run(launched, cell, warm=cell.scenario in warmed)
                warmed.add(cell.scenario)
            except ServiceDied as died:
                # Its cells fail; this launch's cells that do not need it go on.
                session.service_died(died.service)
                continue
            if figure is not None:
                session.reporter.trial(
                    positions[cell], len(session.cells), launched.round_index, cell, figure,
                    self.seconds_left(),
                )  # fmt: skip
