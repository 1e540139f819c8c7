"""The matrix of a recipe: its cells (stack × scenario × parameters × load profile), minus
exclusions and the pairs a stack does not serve."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

from benchlab.core.modes import Mode
from benchlab.core.service_kinds import Service
from benchlab.http.scenarios import BROADCAST, ECHO, SCENARIOS
from benchlab.load import TOOLS
from benchlab.recipe.cores import CoreAssignment
from benchlab.recipe.schema import (
    LoadProfile,
    Recipe,
    StackParams,
    as_list,
    at_point,
    mix_of,
    profile_mode,
    rate_share,
    sentinel_of,
)
from benchlab.stacks.base import Stack

# After the labels of the sentinel's launches: a reference, not a contender.
SENTINEL_MARK = "(sentinel)"
# After the label of the WebSocket ceiling's cells (go-nethttp's: shown, not ranked).
CEILING_MARK = "(ceiling)"
AA_COPY_MARK = "(sentinel's A/A copy)"


@dataclass(frozen=True)
class Cell:
    """One measured unit: stack × scenario × load profile (× parameters, later)."""

    stack: str
    scenario: str
    tool: str
    connections: int
    threads: int
    duration: int
    timeout: int
    workers: int
    flavour: str | None = None
    server_threads: int | None = None  # threads or greenlets per worker
    pool_size: int | None = None  # per worker; only for scenarios that use the database
    ms: int | None = None  # the scenario's parameter: db-delay's or sleep's ms, cpu's µs
    point: str | None = None  # the named grid point, when the recipe has points
    mode: Mode = Mode.CLOSED
    rate: float | None = None  # rate cells: requests per second
    rate_share: float | None = None  # rate cells: % of the cell's own closed-loop capacity
    keepalive: bool = True  # False: the client closes each connection after one request
    protocol: str = "h1"  # protocols.PROTOCOLS: what the client and the server speak
    copy: int = 1  # 2: the sentinel's second launch of an A/A pair (its own launch each round)
    # The pool the serving launch is started with: cells that use no database ride along
    # with the stack's first pool size instead of needing a launch of their own.
    launch_pool: int | None = field(default=None, compare=False)
    # Seconds of warm-up before the trial when not the recipe's (tune's proof: until every
    # worker has served its share); not part of what the cell measures.
    warmup_s: float | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        return (
            f"{self.stack}|{self.flavour or '-'}|{self.scenario}|{self.tool}|c{self.connections}"
            f"|t{self.threads}|d{self.duration}|w{self.workers}|st{self.server_threads or '-'}"
            f"|p{self.pool_size or '-'}"
            f"|ms{self.ms if self.ms is not None else '-'}"
            + (f"|{self.point}" if self.point else "")
            + (f"|{self.mode}" if self.mode != Mode.CLOSED else "")
            + (f"|r{self.rate:g}" if self.rate is not None else "")
            + (f"|r{self.rate_share:g}%" if self.rate_share is not None else "")
            + ("" if self.keepalive else "|noka")
            + ("" if self.protocol == "h1" else f"|{self.protocol}")
            + ("" if self.copy == 1 else f"|copy{self.copy}")
        )

    @property
    def rate_text(self) -> str:
        if self.rate is not None:
            return f"{self.rate:,.0f}/s"
        return f"{self.rate_share:g}%" if self.rate_share is not None else ""

    @property
    def launch_key(self) -> tuple[str, str | None, int, int | None, int | None, str, int]:
        """Cells with the same launch key are served by one launch of their stack (its
        server started for their protocol)."""
        return (
            self.stack, self.flavour, self.workers, self.server_threads, self.launch_pool,
            self.protocol, self.copy,
        )  # fmt: skip


# The most cells a plan may have: each is measured several times, a launch at least each
# round; beyond this a recipe is a mistake (a list where a value was meant) or days of work.
MAX_CELLS = 5_000


class MatrixTooLarge(Exception):
    """The recipe's matrix would hold more than MAX_CELLS cells (stopped counting there)."""


def expand(
    recipe: Recipe, cores: CoreAssignment, catalogue: Mapping[str, Stack], load_hosts: int = 1,
    limit: int = MAX_CELLS,
) -> tuple[Cell, ...]:  # fmt: skip
    """The matrix: stacks × scenarios × parameters × load profiles (× points), minus
    exclusions and the pairs a stack does not serve. With several load hosts a cell's
    threads are each host's (its share of the connections, its own load cores). More than
    `limit` cells raise MatrixTooLarge, before the rest are made."""
    if recipe.points:
        return _expand_points(recipe, cores, catalogue, load_hosts, limit)
    cells: list[Cell] = []
    for stack_name in recipe.stacks:
        stack = catalogue[stack_name]
        overrides = recipe.stack.get(stack_name, StackParams())
        worker_counts = _worker_counts(recipe, stack.fixed_workers, overrides, cores)
        thread_counts = (
            as_list(overrides.threads or stack.default_concurrency) if stack.concurrency else [None]
        )
        pools = [overrides.pool_size] if overrides.pool_size else as_list(recipe.params.pool_size)
        launches = itertools.product(
            _flavours(recipe, stack_name, stack.flavours), worker_counts, thread_counts
        )
        for flavour, workers, server_threads in launches:
            for scenario_name in scenario_names(recipe):
                if stack.why_not(scenario_name):
                    continue
                scenario = SCENARIOS[scenario_name]
                pool_values = pools if scenario.needs_database else [None]
                ms_values = (
                    as_list(getattr(recipe.params, scenario.param)) if scenario.param else [None]
                )
                profiles = [
                    (profile, connections, rate)
                    for profile in recipe.load
                    # a mix's profile loads its mix only; the others, the recipe's scenarios
                    if mix_of(recipe, profile) == (scenario_name if scenario.parts else None)
                    for connections in as_list(profile.connections)
                    for rate in (as_list(profile.rate) if profile.rate is not None else [None])
                ]
                for pool, ms, (profile, connections, rate) in itertools.product(
                    pool_values, ms_values, profiles
                ):
                    if stack.why_not_protocol(profile.protocol, proxied(recipe)):
                        continue
                    if any(
                        e.matches(stack_name, scenario_name, connections, profile.keepalive)
                        for e in recipe.exclude
                    ):
                        continue
                    share = rate_share(rate) if isinstance(rate, str) else None
                    mode, rate = _mode_and_rate(recipe, scenario_name, profile, rate)
                    cells.append(
                        Cell(
                            stack=stack_name,
                            scenario=scenario_name,
                            tool=profile.tool,
                            connections=connections,
                            threads=TOOLS[profile.tool].threads_for(
                                profile.threads, -(-connections // load_hosts), len(cores.load)
                            ),
                            duration=profile.duration,
                            timeout=profile.timeout,
                            workers=workers,
                            flavour=flavour,
                            server_threads=server_threads,
                            pool_size=pool,
                            ms=ms,
                            mode=mode,
                            rate=float(rate) if rate is not None and share is None else None,
                            rate_share=share,
                            keepalive=profile.keepalive,
                            protocol=profile.protocol,
                            launch_pool=pool if pool is not None else pools[0],
                        )
                    )
                    if len(cells) > limit:
                        raise MatrixTooLarge()
    return tuple(cells + _aa_copies(recipe, cells))


def _mode_and_rate(
    recipe: Recipe, scenario: str, profile: LoadProfile, rate: float | str | None
) -> tuple[Mode, float | str | None]:
    """A cell's mode and rate: its profile's, or a WebSocket scenario's own."""
    mode = SCENARIOS[scenario].mode_for(profile_mode(recipe, profile))
    if SCENARIOS[scenario].websocket:
        return mode, websocket_rate(recipe, scenario, mode)
    return mode, rate


def websocket_rate(recipe: Recipe, scenario: str, mode: Mode) -> float | None:
    """A WebSocket cell's fixed rate ([websocket]): ws-echo's messages a second, or
    ws-broadcast's posts a second; None for the hold and for a search."""
    kind, settings = SCENARIOS[scenario].websocket, recipe.websocket
    if mode != Mode.RATE:
        return None
    if kind == ECHO:
        return float(settings.rate)
    return 1000 / settings.round_interval_ms if kind == BROADCAST else None


def _worker_counts(
    recipe: Recipe, fixed: bool, overrides: StackParams, cores: CoreAssignment
) -> list[int]:
    """The stack's worker counts: one for a stack of one process, and for the WebSocket
    scenarios (a room lives in one process); else the recipe's, or one per server core."""
    if fixed or any(SCENARIOS[name].websocket for name in scenario_names(recipe)):
        return [1]
    return as_list(overrides.workers or len(cores.server))


def _aa_copies(recipe: Recipe, cells: list[Cell]) -> list[Cell]:
    """With `aa`: each sentinel cell again, served by a launch of its own."""
    sentinel = sentinel_of(recipe)
    if not recipe.aa or sentinel is None:
        return []
    return [dataclasses.replace(cell, copy=2) for cell in cells if cell.stack == sentinel]


def _expand_points(
    recipe: Recipe,
    cores: CoreAssignment,
    catalogue: Mapping[str, Stack],
    load_hosts: int,
    limit: int,
) -> tuple[Cell, ...]:
    """Each named point's cells, as the recipe seen from that point makes them."""
    found: list[Cell] = []
    for point in recipe.points:
        left = limit - len(found)
        found += [
            dataclasses.replace(cell, point=point.name)
            for cell in expand(at_point(recipe, point), cores, catalogue, load_hosts, left)
        ]
    return tuple(found)


def _flavours(recipe: Recipe, stack_name: str, offered: tuple[str, ...]) -> list[str | None]:
    if not offered:
        return [None]
    override = recipe.stack.get(stack_name, StackParams()).flavour
    if override:
        return [override]
    if recipe.params.flavour is None:
        return [offered[0]]
    return [f for f in as_list(recipe.params.flavour) if f in offered]


def scenario_names(recipe: Recipe) -> list[str]:
    """The recipe's scenarios, then its profiles' mixes (by their scenario names)."""
    mixes = [m for p in recipe.load if (m := mix_of(recipe, p)) is not None]
    return [*recipe.scenarios, *dict.fromkeys(mixes)]


def proxied(recipe: Recipe) -> bool:
    """nginx stands in front of every stack (and terminates TLS and HTTP/2 for it)."""
    return recipe.services.proxy_service is Service.NGINX


def unserved(recipe: Recipe, catalogue: Mapping[str, Stack]) -> list[str]:
    """The recipe's stack × scenario and stack × protocol pairs that are not measured
    because the stack does not serve or speak them, a line per reason."""
    by_reason: dict[str, list[str]] = {}
    for stack_name in recipe.stacks:
        stack = catalogue[stack_name]
        for scenario in scenario_names(recipe):
            why = stack.why_not(scenario)
            if why is not None:
                by_reason.setdefault(why, []).append(f"{stack_name} × {scenario}")
        for protocol in dict.fromkeys(p.protocol for p in recipe.load):
            why = stack.why_not_protocol(protocol, proxied(recipe))
            if why is not None:
                by_reason.setdefault(why, []).append(f"{stack_name} over {protocol}")
    return [f"not measured: {', '.join(pairs)}: {why}" for why, pairs in by_reason.items()]
