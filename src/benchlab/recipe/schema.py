"""A recipe's shape: the TOML tables and keys it may have, their types and limits (pydantic
models, strict), and what a load profile measures."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from benchlab.core.errors import UserError
from benchlab.core.figures import RANKABLE
from benchlab.core.modes import Mode
from benchlab.core.service_kinds import NO_PROXY, DatabaseName, ProxyName, Service
from benchlab.core.service_kinds import named as service_named
from benchlab.core.text import control_character
from benchlab.core.thresholds import Threshold, parse_threshold
from benchlab.http.protocols import PROTOCOLS
from benchlab.http.scenarios import SCENARIOS, MixPart, mix_name
from benchlab.load import DEFAULT_TOOL, TOOLS


class _Strict(BaseModel):
    # strict: `connections = true` or `pgbouncer = "yes"` is a mistake to name, not to coerce.
    # A field's docstring is its description (the JSON Schema's, the reference page's).
    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)


# The limits on counts, each for a reason a message gives (messages.py, LIMIT_REASONS).
MAX_CONNECTIONS = 1_000_000  # the most sockets one machine's ports and file table allow
MAX_THREADS = 10_000  # threads or greenlets per worker; load tool threads
MAX_WORKERS = 1_024  # a recipe's worker count; the plan also bounds it by this machine's cores
MAX_POOL = 10_000  # database sessions of a pool
MAX_LATENCY_MS = 600_000  # a latency target: ten minutes is none
Connections = Annotated[int, Field(ge=1, le=MAX_CONNECTIONS)]
Threads = Annotated[int, Field(ge=1, le=MAX_THREADS)]
Workers = Annotated[int, Field(ge=1, le=MAX_WORKERS)]
PoolSize = Annotated[int, Field(ge=1, le=MAX_POOL)]


def _without_controls(allow_newline: bool):
    def check(text: str) -> str:
        found = control_character(text, allow_newline)
        if found is not None:
            raise ValueError(f"a control character ({found}) is not allowed here; write plain text")
        return text

    return AfterValidator(check)


def _visible(text: str) -> str:
    if not text.strip():
        raise ValueError("expected a name with at least one visible character")
    return text


# Text a terminal, a file name or a report shows: no control character (an escape sequence
# would reach the terminal), and a name is not blank.
NAME_MAX = 100
PROSE_MAX = 2000
Name = Annotated[
    str, Field(max_length=NAME_MAX), _without_controls(False), AfterValidator(_visible)
]
Prose = Annotated[str, Field(max_length=PROSE_MAX), _without_controls(True)]
CoreList = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]
if TYPE_CHECKING:
    ToolName = str  # a Literal built from TOOLS at run time, which a type checker cannot read
else:
    ToolName = Literal[tuple(TOOLS)]
# A fixed rate in requests per second, or a share of the cell's own closed-loop capacity.
RateValue = Annotated[float, Field(gt=0, le=10_000_000)] | str
SHARE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*%\s*")


class MixEntry(_Strict):
    """One scenario of a mixed load: `weight` of every (sum of weights) requests."""

    scenario: str
    """A scenario's name (docs/scenarios.md)."""
    weight: Annotated[int, Field(ge=1, le=100)] = 1
    """Its share of the requests: `weight` of every (sum of the weights)."""


class LoadProfile(_Strict):
    """One way to load every cell: a tool, its connections, a duration, and a fixed rate or
    a closed loop."""

    tool: ToolName = DEFAULT_TOOL
    """The load tool (docs/load-tools.md)."""
    connections: Connections | Annotated[list[Connections], Field(min_length=1)] = 64
    """Closed loop: the connections held open; fixed rate: the most the generator may open.
    A list gives one cell per value."""
    threads: Threads | None = None
    """The load tool's threads; default: as many as its cores can keep busy."""
    duration: Annotated[int, Field(ge=1, le=3600)] = 5
    """Seconds of each trial (whole seconds: wrk takes no fraction)."""
    timeout: Annotated[int, Field(ge=1, le=600)] = 5
    """Seconds a request may take before it counts as a timeout."""
    rate: RateValue | Annotated[list[RateValue], Field(min_length=1)] | None = None
    """Requests per second on a fixed schedule (open loop): a number, a list (a sweep), or a
    share of the cell's own closed-loop capacity ("60%"). None: a closed loop."""
    keepalive: bool = True
    """false: every request on a connection of its own, closed after its answer
    (TechEmpower's test without keep-alive; what clients behind no pool do)."""
    protocol: Literal[tuple(PROTOCOLS)] = "h1"  # type: ignore[valid-type]
    """The wire: HTTP/1.1 plain (h1) or over TLS (h1-tls), HTTP/2 over TLS (h2) or by prior
    knowledge (h2c)."""
    mix: Annotated[list[MixEntry], Field(min_length=1)] | None = None
    """A mixed load: these scenarios' requests interleaved by weight, each verified by its
    own rule, in one cell per stack (in place of the recipe's scenarios for this profile)."""


class Slo(_Strict):
    """The latency target a stack must hold; a recipe with it searches each cell's capacity."""

    p99_ms: Annotated[float, Field(gt=0, le=MAX_LATENCY_MS)] | None = None
    """The 99th percentile latency a held rate stays under, in milliseconds."""
    p50_ms: Annotated[float, Field(gt=0, le=MAX_LATENCY_MS)] | None = None
    """The median latency a held rate stays under, in milliseconds."""
    max_error_pct: Annotated[float, Field(ge=0, le=100)] = 0.1
    """The share of failed requests (in %) a held rate may have."""
    sustain_s: Annotated[int, Field(ge=0, le=120)] = 0
    """Seconds a search's highest held rate must also hold, in one window judged as tune's
    proof is (every ~2-s part under the target); 0: the search's short steps decide alone.
    tune sets it."""


class WebSocket(_Strict):
    """The WebSocket scenarios' loads (ws-hold, ws-echo, ws-broadcast; docs/scenarios.md).
    The [[load]] profile gives the tool (jmeter), ws-echo's connections and each trial's
    duration; an [slo] searches ws-echo's capacity under its p99."""

    rate: Annotated[float, Field(gt=0, le=1_000_000)] = 1000
    """ws-echo: messages a second, spread evenly over the profile's connections."""
    message_bytes: Annotated[int, Field(ge=16, le=65_536)] = 64
    """Bytes of each echoed or broadcast message."""
    hold_step: Annotated[int, Field(ge=1, le=100_000)] = 500
    """ws-hold: connections opened each step."""
    hold_steps: Annotated[int, Field(ge=1, le=100)] = 8
    """ws-hold: the most steps (the connections asked for at most: steps × step)."""
    hold_open_rate: Annotated[float, Field(gt=0, le=100_000)] = 1000
    """ws-hold: connections opened a second within a step."""
    hold_settle_s: Annotated[int, Field(ge=1, le=60)] = 1
    """ws-hold: seconds each step's connections stay idle before they are counted."""
    rss_limit_mb: Annotated[float, Field(gt=0, le=1_000_000)] = 1024
    """ws-hold: the server's memory limit; a step past it ends the hold."""
    receivers: Annotated[int, Field(ge=1, le=20_000)] = 100
    """ws-broadcast: members of the room that receive each post."""
    rounds: Annotated[int, Field(ge=1, le=100_000)] = 100
    """ws-broadcast: posts a trial."""
    round_interval_ms: Annotated[int, Field(ge=1, le=60_000)] = 20
    """ws-broadcast: milliseconds between two posts (longer than a round takes)."""


class Cores(_Strict):
    """Which cores each role is pinned to: the server's and the load tool's must differ."""

    server: CoreList
    """The cores the stack under test runs on."""
    load: CoreList
    """The cores the load tool runs on."""
    services: CoreList | None = None
    """Databases, Redis, pgbouncer, nginx in front; default: the server's cores."""


RoleName = Literal["server", "database", "load"]
# The slow clients a run can measure (resilience/slow_clients.py declares each).
SlowClientMode = Literal["headers", "body", "read"]


def _each_once(values: list[Any]) -> list[Any]:
    """A list's values in their order, each once."""
    return list(dict.fromkeys(values))


class HostEntry(_Strict):
    """A machine (or a namespace of this one) and the roles it plays in the run."""

    at: str
    """Where it is: `local`, `netns:NAME`, or `ssh://user@addr[:port]`."""
    roles: Annotated[list[RoleName], Field(min_length=1)]
    """What runs there: server, database, load."""
    cores: CoreList | dict[RoleName, CoreList] | None = None
    """The cores its roles are pinned to: one list for all of them, or one per role."""
    address: str | None = None
    """netns: its address (in 198.18.0.0/15; default: the next free one); ssh: where the
    other hosts reach its servers, when not the address benchlab connects to."""


class StackParams(_Strict):
    """Per-stack settings; a list for workers or threads gives one launch per value."""

    workers: Workers | Annotated[list[Workers], Field(min_length=1)] | None = None
    """Worker processes; default: the stack's own (docs/stacks.md)."""
    threads: Threads | Annotated[list[Threads], Field(min_length=1)] | None = None
    """Threads (gthread, waitress, uWSGI) or greenlets (gevent) per worker."""
    flavour: str | None = None
    """Overrides `params.flavour` for this stack."""
    pool_size: PoolSize | None = None
    """Database sessions in each worker's pool, for this stack only."""


NonNegativeInt = Annotated[int, Field(ge=0, le=60_000)]
CpuMicros = Annotated[int, Field(ge=0, le=1_000_000)]
QueryCount = Annotated[int, Field(ge=1, le=500)]
KiB = Annotated[int, Field(ge=1, le=65_536)]


class Services(_Strict):
    """The real services a run starts (docs/services.md)."""

    database: DatabaseName = "postgres"
    """The database the db scenarios use: postgres or mariadb."""
    pgbouncer: bool = False
    """Put pgbouncer between the stacks and PostgreSQL."""
    pool_mode: Literal["session", "transaction", "statement"] = "transaction"
    """pgbouncer's pool mode."""
    pgbouncer_pool_size: PoolSize = 20
    """pgbouncer's server sessions per database and user."""
    max_connections: Annotated[int, Field(ge=10, le=10_000)] = 200
    """PostgreSQL's or MariaDB's max_connections."""
    proxy: ProxyName = NO_PROXY
    """A reverse proxy in front of every stack (nginx), or none."""

    @property
    def database_service(self) -> Service:
        return service_named(self.database)

    @property
    def pool_fronts_database(self) -> bool:
        """pgbouncer stands between the stacks and the database (it fronts only its own)."""
        return self.pgbouncer and Service.PGBOUNCER.traits.in_front_of is self.database_service

    @property
    def proxy_service(self) -> Service | None:
        """The reverse proxy in front of every stack (None: the stacks face the load)."""
        return None if self.proxy == NO_PROXY else service_named(self.proxy)


class Params(_Strict):
    """Cell parameters; a list gives one cell per value."""

    flavour: str | list[str] | None = None
    """The driver flavour, `sync` or `async` (or both as a list), where a stack offers it."""
    pool_size: PoolSize | Annotated[list[PoolSize], Field(min_length=1)] = 10
    """The database (and Redis) pool of each worker process."""
    db_delay_ms: NonNegativeInt | Annotated[list[NonNegativeInt], Field(min_length=1)] = 20
    """The db-delay scenario's wait: the query holds its session this long (pg_sleep / SLEEP),
    in milliseconds."""
    sleep_ms: NonNegativeInt | Annotated[list[NonNegativeInt], Field(min_length=1)] = 100
    """The sleep scenario's wait in the app, in milliseconds."""
    cpu_us: CpuMicros | Annotated[list[CpuMicros], Field(min_length=1)] = 500
    """The cpu scenario's work per request, in microseconds."""
    queries: QueryCount | Annotated[list[QueryCount], Field(min_length=1)] = 20
    """Rows per request of the API scenarios (TechEmpower's 1 … 500)."""
    updates: QueryCount | Annotated[list[QueryCount], Field(min_length=1)] = 5
    """Rows read and written per request of the updates scenario."""
    file_kb: KiB | Annotated[list[KiB], Field(min_length=1)] = 16
    """KiB of the static file."""
    body_kb: KiB | Annotated[list[KiB], Field(min_length=1)] = 64
    """KiB of the upload's body."""


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


class Point(_Strict):
    """A named grid point: knobs that change together (article 002's "Better Async" moves
    sessions, delay and clients at once). Each point's cells are compared with each other."""

    name: Name
    """The point's name, shown in reports and taken by `run --point`."""
    connections: Connections | None = None
    """The connections (or the most a fixed rate may open) at this point."""
    pool_size: PoolSize | None = None
    """Database sessions in each worker's pool at this point."""
    db_delay_ms: NonNegativeInt | None = None
    """The db-delay scenario's wait at this point, in milliseconds."""
    sleep_ms: NonNegativeInt | None = None
    """The sleep scenario's wait at this point, in milliseconds."""


class Exclusion(_Strict):
    """Cells not to run: those matching every key given."""

    stack: str | None = None
    """A stack's name."""
    scenario: str | None = None
    """A scenario's name."""
    connections: Connections | None = None
    """A connection count."""
    keepalive: bool | None = None
    """false: only the profiles without keep-alive."""

    def matches(self, stack: str, scenario: str, connections: int, keepalive: bool = True) -> bool:
        return (
            (self.stack is None or self.stack == stack)
            and (self.scenario is None or self.scenario == scenario)
            and (self.connections is None or self.connections == connections)
            and (self.keepalive is None or self.keepalive == keepalive)
        )


class Recipe(_Strict):
    """A benchmark: which stacks serve which scenarios under which load, how many trials,
    and how cells are ranked."""

    name: Name
    """The recipe's name: reports, history and `--resume` know a run by it."""
    question: Prose = ""
    """The question the recipe answers, printed above its results."""
    stacks: Annotated[list[str], Field(min_length=1)]
    """The stacks to measure (`benchlab stacks` lists them)."""
    scenarios: list[str] = Field(default_factory=list)
    """The scenarios each stack serves (docs/scenarios.md); empty only when every [[load]]
    profile is a mix, which names its own."""
    load: Annotated[list[LoadProfile], Field(min_length=1)]
    """The load profiles ([[load]] tables): each cell is measured under each."""
    trials: Annotated[int, Field(ge=1, le=1000)] = 3
    """Interleaved rounds: every cell is measured once per round."""
    max_trials: Annotated[int, Field(ge=1, le=1000)] | None = None
    """Adaptive trials: cells whose interval is wider than the target get more interleaved
    rounds, up to this many; those that never converge are reported."""
    target_half_width_pct: Annotated[float, Field(gt=0, le=100)] = 5.0
    """The interval's half-width (in % of the figure) a cell aims for."""
    min_effect_pct: Annotated[float, Field(ge=0, le=1000)] | None = None
    """The practical threshold: a smaller difference (in %) is a tie, whatever its
    interval."""
    baseline: str | None = None
    """The stack every ranking figure is divided by (article 002's relative table)."""
    sentinel: str | bool = False
    """A stack whose code and versions stay frozen, measured in every round like the others
    (added to `stacks` when it is not there): each cell is also kept as its ratio to it in
    the same round, so history and compare tell a slower stack from a slower machine.
    `true`: the built-in one (starlette+uvicorn)."""
    conform: bool = False
    """Check each stack's HTTP/1.1 parsing at its first launch (`benchlab conform`'s request
    shapes, whole and split at every byte, about 5 s a stack): a stack that frames a request
    wrong, or ignores `Connection: close`, is measured but flagged `nonconformant` and kept
    out of the ranking; a missing header limit or a mishandled malformed request is a
    caution (`input-limits`)."""
    drain: bool = False
    """Stop each stack under load once, after its rounds (`benchlab drain`'s check: a fixed
    rate, one long request in flight, the stack's stop signal): `drops` when it fails a
    request it had taken, `hangs` when it does not exit. About 10 s a stack."""
    slow_clients: Annotated[list[SlowClientMode], AfterValidator(_each_once)] = Field(
        default_factory=list
    )
    """Measure each stack once, after its rounds, with and without 32 slow clients
    (`benchlab slow-clients`' check): "headers" trickled, a "body" sent slowly, a 1 MiB
    answer "read" slowly (from a stack that serves static files), any of them; `needs-proxy`
    when they harm everyone else in every round. About 30 s a mode and stack."""
    slow_client_rounds: Annotated[int, Field(ge=2, le=20)] = 3
    """Rounds of the slow-client check, each a trial without the slow clients and one with."""
    aa: bool = False
    """Measure the sentinel twice, as two launches (A/A): the run's own noise floor; a change
    smaller than it is never called a change. Needs `sentinel`."""
    warmup: Annotated[int, Field(ge=0, le=600)] = 1
    """Seconds of load before a launch's first trial of each scenario, discarded."""
    cores: Cores | None = None
    """The cores each role is pinned to; default: the first half serves, the second
    half loads."""
    services: Services = Field(default_factory=Services)
    """The real services: database, pgbouncer, a proxy in front."""
    params: Params = Field(default_factory=Params)
    """Cell parameters; a list gives one cell per value."""
    stack: dict[str, StackParams] = Field(default_factory=dict)
    """Per-stack settings ([stack.NAME]): workers, threads, flavour, pool."""
    exclude: list[Exclusion] = Field(default_factory=list)
    """Cells not to run ([[exclude]])."""
    points: list[Point] = Field(default_factory=list)
    """Named grid points ([[points]]) whose knobs change together."""
    slo: Slo | None = None
    """A latency target: with it, each cell's capacity under the target is searched."""
    rank_by: Literal[tuple(f.key for f in RANKABLE)] | None = None  # type: ignore[valid-type]
    """The figure cells are ranked, compared and divided by; default: what their mode
    measures (closed loop: throughput, fixed rate: p99, slo: capacity). A WebSocket
    scenario's cells rank by its own (held connections, echo p99 or capacity, broadcast p99)."""
    hosts: dict[str, HostEntry] = Field(default_factory=dict)
    """Where each role runs ([hosts.NAME]); default: all of them on this machine
    (docs/hosts.md)."""
    websocket: WebSocket = Field(default_factory=WebSocket)
    """The WebSocket scenarios' loads ([websocket])."""
    thresholds: dict[str, Annotated[str, Field(max_length=100)] | list[str]] = Field(
        default_factory=dict
    )
    """Bounds every cell's figures must keep, judged with each cell's interval on every report
    of the run: a figure's name and its bound (`p99 = "<200ms"`, `errors = "<0.1%"`,
    `rps = ">=500"`, or a list of bounds); a failed one ends `benchlab run` (and `report`)
    with an exit code of its own (docs/recipes.md)."""

    @model_validator(mode="after")
    def _measure_the_sentinel(self) -> Recipe:
        name = sentinel_of(self)
        if name is not None and name not in self.stacks:
            self.stacks.append(name)
        return self


# The sentinel `sentinel = true` names: a stack of benchlab's pinned by its lock, chosen by
# measurement (8 interleaved rounds of 7 stacks, 2 s each, on the 2-core VM): the least noisy
# from round to round (6 % standard deviation; go-nethttp, loaded by one wrk core to 30k req/s,
# 45 %), and the one each other stack's ratio to it was least noisy against.
DEFAULT_SENTINEL = "starlette+uvicorn"


def sentinel_of(recipe: Recipe) -> str | None:
    """The recipe's sentinel stack, if it has one."""
    if recipe.sentinel is True:
        return DEFAULT_SENTINEL
    return recipe.sentinel or None


def recipe_thresholds(recipe: Recipe, path: object = "") -> tuple[Threshold, ...]:
    """The recipe's [thresholds], each as `--threshold` reads it (`path`: the recipe's file,
    for the one line that names a mistake)."""
    found = []
    for name, bounds in recipe.thresholds.items():
        said = f"{path}: key 'thresholds.{name}'" if path else f"key 'thresholds.{name}'"
        for bound in as_list(bounds):
            if not bound.lstrip().startswith(("<", ">")):
                raise UserError(
                    f"{said}: {bound!r} has no comparison; write <, <=, > or >= before the "
                    f'bound, like {name} = "<{bound.strip()}"'
                )
            found.append(parse_threshold(f"{name}{bound}", said))
    return tuple(dict.fromkeys(found))


def mix_of(recipe: Recipe, profile: LoadProfile) -> str | None:
    """The scenario name of a profile's mix (each part at its parameter's first value)."""
    if profile.mix is None:
        return None
    parts = []
    for entry in profile.mix:
        param = SCENARIOS[entry.scenario].param if entry.scenario in SCENARIOS else None
        value = as_list(getattr(recipe.params, param))[0] if param else None
        parts.append(MixPart(entry.scenario, entry.weight, value))
    return mix_name(tuple(parts))


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


def profile_mode(recipe: Recipe, profile: LoadProfile) -> Mode:
    """rate: the profile sets a rate; slo: the recipe has a target and the profile's tool can
    pace (its capacity is searched); closed otherwise."""
    if profile.rate is not None:
        return Mode.RATE
    if recipe.slo is not None and TOOLS[profile.tool].can_pace:
        return Mode.SLO
    return Mode.CLOSED


def rate_share(text: str) -> float | None:
    """The percentage a rate like "60%" gives of the cell's capacity; None if it is not one."""
    match = SHARE.fullmatch(text)
    return float(match.group(1)) if match else None


def recipe_json_schema() -> dict[str, Any]:
    """The recipe as a JSON Schema, for editors (docs/recipe.schema.json; a test keeps that
    file equal to this)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **Recipe.model_json_schema(),
        "title": "benchlab recipe",
    }
