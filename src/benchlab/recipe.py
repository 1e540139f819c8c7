"""Recipes: TOML files declaring stacks, scenarios, load profiles and trials; expanded to cells.

Every mistake in a recipe becomes one UserError naming the file, the key and what would be
right, so `benchlab run` never shows a traceback for a bad recipe.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import os
import re
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchlab.errors import UserError
from benchlab.figures import RANKABLE
from benchlab.hosts.spec import HostSpec
from benchlab.load import DEFAULT_TOOL, RATE_TOOL, TOOLS
from benchlab.scenarios import SCENARIOS

DEFAULT_RECIPE = "quick"
# The recipes benchlab comes with, found by name from any directory.
BUNDLED_RECIPES = Path(__file__).resolve().parents[2] / "recipes"


def bundled_recipes() -> list[Path]:
    return sorted(BUNDLED_RECIPES.glob("*.toml")) if BUNDLED_RECIPES.is_dir() else []


def resolve_recipe(text: str) -> Path:
    """A recipe by its path, or one of benchlab's by name: `quick`, `seed-000` (a name's
    unique prefix up to a dash is enough)."""
    path = Path(text)
    if path.exists() or text.endswith(".toml") or "/" in text:
        return path
    named = {p.stem: p for p in bundled_recipes()}
    if text in named:
        return named[text]
    prefixed = [p for stem, p in named.items() if stem.startswith(f"{text}-")]
    if len(prefixed) == 1:
        return prefixed[0]
    return path


class _Strict(BaseModel):
    # strict: `connections = true` or `pgbouncer = "yes"` is a mistake to name, not to coerce.
    model_config = ConfigDict(extra="forbid", strict=True)


PositiveInt = Annotated[int, Field(ge=1)]
CoreList = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]
ToolName = Literal[tuple(TOOLS)]  # type: ignore[valid-type]
# A fixed rate in requests per second, or a share of the cell's own closed-loop capacity.
RateValue = Annotated[float, Field(gt=0, le=10_000_000)] | str
SHARE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


class LoadProfile(_Strict):
    tool: ToolName = DEFAULT_TOOL
    # closed loop: connections held open; fixed rate: the most the generator may open
    connections: PositiveInt | Annotated[list[PositiveInt], Field(min_length=1)] = 64
    threads: PositiveInt | None = None
    # wrk takes whole seconds
    duration: Annotated[int, Field(ge=1, le=3600)] = 5
    timeout: Annotated[int, Field(ge=1, le=600)] = 5
    # Requests per second on a fixed schedule (open loop): a number, a list (a sweep), or a
    # share of the cell's own closed-loop capacity ("60%"). None: a closed loop.
    rate: RateValue | Annotated[list[RateValue], Field(min_length=1)] | None = None


class Slo(_Strict):
    """The latency target a stack must hold; a recipe with it searches each cell's capacity."""

    p99_ms: Annotated[float, Field(gt=0, le=600_000)] | None = None
    p50_ms: Annotated[float, Field(gt=0, le=600_000)] | None = None
    max_error_pct: Annotated[float, Field(ge=0, le=100)] = 0.1


class Cores(_Strict):
    server: CoreList
    load: CoreList
    services: CoreList | None = None  # databases, Redis, pgbouncer; default: the server cores


RoleName = Literal["server", "database", "load"]


class HostEntry(_Strict):
    """A machine (or a namespace of this one) and the roles it plays in the run."""

    at: str  # local, netns:NAME, ssh://user@addr[:port]
    roles: Annotated[list[RoleName], Field(min_length=1)]
    # The cores its roles are pinned to: one list for all of them, or one per role.
    cores: CoreList | dict[RoleName, CoreList] | None = None
    # netns: its address (in 198.18.0.0/15; default: the next free one); ssh: where the
    # other hosts reach its servers, when not the address benchlab connects to.
    address: str | None = None


PositiveInts = PositiveInt | Annotated[list[PositiveInt], Field(min_length=1)]


class StackParams(_Strict):
    """Per-stack settings; a list for workers or threads gives one launch per value."""

    workers: PositiveInts | None = None
    threads: PositiveInts | None = None  # threads (gthread, waitress, uWSGI) or greenlets (gevent)
    flavour: str | None = None
    pool_size: PositiveInt | None = None


NonNegativeInt = Annotated[int, Field(ge=0, le=60_000)]
CpuMicros = Annotated[int, Field(ge=0, le=1_000_000)]


class Services(_Strict):
    database: Literal["postgres", "mariadb"] = "postgres"
    pgbouncer: bool = False
    pool_mode: Literal["session", "transaction", "statement"] = "transaction"
    pgbouncer_pool_size: PositiveInt = 20
    max_connections: Annotated[int, Field(ge=10, le=10_000)] = 200
    proxy: Literal["none", "nginx"] = "none"


class Params(_Strict):
    """Cell parameters; a list gives one cell per value."""

    flavour: str | list[str] | None = None
    pool_size: PositiveInt | Annotated[list[PositiveInt], Field(min_length=1)] = 10
    db_delay_ms: NonNegativeInt | Annotated[list[NonNegativeInt], Field(min_length=1)] = 20
    sleep_ms: NonNegativeInt | Annotated[list[NonNegativeInt], Field(min_length=1)] = 100
    cpu_us: CpuMicros | Annotated[list[CpuMicros], Field(min_length=1)] = 500


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


class Point(_Strict):
    """A named grid point: knobs that change together (article 002's "Better Async" moves
    sessions, delay and clients at once). Each point's cells are compared with each other."""

    name: Annotated[str, Field(min_length=1)]
    connections: PositiveInt | None = None
    pool_size: PositiveInt | None = None
    db_delay_ms: NonNegativeInt | None = None
    sleep_ms: NonNegativeInt | None = None


class Exclusion(_Strict):
    stack: str | None = None
    scenario: str | None = None
    connections: PositiveInt | None = None

    def matches(self, stack: str, scenario: str, connections: int) -> bool:
        return (
            (self.stack is None or self.stack == stack)
            and (self.scenario is None or self.scenario == scenario)
            and (self.connections is None or self.connections == connections)
        )


class Recipe(_Strict):
    name: str
    question: str = ""
    stacks: Annotated[list[str], Field(min_length=1)]
    scenarios: Annotated[list[str], Field(min_length=1)]
    load: Annotated[list[LoadProfile], Field(min_length=1)]
    trials: Annotated[int, Field(ge=1, le=1000)] = 3
    # Adaptive trials: cells whose interval is wider than the target get more interleaved
    # rounds, up to max_trials; those that never converge are reported.
    max_trials: Annotated[int, Field(ge=1, le=1000)] | None = None
    target_half_width_pct: Annotated[float, Field(gt=0, le=100)] = 5.0
    # The practical threshold: a smaller difference is a tie, whatever its interval.
    min_effect_pct: Annotated[float, Field(ge=0, le=1000)] | None = None
    baseline: str | None = None  # the stack every throughput is divided by (article 002)
    warmup: Annotated[int, Field(ge=0, le=600)] = 1
    cores: Cores | None = None
    services: Services = Field(default_factory=Services)
    params: Params = Field(default_factory=Params)
    stack: dict[str, StackParams] = Field(default_factory=dict)
    exclude: list[Exclusion] = Field(default_factory=list)
    points: list[Point] = Field(default_factory=list)
    slo: Slo | None = None
    # What cells are ranked, compared and divided by; default: what their mode measures
    # (closed: throughput, rate: p99, slo: capacity).
    rank_by: Literal[tuple(f.key for f in RANKABLE)] | None = None  # type: ignore[valid-type]
    # Where each role runs (default: all of them here): see hosts/.
    hosts: dict[str, HostEntry] = Field(default_factory=dict)


@dataclass(frozen=True)
class CoreAssignment:
    server: tuple[int, ...]
    load: tuple[int, ...]
    services: tuple[int, ...] = ()
    # Where benchlab itself runs (sampling, bookkeeping): default the load cores.
    controller: tuple[int, ...] = ()

    @property
    def service_cores(self) -> tuple[int, ...]:
        return self.services or self.server

    @property
    def controller_cores(self) -> tuple[int, ...]:
        return self.controller or self.load


@dataclass(frozen=True)
class HostPlan:
    """One host of a run: where it is, what it does, on which of its cores."""

    name: str
    spec: HostSpec
    roles: tuple[str, ...]
    cores: tuple[tuple[str, tuple[int, ...]], ...]  # role -> cores
    address: str | None = None  # netns: its address; ssh: where its servers are reached

    def cores_of(self, role: str) -> tuple[int, ...]:
        return dict(self.cores)[role]


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
    mode: str = "closed"  # closed, rate (a fixed rate), slo (the capacity under the SLO)
    rate: float | None = None  # rate cells: requests per second
    rate_share: float | None = None  # rate cells: % of the cell's own closed-loop capacity
    # The pool the serving launch is started with: cells that use no database ride along
    # with the stack's first pool size instead of needing a launch of their own.
    launch_pool: int | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        return (
            f"{self.stack}|{self.flavour or '-'}|{self.scenario}|{self.tool}|c{self.connections}"
            f"|t{self.threads}|d{self.duration}|w{self.workers}|st{self.server_threads or '-'}"
            f"|p{self.pool_size or '-'}"
            f"|ms{self.ms if self.ms is not None else '-'}"
            + (f"|{self.point}" if self.point else "")
            + (f"|{self.mode}" if self.mode != "closed" else "")
            + (f"|r{self.rate:g}" if self.rate is not None else "")
            + (f"|r{self.rate_share:g}%" if self.rate_share is not None else "")
        )

    @property
    def rate_text(self) -> str:
        if self.rate is not None:
            return f"{self.rate:,.0f}/s"
        return f"{self.rate_share:g}%" if self.rate_share is not None else ""

    @property
    def launch_key(self) -> tuple[str, str | None, int, int | None, int | None]:
        """Cells with the same launch key are served by one launch of their stack."""
        return (self.stack, self.flavour, self.workers, self.server_threads, self.launch_pool)


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


# --- loading -------------------------------------------------------------------------------


def load_recipe(path: Path) -> tuple[Recipe, str]:
    """Read and validate a recipe file; every problem is a UserError naming file and key."""
    if not path.exists():
        hint = _available_recipes_hint()
        raise UserError(f"recipe file '{path}' not found{hint}")
    if path.is_dir():
        raise UserError(f"recipe '{path}' is a directory; give a .toml file inside it")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"recipe '{path}': cannot read it ({exc.strerror})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML: {exc}; fix the syntax at that line") from None
    try:
        recipe = Recipe.model_validate(data)
    except ValidationError as exc:
        raise UserError(_describe_validation_error(path, exc)) from None
    _check_names(path, recipe)
    return recipe, text


def apply_overrides(
    recipe: Recipe,
    *,
    duration: int | None = None,
    trials: int | None = None,
    connections: int | None = None,
    points: list[str] | None = None,
    path: Path | None = None,
) -> Recipe:
    """Command-line overrides: they replace the value in every load profile."""
    if points:
        known = [p.name for p in recipe.points]
        for name in points:
            if name not in known:
                raise UserError(
                    f"--point '{name}': {path or 'the recipe'} has no such point; "
                    f"its points: {', '.join(known) or 'none'}"
                )
        recipe = recipe.model_copy(
            update={"points": [p for p in recipe.points if p.name in points]}
        )
    # Validated as the recipe's own values are: the same limits, the same messages.
    options = {"--trials": ("trials", trials), "--duration": ("duration", duration),
               "--connections": ("connections", connections)}  # fmt: skip
    data = recipe.model_dump(exclude_unset=True)
    for key, value in options.values():
        if value is None:
            continue
        if key == "trials":
            data["trials"] = value
            if recipe.max_trials is not None and recipe.max_trials < value:
                data["max_trials"] = value
        else:
            data["load"] = [{**profile, key: value} for profile in data["load"]]
    try:
        return Recipe.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        option = next((o for o, (k, _) in options.items() if k in error["loc"]), "an option")
        given = next(v for o, (_, v) in options.items() if o == option) if option in options else ""
        raise UserError(
            f"{option} {given}: {_expected(error['type'], error)} (the recipe's own limit)"
        ) from None


def at_point(recipe: Recipe, point: Point) -> Recipe:
    """The recipe as one of its points sees it: the point's knobs replace the recipe's."""
    params = {k: getattr(point, k) for k in ("pool_size", "db_delay_ms", "sleep_ms")}
    params = {k: v for k, v in params.items() if v is not None}
    load = recipe.load
    if point.connections is not None:
        load = [p.model_copy(update={"connections": point.connections}) for p in load]
    return recipe.model_copy(
        update={"params": recipe.params.model_copy(update=params), "load": load, "points": []}
    )


def build_plan(path: Path, recipe: Recipe, text: str, cpu_count: int | None = None) -> Plan:
    from benchlab.hosts.plan import local_only, resolve_hosts

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


def allowed_cores() -> tuple[int, ...]:
    """The cores this process may run on (a cgroup or taskset may allow fewer than exist)."""
    return tuple(sorted(os.sched_getaffinity(0)))


def default_cores(allowed: tuple[int, ...] | None = None) -> CoreAssignment:
    """The first half of the allowed cores serves, the second half loads."""
    cores = allowed if allowed is not None else allowed_cores()
    if len(cores) < 2:
        # One core cannot be split: say so in doctor and reports rather than refuse.
        return CoreAssignment(server=cores[:1], load=cores[:1])
    half = len(cores) // 2
    return CoreAssignment(server=cores[:half], load=cores[half:])


def resolve_cores(path: Path, recipe: Recipe, allowed: tuple[int, ...]) -> CoreAssignment:
    if recipe.cores is None:
        return default_cores(allowed)
    for role in ("server", "load", "services"):
        for i, core in enumerate(getattr(recipe.cores, role) or ()):
            if core not in allowed:
                raise UserError(
                    f"{path}: key 'cores.{role}[{i}]': core {core} is not one this process may "
                    f"use; it may use {', '.join(map(str, allowed))}"
                )
    for role in ("server", "services"):
        shared = sorted(set(getattr(recipe.cores, role) or ()) & set(recipe.cores.load))
        if shared:
            raise UserError(
                f"{path}: key 'cores': core(s) {shared} are in both '{role}' and 'load'; "
                f"the {role} and the load tool must not share a core"
            )
    return CoreAssignment(
        server=tuple(recipe.cores.server),
        load=tuple(recipe.cores.load),
        services=tuple(recipe.cores.services or ()),
    )


def expand(recipe: Recipe, cores: CoreAssignment, load_hosts: int = 1) -> tuple[Cell, ...]:
    """The matrix: stacks × scenarios × parameters × load profiles (× points), minus
    exclusions and the pairs a stack does not serve. With several load hosts a cell's
    threads are each host's (its share of the connections, its own load cores)."""
    if recipe.points:
        return tuple(
            dataclasses.replace(cell, point=point.name)
            for point in recipe.points
            for cell in expand(at_point(recipe, point), cores, load_hosts)
        )
    from benchlab.stacks import CATALOGUE

    cells: list[Cell] = []
    for stack_name in recipe.stacks:
        stack = CATALOGUE[stack_name]
        overrides = recipe.stack.get(stack_name, StackParams())
        worker_counts = (
            [1] if stack.fixed_workers else as_list(overrides.workers or len(cores.server))
        )
        thread_counts = (
            as_list(overrides.threads or stack.default_concurrency) if stack.concurrency else [None]
        )
        pools = [overrides.pool_size] if overrides.pool_size else as_list(recipe.params.pool_size)
        launches = itertools.product(
            _flavours(recipe, stack_name, stack.flavours), worker_counts, thread_counts
        )
        for flavour, workers, server_threads in launches:
            for scenario_name in recipe.scenarios:
                if scenario_name not in stack.scenarios:
                    continue
                scenario = SCENARIOS[scenario_name]
                pool_values = pools if scenario.needs_database else [None]
                ms_values = (
                    as_list(getattr(recipe.params, scenario.param)) if scenario.param else [None]
                )
                profiles = [
                    (profile, connections, rate)
                    for profile in recipe.load
                    for connections in as_list(profile.connections)
                    for rate in (as_list(profile.rate) if profile.rate is not None else [None])
                ]
                for pool, ms, (profile, connections, rate) in itertools.product(
                    pool_values, ms_values, profiles
                ):
                    if any(
                        e.matches(stack_name, scenario_name, connections) for e in recipe.exclude
                    ):
                        continue
                    share = _share(rate) if isinstance(rate, str) else None
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
                            mode=profile_mode(recipe, profile),
                            rate=float(rate) if rate is not None and share is None else None,
                            rate_share=share,
                            launch_pool=pool if pool is not None else pools[0],
                        )
                    )
    return tuple(cells)


def profile_mode(recipe: Recipe, profile: LoadProfile) -> str:
    """rate: the profile sets a rate; slo: the recipe has a target and the profile's tool can
    pace (its capacity is searched); closed otherwise."""
    if profile.rate is not None:
        return "rate"
    if recipe.slo is not None and TOOLS[profile.tool].can_pace:
        return "slo"
    return "closed"


def _share(text: str) -> float | None:
    match = SHARE.match(text)
    return float(match.group(1)) if match else None


def _flavours(recipe: Recipe, stack_name: str, offered: tuple[str, ...]) -> list[str | None]:
    if not offered:
        return [None]
    override = recipe.stack.get(stack_name, StackParams()).flavour
    if override:
        return [override]
    if recipe.params.flavour is None:
        return [offered[0]]
    return [f for f in as_list(recipe.params.flavour) if f in offered]


# --- error messages ------------------------------------------------------------------------


def _available_recipes_hint() -> str:
    recipes = bundled_recipes()
    if not recipes:
        return "; give the path of a recipe .toml file"
    return "; give a .toml file or one of benchlab's recipes: " + ", ".join(r.stem for r in recipes)


def _check_names(path: Path, recipe: Recipe) -> None:
    from benchlab.stacks import CATALOGUE

    for i, name in enumerate(recipe.stacks):
        if name not in CATALOGUE:
            raise UserError(
                f"{path}: key 'stacks[{i}]': unknown stack '{name}'"
                f"{_did_you_mean(name, CATALOGUE)}; run 'benchlab stacks' for the catalogue"
            )
    if recipe.baseline is not None and recipe.baseline not in recipe.stacks:
        raise UserError(
            f"{path}: key 'baseline': '{recipe.baseline}' is not in 'stacks'"
            f"{_did_you_mean(recipe.baseline, recipe.stacks)}; the baseline must be measured too"
        )
    names = [p.name for p in recipe.points]
    for i, name in enumerate(names):
        if names.index(name) != i:
            raise UserError(
                f"{path}: key 'points[{i}].name': '{name}' is used twice; name each point once"
            )
    if recipe.max_trials is not None and recipe.max_trials < recipe.trials:
        raise UserError(
            f"{path}: key 'max_trials': {recipe.max_trials} is below 'trials' ({recipe.trials}); "
            "max_trials is the most trials an unconverged cell gets"
        )
    for i, name in enumerate(recipe.scenarios):
        if name not in SCENARIOS:
            raise UserError(
                f"{path}: key 'scenarios[{i}]': unknown scenario '{name}'"
                f"{_did_you_mean(name, SCENARIOS)}; known scenarios: {', '.join(SCENARIOS)}"
            )
    for name in recipe.stack:
        if name not in recipe.stacks:
            where = "unknown stack" if name not in CATALOGUE else "stack not in 'stacks'"
            raise UserError(
                f"{path}: key 'stack.\"{name}\"': {where} '{name}'"
                f"{_did_you_mean(name, recipe.stacks)}; parameters apply only to listed stacks"
            )
    for i, exclusion in enumerate(recipe.exclude):
        if exclusion.stack is not None and exclusion.stack not in recipe.stacks:
            raise UserError(
                f"{path}: key 'exclude[{i}].stack': '{exclusion.stack}' is not in 'stacks'"
                f"{_did_you_mean(exclusion.stack, recipe.stacks)}"
            )
        if exclusion.scenario is not None and exclusion.scenario not in recipe.scenarios:
            raise UserError(
                f"{path}: key 'exclude[{i}].scenario': '{exclusion.scenario}' is not in "
                f"'scenarios'{_did_you_mean(exclusion.scenario, recipe.scenarios)}"
            )
    for name, params in recipe.stack.items():
        stack = CATALOGUE[name]
        if params.workers not in (None, 1, [1]) and stack.fixed_workers:
            raise UserError(
                f"{path}: key 'stack.\"{name}\".workers': '{name}' runs one process only; "
                "remove 'workers' or pick a stack with worker processes"
            )
        if params.threads is not None and not stack.concurrency:
            raise UserError(
                f"{path}: key 'stack.\"{name}\".threads': '{name}' has no threads or greenlets "
                "per worker to set; remove 'threads'"
            )
        offered = stack.flavours
        if params.flavour is not None and params.flavour not in offered:
            choices = ", ".join(offered) or "none (it has no driver flavours)"
            raise UserError(
                f"{path}: key 'stack.\"{name}\".flavour': '{params.flavour}' is not a flavour of "
                f"'{name}'; it offers: {choices}"
            )
    if recipe.params.flavour is not None:
        wanted = as_list(recipe.params.flavour)
        every_offered = {f for name in recipe.stacks for f in CATALOGUE[name].flavours}
        for i, flavour in enumerate(wanted):
            if flavour not in every_offered:
                key = (
                    f"params.flavour[{i}]"
                    if isinstance(recipe.params.flavour, list)
                    else "params.flavour"
                )
                raise UserError(
                    f"{path}: key '{key}': no stack of the recipe offers flavour '{flavour}'"
                    f"{_did_you_mean(flavour, sorted(every_offered))}; flavours offered: "
                    f"{', '.join(sorted(every_offered)) or 'none'}"
                )
        for name in recipe.stacks:
            offered = CATALOGUE[name].flavours
            explicit = recipe.stack.get(name, StackParams()).flavour
            if offered and not explicit and not set(wanted) & set(offered):
                raise UserError(
                    f"{path}: key 'params.flavour': stack '{name}' offers none of "
                    f"{', '.join(wanted)} (it offers {', '.join(offered)}); add that flavour "
                    f'or set [stack."{name}"] flavour'
                )
    if isinstance(recipe.params.pool_size, list):
        for name, params in recipe.stack.items():
            if params.pool_size is not None:
                raise UserError(
                    f"{path}: key 'stack.\"{name}\".pool_size': a stack's own pool cannot join "
                    "the sweep of 'params.pool_size' (its cells would be ranked alone); to hold "
                    "it while the others' pools change, give [[points]] each a pool_size"
                )
    _check_rates(path, recipe)
    if recipe.services.pgbouncer and recipe.services.database != "postgres":
        raise UserError(
            f"{path}: key 'services.pgbouncer': pgbouncer fronts PostgreSQL only; "
            'set database = "postgres" or pgbouncer = false'
        )
    for name in recipe.stacks:
        served = [s for s in recipe.scenarios if s in CATALOGUE[name].scenarios]
        if not served:
            raise UserError(
                f"{path}: key 'stacks': stack '{name}' serves none of the recipe's scenarios "
                f"({', '.join(recipe.scenarios)}); it serves {', '.join(CATALOGUE[name].scenarios)}"
            )


def _check_rates(path: Path, recipe: Recipe) -> None:
    for i, profile in enumerate(recipe.load):
        if profile.rate is None:
            continue
        if not TOOLS[profile.tool].can_pace:
            raise UserError(
                f"{path}: key 'load[{i}].rate': {profile.tool} cannot send at a fixed rate (it "
                f'runs a closed loop only); use tool = "{RATE_TOOL}" for a rate, or remove '
                "'rate'"
            )
        if profile.threads is not None:
            raise UserError(
                f"{path}: key 'load[{i}].threads': a fixed-rate profile takes no threads "
                f"({profile.tool} starts the workers its schedule needs); remove 'threads'"
            )
        rates = as_list(profile.rate)
        for j, rate in enumerate(rates):
            if not isinstance(rate, str):
                continue
            key = f"load[{i}].rate" + (f"[{j}]" if isinstance(profile.rate, list) else "")
            share = _share(rate)
            if share is None:
                raise UserError(
                    f"{path}: key '{key}': '{rate}' is neither a number of requests per second "
                    'nor a share like "60%" of the cell\'s own capacity'
                )
            if not 0 < share <= 100:
                raise UserError(
                    f"{path}: key '{key}': a share must be within (0, 100] % of the cell's "
                    f"capacity, got {rate!r}"
                )
    if recipe.slo is not None:
        if recipe.slo.p99_ms is None and recipe.slo.p50_ms is None:
            raise UserError(
                f"{path}: key 'slo': no latency target; give p99_ms (and optionally p50_ms), "
                "e.g. p99_ms = 100"
            )
        if not any(profile_mode(recipe, p) == "slo" for p in recipe.load):
            raise UserError(
                f"{path}: key 'slo': no [[load]] profile can search a capacity; add one with "
                f'tool = "{RATE_TOOL}" and no rate'
            )


def _did_you_mean(word: str, choices: typing.Iterable[str]) -> str:
    options = list(choices)
    close = [o for o in options if o.startswith(word) or word in o.split("+")]
    close = close or difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _key_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            part_text = part if part.replace("_", "").replace("-", "").isalnum() else f'"{part}"'
            out += f".{part_text}" if out else part_text
    return out or "(top level)"


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model class that holds the key at `loc` (to list the keys allowed there)."""
    model: Any = Recipe
    skip_next = False  # the next part is a list index or a dict key, not a field name
    for part in loc:
        if skip_next:
            skip_next = False
            continue
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            return None
        skip_next = _is_container(field.annotation)
        model = _unwrap(field.annotation)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
    return model


def _is_container(annotation: Any) -> bool:
    while typing.get_origin(annotation) is Annotated or typing.get_origin(annotation) in (
        typing.Union,
        types.UnionType,
    ):
        args = typing.get_args(annotation)
        annotation = (
            args[0]
            if typing.get_origin(annotation) is Annotated
            else next(a for a in args if a is not type(None))
        )
    return typing.get_origin(annotation) in (list, dict)


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin is Annotated:
            annotation = args[0]
        elif origin in (list, typing.Union, types.UnionType):
            annotation = next(a for a in args if a is not type(None))
        elif origin is dict:
            annotation = args[1]
        else:
            return annotation


_UNION_TAG = re.compile(r"^(constrained-)?(int|str|float|bool)$|^list\[")


def _describe_validation_error(path: Path, exc: ValidationError) -> str:
    # A value that may be one thing or a list of them fails once per branch, with the branch
    # named in its location; the deepest location is the one that says what is wrong.
    errors = [
        {**e, "loc": tuple(p for p in e["loc"] if not (isinstance(p, str) and _UNION_TAG.match(p)))}
        for e in exc.errors()
    ]
    error = max(errors, key=lambda e: len(e["loc"]))
    loc = tuple(error["loc"])
    kind = error["type"]
    key = _key_path(loc)
    others = {e["loc"] for e in errors if loc[: len(e["loc"])] != e["loc"]}
    more = f" (and {len(others)} more problem(s))" if others else ""
    if kind == "extra_forbidden":
        parent = _model_at(loc[:-1])
        allowed = list(parent.model_fields) if parent else []
        name = str(loc[-1])
        hint = _did_you_mean(name, allowed)
        listed = f"; allowed keys here: {', '.join(allowed)}" if allowed else ""
        return f"{path}: key '{key}': unknown key{hint}{listed}{more}"
    if kind == "missing":
        return f"{path}: key '{key}': required key is missing; add it{more}"
    given = error.get("input")
    expected = _expected(kind, error)
    return f"{path}: key '{key}': {expected}, got {given!r}{more}"


def _expected(kind: str, error: Any) -> str:
    ctx = error.get("ctx") or {}
    messages = {
        "int_parsing": "expected a whole number",
        "int_type": "expected a whole number",
        "int_from_float": "expected a whole number",
        "float_parsing": "expected a number",
        "float_type": "expected a number",
        "string_type": "expected a text string in quotes",
        "list_type": 'expected a list like ["a", "b"]',
        "dict_type": "expected a table",
        "model_type": "expected a table",
        "bool_type": "expected true or false",
        "literal_error": f"expected one of {ctx.get('expected', '')}",
        "greater_than_equal": f"expected a value >= {ctx.get('ge')}",
        "greater_than": f"expected a value > {ctx.get('gt')}",
        "less_than_equal": f"expected a value <= {ctx.get('le')}",
        "too_short": "expected at least one entry",
    }
    return messages.get(kind, error.get("msg", "invalid value"))
