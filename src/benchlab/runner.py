"""Execute a plan: rounds of interleaved trials, each stack launched fresh per round.

Every round visits every cell once (round-robin), so slow drift of a noisy machine spreads
over all cells instead of biasing the last one; a stack is relaunched for each round so the
spread over trials includes process-to-process variation (as pyperf's worker processes do).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from benchlab import machine
from benchlab.analysis import capacity
from benchlab.analysis.stats import converged
from benchlab.errors import RunInterrupted, ServiceError, StoreError, UserError
from benchlab.hosts.base import THIS_MACHINE, Host, HostError
from benchlab.hosts.topology import RunHosts
from benchlab.journal import Journal
from benchlab.load import TOOLS, LoadRequest, LoadToolError
from benchlab.load.base import HttpTarget
from benchlab.load.generators import Generated, run_generators
from benchlab.monitor import PeakSampler, ProcessTreeSampler, StealSampler
from benchlab.process import (
    INTERRUPTS,
    ManagedProcess,
    ProcessRegistry,
    signals_deferred,
    sigterm_interrupts,
)
from benchlab.recipe import Cell, Plan
from benchlab.run_options import RunOptions
from benchlab.scenarios import SCENARIOS, Scenario
from benchlab.services import Services
from benchlab.services.base import RunningService, ServicePlace
from benchlab.services.nginx_proxy import start_proxy
from benchlab.services.ports import free_port
from benchlab.stacks import CATALOGUE, LaunchContext, Stack
from benchlab.store import RunInfo, Store, TrialExtras, TrialRecord, now, trial_record
from benchlab.timing import Costs, estimate
from benchlab.verify import PORT_TAKEN, keeps_alive, verify, wait_until_answering

DEFAULT_POOL_SIZE = 10
PORT_ATTEMPTS = 3
SETTLE_TIMEOUT_S = 120.0

HOST = "127.0.0.1"


class Reporter(Protocol):
    def start(self, run_id: str, total_trials: int, plan: Plan) -> None: ...
    def status(self, message: str) -> None: ...
    def trial(
        self,
        position: int,
        cells: int,
        round_index: int,
        cell: Cell,
        figure: str,
        seconds_left: float,
    ) -> None: ...
    def cell_failed(self, cell: Cell, reason: str) -> None: ...
    def extend(self, trials: int) -> None: ...
    def finish(self) -> None: ...


@dataclass
class RunOutcome:
    run_id: str
    status: str
    reason: str | None = None


class _StackDied(Exception):
    pass


class _CellFailed(Exception):
    """The cell was failed (its reason stored) in the middle of a search."""


class _ServiceDied(Exception):
    def __init__(self, service: RunningService) -> None:
        super().__init__(service.name)
        self.service = service


@contextlib.contextmanager
def _uninterruptible() -> Iterator[None]:
    """Cleanup must finish even if the user presses Ctrl-C again."""
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in INTERRUPTS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def pinned_to(cores: tuple[int, ...]) -> Iterator[None]:
    """benchlab itself (sampling, bookkeeping) stays off the server's cores."""
    try:
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, cores)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, before)


def start_stack(
    registry: ProcessRegistry,
    stack: Stack,
    ctx: LaunchContext,
    cores: tuple[int, ...],
    env: dict[str, str] | None = None,
    host: Host = THIS_MACHINE,
) -> ManagedProcess:
    """Launch a stack pinned to `cores` on `host`; anything it writes to TMPDIR stays in its
    workdir (copied to the host first when it is another machine).

    Paths stay short on purpose: servers put Unix sockets in TMPDIR (Sanic's and uvicorn's
    multiprocessing do), and a socket path may not exceed 107 bytes.
    """
    spec = stack.launch(ctx)
    private_tmp = ctx.workdir / "t"
    private_tmp.mkdir(exist_ok=True)
    host.push(ctx.workdir)
    return registry.start(
        spec.argv,
        host=host,
        cores=cores,
        log_path=ctx.workdir / "server.log",
        cwd=spec.cwd,
        env={"TMPDIR": str(private_tmp), **(env or {}), **spec.env},
        # Its own control group: the trial's CPU time is counted over every process it forks.
        cpu_group=host.create_cpu_group(),
        isolated_env=stack.isolated_env,
    )


class Execution:
    """One run: its session (the store's run row, the temp directory, the services, the
    signals, the cleanup) and the measurement of cells in interleaved rounds. A recipe
    measures all its cells at once (`run`); `benchlab tune` measures in phases within one
    session, adding cells as it learns which are worth measuring."""

    def __init__(
        self,
        plan: Plan,
        store: Store,
        reporter: Reporter,
        command: str,
        *,
        catalogue: Mapping[str, Stack] | None = None,
        scenarios: Mapping[str, Scenario] | None = None,
        run_info: RunInfo | None = None,
        resume: str | None = None,
    ) -> None:
        self.plan = plan
        self.store = store
        self.reporter = reporter
        self.command = command
        self.catalogue = catalogue or CATALOGUE
        self.scenarios = scenarios or SCENARIOS
        self.run_info = run_info
        self.resume = resume  # an earlier run to continue (its finished work is kept)
        self.registry = ProcessRegistry()
        self.failed: dict[Cell, str] = {}
        self.measured: set[Cell] = set()
        self.cells: list[Cell] = []
        self.cell_ids: dict[Cell, int] = {}
        self.workroot = Path(".")
        self.services: Services | None = None
        self.probes: dict = {}
        self.cache = None
        self.closed_capacity: dict[Cell, float] = {}
        self.run_id = ""
        self.extra_env: Callable[[], dict[str, str]] = dict
        # benchlab tune: each closed-loop trial is preceded by one at a single connection
        # (the latency of a request alone), and no launch starts past the deadline.
        self.measure_alone = False
        self.deadline_s: float | None = None
        self.started = time.monotonic()
        self.out_of_time = False
        self.costs = Costs.load()
        self.rounds_planned: dict[Cell, int] = {}
        self.keep_alive = True  # whether the launch being measured keeps connections open
        self.shared_machine = False  # another benchlab ran beside this one (--allow-concurrent)
        self.hosts = RunHosts(plan.hosts)

    # --- the whole run ----------------------------------------------------------------------

    def run(self) -> RunOutcome:
        recipe = self.plan.recipe
        with self.session(len(self.plan.cells) * recipe.trials) as outcome:
            self.add_cells(self.plan.cells)
            self.prepare(self.plan.cells)
            self.measure(self.plan.cells, recipe.trials, recipe.max_trials)
        return outcome

    def _info(self) -> RunInfo:
        plan = self.plan
        return self.run_info or RunInfo(
            recipe_path=str(plan.path),
            recipe_name=plan.recipe.name,
            recipe_text=plan.text,
            question=plan.recipe.question,
            command=self.command,
            git_commit=machine.git_commit(),
            server_cores=plan.cores.server,
            load_cores=plan.cores.load,
            machine={**machine.describe(), "shared_with_another_run": self.shared_machine},
            options=RunOptions.from_recipe(plan.recipe).to_json(),
        )

    @contextlib.contextmanager
    def session(self, total_trials: int) -> Iterator[RunOutcome]:
        """The run from its row in the store to its cleanup: whatever happens inside, every
        process is stopped, the temp directory removed, and the run's status stored."""
        if self.resume:
            self.run_id = self.store.reopen_run(self.resume)
        else:
            self.run_id = self.store.create_run(self._info())
        # Recorded on disk as it starts, so the next benchlab can clean up after a kill.
        journal = Journal("tune" if self.plan.recipe.stacks == ["tune"] else "run").open()
        self.registry.journal = journal
        journal.set_run(self.run_id, self.store.path)
        outcome = RunOutcome(run_id=self.run_id, status="running")
        self.started = time.monotonic()
        self.workroot = Path(tempfile.mkdtemp(prefix="bl-"))
        journal.add_dir(self.workroot)
        self.reporter.start(self.run_id, total_trials, self.plan)
        try:
            with sigterm_interrupts(), pinned_to(self.plan.cores.controller_cores):
                self._open_hosts(journal)
                yield outcome
            outcome.status = "partial" if self.failed or self.out_of_time else "complete"
            if self.out_of_time:
                outcome.reason = "the budget ran out before every cell was measured"
        except (KeyboardInterrupt, RunInterrupted) as exc:
            outcome.status, outcome.reason = "interrupted", f"stopped by {exc or 'SIGINT'}"
        except ServiceError as exc:
            outcome.status, outcome.reason = "failed", str(exc)
            raise
        except BaseException as exc:
            outcome.status, outcome.reason = "failed", f"{type(exc).__name__}: {exc}"
            raise
        finally:
            with _uninterruptible():
                if self.services is not None:
                    self.services.close_monitors()
                self.registry.stop_all()
                if self.services is not None:
                    self.services.remove_data()
                self.hosts.close()
                shutil.rmtree(self.workroot, ignore_errors=True)
                self.costs.save()
                self.reporter.finish()
                try:
                    for cell in self.measured - set(self.failed):
                        self.store.mark_cell(self.cell_ids[cell], "ok")
                    self.store.finish_run(self.run_id, outcome.status, outcome.reason)
                except StoreError:
                    pass  # the run stays `running`: the next benchlab marks it abandoned
                else:
                    journal.close()

    def _open_hosts(self, journal: Journal) -> None:
        """Make the run's namespaces, connect to its SSH hosts, and store what each is."""
        if not self.hosts.distributed:
            self.store.set_run_hosts(self.run_id, self.hosts.records())
            return
        self.reporter.status("setting up the hosts: " + ", ".join(self.hosts.hosts))
        try:
            self.hosts.open(self.workroot, journal)
        except HostError as exc:
            raise ServiceError(f"hosts: {exc}") from None
        self.store.set_run_hosts(self.run_id, self.hosts.records())

    @property
    def server_address(self) -> str:
        return self.hosts.server.host.address

    def add_cells(self, cells: Sequence[Cell]) -> None:
        """Store the cells (those a resumed run already has are found by their key)."""
        known = {row["key"]: row["id"] for row in self.store.cells(self.run_id)}
        for cell in cells:
            if cell in self.cell_ids:
                continue
            self.cells.append(cell)
            if cell.key in known:
                self.cell_ids[cell] = known[cell.key]
                continue
            stack = self.catalogue[cell.stack]
            label = stack.label(cell.workers, cell.flavour, cell.server_threads)
            limit = stack.capacity(cell.workers, cell.server_threads, cell.flavour)
            self.cell_ids[cell] = self.store.add_cell(
                self.run_id, len(self.cells) - 1, cell, label, limit, self._db_pool_limit(cell),
                facts=stack.facts(cell.workers, cell.server_threads),
            )  # fmt: skip

    def prepare(self, cells: Sequence[Cell]) -> None:
        """Build what the cells' stacks need, then start the services they use (once)."""
        self._prepare_stacks(cells)
        if self.services is None:
            self._start_services(cells)

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
        cell_id = self.cell_ids[cell]
        if cell.mode == "slo":
            return len(self.store.capacities(cell_id))
        return sum(1 for t in self.store.trials(cell_id) if t.probe is None)

    def _db_pool_limit(self, cell: Cell) -> int | None:
        """The most database sessions the cell's pools can hold: pool × workers, or
        pgbouncer's pool when it stands in front. Not the server's own concurrency: a sync
        worker that holds one session leaves its pool idle, not exhausted."""
        if cell.pool_size is None:
            return None
        limits = [cell.pool_size * cell.workers]
        services = self.plan.recipe.services
        if services.pgbouncer and services.database == "postgres":
            limits.append(services.pgbouncer_pool_size)
        return min(limits)

    def _fail(self, cell: Cell, reason: str) -> None:
        if cell in self.failed:
            return
        self.failed[cell] = reason
        self.store.mark_cell(self.cell_ids[cell], "failed", reason)
        self.reporter.cell_failed(cell, reason)

    @staticmethod
    def _launches(cells: Sequence[Cell]) -> dict[tuple, list[Cell]]:
        """Cells grouped by the launch that serves them, in the recipe's order."""
        grouped: dict[tuple, list[Cell]] = {}
        for cell in cells:
            grouped.setdefault(cell.launch_key, []).append(cell)
        return grouped

    def _prepare_stacks(self, all_cells: Sequence[Cell]) -> None:
        for name in dict.fromkeys(cell.stack for cell in all_cells):
            cells = [c for c in all_cells if c.stack == name]
            stack = self.catalogue[name]
            available = stack.availability()
            if not available.ok:
                for cell in cells:
                    self._fail(cell, f"unavailable: {available.reason}; fix: {available.fix}")
                continue
            if stack.build is not None:
                self.reporter.status(f"building {name}")
                try:
                    stack.build()
                except UserError as exc:
                    for cell in cells:
                        self._fail(cell, f"build failed: {exc}")

    def _start_services(self, cells: Sequence[Cell]) -> None:
        live = [c for c in cells if c not in self.failed]
        need_database = any(self.scenarios[c.scenario].needs_database for c in live)
        need_cache = any(self.scenarios[c.scenario].needs_cache for c in live)
        database, server = self.hosts.database, self.hosts.server
        place = ServicePlace(
            database.host,
            database.host.address,
            clients=(server.host.address, self.hosts.controller_address(database.host)),
        )
        self.services = Services(self.registry, self.workroot, database.cores, place)
        self.services.start(
            self.plan.recipe.services,
            need_database=need_database,
            need_cache=need_cache,
            status=self.reporter.status,
            timed=self.costs.timed,
        )
        self.probes = {"db": self.services.session_probe(), "pool": self.services.pool_probe()}
        self.cache = self.services.cache_client()
        self.store.set_run_services(
            self.run_id, self.services.describe(), self.services.database_kind
        )

    def _run_adaptive_rounds(self, cells: Sequence[Cell], rounds: int, max_rounds: int) -> None:
        """More interleaved rounds for the cells whose interval is still wider than the
        target (or that cannot reach 95 % yet), up to `max_rounds`."""
        target = self.plan.recipe.target_half_width_pct
        for round_index in range(rounds, max_rounds):
            pending = [
                cell for cell in cells
                if cell in self.measured and cell not in self.failed and not self._converged(cell)
            ]  # fmt: skip
            if not pending:
                return
            self.reporter.status(
                f"adaptive round {round_index + 1}: {len(pending)} cell(s) not yet within "
                f"±{target:g}%"
            )
            self.reporter.extend(len(pending))
            for cell in pending:
                self.rounds_planned[cell] = round_index + 1
            self._run_round(round_index, pending)

    def _converged(self, cell: Cell) -> bool:
        """Whether the figure the cell is measured for is within the target: throughput
        (closed loop), p99 (fixed rate), the capacity (a search)."""
        cell_id = self.cell_ids[cell]
        if cell.mode == "slo":
            values = [c.capacity_rps for c in self.store.capacities(cell_id)]
        else:
            trials = [t for t in self.store.trials(cell_id) if t.probe is None]
            values = [t.latency_p99_ms if cell.mode == "rate" else t.throughput_rps for t in trials]
        return converged(values, self.plan.recipe.target_half_width_pct)

    def _run_round(self, round_index: int, cells: Sequence[Cell]) -> None:
        todo = [c for c in cells if c not in self.failed and self.done_rounds(c) <= round_index]
        if not todo:
            return
        launches = list(self._launches(todo).items())
        # Rotate the order each round so no stack always runs first (or last) in a round.
        shift = round_index % len(launches)
        positions = {cell: i for i, cell in enumerate(self.cells)}
        for _, group in launches[shift:] + launches[:shift]:
            live = [c for c in group if c not in self.failed]
            if live and self._time_left():
                self._run_launch(live, round_index, positions)

    def _time_left(self) -> bool:
        if self.deadline_s is None or time.monotonic() - self.started < self.deadline_s:
            return True
        if not self.out_of_time:
            self.reporter.status("the budget is spent: no more launches")
        self.out_of_time = True
        return False

    # --- one launch of a stack, one round ---------------------------------------------------

    def _run_launch(self, cells: list[Cell], round_index: int, positions: dict[Cell, int]) -> None:
        first = cells[0]
        stack = self.catalogue[first.stack]
        workdir = self.workroot / f"s{positions[first]}r{round_index}"
        workdir.mkdir()
        env = self.extra_env()
        if not stack.isolated_env:
            env = {
                **(self.services.stack_env() if self.services else {}),
                "BENCHLAB_POOL_SIZE": str(first.launch_pool or DEFAULT_POOL_SIZE),
                **({"BENCHLAB_FLAVOUR": first.flavour} if first.flavour else {}),
                **env,
            }
        trials = self.plan.recipe.trials
        self.reporter.status(f"round {round_index + 1}/{trials}: starting {stack.name}")
        server, ctx, problem = self._start_server(stack, first, workdir, env)
        proxy = None
        try:
            if problem:
                reason = f"{stack.name} {problem}; last log lines: {server.log_tail() or '(empty)'}"
                for cell in cells:
                    self._fail(cell, reason)
                return
            port = ctx.port
            if self.plan.recipe.services.proxy == "nginx":
                server_place = self.hosts.server
                proxy, port = start_proxy(
                    self.registry, workdir, server_place.cores, ctx.port, server_place.host
                )
            first_path = self.scenarios[first.scenario].load_mix(first.ms)[0].path
            self.keep_alive = keeps_alive(self.server_address, port, first_path)
            # One warm-up per launch and scenario: its later cells find the server warm, and
            # the pools of a scenario that uses them grown to what its load needs.
            warmed: set[str] = set()
            for cell in cells:
                if cell in self.failed:
                    continue
                try:
                    warm = cell.scenario in warmed
                    self._run_cell(server, port, cell, round_index, positions[cell], workdir, warm)
                    warmed.add(cell.scenario)
                except _ServiceDied as died:
                    # Its cells fail; this launch's cells that do not need it go on.
                    self._service_died(died.service)
        except _StackDied as died:
            for cell in self.cells:
                if cell.launch_key == first.launch_key:
                    self._fail(cell, str(died))
        finally:
            if proxy is not None:
                self.registry.stop(proxy)
            with self.costs.timed(f"stop:{stack.name}"):
                self.registry.stop(server)

    def _start_server(
        self, stack: Stack, first: Cell, workdir: Path, env: dict[str, str]
    ) -> tuple[ManagedProcess, LaunchContext, str | None]:
        """Start the stack on a free port and wait until it answers from its own socket. A
        port taken in between (by another program: ports are chosen, released, then bound)
        is given up for a fresh one, twice at most."""
        for attempt in range(PORT_ATTEMPTS):
            ctx = LaunchContext(
                host=self.server_address, port=free_port(), workdir=workdir,
                server_cores=self.plan.cores.server, workers=first.workers,
                threads=first.server_threads,
            )  # fmt: skip
            started = time.monotonic()
            server = start_stack(
                self.registry, stack, ctx, self.plan.cores.server, env, self.hosts.server.host
            )
            problem = wait_until_answering(
                self.server_address, ctx.port, server.alive, stack.start_timeout,
                owns_port=lambda server=server, port=ctx.port: server.listens_on(port),
            )  # fmt: skip
            taken = problem is not None and (
                PORT_TAKEN in problem or "address already in use" in server.log_tail(20).lower()
            )
            if not taken or attempt == PORT_ATTEMPTS - 1:
                if problem is None:
                    self.costs.record(f"start:{stack.name}", time.monotonic() - started)
                return server, ctx, problem
            self.reporter.status(f"port {ctx.port} was taken: starting {stack.name} on another")
            self.registry.stop(server)
        raise AssertionError("unreachable")

    def _service_died(self, service: RunningService) -> None:
        """Fail every cell that needs the dead service; the others go on without it."""
        assert self.services is not None
        self.services.running.pop(service.name, None)
        if service.name == "redis":
            self.cache = None
        tail = service.log_tail(3) or "(empty log)"
        reason = (
            f"{service.name} exited with code {service.process.returncode} during a trial; "
            f"last log lines: {tail}"
        )
        for cell in self.cells:
            scenario = self.scenarios[cell.scenario]
            needs = scenario.needs_cache if service.name == "redis" else scenario.needs_database
            if needs:
                self._fail(cell, reason)

    def _run_cell(
        self,
        server: ManagedProcess,
        port: int,
        cell: Cell,
        round_index: int,
        position: int,
        workdir: Path,
        warm: bool = False,
    ) -> None:
        scenario = self.scenarios[cell.scenario]
        # Verification sees the miss, then the hit, of this stack's own cache-aside.
        self._flush_cache(scenario.needs_cache)
        # Generous timeout: this request may wait behind what the previous cell left queued.
        if not self._verified(server, port, cell, "verification failed"):
            return
        self._flush_cache(scenario.needs_cache)  # the load of every cell starts on a cold cache
        base = f"http://{self.server_address}:{port}"
        mix = scenario.load_mix(cell.ms)
        request = LoadRequest(
            url=f"{base}{mix[0].path}",
            targets=tuple(
                HttpTarget(r.method, f"{base}{r.path}", r.headers, r.request_body, r.weight)
                for r in mix
            )
            if scenario.requests
            else (),
            connections=cell.connections,
            threads=cell.threads,
            duration_s=cell.duration,
            timeout_s=cell.timeout,
            cores=self.plan.cores.load,
            tool=cell.tool,
            keep_alive=self.keep_alive,
        )
        try:
            if self.plan.recipe.warmup > 0 and not warm:
                warmup = dataclasses.replace(request, duration_s=self.plan.recipe.warmup)
                self._generate(warmup, workdir)
                self._check_alive(server, cell)
                # The warm-up leaves requests queued in the listen backlog whose clients are
                # gone; a sync worker serves them all before anything new. One request that
                # waits its turn (the accept queue is first in, first out) lets the trial start
                # on a drained server — and checks it still answers right.
                if not self._verified(server, port, cell, "verification after warm-up failed"):
                    return
            if cell.mode == "slo":
                figure = self._search(server, port, cell, round_index, request, workdir)
            else:
                rate = None
                if cell.mode == "rate":
                    rate = self._target_rate(server, port, cell, round_index, request, workdir)
                    if rate is None:
                        return
                if self.measure_alone and rate is None:
                    alone = dataclasses.replace(request, connections=1, duration_s=1)
                    self._measure(server, cell, round_index, alone, workdir, None, "alone")
                record = self._measure(server, cell, round_index, request, workdir, rate)
                figure = (
                    f"{record.throughput_rps:,.0f} req/s"
                    if rate is None
                    else f"p99 {record.latency_p99_ms or 0:,.1f} ms at {rate:,.0f} req/s"
                )
        except LoadToolError as exc:
            self._check_alive(server, cell)
            self._fail(cell, f"load tool failed: {exc}")
            return
        if cell not in self.failed:
            self.reporter.trial(
                position, len(self.cells), round_index, cell, figure, self.seconds_left()
            )

    def seconds_left(self) -> float:
        """The planned rounds not yet done, at this machine's step costs (this run's own
        folded in as it goes)."""
        live = [c for c in self.rounds_planned if c not in self.failed]
        done = {c: self.done_rounds(c) for c in live}
        left = {c: max(0, self.rounds_planned[c] - done[c]) for c in live}
        return estimate(live, left, done, self.plan.recipe.warmup, self.costs).total_s

    def _verified(self, server: ManagedProcess, port: int, cell: Cell, what: str) -> bool:
        expectations = self.scenarios[cell.scenario].expectations(cell.ms)
        with self.costs.timed("verify"):
            problem = verify(self.server_address, port, expectations, timeout=SETTLE_TIMEOUT_S)
        if problem:
            self._check_alive(server, cell)
            self._fail(cell, f"{what}: {problem}")
            return False
        return True

    def _measure(
        self,
        server: ManagedProcess,
        cell: Cell,
        round_index: int,
        request: LoadRequest,
        workdir: Path,
        rate: float | None,
        probe: str | None = None,
    ) -> TrialRecord:
        """One trial of the load tool with the monitors beside it, stored the moment it ends."""
        scenario = self.scenarios[cell.scenario]
        request = dataclasses.replace(request, rate=rate)
        cache_before = self._cache_counters(scenario.needs_cache)
        probes = self.probes if scenario.needs_database else {}
        # From the load tool's exit until its row is stored, Ctrl-C and SIGTERM wait:
        # a finished trial is never lost to them.
        with contextlib.ExitStack() as finished:
            with (
                ProcessTreeSampler(server) as sampler,
                StealSampler(*self._steal_cores()) as steal,
                PeakSampler(probes) as peaks,
            ):
                started_at, began = now(), time.monotonic()
                peaks.count_until(began + request.duration_s)
                generated = self._generate(request, workdir)
                result = generated.result
                finished.enter_context(signals_deferred())
                if result.requests == 0 and rate is None:
                    kinds = ", ".join(
                        f"{kind} {count:,}"
                        for kind, count in vars(result.errors).items() if count
                    )  # fmt: skip
                    raise LoadToolError(
                        f"{request.tool} completed no request in {result.duration_s:.1f} s "
                        f"({kinds or 'and counted no error: it waited the whole trial'}); "
                        "a trial without a request is no measurement"
                    )
                self.costs.record(
                    f"overhead:{request.tool}", time.monotonic() - began - request.duration_s
                )
            self._check_alive(server, cell)
            for name, error in peaks.errors.items():
                self.reporter.status(
                    f"{name} sampling stopped during {cell.stack} {cell.scenario}: {error}"
                )
            cache_after = self._cache_counters(scenario.needs_cache)
            extras = TrialExtras(
                db_sessions_peak=peaks.peaks.get("db"),
                pool_active_peak=peaks.peaks.get("pool"),
                cache_hits=None if cache_before is None else cache_after[0] - cache_before[0],
                cache_misses=None if cache_before is None else cache_after[1] - cache_before[1],
            )
            record = trial_record(
                round_index, started_at, result, sampler.usage(), steal.result, extras, probe
            )
            self.store.add_trial(self.cell_ids[cell], record, generated.shares)
            self.measured.add(cell)
        return record

    def _generate(self, request: LoadRequest, workdir: Path) -> Generated:
        """The request's load from every load host at once, merged."""
        tool = TOOLS[request.tool]
        return run_generators(tool, request, self.hosts.load, self.registry, workdir)

    def _steal_cores(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The server's and the load's cores, where they are this machine's (steal is read
        from this machine's /proc/stat)."""
        server = self.hosts.server
        here = [p for p in self.hosts.load if p.host.same_machine]
        return (
            server.cores if server.host.same_machine else (),
            here[0].cores if here else (),
        )

    def _closed_capacity(
        self, server: ManagedProcess, cell: Cell, round_index: int, request: LoadRequest,
        workdir: Path,
    ) -> float:  # fmt: skip
        """Successful responses per second in a closed loop at the cell's connections (its
        own capacity, for a share of it or as the top of a search); measured once a cell."""
        known = self.closed_capacity.get(cell)
        if known is None:
            record = self._measure(server, cell, round_index, request, workdir, None, "closed")
            known = record.successes / record.duration_s if record.duration_s > 0 else 0.0
            self.closed_capacity[cell] = known
        return known

    def _target_rate(
        self, server: ManagedProcess, port: int, cell: Cell, round_index: int,
        request: LoadRequest, workdir: Path,
    ) -> float | None:  # fmt: skip
        if cell.rate is not None:
            return cell.rate
        assert cell.rate_share is not None
        first = cell not in self.closed_capacity
        closed = self._closed_capacity(server, cell, round_index, request, workdir)
        target = round(closed * cell.rate_share / 100, 1)
        if first:
            self.store.set_cell_rates(self.cell_ids[cell], target, closed)
            if not self._verified(server, port, cell, "verification after the closed loop"):
                return None
        if target <= 0:
            self._fail(cell, "its closed-loop probe completed no request: no rate to share")
            return None
        return target

    def _search(
        self, server: ManagedProcess, port: int, cell: Cell, round_index: int,
        request: LoadRequest, workdir: Path,
    ) -> str:  # fmt: skip
        """One replicate of the capacity search (see analysis.capacity)."""
        recipe = self.plan.recipe
        assert recipe.slo is not None
        target = capacity.Target(recipe.slo.p99_ms, recipe.slo.p50_ms, recipe.slo.max_error_pct)
        cell_id = self.cell_ids[cell]
        first = cell not in self.closed_capacity
        closed = self._closed_capacity(server, cell, round_index, request, workdir)
        if first:
            self.store.set_cell_rates(cell_id, None, closed)

        def probe(rate: float, kind: str) -> bool:
            if not self._verified(server, port, cell, "verification between probes"):
                raise _CellFailed
            record = self._measure(server, cell, round_index, request, workdir, rate, kind)
            missed = capacity.misses(record, target)
            verdict = "held" if missed is None else f"missed: {missed}"
            self.reporter.status(f"{cell.stack}: {rate:,.0f} req/s {verdict}")
            return missed is None

        previous = [c.capacity_rps for c in self.store.capacities(cell_id)]
        try:
            found = capacity.search(
                round_index, closed, previous, probe, recipe.target_half_width_pct / 100
            )
        except _CellFailed:
            return ""
        self.store.add_capacity(cell_id, found)
        return f"capacity {found.capacity_rps:,.0f} req/s ({found.probes} probes)"

    def _flush_cache(self, needed: bool) -> None:
        if needed and self.cache is not None:
            try:
                self.cache.flushall()
            except Exception:
                self._check_services()  # a dead Redis fails its cells, not the run
                raise

    def _cache_counters(self, needed: bool) -> tuple[int, int] | None:
        if not needed or self.cache is None:
            return None
        from benchlab.services.redis_service import hit_counters  # redis: only with a cache

        try:
            return hit_counters(self.cache)
        except Exception:
            self._check_services()
            raise

    def _check_services(self) -> None:
        if self.services is not None:
            dead = self.services.dead()
            if dead is not None:
                raise _ServiceDied(dead)

    def _check_alive(self, server: ManagedProcess, cell: Cell) -> None:
        self._check_services()
        if server.alive():
            return
        tail = server.log_tail(3) or "(empty log)"
        raise _StackDied(
            f"{cell.stack} exited with code {server.returncode} during the {cell.scenario} "
            f"trial at {cell.connections} connections; last log lines: {tail}"
        )
