"""What a tune is asked (`TuneRequest`) and what its plan costs: the cost of each step
measured here, the first pass, search and proof that fit a --budget (`plan`, `fit_search`),
and the recipe and cells a tune's session runs (its load, tool, scenario), built from the
request. Nothing here starts or measures anything: driver.py runs what this plans.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from benchlab.analysis.capacity import RUN_AT_SPARE_PCT
from benchlab.analysis.target import Target
from benchlab.analysis.tune_options import SubjectKind
from benchlab.core import figures as F
from benchlab.core.errors import UserError
from benchlab.core.modes import Mode
from benchlab.core.service_kinds import DatabaseName, Provides, Service
from benchlab.core.service_kinds import named as service_named
from benchlab.http.scenarios import ECHO, Expectation, Scenario
from benchlab.load import RATE_TOOL, TOOLS, WEBSOCKET_TOOL
from benchlab.recipe import Cell, CoreAssignment, LoadProfile, Recipe, Services, Slo
from benchlab.recipe.schema import NAME_MAX, PROSE_MAX
from benchlab.system.watch import Watch
from benchlab.tune.candidates import SCENARIO, Candidate
from benchlab.tune.check_answer import StoredAnswer
from benchlab.tune.endpoint import is_url
from benchlab.tune.proof import PROOF_REPLAYS, PROOF_S, proof_cost_s
from benchlab.tune.proxy_check import check_cost_s
from benchlab.tune.requests import EchoEndpoint
from benchlab.tune.subject import Subject

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
    # --behind-proxy: served behind a proxy, so the answer is not checked for needing one
    behind_proxy: bool = False
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
        if self.behind_proxy:  # only when given: the keys of earlier tunes stay as they were
            data["behind_proxy"] = True
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
    # Whether the answer is checked beside slow clients at all (driver.checks_for_a_proxy):
    # without room for it, it still runs when the budget has time left
    answer_checked: bool = True
    check_only: bool = False  # --check-only: nothing measured
    check_answer: StoredAnswer | None = None  # --check-answer: its proof alone
    overhead_s: float = PROBE_OVERHEAD_S  # each load's start (a WebSocket echo's JVM: more)
    unit: str = F.REQ_S  # what its rates count (a WebSocket echo's: messages)

    def describe(self, budget_min: float) -> str:
        if self.check_answer is not None:
            return (
                f"plan: the stored answer ({self.check_answer.describe()}) proved again: its "
                f"command replayed for {self.proof_s} s, every window judged (about "
                f"{minutes(self.estimate_s)})"
            )
        if self.check_only:
            return (
                f"plan: {len(self.candidates)} candidates started once each and their answers "
                f"checked, nothing measured (--check-only; about {minutes(self.estimate_s)})"
            )
        first = (
            f"plan: {len(self.candidates)} candidates measured briefly "
            f"(~{minutes(len(self.candidates) * coarse_cost(self.overhead_s))})"
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
            f"{self.replicates} replicate(s) each{proof}; about {minutes(self.estimate_s)} in "
            f"all (budget {budget_min:g} min)"
        )


def minutes(seconds: float) -> str:
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
    load: Scenario | None = None, checks: bool = True,
) -> TunePlan:  # fmt: skip
    """As many survivors and replicates as the budget allows after the first pass and the
    proof (without the proof when only that fits); none with --quick or --check-only; the
    stored answer's proof alone with --check-answer. `load`: the tune's scenario (a
    WebSocket echo's loads cost more to start); `checks`: whether the answer is checked
    beside slow clients (driver.checks_for_a_proxy), kept room for only then."""
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
        if check and not checks:
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
                answer_checked=checks,
                overhead_s=overhead,
                unit=unit,
            )
    least = coarse + search_cost(1, overhead)
    raise UserError(
        f"--budget {budget_min:g}: too small for even one candidate's search: the first pass "
        f"over {len(found)} candidate(s) and one search take about {minutes(least)}; raise "
        f"--budget to {math.ceil(least / 60)} or narrow them (--servers, --workers, --threads)"
    )


def recipe_name(shown: str) -> str:
    """`tune SUBJECT`, a name as every recipe's is (one line of at most NAME_MAX): a subject
    too long for it (a command, a URL) keeps its head and a digest of the whole, so that
    `--resume` and history still tell two apart."""
    return "tune " + _bounded(shown, NAME_MAX - len("tune "))


def _bounded(shown: str, most: int) -> str:
    text = " ".join(shown.split())  # a command's tabs and newlines: one line
    if len(text) <= most:
        return text
    digest = hashlib.sha256(shown.encode()).hexdigest()[:8]
    return f"{text[: most - len(digest) - 3]}… #{digest}"


def tune_recipe(request: TuneRequest, subject: Subject, found: list[Candidate]) -> Recipe:
    """What the runner reads of a run (its load, trials, SLO, services), for the tune's own
    candidates: the stacks of its catalogue."""
    database = next(iter(request.services(Provides.DATABASE)), Service.POSTGRESQL)
    return Recipe(
        name=recipe_name(subject.shown),
        question=(
            f"Which candidate holds the most load for "
            f"{_bounded(subject.shown, PROSE_MAX // 2)} with p99 under {request.slo_p99_ms:g} ms?"
        ),
        stacks=list(dict.fromkeys(c.stack for c in found)),
        scenarios=[SCENARIO],
        load=[
            LoadProfile(
                tool=load_tool(request),
                connections=request.connections,
                duration=PROBE_S,
                timeout=2,
            )
        ],
        trials=REPLICATES,
        warmup=1,
        slo=Slo(p99_ms=request.slo_p99_ms, sustain_s=CONFIRM_S),
        # A database's recipe name is a DatabaseName (tests/test_service_kinds.py holds it).
        services=Services(database=cast(DatabaseName, database.recipe_name)),
    )


def tune_scenario(request: TuneRequest) -> Scenario:
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


def load_tool(request: TuneRequest) -> str:
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


def candidate_cell(
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


def recipe_text(request: TuneRequest) -> str:
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
