"""A run's plan: the recipe, its cells, its cores and its hosts, checked as a whole (cells
that would be one, pools the database cannot hold)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from benchlab.core.errors import UserError
from benchlab.recipe.cells import MAX_CELLS, Cell, MatrixTooLarge, expand
from benchlab.recipe.cores import CoreAssignment, allowed_cores, resolve_cores
from benchlab.recipe.hosts import HostPlan, local_only, resolve_hosts
from benchlab.recipe.schema import Recipe, StackParams
from benchlab.stacks.base import Stack


@dataclass(frozen=True)
class Plan:
    recipe: Recipe
    path: Path
    text: str
    cores: CoreAssignment
    cells: tuple[Cell, ...]
    # The stacks its cells name, by name (the catalogue, or tune's candidates).
    catalogue: Mapping[str, Stack] = field(compare=False, repr=False)
    # Every host of the run; without [hosts], this machine alone in every role.
    hosts: tuple[HostPlan, ...] = ()


def build_plan(
    path: Path,
    recipe: Recipe,
    text: str,
    catalogue: Mapping[str, Stack],
    cpu_count: int | None = None,
) -> Plan:
    """The recipe's plan, its cells made of `catalogue`'s stacks."""
    allowed = tuple(range(cpu_count)) if cpu_count else allowed_cores()
    if recipe.hosts:
        hosts, cores = resolve_hosts(path, recipe, allowed)
    else:
        cores = resolve_cores(path, recipe, allowed)
        hosts = local_only(cores)
    try:
        cells = expand(recipe, cores, catalogue, load_hosts=sum("load" in h.roles for h in hosts))
    except MatrixTooLarge:
        raise UserError(
            f"{path}: key 'stacks': the recipe's matrix holds more than {MAX_CELLS:,} cells "
            "(stacks × scenarios × parameters × profiles × points); each is measured every "
            "round: split it into recipes, or shorten a list"
        ) from None
    _check_unique(path, cells)
    _check_workers(path, recipe, cells, len(allowed))
    _check_requests(path, recipe, cells)
    _check_sessions(path, recipe, cells)
    return Plan(recipe, path, text, cores, cells, catalogue, hosts)


# The most requests one trial may send: the load tool keeps a record of each on disk until
# the trial is read (vegeta: about 200 bytes a request, 3.6 GB at this limit), and reading
# them costs about a microsecond each on the load cores; 10 k req/s for half an hour.
MAX_REQUESTS_PER_TRIAL = 18_000_000


def most_workers(cores: int) -> int:
    """The most worker processes one launch may start on a machine of `cores` cores."""
    return max(64, 4 * cores)


def _check_workers(path: Path, recipe: Recipe, cells: tuple[Cell, ...], cores: int) -> None:
    """More workers than a machine can run only measure its scheduler (and on a shared
    machine, a fork bomb)."""
    most = most_workers(cores)
    for cell in cells:
        if cell.workers > most:
            raise UserError(
                f"{path}: key 'stack.\"{cell.stack}\".workers': {cell.workers} worker processes "
                f"on {cores} core(s); at most {most} (max(64, 4 × cores)): each is a process "
                "with its own memory, and beyond that they measure the scheduler"
            )


def _check_requests(path: Path, recipe: Recipe, cells: tuple[Cell, ...]) -> None:
    """A fixed rate × its duration (and the warm-up's) bounds the requests a trial sends."""
    for cell in cells:
        if cell.rate is None:
            continue
        seconds = max(cell.duration, recipe.warmup)
        sent = cell.rate * seconds
        if sent > MAX_REQUESTS_PER_TRIAL:
            raise UserError(
                f"{path}: key 'load': {cell.rate:,.0f} req/s for {seconds} s is {sent:,.0f} "
                f"requests in one trial; at most {MAX_REQUESTS_PER_TRIAL:,} "
                "(the load tool keeps each on disk, about 200 bytes, until the trial is read): "
                "lower the rate or the duration"
            )


def _check_sessions(path: Path, recipe: Recipe, cells: tuple[Cell, ...]) -> None:
    """Pools that could open more sessions than the database allows would fail with "too
    many clients", and the stack would be blamed."""
    services = recipe.services
    room = services.max_connections - services.database_service.traits.reserved_sessions
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
