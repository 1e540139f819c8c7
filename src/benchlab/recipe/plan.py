"""A run's plan: the recipe, its cells, its cores and its hosts, checked as a whole (cells
that would be one, pools the database cannot hold)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchlab.errors import UserError
from benchlab.recipe.cells import Cell, expand
from benchlab.recipe.cores import CoreAssignment, allowed_cores, resolve_cores
from benchlab.recipe.hosts import HostPlan, local_only, resolve_hosts
from benchlab.recipe.schema import Recipe, StackParams


@dataclass(frozen=True)
class Plan:
    recipe: Recipe
    path: Path
    text: str
    cores: CoreAssignment
    cells: tuple[Cell, ...]
    # Every host of the run; without [hosts], this machine alone in every role.
    hosts: tuple[HostPlan, ...] = ()

    def with_role(self, role: str) -> list[HostPlan]:
        return [h for h in self.hosts if role in h.roles]


def build_plan(path: Path, recipe: Recipe, text: str, cpu_count: int | None = None) -> Plan:
    allowed = tuple(range(cpu_count)) if cpu_count else allowed_cores()
    if recipe.hosts:
        hosts, cores = resolve_hosts(path, recipe, allowed)
    else:
        cores = resolve_cores(path, recipe, allowed)
        hosts = local_only(cores)
    cells = expand(recipe, cores, load_hosts=sum("load" in h.roles for h in hosts))
    _check_unique(path, cells)
    _check_sessions(path, recipe, cells)
    return Plan(recipe=recipe, path=path, text=text, cores=cores, cells=cells, hosts=hosts)


# Sessions the database keeps for others: PostgreSQL's superuser_reserved_connections (3)
# and benchlab's own session probe; MariaDB's extra one for SUPER and the probe.
RESERVED_SESSIONS = {"postgres": 4, "mariadb": 2}


def _check_sessions(path: Path, recipe: Recipe, cells: tuple[Cell, ...]) -> None:
    """Pools that could open more sessions than the database allows would fail with "too
    many clients", and the stack would be blamed."""
    services = recipe.services
    room = services.max_connections - RESERVED_SESSIONS[services.database]
    if services.pgbouncer:
        if services.pgbouncer_pool_size > room:
            raise UserError(
                f"{path}: key 'services.pgbouncer_pool_size': {services.pgbouncer_pool_size} "
                f"server sessions do not fit PostgreSQL's max_connections of "
                f"{services.max_connections} ({room} left for them); raise "
                "services.max_connections or lower the pool"
            )
        return  # the stacks' pools are pgbouncer's clients: it allows 20,000
    for cell in cells:
        if cell.pool_size is None:
            continue
        needed = cell.pool_size * cell.workers
        if needed > room:
            own = recipe.stack.get(cell.stack, StackParams()).pool_size is not None
            key = f'stack."{cell.stack}".pool_size' if own else "params.pool_size"
            raise UserError(
                f"{path}: key '{key}': {cell.stack} with {cell.workers} worker(s) × a pool of "
                f"{cell.pool_size} may open {needed} database sessions, more than "
                f"services.max_connections = {services.max_connections} leaves ({room}); raise "
                "services.max_connections or lower the pool or the workers"
            )


def _check_unique(path: Path, cells: tuple[Cell, ...]) -> None:
    """Two cells with one identity would be one measurement stored twice."""
    seen: dict[str, Cell] = {}
    for cell in cells:
        twin = seen.setdefault(cell.key, cell)
        if twin is cell:
            continue
        what = f"{cell.stack} {cell.scenario}, {cell.tool} c={cell.connections} {cell.rate_text}"
        if twin.timeout != cell.timeout:
            raise UserError(
                f"{path}: key 'load': two profiles differ only in 'timeout' ({what}); a cell is "
                "its stack, scenario, tool, connections, threads, duration and rate, so both "
                "would be one cell: keep one timeout"
            )
        raise UserError(
            f"{path}: key 'stacks': the recipe gives the cell {what} twice; remove the stack, "
            "value or profile listed twice"
        )
