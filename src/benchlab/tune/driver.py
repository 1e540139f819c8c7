"""benchlab tune: find the server and settings that hold the most load under a latency
target, for the user's own app.

1. The app is probed in the user's interpreter (interface, servers it has).
2. Every candidate the environment offers is launched once and measured briefly: its
   latency alone (one connection) and its closed-loop throughput. Candidates far below the
   best (under half of it) are dropped: their capacity cannot come close.
3. The survivors get the capacity search of `benchlab run` ([slo]): replicates in
   interleaved rounds, as many as the budget allows (six give a 95 % interval).

A tune run is a run: the same store, reports and HTML page, with the recommendation on top.
The plan, with its estimate, is shown before anything starts; `--budget` bounds it, and
`--resume` continues an interrupted tune without measuring again what it kept.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import psutil

from benchlab.analysis.capacity import RUN_AT_SPARE_PCT
from benchlab.analysis.noise_record import noise_facts
from benchlab.analysis.recommendation import CANDIDATE_SIZE
from benchlab.analysis.run_options import RunOptions
from benchlab.analysis.target import Target
from benchlab.analysis.tune_choice import FirstPass, screen
from benchlab.analysis.tune_options import SubjectKind, TuneOptions
from benchlab.core import figures as F
from benchlab.core.errors import UserError
from benchlab.core.modes import Mode
from benchlab.core.service_kinds import DatabaseName, Provides, Service
from benchlab.core.service_kinds import named as service_named
from benchlab.core.text import MASK, one_line
from benchlab.hosts import machine
from benchlab.http.scenarios import ECHO, Expectation, Scenario
from benchlab.load import RATE_TOOL, TOOLS, WEBSOCKET_TOOL
from benchlab.recipe import (
    Cell,
    CoreAssignment,
    LoadProfile,
    Plan,
    Recipe,
    Services,
    Slo,
    default_cores,
    local_only,
)
from benchlab.runner import (
    FailureKind,
    MeasureOptions,
    Measurer,
    Reporter,
    RunOutcome,
    SessionOptions,
)
from benchlab.services import planned_address, reserve
from benchlab.services.base import Reserved
from benchlab.store import RunInfo, Store
from benchlab.system.cpu_account import LimitsUnavailable, create_group
from benchlab.system.process import free_port
from benchlab.system.users import running_as, stack_user
from benchlab.system.watch import Watch
from benchlab.tune import app as app_module
from benchlab.tune.app import AppInfo
from benchlab.tune.at_rate import cheapest_at, first_pass_cost
from benchlab.tune.candidates import SCENARIO, Candidate
from benchlab.tune.check_answer import StoredAnswer, prove_stored
from benchlab.tune.check_only import check_candidates
from benchlab.tune.command import CommandTemplate, check_template, command_owner
from benchlab.tune.endpoint import Endpoint, check_answers, is_url, parse_url
from benchlab.tune.proof import PROOF_REPLAYS, PROOF_S, Replayed, Searched, proof_cost_s, prove
from benchlab.tune.proxy_check import check_answer, check_cost_s
from benchlab.tune.requests import EchoEndpoint
from benchlab.tune.session import TuneSession
from benchlab.tune.setup_step import run_setup
from benchlab.tune.subject import PythonApp, Subject

# What each step costs here, from runs of the examples (seconds): a launch and its
# verification, the coarse pass of one candidate (latency alone 1 s, warm-up 1 s, closed
# loop), the first search replicate (closed loop + four steps + about four probes) and a
# later one (about three probes).
LAUNCH_S = 3.0
ALONE_S = 1
COARSE_S = 2
PROBE_S = 2
PROBE_OVERHEAD_S = 1.0
FIRST_REPLICATE_PROBES = 9
LATER_REPLICATE_PROBES = 3.5
# Each replicate's highest held rate is confirmed over one window this long ([slo]
# sustain_s): the search then ranks candidates by rates that held for more than a 2-s step.
CONFIRM_S = 8
MAX_SURVIVORS = 4
REPLICATES = 6  # the fewest whose interval of the median reaches 95 %
DEFAULT_CONNECTIONS = 256
# A WebSocket echo's load: JMeter runs a thread a connection, and each of its loads starts a
# JVM and reads its samples back (learnt here: 2.4 s beyond what an echo asks).
WS_CONNECTIONS = 50
WS_PROBE_OVERHEAD_S = 4.5


def default_connections(echo: EchoEndpoint | None) -> int:
    """The most connections a tune's load opens unless --connections says."""
    return WS_CONNECTIONS if echo is not None else DEFAULT_CONNECTIONS


RATE_REPLAYS_PLANNED = 2  # --rate: replays at the rate the plan keeps room for


@dataclass(frozen=True)
class TuneRequest:
    """Everything `benchlab tune` was asked."""

    app: str
    python: str
    interface: str | None
    requests: tuple[Expectation, ...]  # the HTTP requests (none for a WebSocket echo)
    slo_p99_ms: float
    budget_min: float
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)
    # --with: each service's name (as a recipe gives it) -> the variable of its address
    with_services: dict[str, str] = field(default_factory=dict)
    servers: list[str] | None = None
    workers: list[int] | None = None
    threads: list[int] | None = None
    greenlets: list[int] | None = None
    connections: int = DEFAULT_CONNECTIONS
    cores: CoreAssignment | None = None
    env_file: Path | None = None  # --env-file (its values are in env_from_file)
    env_from_file: dict[str, str] = field(default_factory=dict)
    factory: bool = False  # --factory: APP names a callable that returns the app
    quick: bool = False  # --quick: the first pass only, no capacity search
    setup: str | None = None  # --setup: a command run once, after the services start
    # --reset-between: a command run before each candidate starts (the app's data reset as
    # the user wants it: benchlab itself never touches a --with service's data)
    reset_between: str | None = None
    proof_s: int = PROOF_S  # --proof: how long the answer's replay runs
    rate: float | None = None  # --rate: the load to hold at the least cost (None: the most)
    check_only: bool = False  # --check-only: each candidate started and its answer checked
    target: Target = field(default_factory=Target)  # --cpus, --memory: what it answers for
    check_answer: StoredAnswer | None = None  # --check-answer: a stored answer proved again
    python_source: str = "--python"  # why `python` is the app's interpreter (tune.app_python)
    echo: EchoEndpoint | None = None  # --request 'WS /path': a WebSocket echo, tuned alone
    command: str | None = None  # --command: a server started from this template ...
    grid: tuple[tuple[str, tuple[str, ...]], ...] = ()  # ... over --grid's knobs
    watch: Watch | None = None  # --pid, --cgroup, --unit: an endpoint's processes here

    @property
    def subject_kind(self) -> SubjectKind:
        """What is tuned: a URL is an endpoint, --command a command, else a Python app."""
        if self.command is not None:
            return SubjectKind.COMMAND
        return SubjectKind.ENDPOINT if is_url(self.app) else SubjectKind.PYTHON_APP

    def shown_requests(self) -> list[str]:
        """What is sent, as the user wrote it."""
        return [self.echo.describe()] if self.echo else [r.describe() for r in self.requests]

    def services(self, provides: Provides) -> list[Service]:
        """The services of --with that provide it."""
        found = [service_named(name) for name in self.with_services]
        return [service for service in found if service.provides is provides]

    def key(self) -> str:
        """What makes two tunes the same search (a resume continues only its own)."""
        data = {
            "app": self.app, "cwd": str(self.cwd), "python": self.python,
            "interface": self.interface, "slo": self.slo_p99_ms, "servers": self.servers,
            "workers": self.workers, "threads": self.threads, "greenlets": self.greenlets,
            "connections": self.connections, "factory": self.factory, "quick": self.quick,
            "env_file": str(self.env_file), "env": self.env, "env_from_file": self.env_from_file,
            "requests": [dataclasses.asdict(r) for r in self.requests],
            "with": self.with_services, "setup": self.setup, "proof_s": self.proof_s,
            "reset_between": self.reset_between, "target": self.target.as_json(),
            "check_answer": str(self.check_answer.path) if self.check_answer else None,
            "rate": self.rate, "check_only": self.check_only,
            "echo": self.echo.path if self.echo else None,
            "command": self.command, "grid": self.grid,
            "watch": self.watch.source if self.watch else None,
        }  # fmt: skip
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[
            :16
        ]


@dataclass(frozen=True)
class TunePlan:
    candidates: list[Candidate]
    survivors: int  # at most
    replicates: int
    estimate_s: float
    # Replays of the answer the budget keeps room for (PROOF_REPLAYS when it fits: a proof
    # that misses steps down; 1; 0 when only the search fits).
    proofs: int = 1
    proof_s: int = PROOF_S
    rate: float | None = None  # --rate: replays at it come before any search
    check: bool = False  # room for the answer's check beside slow clients (proxy_check.py)
    check_only: bool = False  # --check-only: nothing measured
    check_answer: StoredAnswer | None = None  # --check-answer: its proof alone
    overhead_s: float = PROBE_OVERHEAD_S  # each load's start (a WebSocket echo's JVM: more)
    unit: str = F.REQ_S  # what its rates count (a WebSocket echo's: messages)

    def describe(self, budget_min: float) -> str:
        if self.check_answer is not None:
            return (
                f"plan: the stored answer ({self.check_answer.describe()}) proved again: its "
                f"command replayed for {self.proof_s} s, every window judged (about "
                f"{_minutes(self.estimate_s)})"
            )
        if self.check_only:
            return (
                f"plan: {len(self.candidates)} candidates started once each and their answers "
                f"checked, nothing measured (--check-only; about {_minutes(self.estimate_s)})"
            )
        first = (
            f"plan: {len(self.candidates)} candidates measured briefly "
            f"(~{_minutes(len(self.candidates) * coarse_cost(self.overhead_s))})"
        )
        if self.rate is not None and self.survivors:
            first += (
                f", then {self.proof_s}-s replays at {self.rate:,.0f} {self.unit} of those whose "
                f"closed loop reaches it with {RUN_AT_SPARE_PCT} % to spare, cheapest "
                "first, until one holds; if none does"
            )
        if self.survivors == 0:
            return f"{first}, no capacity search (--quick); budget {budget_min:g} min"
        proof = (
            f", and a {self.proof_s}-s proof of the answer (room for {self.proofs} replay"
            f"{'s' if self.proofs > 1 else ''})"
            + (" and its check beside slow clients" if self.check else "")
            if self.proofs
            else f"; the {self.proof_s}-s proof of the answer only if the search leaves time "
            "(this budget plans no room for it)"
        )
        return (
            f"{first}, then the capacity search of up to {self.survivors} of them, "
            f"{self.replicates} replicate(s) each{proof}; about {_minutes(self.estimate_s)} in "
            f"all (budget {budget_min:g} min)"
        )


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def coarse_cost(overhead_s: float = PROBE_OVERHEAD_S) -> float:
    return LAUNCH_S + ALONE_S + 1 + COARSE_S + overhead_s


def search_cost(replicates: int, overhead_s: float = PROBE_OVERHEAD_S) -> float:
    probe = PROBE_S + overhead_s
    confirm = CONFIRM_S + overhead_s
    first = LAUNCH_S + 1 + (1 + FIRST_REPLICATE_PROBES) * probe + confirm
    return first + (replicates - 1) * (LAUNCH_S + 1 + LATER_REPLICATE_PROBES * probe + confirm)


def replicate_overrun_s(overhead_s: float = PROBE_OVERHEAD_S) -> float:
    """How far past the search's deadline a replicate launched just before it runs."""
    return search_cost(2, overhead_s) - search_cost(1, overhead_s)


def fit_search(
    most: int, seconds: float, proofs: int = 1, slower: float = 1.0, proof_s: int = PROOF_S,
    check: bool = False, overhead_s: float = PROBE_OVERHEAD_S,
) -> tuple[int, int] | None:  # fmt: skip
    """(survivors, replicates) whose search (and `proofs` replays, and with `check` the
    answer's check beside slow clients) fit in `seconds`: replicates first (down to 2),
    then survivors (down to 1), then a single replicate. `slower`: how much longer than
    planned this machine's steps took (the first pass says)."""
    reserve = proof_cost_s(proof_s) * proofs + (replicate_overrun_s(overhead_s) if proofs else 0.0)
    reserve += check_cost_s() if check and proofs else 0.0
    for survivors, replicates in (
        *((most, r) for r in range(REPLICATES, 1, -1)),
        *((s, 2) for s in range(most - 1, 0, -1)),
        (1, 1),
    ):
        if (survivors * search_cost(replicates, overhead_s) + reserve) * slower <= seconds:
            return survivors, replicates
    return None


def plan(
    found: list[Candidate], budget_min: float, quick: bool = False, proof_s: int = PROOF_S,
    rate: float | None = None, check_only: bool = False, answer: StoredAnswer | None = None,
    load: Scenario | None = None,
) -> TunePlan:  # fmt: skip
    """As many survivors and replicates as the budget allows after the first pass and the
    proof (without the proof when only that fits); none with --quick or --check-only; the
    stored answer's proof alone with --check-answer. `load`: the tune's scenario (a
    WebSocket echo's loads cost more to start, and have no check beside slow clients)."""
    websocket = load is not None and load.websocket is not None
    overhead = WS_PROBE_OVERHEAD_S if websocket else PROBE_OVERHEAD_S
    unit = load.rate_unit if load is not None else F.REQ_S
    if answer is not None:
        return TunePlan(found, 0, 0, proof_cost_s(proof_s), 1, proof_s, check_answer=answer,
                        overhead_s=overhead, unit=unit)  # fmt: skip
    if check_only:
        return TunePlan(found, 0, 0, len(found) * LAUNCH_S, proofs=0, check_only=True,
                        overhead_s=overhead, unit=unit)  # fmt: skip
    budget = budget_min * 60
    coarse = len(found) * coarse_cost(overhead)
    if rate is not None:  # room for two replays at the rate before the search
        coarse += RATE_REPLAYS_PLANNED * proof_cost_s(proof_s)
    if quick:
        return TunePlan(found, 0, 0, coarse, proofs=0, overhead_s=overhead, unit=unit)
    most = min(MAX_SURVIVORS, len(found))
    # The answer's check beside slow clients gives way before a second replay, which a
    # proof that misses needs to step down.
    for proofs, check in ((PROOF_REPLAYS, True), (PROOF_REPLAYS, False), (1, True), (1, False),
                          (0, False)):  # fmt: skip
        if check and websocket:
            continue
        fitted = fit_search(
            most, budget - coarse, proofs, proof_s=proof_s, check=check, overhead_s=overhead
        )
        # Room for a second replay only beside a search of at least two replicates each.
        if fitted is not None and (proofs < PROOF_REPLAYS or fitted[1] >= 2):
            survivors, replicates = fitted
            estimate = (
                coarse
                + survivors * search_cost(replicates, overhead)
                + proof_cost_s(proof_s) * min(1, proofs)
                + (check_cost_s() if check else 0.0)
            )
            return TunePlan(
                found,
                survivors,
                replicates,
                estimate,
                proofs,
                proof_s,
                rate,
                check,
                overhead_s=overhead,
                unit=unit,
            )
    least = coarse + search_cost(1, overhead)
    raise UserError(
        f"--budget {budget_min:g}: too small for even one candidate's search: the first pass "
        f"over {len(found)} candidates and one search take about {_minutes(least)}; raise "
        f"--budget to {math.ceil(least / 60)} or narrow them (--servers, --workers, --threads)"
    )


def _recipe(request: TuneRequest, subject: Subject, found: list[Candidate]) -> Recipe:
    """What the runner reads of a run (its load, trials, SLO, services), for the tune's own
    candidates: the stacks of its catalogue."""
    database = next(iter(request.services(Provides.DATABASE)), Service.POSTGRESQL)
    return Recipe(
        name=f"tune {subject.shown}",
        question=(
            f"Which candidate holds the most load for {subject.shown} with p99 under "
            f"{request.slo_p99_ms:g} ms?"
        ),
        stacks=list(dict.fromkeys(c.stack for c in found)),
        scenarios=[SCENARIO],
        load=[
            LoadProfile(
                tool=_tool(request), connections=request.connections, duration=PROBE_S, timeout=2
            )
        ],
        trials=REPLICATES,
        warmup=1,
        slo=Slo(p99_ms=request.slo_p99_ms, sustain_s=CONFIRM_S),
        # A database's recipe name is a DatabaseName (tests/test_service_kinds.py holds it).
        services=Services(database=cast(DatabaseName, database.recipe_name)),
    )


def _scenario(request: TuneRequest) -> Scenario:
    """The tune's load: the user's HTTP requests, or its WebSocket echo (verified by what
    comes back; its rate a message's round trip's, from its due time)."""
    return Scenario(
        name=SCENARIO,
        description="; ".join(request.shown_requests())
        + (": each text message sent back" if request.echo else ""),
        needs_database=bool(request.services(Provides.DATABASE)),
        needs_cache=bool(request.services(Provides.CACHE)),
        cold_cache=False,  # the app's Redis keeps what --setup and the app put there
        requests=request.requests,
        websocket=ECHO if request.echo else None,
        echo_path=request.echo.path if request.echo else None,
    )


def _tool(request: TuneRequest) -> str:
    """The load tool of every load of the tune."""
    return WEBSOCKET_TOOL if request.echo else RATE_TOOL


def coarse_connections(candidate: Candidate, most: int) -> int:
    """Connections for the first pass: enough to fill the candidate, not to flood it. A
    server that holds N requests at once (threads, greenlets) gets N: several of them give
    each keep-alive connection a thread or greenlet of its own (uWSGI, gevent), so more
    would wait unserved and time out. Sync workers, which close every connection, get two
    each (one waits while the other reconnects); an event loop gets the most allowed."""
    workers, threads = candidate.workers, candidate.threads
    if candidate.concurrency and threads:
        return min(most, workers * threads)
    if candidate.one_at_a_time:
        return min(most, 2 * workers)
    return most


def _cell(
    candidate: Candidate, cores: CoreAssignment, mode: Mode, connections: int, tool: str
) -> Cell:
    if mode == Mode.CLOSED:
        connections = coarse_connections(candidate, connections)
    threads = TOOLS[tool].threads_for(None, connections, len(cores.load))
    return Cell(
        stack=candidate.stack, scenario=SCENARIO, tool=tool, connections=connections,
        threads=threads, duration=COARSE_S if mode == Mode.CLOSED else PROBE_S,
        timeout=5 if mode == Mode.CLOSED else 2, workers=candidate.workers,
        server_threads=candidate.threads, mode=mode,
    )  # fmt: skip


def _resumable(store: Store, key: str) -> str | None:
    for run in store.runs():
        tune = RunOptions.of_run(run).tune
        if tune is not None and tune.key == key:
            return None if run.status == "complete" else run.id
    return None


def secrets_of(request: TuneRequest) -> tuple[str, ...]:
    """What no stored field or report may show: --env and --env-file values, --setup."""
    commands = tuple(c for c in (request.setup, request.reset_between) if c)
    return (*request.env.values(), *request.env_from_file.values(), *commands)


def service_env(request: TuneRequest, session: TuneSession) -> dict[str, str]:
    """The addresses of benchlab's services in the variables the user named."""
    addresses = {
        variable: session.services.dsn(service_named(name))
        for name, variable in request.with_services.items()
    }
    return {variable: dsn for variable, dsn in addresses.items() if dsn is not None}


@dataclass
class TuneResult:
    outcome: RunOutcome
    plan: TunePlan
    survivors: list[Candidate]
    checked: Replayed | None = None  # --check-answer: the stored answer's replay


@dataclass(frozen=True)
class PreparedTune:
    """The subject found and checked (a Python app imported, a command's template read, an
    endpoint's answers checked), before the machine is claimed or a store made: a mistyped
    path or a missing module costs neither."""

    subject: Subject
    reserved: dict[Service, Reserved]  # the --with services' addresses, fixed


def prepare_tune(request: TuneRequest) -> PreparedTune:
    kind = request.subject_kind
    if kind is not SubjectKind.PYTHON_APP:
        _refuse_for_others(request, kind)
    if kind is SubjectKind.ENDPOINT:
        url = parse_url(request.app)
        check_answers(url, list(request.requests))
        return PreparedTune(Endpoint(url, request.watch), {})
    if kind is SubjectKind.COMMAND:
        assert request.command is not None
        check_template(request.command, request.grid)
        _check_limits(request.target)
        cwd = request.cwd.resolve()
        owner = command_owner(request.command, request.grid, cwd, request.env_file)
        subject = CommandTemplate(
            request.command, request.grid, cwd, request.env, request.env_file,
            request.env_from_file, owner,
        )  # fmt: skip
        return PreparedTune(subject, {})
    return _prepare_app(request)


def _refuse_for_others(request: TuneRequest, kind: SubjectKind) -> None:
    """What only a Python app takes, refused for a command or an endpoint (one line)."""
    python_only = {
        "--with": bool(request.with_services), "--setup": bool(request.setup),
        "--reset-between": bool(request.reset_between), "--factory": request.factory,
        "--interface": request.interface is not None,
        "--servers": request.servers is not None, "--workers": request.workers is not None,
        "--threads": request.threads is not None, "--greenlets": request.greenlets is not None,
        "--check-answer": request.check_answer is not None,
        "--request 'WS …'": request.echo is not None,
    }  # fmt: skip
    if kind is SubjectKind.ENDPOINT:
        python_only |= {
            "--cpus/--memory": request.target.limited,
            "--env": bool(request.env),
            "--env-file": request.env_file is not None,
        }
    if kind is SubjectKind.COMMAND:
        python_only["--pid/--cgroup/--unit"] = request.watch is not None
    given = [name for name, set_ in python_only.items() if set_]
    if given:
        what = kind.words
        fix = (
            "its knobs go in --grid"
            if kind is SubjectKind.COMMAND
            else "it is measured as it runs, with the settings it was started with"
        )
        raise UserError(f"{given[0]}: not for {what} ({fix}); drop it")


def _prepare_app(request: TuneRequest) -> PreparedTune:
    spec = app_module.parse_app(request.app, request.cwd, request.factory)
    env_file = (request.env_file, request.env_from_file) if request.env_file else None
    owner = app_module.app_owner(spec, request.python, request.cwd)
    user = stack_user(owner)  # None unless benchlab is root
    # The --with services' addresses, fixed now: the app is imported with them, as its
    # candidates will be (an app that reads REDIS_URL at import must find it).
    reserved = reserve([service_named(name) for name in request.with_services], free_port)
    planned = {
        variable: planned_address(service, reserved[service])
        for name, variable in request.with_services.items()
        if variable and (service := service_named(name)) in reserved
    }
    info = app_module.probe(
        spec, request.python, request.env, request.interface, request.cwd, env_file, user,
        planned,
    )  # fmt: skip
    if request.echo is not None and info.interface != "asgi":
        raise UserError(
            f"--request '{request.echo.describe()}': {spec.factory_target} is a "
            f"{info.interface.upper()} app, and WSGI has no WebSockets; tune its ASGI app "
            "(--interface asgi if it is one), or drop the WS request"
        )
    _check_limits(request.target)
    subject = PythonApp(
        spec, info, request.servers, request.workers, request.threads, request.greenlets,
        request.python_source, owner,
    )  # fmt: skip
    return PreparedTune(subject, reserved)


def _check_limits(target: Target) -> None:
    """--cpus and --memory are the kernel's to enforce: said now if it cannot here."""
    if not target.limited:
        return
    try:
        group = create_group(limits=target.limits)
    except LimitsUnavailable as why:
        raise UserError(
            f"--cpus/--memory: {why}; the limits are set on a control group, as a container "
            "runtime does: run benchlab as root, or drop them"
        ) from None
    if group is not None:
        group.remove()


def run_tune(
    request: TuneRequest,
    store: Store,
    reporter: Reporter,
    command: str,
    say: Callable[[str], None],
    resume: bool = False,
    shared: bool = False,
    prepared: PreparedTune | None = None,
) -> TuneResult:
    prepared = prepared or prepare_tune(request)
    subject, reserved = prepared.subject, prepared.reserved
    target = request.target
    cores = target.cores(request.cores or default_cores())
    # The machine's free memory bounds the workers tried; a target's limit is the kernel's
    # to enforce, on every candidate: one that does not fit is told, not skipped.
    memory_mb = None if target.memory_mb else psutil.virtual_memory().available / 2**20
    found = subject.candidates(target.worker_cores(len(cores.server)), memory_mb)
    tune_plan = plan(
        found, request.budget_min, request.quick, request.proof_s, request.rate,
        request.check_only, request.check_answer, _scenario(request),
    )  # fmt: skip
    subject.announce(say, running_as(subject.owner))
    say(tune_plan.describe(request.budget_min))
    recipe = _recipe(request, subject, found)
    previous = _resumable(store, request.key()) if resume else None
    if resume and previous is None:
        say("nothing to resume for this tune in the store: starting afresh")
    coarse_cells = [
        _cell(c, cores, Mode.CLOSED, request.connections, _tool(request)) for c in found
    ]
    runner_plan = Plan(
        recipe=recipe, path=Path(subject.described().given), text="", cores=cores,
        cells=tuple(coarse_cells), catalogue=subject.catalogue(target.limits),
        hosts=local_only(cores),
    )  # fmt: skip
    # From the run's first row: the user's secrets and the services' passwords.
    store.keep_out(*secrets_of(request), *(r.password for r in reserved.values()))
    session = TuneSession(
        runner_plan, store, reporter,
        SessionOptions(
            command, resume=previous, deadline_s=request.budget_min * 60,
            scenarios={SCENARIO: _scenario(request)},
            secrets=secrets_of(request), run_as=subject.owner, reserved=reserved,
        ),
        _run_info(request, subject, recipe, cores, command, shared), subject.address,
    )  # fmt: skip
    app = subject.info if isinstance(subject, PythonApp) else None
    measurer = Measurer(
        session,
        MeasureOptions(
            measure_alone=True, extra_env=lambda: service_env(request, session),
            before_launch=lambda: _reset(request, app, session, say),
        ),
    )  # fmt: skip
    survivors: list[Candidate] = []  # an interrupted tune returns what it kept
    checked: Replayed | None = None
    planned = len(found) + tune_plan.survivors * tune_plan.replicates + min(1, tune_plan.proofs)
    if request.check_answer is not None:
        planned = 1  # the stored answer's replay, nothing else
    with session.running(0 if request.check_only else planned) as outcome:
        session.cells.add(coarse_cells)
        for candidate, cell in zip(found, coarse_cells, strict=True):  # what the cheapest reads
            session.cells.add_facts(cell, {CANDIDATE_SIZE: list(candidate.size)})
        session.prepare(coarse_cells)
        if request.setup and app is not None:
            _setup(request.setup, request, app, session, say)
        if request.check_answer is not None:
            checked = prove_stored(
                session, measurer, request.check_answer, found, coarse_cells, request, say
            )
        else:
            survivors = _measure(
                session, measurer, request, tune_plan, found, coarse_cells, say,
                subject.checks_slow_clients,
            )  # fmt: skip
    return TuneResult(outcome, tune_plan, survivors, checked)


def _measure(
    session: TuneSession, measurer: Measurer, request: TuneRequest, tune_plan: TunePlan,
    found: list[Candidate], coarse_cells: list[Cell], say: Callable[[str], None],
    slow_clients: bool = True,
) -> list[Candidate]:  # fmt: skip
    """The first pass (with --check-only, each candidate's answer checked instead), then the
    cheapest that holds --rate, or the capacity search and its proof; the candidates kept.
    With --check-answer, the stored answer's proof alone."""
    if request.check_only:
        check_candidates(session, measurer, coarse_cells, say)
        _refuse_if_every_check_failed(session, coarse_cells, request)
        failed = [f for c in coarse_cells if (f := session.cells.failure_of(c)) is not None]
        if failed and len(failed) == len(coarse_cells):  # none answered: nothing to deploy
            first = one_line(failed[0].reason)
            raise UserError(f"--check-only: no candidate answered; the first: {first}")
        return []
    began = session.clock.elapsed_s()
    measurer.measure(coarse_cells, 1)
    first_pass_s = session.clock.elapsed_s() - began
    _refuse_if_every_check_failed(session, coarse_cells, request)
    if request.quick:
        return []
    cores = session.plan.cores
    first_pass = [Searched(c, cell) for c, cell in zip(found, coarse_cells, strict=True)]
    if request.rate is not None:
        held = cheapest_at(
            session, measurer, first_pass, cores, request.connections, request.rate, say,
            request.proof_s,
        )  # fmt: skip
        if held is not None:
            if request.echo is None and slow_clients:  # slow clients are HTTP's
                check_answer(
                    session, measurer, held, cores, request.connections, request.rate,
                    _answer_s(session, first_pass, held.candidate), say,
                )  # fmt: skip
            return [held.candidate]
    fitted = _replan(session, tune_plan, request, first_pass_s, say)
    if fitted is None:
        return []
    return _search_and_prove(
        session, measurer, request, tune_plan, first_pass, fitted, say, slow_clients
    )


def _search_and_prove(
    session: TuneSession, measurer: Measurer, request: TuneRequest, tune_plan: TunePlan,
    first_pass: list[Searched], fitted: tuple[int, int, int, bool], say: Callable[[str], None],
    slow_clients: bool = True,
) -> list[Candidate]:  # fmt: skip
    """The capacity search of the survivors of the first pass, then the proof of the best
    and its check beside slow clients."""
    most, replicates, proofs, check = fitted
    cores = session.plan.cores
    found = [entry.candidate for entry in first_pass]
    survivors = _survivors(session, first_pass, most)
    session.reporter.extend(
        len(survivors) * replicates - tune_plan.survivors * tune_plan.replicates
    )
    say(
        f"kept {len(survivors)} of {len(found)} for the capacity search: "
        + ", ".join(c.label for c in survivors)
    )
    search_cells = [
        _cell(c, cores, Mode.SLO, request.connections, _tool(request)) for c in survivors
    ]
    session.cells.add(search_cells)
    session.prepare(search_cells)
    searched = [Searched(c, cell) for c, cell in zip(survivors, search_cells, strict=True)]
    measurer.cells.carried.update(_carried(session, first_pass, searched))
    # The search stops launching where the proof's time begins, less what a replicate
    # launched just before that takes (measured: 13 s over, and no room left for a step down).
    session.clock.set_deadline(
        request.budget_min * 60
        - proof_cost_s(request.proof_s) * proofs
        - (check_cost_s() if check else 0.0)
        - replicate_overrun_s(tune_plan.overhead_s)
    )
    measurer.measure(search_cells, replicates)
    session.clock.set_deadline(request.budget_min * 60)
    costs = {c: m.cost for c, m in _first_pass(session, first_pass).items()}
    proved = prove(
        session, measurer, searched, cores, request.connections, say, request.proof_s, costs
    )
    # It says so when the budget has no room left for it; slow clients are HTTP's.
    if proved is not None and request.echo is None and slow_clients:
        check_answer(
            session, measurer, proved[0], cores, request.connections, proved[1],
            _answer_s(session, first_pass, proved[0].candidate), say,
        )  # fmt: skip
    return survivors


def _carried(
    session: TuneSession, first_pass: list[Searched], searched: list[Searched]
) -> dict[Cell, float]:
    """What each searched candidate carried in its first pass's closed loop, at its own
    concurrency: its search's top where a closed loop at the search's connections carries
    less (capacity.search_top)."""
    coarse = {entry.candidate: entry.cell for entry in first_pass}
    carried = {}
    for entry in searched:
        trials = session.cells.trials_of(coarse[entry.candidate])
        rates = [t.successes / t.duration_s for t in trials if t.duration_s > 0]
        if rates:
            carried[entry.cell] = max(rates)
    return carried


def _answer_s(session: TuneSession, first_pass: list[Searched], candidate: Candidate) -> float:
    """How long `candidate` took to answer one request alone in the first pass (0: unknown)."""
    cell = next((e.cell for e in first_pass if e.candidate == candidate), None)
    alone = session.cells.trials_of(cell, probe="alone") if cell is not None else []
    return (alone[-1].latency_p50_ms or 0.0) / 1000 if alone else 0.0


def _setup(
    command: str, request: TuneRequest, info: AppInfo, session: TuneSession,
    say: Callable[[str], None],
) -> None:  # fmt: skip
    """--setup, once the services run: with their addresses, as the app's user."""
    run_setup(
        command, info, service_env(request, session), session.work_file("setup.log"), say,
        session.journal, session.stack_user(),
    )  # fmt: skip


def _reset(
    request: TuneRequest, info: AppInfo | None, session: TuneSession, say: Callable[[str], None]
) -> None:
    """--reset-between, before each candidate starts: as --setup runs, each time."""
    if request.reset_between and info is not None:
        run_setup(
            request.reset_between, info, service_env(request, session),
            session.work_file("reset.log"), lambda _: None, session.journal,
            session.stack_user(), option="--reset-between",
        )  # fmt: skip


def _replan(
    session: TuneSession, tune_plan: TunePlan, request: TuneRequest, took: float,
    say: Callable[[str], None],
) -> tuple[int, int, int, bool] | None:  # fmt: skip
    """The search (survivors, replicates), proof replays and check that still fit, now that the
    first pass (`took` seconds) has shown this machine's pace (a slower first pass shrinks
    them, a second replay going first; never grown past the plan shown)."""
    overhead = tune_plan.overhead_s
    planned = len(tune_plan.candidates) * coarse_cost(overhead)
    slower = max(1.0, took / planned) if planned > 0 else 1.0
    left = request.budget_min * 60 - session.clock.elapsed_s()
    proofs, check = tune_plan.proofs, tune_plan.check
    fitted = fit_search(
        tune_plan.survivors, left, proofs, slower, tune_plan.proof_s, check, overhead
    )
    full = (tune_plan.survivors, tune_plan.replicates)
    # The search first: the check, then a second replay, only in time it does not need.
    if check and (fitted is None or fitted < full):
        check = False
        say("the answer's check beside slow clients gives way to the search (it runs if time "
            "is left)")  # fmt: skip
        fitted = fit_search(
            tune_plan.survivors, left, proofs, slower, tune_plan.proof_s, overhead_s=overhead
        )
    if proofs > 1 and (fitted is None or fitted < full):
        proofs = 1
        fitted = fit_search(
            tune_plan.survivors, left, proofs, slower, tune_plan.proof_s, overhead_s=overhead
        )
    if fitted is None:
        say(
            f"the first pass took {_minutes(took)} (planned {_minutes(planned)}): "
            f"{_minutes(max(left, 0))} of the budget left is too little for a capacity search; "
            "the answer is the first pass's (raise --budget for the load it holds under the SLO)"
        )
        return None
    survivors, replicates = min(fitted[0], tune_plan.survivors), fitted[1]
    if fitted[0] == tune_plan.survivors and replicates >= tune_plan.replicates:
        return tune_plan.survivors, tune_plan.replicates, proofs, check
    say(
        f"the first pass took {_minutes(took)} (planned {_minutes(planned)}): the search "
        f"shrinks to {survivors} candidate(s), {replicates} replicate(s) each, to fit the "
        f"{_minutes(left)} left"
    )
    return survivors, replicates, proofs, check


def _run_info(
    request: TuneRequest, subject: Subject, recipe: Recipe, cores: CoreAssignment,
    command: str, shared: bool,
) -> RunInfo:  # fmt: skip
    """The tune's row in the store: what it tried, on which subject, with its own options."""
    described = subject.described()
    options = dataclasses.replace(
        RunOptions.from_recipe(recipe),
        tune=TuneOptions(
            key=request.key(), subject_kind=subject.kind, given=described.given,
            subject=described.subject, directory=described.directory,
            interface=described.interface, python=described.python,
            python_version=described.python_version, slo_p99_ms=request.slo_p99_ms,
            requests=tuple(request.shown_requests()), budget_min=request.budget_min,
            rate_unit=_scenario(request).rate_unit,
            missing_servers=described.missing_servers, quick=request.quick,
            check_only=request.check_only,
            # Whether a --setup command ran; the command itself may hold secrets.
            setup=MASK if request.setup else None,
            reset_between=MASK if request.reset_between else None,
            deploy_target=request.target, rate=request.rate,
            env=tuple(sorted(request.env)), env_file_keys=tuple(sorted(request.env_from_file)),
            app_commit=described.app_commit, app_versions=dict(described.app_versions),
            unmeasured=described.unmeasured,
        ),
    )  # fmt: skip
    return RunInfo(
        recipe_path=described.given, recipe_name=recipe.name, recipe_text=_recipe_text(request),
        question=recipe.question, command=command, git_commit=machine.git_commit(),
        server_cores=cores.server, load_cores=cores.load,
        machine={
            **machine.describe(), "shared_with_another_run": shared,
            "stacks_run_as": running_as(subject.owner),
            # How far a second tune may move its answer reads this (selfcheck --noise).
            "noise": noise_facts(),
        },
        options=options.to_json(),
    )  # fmt: skip


def _refuse_if_every_check_failed(
    session: TuneSession, cells: list[Cell], request: TuneRequest
) -> None:
    """A check that no candidate passes is the request's fault, not the servers'."""
    failures = [session.cells.failure_of(cell) for cell in cells]
    if not all(f is not None and f.kind is FailureKind.VERIFICATION for f in failures):
        return
    shown = ", ".join(f"'{r}'" for r in request.shown_requests())
    first = failures[0]
    answer = (first.detail or one_line(first.reason)) if first is not None else ""
    fix = (
        "give the path of an endpoint that sends each text message back unchanged"
        if request.echo
        else "fix the request or its check (--check-status, --check-body)"
    )
    raise UserError(
        f"--request {shown}: the check failed on every candidate ({len(cells)}): {answer}; {fix}"
    )


def _first_pass(session: TuneSession, first_pass: list[Searched]) -> dict[Candidate, FirstPass]:
    """Each candidate the first pass measured (its closed loop and cost), by candidate."""
    measured = {}
    for entry in first_pass:
        trials = session.cells.trials_of(entry.cell)
        if trials and session.cells.failure_of(entry.cell) is None:
            trial = trials[-1]
            measured[entry.candidate] = FirstPass(
                entry.cell.key, trial.throughput_rps, first_pass_cost(entry.candidate, trial)
            )
    return measured


def _survivors(session: TuneSession, first_pass: list[Searched], most: int) -> list[Candidate]:
    """The candidates the first pass's screen keeps for the search (tune_choice.screen)."""
    measured = _first_pass(session, first_pass)
    by_key = {m.key: candidate for candidate, m in measured.items()}
    return [by_key[key] for key in screen(list(measured.values()), most, session.run_options)]


def _recipe_text(request: TuneRequest) -> str:
    """The tune as a reader would redo it (shown where a run shows its recipe)."""
    what = f"--command {request.command!r}" if request.command is not None else request.app
    lines = [f"# benchlab tune {what}", f"slo_p99_ms = {request.slo_p99_ms:g}"]
    lines += [
        f"request = {r.describe()!r}  # status {r.status}, weight {r.weight}"
        for r in request.requests
    ]
    if request.echo is not None:
        lines.append(f"request = {request.echo.describe()!r}  # a WebSocket echo")
    return "\n".join(lines) + "\n"
