"""The services a run's cells need (a database, a pool, a cache), started once where the
recipe's hosts put them, what a trial reads of them (session and pool probes, the cache's
client, PostgreSQL's world rows), and what happens when one dies mid-run: the cells that need
it fail, the others go on."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchlab.core.service_kinds import Provides, Service
from benchlab.hosts.topology import RunHosts
from benchlab.http.answers import ReadWorlds
from benchlab.http.scenarios import Scenario
from benchlab.recipe import Cell, Recipe
from benchlab.runner.estimates import Costs
from benchlab.runner.failure import FailureKind
from benchlab.runner.run_cells import RunCells
from benchlab.services import Services
from benchlab.services.base import Reserved, RunningService, ServicePlace
from benchlab.store import Store
from benchlab.system.process import ProcessRegistry


class ServiceDied(Exception):
    def __init__(self, service: RunningService) -> None:
        super().__init__(service.name)
        self.service = service


class RunServices:
    def __init__(
        self, registry: ProcessRegistry, hosts: RunHosts, recipe: Recipe,
        scenarios: Mapping[str, Scenario], cells: RunCells,
        reserved: Mapping[Service, Reserved] | None = None,
    ) -> None:  # fmt: skip
        self.registry = registry
        self.hosts = hosts
        self.recipe = recipe
        self.scenarios = scenarios
        self.cells = cells
        self.reserved = reserved or {}
        self.started: Services | None = None
        self.probes: dict[str, Callable[[], int] | None] = {}
        self.cache: Any = None  # a Redis client, while the cache runs
        self.read_worlds: ReadWorlds | None = None  # world rows, while PostgreSQL runs

    def start(
        self, cells: Sequence[Cell], workroot: Path, costs: Costs, say: Callable[[str], None],
        store: Store, run_id: str,
    ) -> None:  # fmt: skip
        """Start the services the cells that have not failed use (once a run)."""
        if self.started is not None:
            return
        live = [c for c in cells if c not in self.cells.failed]
        need_database = any(self.scenarios[c.scenario].needs_database for c in live)
        need_cache = any(self.scenarios[c.scenario].needs_cache for c in live)
        database, server = self.hosts.database, self.hosts.server
        clients = (server.host.address, self.hosts.controller_address(database.host))
        place = ServicePlace(database.host, database.host.address, clients=clients)
        self.started = Services(self.registry, workroot, database.cores, place, self.reserved)
        self.started.start(
            self.recipe.services, need_database=need_database, need_cache=need_cache,
            status=say, timed=costs.timed,
        )  # fmt: skip
        self.probes = {"db": self.started.session_probe(), "pool": self.started.pool_probe()}
        self.cache = self.started.cache_client()
        self.read_worlds = self.started.world_reader()
        store.set_run_services(run_id, self.started.describe(), self.started.database_kind)

    def stack_env(self) -> dict[str, str]:
        """The services' addresses, in the variables the reference apps read."""
        return self.started.stack_env() if self.started is not None else {}

    def dsn(self, service: Service) -> str | None:
        """The running service's address, its password included (None: not running)."""
        running = self.started.running.get(service) if self.started is not None else None
        return running.dsn if running is not None else None

    def passwords(self) -> list[str]:
        running = self.started.running.values() if self.started is not None else ()
        return [service.password for service in running]

    def check(self) -> None:
        """Raise ServiceDied for a service that exited."""
        if self.started is not None:
            dead = self.started.dead()
            if dead is not None:
                raise ServiceDied(dead)

    def died(self, service: RunningService) -> None:
        """Fail every cell that needs the dead service; the others go on without it."""
        assert self.started is not None
        self.started.running.pop(service.name, None)
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
                self.cells.fail(cell, FailureKind.SERVICE_DIED, reason)

    def close_monitors(self) -> None:
        if self.started is not None:
            self.started.close_monitors()

    def remove_data(self) -> None:
        if self.started is not None:
            self.started.remove_data()
