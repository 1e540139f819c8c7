"""A run's session: its row in the store, its journal, temp directory and hosts, the signals
it takes, and the cleanup that always follows; its cells (run_cells.py), services
(run_services.py) and clock (clock.py) are its parts.

A session measures nothing itself (measurer.py does): it is what every measurement of one
run shares, and what must be undone whatever happens. `benchlab tune`'s is a session of its
own kind (tune/session.py)."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab.analysis.run_options import RunOptions
from benchlab.core.errors import RunInterrupted, ServiceError, StoreError, UserError
from benchlab.core.service_kinds import Service
from benchlab.hosts.base import HostError
from benchlab.hosts.topology import RunHosts
from benchlab.http.scenarios import SCENARIOS, Scenario
from benchlab.recipe import Cell, Plan
from benchlab.resilience.slow_clients import READ_KB
from benchlab.runner.clock import RunClock
from benchlab.runner.estimates import Costs
from benchlab.runner.executor import Executor, RealExecutor
from benchlab.runner.launch import ServerPlace, pinned_to
from benchlab.runner.outcome import Reporter, RunOutcome
from benchlab.runner.run_cells import RunCells
from benchlab.runner.run_files import RunFiles
from benchlab.runner.run_info import described_run
from benchlab.runner.run_services import RunServices
from benchlab.services.base import Reserved
from benchlab.store import HostRecord, RunInfo, Store
from benchlab.system.journal import Journal
from benchlab.system.process import INTERRUPTS, ProcessRegistry, sigterm_interrupts
from benchlab.system.safe_files import reachable_tmpdir


@dataclass(frozen=True)
class SessionOptions:
    """How a run is recorded and bounded; `run` and `tune` each build one."""

    command: str  # as the user typed it, stored to reproduce the run
    resume: str | None = None  # an earlier run to continue (its finished work is kept)
    shared_machine: bool = False  # another benchlab runs beside this one (--allow-concurrent)
    deadline_s: float | None = None  # no launch starts past this many seconds (tune's budget)
    scenarios: Mapping[str, Scenario] = field(default_factory=lambda: SCENARIOS)
    # Values no stored reason may show (tune's --env and --env-file values): a failure's log
    # tail is masked before it is stored, as the services' passwords are.
    secrets: tuple[str, ...] = ()
    # Who the stacks run as when benchlab is root, if not benchlab's own account (tune: the
    # app's owner).
    run_as: str | None = None
    # Services' addresses decided before they start (tune: the app was imported with them).
    reserved: Mapping[Service, Reserved] = field(default_factory=dict)
    # What starts the stacks, loads and watches them, asks them and tells the time (tests: a
    # stand-in).
    executor: Executor = field(default_factory=RealExecutor)


_UNKNOWN = object()


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
    """Open one with `running(total_trials)`; inside it, `cells.add` and `prepare` before a
    Measurer measures them. Whatever happens inside, every process is stopped, the temp
    directory removed, and the run's status stored."""

    kind = "run"  # what its journal says runs (the next benchlab cleans up after a kill)

    def __init__(self, plan: Plan, store: Store, reporter: Reporter, options: SessionOptions):
        self.plan = plan
        self.store = store
        self.reporter = reporter
        self.options = options
        self.catalogue = plan.catalogue
        self.scenarios = options.scenarios
        self.executor = options.executor
        self.registry = ProcessRegistry()
        self.hosts = RunHosts(plan.hosts)
        self.costs = Costs.load()
        self.run_id = ""
        self.workroot = Path(".")
        self.cells = RunCells(store, self.catalogue, plan.recipe, reporter, self.redacted)
        self.services = RunServices(
            self.registry, self.hosts, plan.recipe, self.scenarios, self.cells, options.reserved
        )
        self.files = RunFiles()  # static files, certificates; how clients reach servers
        self.clock = RunClock(self.executor.observe.monotonic, options.deadline_s, reporter.status)
        # What the analysis reads of the run (rank_by, the threshold), as its row stores it.
        self.run_options = RunOptions()
        self._stack_user: object = _UNKNOWN

    @contextlib.contextmanager
    def running(self, total_trials: int) -> Iterator[RunOutcome]:
        self.run_id = self.cells.run_id = self._open_run()
        self.run_options = RunOptions.of_run(self.store.run(self.run_id))
        # Recorded on disk as it starts, so the next benchlab can clean up after a kill.
        journal = Journal(self.kind).open()
        self.registry.journal = journal
        journal.set_run(self.run_id, self.store.path)
        outcome = RunOutcome(run_id=self.run_id, status="running")
        self.clock.start()
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
            cut_short = self.clock.cut_short
            outcome.status = "partial" if self.cells.failed or cut_short else "complete"
            if cut_short:
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

    def describe(self) -> RunInfo:
        """The run's row as it is first stored."""
        options = self.options
        return described_run(
            self.plan, options.command, self.machine, self.executor.observe.commit(),
            options.shared_machine, options.run_as, options.deadline_s,
        )  # fmt: skip

    @functools.cached_property
    def machine(self) -> dict[str, Any]:
        """This machine's facts a result depends on, described once a run."""
        return self.executor.observe.machine()

    def _open_run(self) -> str:
        if self.options.resume:
            return self.store.reopen_run(self.options.resume)
        return self.store.create_run(self.describe())

    def _open_hosts(self, journal: Journal) -> None:
        """Make the run's namespaces, connect to its SSH hosts, and store what each is."""
        if self.hosts.distributed:
            self.reporter.status("setting up the hosts: " + ", ".join(self.hosts.hosts))
            try:
                self.hosts.open(self.workroot, journal)
            except HostError as exc:
                raise ServiceError(f"hosts: {exc}") from None
        records = self.hosts.records(self.machine)
        self.store.set_run_hosts(self.run_id, [HostRecord(**h) for h in records])

    def _clean_up(self, outcome: RunOutcome, journal: Journal) -> None:
        self.services.close_monitors()
        self.registry.stop_all()
        self.services.remove_data()
        self.hosts.close()
        shutil.rmtree(self.workroot, ignore_errors=True)
        self.costs.save()
        self.reporter.finish(outcome.status, outcome.reason)
        try:
            self.cells.mark_measured()
            self.store.finish_run(self.run_id, outcome.status, outcome.reason)
        except StoreError:
            pass  # the run stays `running`: the next benchlab marks it abandoned
        else:
            journal.close()

    def stack_user(self) -> str | None:
        """Who the stacks run as on the server's host (None: as benchlab itself)."""
        if self._stack_user is _UNKNOWN:
            self._stack_user = self.hosts.server.host.stack_user(self.options.run_as)
        return self._stack_user  # type: ignore[return-value]

    @property
    def server_address(self) -> str:
        return self.hosts.server.host.address

    @property
    def server_place(self) -> ServerPlace:
        server = self.hosts.server
        return ServerPlace(server.host.address, server.host, self.plan.cores.server)

    def prepare(self, cells: Sequence[Cell]) -> None:
        """Build what the cells' stacks need, then start the services they use (once)."""
        self.cells.prepare_stacks(cells)
        self.services.start(
            cells, self.workroot, self.costs, self.reporter.status, self.store, self.run_id
        )
        # Slow readers ask each stack for a file larger than the socket buffers.
        read_kb = (READ_KB,) if "read" in self.plan.recipe.slow_clients else ()
        self.files.prepare(
            cells, self.scenarios, self.workroot, self.hosts.server.host,
            [place.host for place in self.hosts.load], self.stack_user(), read_kb,
        )  # fmt: skip

    def redacted(self, text: str) -> str:
        """`text` (prose: a reason, a log's tail) as the store may keep it: no secret of the
        run's in it, nor a part of one (store.masked_prose)."""
        self.store.keep_out(*self.options.secrets, *self.services.passwords())
        return self.store.masked_prose(text)
