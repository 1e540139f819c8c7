"""A run's session: its row in the store, its journal, temp directory, hosts and services,
its cells and their failures, the signals it takes, and the cleanup that always follows.

A session measures nothing itself (measurer.py does): it is what every measurement of one
run shares, and what must be undone whatever happens."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab.analysis import capacity
from benchlab.analysis.noise_record import noise_facts
from benchlab.analysis.run_options import RunOptions
from benchlab.conformance.check import Conformance
from benchlab.core.errors import RunInterrupted, ServiceError, StoreError, UserError
from benchlab.core.service_kinds import Provides, Service
from benchlab.core.text import redact
from benchlab.hosts import machine
from benchlab.hosts.base import HostError
from benchlab.hosts.topology import RunHosts
from benchlab.http.answers import ReadWorlds
from benchlab.http.scenarios import SCENARIOS, Scenario
from benchlab.recipe import Cell, Plan, Recipe, sentinel_of
from benchlab.recipe.cells import AA_COPY_MARK, SENTINEL_MARK
from benchlab.resilience.slow_clients import READ_KB
from benchlab.runner.estimates import Costs
from benchlab.runner.executor import Executor, RealExecutor
from benchlab.runner.failure import Failure, FailureKind
from benchlab.runner.launch import ServerPlace, pinned_to
from benchlab.runner.outcome import Reporter, RunOutcome
from benchlab.runner.run_files import RunFiles
from benchlab.services import Services
from benchlab.services.base import RunningService, ServicePlace
from benchlab.stacks import CATALOGUE, Stack
from benchlab.store import (
    CELL_CHECKED,
    CapacityRecord,
    HostRecord,
    RunInfo,
    Store,
    TrialRecord,
)
from benchlab.system.journal import Journal
from benchlab.system.process import INTERRUPTS, ProcessRegistry, running_as, sigterm_interrupts
from benchlab.system.safe_files import reachable_tmpdir


@dataclass(frozen=True)
class SessionOptions:
    """How a run is recorded and bounded; `run` and `tune` each build one."""

    command: str  # as the user typed it, stored to reproduce the run
    run_info: RunInfo | None = None  # the run's row; None: described from the plan
    resume: str | None = None  # an earlier run to continue (its finished work is kept)
    shared_machine: bool = False  # another benchlab runs beside this one (--allow-concurrent)
    deadline_s: float | None = None  # no launch starts past this many seconds (tune's budget)
    catalogue: Mapping[str, Stack] = field(default_factory=lambda: CATALOGUE)
    scenarios: Mapping[str, Scenario] = field(default_factory=lambda: SCENARIOS)
    # Values no stored reason may show (tune's --env and --env-file values): a failure's log
    # tail is masked before it is stored, as the services' passwords are.
    secrets: tuple[str, ...] = ()
    # Who the stacks run as when benchlab is root, if not nobody (tune: the app's owner).
    run_as: str | None = None
    # What starts the stacks, asks them, loads them and tells the time (tests: a stand-in).
    executor: Executor = field(default_factory=RealExecutor)


_UNKNOWN = object()


def _described_run(plan: Plan, options: SessionOptions) -> RunInfo:
    """The run's row in the store, described from its plan."""
    noise = None if plan.recipe.hosts else noise_facts()  # measured here, not on the hosts
    return RunInfo(
        recipe_path=str(plan.path),
        recipe_name=plan.recipe.name,
        recipe_text=plan.text,
        question=plan.recipe.question,
        command=options.command,
        git_commit=machine.git_commit(),
        server_cores=plan.cores.server,
        load_cores=plan.cores.load,
        machine={
            **machine.describe(),
            "shared_with_another_run": options.shared_machine,
            "stacks_run_as": running_as(options.run_as),
            # Where this machine's variation comes from, if selfcheck --noise measured it.
            "noise": noise,
        },
        # Whether this machine's rounds move every stack together (selfcheck --noise).
        options=RunOptions.from_recipe(
            plan.recipe, bool(noise and noise["pairing_helps"])
        ).to_json(),
        plan={
            "recipe": json.loads(plan.recipe.model_dump_json()),
            "deadline_s": options.deadline_s,
        },
    )


def db_pool_limit(recipe: Recipe, cell: Cell) -> int | None:
    """The most database sessions the cell's pools can hold: pool × workers, or pgbouncer's
    pool when it stands in front. Not the server's own concurrency: a sync worker that holds
    one session leaves its pool idle, not exhausted."""
    if cell.pool_size is None:
        return None
    limits = [cell.pool_size * cell.workers]
    services = recipe.services
    if services.pool_fronts_database:
        limits.append(services.pgbouncer_pool_size)
    return min(limits)


def _prepare_stacks(
    all_cells: Sequence[Cell], catalogue: Mapping[str, Stack], reporter: Reporter,
    fail: Callable[[Cell, FailureKind, str], None],
) -> None:  # fmt: skip
    """Build what the cells' stacks need; fail the cells of a stack that is not here."""
    for name in dict.fromkeys(cell.stack for cell in all_cells):
        cells = [c for c in all_cells if c.stack == name]
        stack = catalogue[name]
        available = stack.availability()
        if not available.ok:
            for cell in cells:
                detail = f"{available.reason}; fix: {available.fix}"
                fail(cell, FailureKind.UNAVAILABLE, detail)
            continue
        if stack.build is not None:
            reporter.status(f"building {name}")
            try:
                stack.build()
            except UserError as exc:
                for cell in cells:
                    fail(cell, FailureKind.BUILD, str(exc))


class ServiceDied(Exception):
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


class Session:
    """Open one with `running(total_trials)`; inside it, `add_cells` and `prepare` before a
    Measurer measures them. Whatever happens inside, every process is stopped, the temp
    directory removed, and the run's status stored."""

    def __init__(self, plan: Plan, store: Store, reporter: Reporter, options: SessionOptions):
        self.plan = plan
        self.store = store
        self.reporter = reporter
        self.options = options
        self.catalogue = options.catalogue
        self.scenarios = options.scenarios
        self.executor = options.executor
        self.registry = ProcessRegistry()
        self.hosts = RunHosts(plan.hosts)
        self.costs = Costs.load()
        self.run_id = ""
        self.workroot = Path(".")
        self.cells: list[Cell] = []
        self.cell_ids: dict[Cell, int] = {}
        self.failed: dict[Cell, Failure] = {}
        self.measured: set[Cell] = set()
        self.conformance: dict[str, Conformance] = {}  # each stack's, at its first plain launch
        self.services: Services | None = None
        self.probes: dict[str, Callable[[], int] | None] = {}
        self.cache: Any = None  # a Redis client, while the cache runs
        self.read_worlds: ReadWorlds | None = None  # world rows, while PostgreSQL runs
        self.files = RunFiles()  # static files, certificates; how clients reach servers
        self._started = self.executor.observe.monotonic()
        self.out_of_time = False
        self.cut_short = False  # the deadline left planned work undone: the run is partial
        self._deadline_s = options.deadline_s  # no launch starts past it (None: any time)
        self._stack_user: object = _UNKNOWN
        # What the analysis reads of the run (rank_by, the threshold), as its row stores it.
        self.run_options = RunOptions()

    # --- the session's life -----------------------------------------------------------------

    @contextlib.contextmanager
    def running(self, total_trials: int) -> Iterator[RunOutcome]:
        self.run_id = self._open_run()
        self.run_options = RunOptions.of_run(self.store.run(self.run_id))
        # Recorded on disk as it starts, so the next benchlab can clean up after a kill.
        journal = Journal("tune" if self.plan.recipe.stacks == ["tune"] else "run").open()
        self.registry.journal = journal
        journal.set_run(self.run_id, self.store.path)
        outcome = RunOutcome(run_id=self.run_id, status="running")
        self._started = self.executor.observe.monotonic()
        # Traversable, not listable: the stacks' and the daemons' users reach their own
        # directories below (in /tmp if TMPDIR is closed to them); everything else in it is
        # closed on its own.
        self.workroot = reachable_tmpdir("bl-", others_need_it=os.geteuid() == 0)
        journal.add_dir(self.workroot)
        self.reporter.start(self.run_id, total_trials, self.plan)
        try:
            with sigterm_interrupts(), pinned_to(self.plan.cores.controller_cores):
                self._open_hosts(journal)
                yield outcome
            outcome.status = "partial" if self.failed or self.cut_short else "complete"
            if self.cut_short:
                outcome.reason = "the budget ran out before every cell was measured"
        except (KeyboardInterrupt, RunInterrupted) as exc:
            outcome.status, outcome.reason = "interrupted", f"stopped by {str(exc) or 'SIGINT'}"
        except (ServiceError, UserError) as exc:
            outcome.status, outcome.reason = "failed", self.redacted(str(exc))
            raise
        except BaseException as exc:
            outcome.status = "failed"
            outcome.reason = self.redacted(f"{type(exc).__name__}: {exc}")
            raise
        finally:
            with _uninterruptible():
                self._clean_up(outcome, journal)

    def _open_run(self) -> str:
        if self.options.resume:
            return self.store.reopen_run(self.options.resume)
        return self.store.create_run(
            self.options.run_info or _described_run(self.plan, self.options)
        )

    def _open_hosts(self, journal: Journal) -> None:
        """Make the run's namespaces, connect to its SSH hosts, and store what each is."""
        if self.hosts.distributed:
            self.reporter.status("setting up the hosts: " + ", ".join(self.hosts.hosts))
            try:
                self.hosts.open(self.workroot, journal)
            except HostError as exc:
                raise ServiceError(f"hosts: {exc}") from None
        self.store.set_run_hosts(self.run_id, [HostRecord(**h) for h in self.hosts.records()])

    def _clean_up(self, outcome: RunOutcome, journal: Journal) -> None:
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

    def elapsed_s(self) -> float:
        return self.executor.observe.monotonic() - self._started

    @property
    def deadline_s(self) -> float | None:
        return self._deadline_s

    def set_deadline(self, seconds: float | None) -> None:
        """Move the deadline (tune's search stops where its proof's time begins)."""
        self._deadline_s = seconds

    def seconds_left(self) -> float:
        """Until the deadline (infinite without one)."""
        return math.inf if self.deadline_s is None else self.deadline_s - self.elapsed_s()

    def time_left(self, needs_s: float = 0.0, planned: bool = True) -> bool:
        """Whether a launch of `needs_s` may start before the deadline (said once when spent);
        `planned`: not an adaptive round (a deadline that cuts one leaves the run partial)."""
        if self.seconds_left() > needs_s:
            return True
        if not self.out_of_time:
            self.reporter.status("the budget is spent: no more launches")
        self.out_of_time = True
        self.cut_short = self.cut_short or planned
        return False

    def extend_plan(self, trials: int) -> None:
        """The run takes `trials` more trials than it announced."""
        self.reporter.extend(trials)

    def slo_target(self) -> capacity.Target:
        """The recipe's [slo], as the capacity search judges a rate by it."""
        assert self.plan.recipe.slo is not None
        return capacity.Target.of(self.plan.recipe.slo)

    def stack_user(self) -> str | None:
        """Who the stacks run as on the server's host (None: as benchlab itself)."""
        if self._stack_user is _UNKNOWN:
            self._stack_user = self.hosts.server.host.stack_user(self.options.run_as)
        return self._stack_user  # type: ignore[return-value]

    @property
    def journal(self) -> Journal | None:
        """The run's journal on disk, while it runs."""
        return self.registry.journal

    def work_file(self, name: str) -> Path:
        """A file of the run's own directory (removed with it)."""
        return self.workroot / name

    @property
    def server_address(self) -> str:
        return self.hosts.server.host.address

    @property
    def server_place(self) -> ServerPlace:
        server = self.hosts.server
        return ServerPlace(server.host.address, server.host, self.plan.cores.server)

    def add_cells(self, cells: Sequence[Cell]) -> None:
        """Store the cells (those a resumed run already has are found by their key)."""
        known = {stored.key: stored.id for stored in self.store.cells(self.run_id)}
        for cell in cells:
            if cell in self.cell_ids:
                continue
            self.cells.append(cell)
            if cell.key in known:
                self.cell_ids[cell] = known[cell.key]
                continue
            stack = self.catalogue[cell.stack]
            label = self.label_of(cell)
            limit = stack.concurrency_limit(cell.workers, cell.server_threads, cell.flavour)
            pools = db_pool_limit(self.plan.recipe, cell)
            self.cell_ids[cell] = self.store.add_cell(
                self.run_id, len(self.cells) - 1, cell, label, limit, pools,
                facts=stack.facts(cell.workers, cell.server_threads),
            )  # fmt: skip

    def label_of(self, cell: Cell) -> str:
        """The stack's label as the cell's rows carry it in the store."""
        label = self.catalogue[cell.stack].label(cell.workers, cell.flavour, cell.server_threads)
        if cell.stack != sentinel_of(self.plan.recipe):
            return label
        return f"{label} {SENTINEL_MARK if cell.copy == 1 else AA_COPY_MARK}"

    def trials_of(self, cell: Cell, probe: str | None = None) -> list[TrialRecord]:
        """The cell's stored trials in order: its own, or a `probe`'s (alone, a search's)."""
        return [t for t in self.store.trials(self.cell_ids[cell]) if t.probe == probe]

    def capacities_of(self, cell: Cell) -> list[CapacityRecord]:
        """The cell's stored capacity search replicates, in order."""
        return self.store.capacities(self.cell_ids[cell])

    def add_cell_facts(self, cell: Cell, facts: dict[str, Any]) -> None:
        """Store what was learnt of the cell once it was measured."""
        self.store.add_cell_facts(self.cell_ids[cell], facts)

    def failure_of(self, cell: Cell) -> Failure | None:
        """Why the cell failed (None: it has not)."""
        return self.failed.get(cell)

    def service_dsn(self, service: Service) -> str | None:
        """The running service's address, its password included (None: not running)."""
        running = self.services.running.get(service) if self.services is not None else None
        return running.dsn if running is not None else None

    def redacted(self, text: str) -> str:
        """`text` as the store may keep it: no secret of the run's in it."""
        running = self.services.running.values() if self.services is not None else ()
        return redact(text, (*self.options.secrets, *(s.password for s in running)))

    def mark_checked(self, cell: Cell) -> None:  # its stack answered right (--check-only)
        self.store.mark_cell(self.cell_ids[cell], CELL_CHECKED)

    def fail(self, cell: Cell, kind: FailureKind, detail: str) -> None:
        if cell in self.failed:
            return
        failure = Failure(kind, self.redacted(detail))
        self.failed[cell] = failure
        self.store.mark_cell(self.cell_ids[cell], "failed", failure.reason)
        self.reporter.cell_failed(cell, failure.reason)

    def fail_launch(self, first: Cell, detail: str) -> None:
        """Every cell served by `first`'s launch fails (its stack died)."""
        for cell in self.cells:
            if cell.launch_key == first.launch_key:
                self.fail(cell, FailureKind.STACK_DIED, detail)

    def prepare(self, cells: Sequence[Cell]) -> None:
        """Build what the cells' stacks need, then start the services they use (once)."""
        _prepare_stacks(cells, self.catalogue, self.reporter, self.fail)
        if self.services is None:
            self._start_services(cells)
        # Slow readers ask each stack for a file larger than the socket buffers.
        read_kb = (READ_KB,) if "read" in self.plan.recipe.slow_clients else ()
        self.files.prepare(
            cells, self.scenarios, self.workroot, self.hosts.server.host,
            [place.host for place in self.hosts.load], self.stack_user(), read_kb,
        )  # fmt: skip

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
        self.read_worlds = self.services.world_reader()
        self.store.set_run_services(
            self.run_id, self.services.describe(), self.services.database_kind
        )

    def check_services(self) -> None:
        """Raise ServiceDied for a service that exited."""
        if self.services is not None:
            dead = self.services.dead()
            if dead is not None:
                raise ServiceDied(dead)

    def service_died(self, service: RunningService) -> None:
        """Fail every cell that needs the dead service; the others go on without it."""
        assert self.services is not None
        self.services.running.pop(service.name, None)
        lost_cache = service.name.provides is Provides.CACHE
        if lost_cache:
            self.cache = None
        tail = service.log_tail(3) or "(empty log)"
        reason = (
            f"{service.name} exited with code {service.process.returncode} during a trial; "
            f"last log lines: {tail}"
        )
        for cell in self.cells:
            scenario = self.scenarios[cell.scenario]
            needs = scenario.needs_cache if lost_cache else scenario.needs_database
            if needs:
                self.fail(cell, FailureKind.SERVICE_DIED, reason)
