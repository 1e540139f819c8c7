"""Runs without a process: a stand-in executor (runner/executor.py) whose stacks answer and
whose trials return the figures a test sets, and a helper that runs a recipe through the
real `run_recipe` — Session, Measurer, CellRunner, take_trial, a real Store — with it.

What a test may set, per stack: its figures per scenario (throughput, latency, server CPU,
errors), a start that fails, a death during its Nth launch's trial, a wrong answer for a
scenario, a load tool that fails on a scenario, a Ctrl-C. Time is the executor's own: a start takes
`START_S`, a trial its duration, so a budget is spent in simulated seconds.
"""

from __future__ import annotations

import dataclasses
import io
import json
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rich.console import Console

from benchlab.analysis.summary import summarise
from benchlab.conformance.check import Conformance, Failure, ShapeResult
from benchlab.conformance.shapes import CATALOGUE_SHAPES, ShapeSet
from benchlab.core.errors import LoadToolError
from benchlab.core.request_errors import Errors
from benchlab.hosts.base import Placement
from benchlab.hosts.generators import Generated
from benchlab.http.answers import ReadWorlds
from benchlab.http.scenarios import Expectation
from benchlab.http.wire import Reply, Wire
from benchlab.http.ws_verify import WsCounters
from benchlab.load import LoadRequest
from benchlab.load.base import LoadTool
from benchlab.load.jmeter_plans import step_timing
from benchlab.load.live import Follow
from benchlab.load.result import Latency, LoadResult, LoadShare
from benchlab.load.ws_requests import (
    BroadcastRequest,
    BroadcastResult,
    EchoRequest,
    EchoResult,
    HoldRequest,
    HoldResult,
    HoldStep,
)
from benchlab.measure.monitor import CoreSteal, TreeUsage
from benchlab.measure.server_counters import CounterSource, ThreadTimes
from benchlab.recipe import build_plan, load_recipe
from benchlab.report.jsonfile import render_json
from benchlab.report.progress import LineReporter
from benchlab.report.stream import Reporters
from benchlab.resilience import drain as drain_check
from benchlab.resilience import slow_clients as slow_check
from benchlab.resilience.drain import Drain
from benchlab.resilience.slow_clients import SlowClients, SlowResult, Trial
from benchlab.runner import RunOutcome, SessionOptions, run_recipe
from benchlab.runner.executor import CheckedStack, ServerProcess, Started, StartOrder, TrialMonitors
from benchlab.stacks import CATALOGUE, Stack
from benchlab.store import CellRecord, Store, TrialRecord
from benchlab.system.process import ProcessRegistry
from tests.stored_runs import MACHINE

START_S = 2.0  # simulated seconds a start takes
DRAINS = Drain("SIGTERM", 20, None, 40, 0, 60, 0, 60, 0, 0.3)  # what a draining stack does
CONFORM_S = 5.0  # and a conformance check
JVM_START_S = 1.0  # and JMeter's start before each WebSocket load
FIRST_PORT = 20_000
COUNTERS_PORT_OFFSET = 10_000  # a launch's counters are served this far above its port


@dataclass(frozen=True)
class Figures:
    """One trial's figures, as the load tool and the monitors report them."""

    throughput_rps: float = 10_000.0
    latency_p50_ms: float = 1.0  # the other percentiles follow from it
    cpu_pct: float = 100.0  # the server's, 100 = one core
    errors: int = 0  # non-2xx answers
    # The server's own count (a stack with Stack.counters): its threads' GIL wait ÷ busy time.
    gil_wait_share: float | None = None


@dataclass(frozen=True)
class WsFigures:
    """One launch's WebSocket figures, as JMeter and the server's counters would report
    them: the hold's connections and memory, the echo's p99 (held up to `echo_capacity`
    messages a second, ten times slower past it), the broadcast's p99."""

    held: int = 4_000  # the hold stops here (refused past it), or at its last step
    rss_per_1000_mb: float = 20.0
    echo_p99_ms: float = 2.0
    echo_capacity: float = 5_000.0
    broadcast_p99_ms: float = 5.0
    load_cpu_pct: float = 40.0
    late_share: float = 0.0
    dropped_echoes: int = 0  # echoes the server counts sent that the tool never read


@dataclass(frozen=True)
class FakeStack:
    """What one stack does in a run; `figures` by scenario (any other: `Figures()`), or a
    sequence of them its launches take in turn (the first launch the first)."""

    figures: Mapping[str, Figures | Sequence[Figures]] = field(default_factory=dict)
    start_problem: str | None = None  # its start fails with this
    dies_at_launch: int | None = None  # 1 = its first launch: it dies during a trial
    wrong: Mapping[str, str] = field(default_factory=dict)  # scenario → verification problem
    load_fails: frozenset[str] = frozenset()  # scenarios whose load tool fails
    interrupted_at_launch: int | None = None  # Ctrl-C during its Nth launch's first load
    # A load's whole result, made by the test (a server model): its figures are then unused.
    result_at: Callable[[LoadRequest], LoadResult] | None = None
    # A conformance check (conform = true) finds this shape answered wrong, split after
    # byte 7; None: every shape right.
    misparses: str | None = None
    # What its resilience checks find (drain, slow_clients): a check that fails says this.
    stopped: Drain = field(default_factory=lambda: DRAINS)
    slowed: SlowClients | None = None  # None: unharmed by any mode asked
    check_fails: str | None = None
    interrupts_check: bool = False  # Ctrl-C during its first resilience check
    dies_in_check: bool = False  # its slow-client check leaves it dead
    start_fails_at: int | None = None  # only its Nth launch fails to start (1 = the first)
    # Its WebSocket figures, or a sequence its launches take in turn.
    ws: WsFigures | Sequence[WsFigures] = field(default_factory=WsFigures)

    def ws_for(self, launch: int) -> WsFigures:
        if isinstance(self.ws, WsFigures):
            return self.ws
        return self.ws[(launch - 1) % len(self.ws)]

    def figures_for(self, scenario: str, launch: int) -> Figures:
        figures = self.figures.get(scenario, Figures())
        if isinstance(figures, Figures):
            return figures
        return figures[(launch - 1) % len(figures)]


@dataclass
class FakeServer:
    """A started stack: alive until stopped, or until it dies as its script says."""

    stack: str
    launch: int  # 1 = the stack's first launch
    port: int
    log: list[str] = field(default_factory=lambda: ["started"])
    returncode: int | None = None
    last_usage: TreeUsage | None = None
    thread_times: ThreadTimes = field(default_factory=lambda: ThreadTimes(0, 0))  # cumulative
    ws_counts: WsCounters = field(default_factory=lambda: WsCounters(0, 0, 0))  # cumulative

    def alive(self) -> bool:
        return self.returncode is None

    def log_tail(self, lines: int = 5) -> str:
        return "\n".join(self.log[-lines:])

    def oom_kills(self) -> int:
        return 0  # the stand-in has no memory limit


@dataclass(frozen=True)
class Loaded:
    """One load the fake generated: which round of which stack, on what, for how long."""

    stack: str
    launch: int
    scenario: str
    rate: float | None
    duration_s: float
    at_s: float  # the executor's clock when it started


@dataclass
class _FakeMonitors:
    server: FakeServer

    def count_until(self, deadline: float) -> None:
        pass

    def usage(self) -> TreeUsage:
        assert self.server.last_usage is not None
        return self.server.last_usage

    def steal(self) -> CoreSteal:
        return CoreSteal(0.0, 0.0)

    def peaks(self) -> Mapping[str, int | None]:
        return {}

    def errors(self) -> Mapping[str, str]:
        return {}


def scenario_of(url: str) -> str:
    """The scenario a request is for, as these tests' scenarios are served: /json, /plaintext."""
    return urlsplit(url).path.strip("/").split("/")[0]


class FakeExecutor:
    """runner.executor.Executor in process: its three parts (launch, measure, observe) over
    one world made from each stack's FakeStack: the servers started, the loads sent, the
    clock."""

    def __init__(self, stacks: Mapping[str, FakeStack]) -> None:
        self.stacks = stacks
        self.now = 0.0
        self.servers: dict[int, FakeServer] = {}  # by port
        self.launches: list[tuple[str, int]] = []  # (stack, its launch), in order
        self.loads: list[Loaded] = []
        self.resilience_checked: list[tuple[str, int, int]] = []  # stack, launch, port
        self.checks: list[CheckedStack] = []  # what each resilience check was asked
        self.conformed: list[ShapeSet] = []  # what each conformance check sent
        self.launch = FakeLaunch(self)
        self.measure = FakeMeasure(self)
        self.observe = FakeObserve(self)

    def running(self) -> list[FakeServer]:
        """The servers started and not stopped (none, after a run)."""
        return [s for s in self.servers.values() if s.alive()]


@dataclass
class FakeLaunch:
    world: FakeExecutor

    def start(self, registry: ProcessRegistry, launch: StartOrder) -> Started:
        world, name = self.world, launch.stack.name
        count = sum(1 for stack, _ in world.launches if stack == name) + 1
        world.launches.append((name, count))
        server = FakeServer(name, count, FIRST_PORT + len(world.servers))
        world.servers[server.port] = server
        world.now += START_S
        fake = world.stacks[name]
        problem = fake.start_problem or (
            "exited during start" if fake.start_fails_at == count else None
        )
        if problem is not None:
            server.returncode, server.log = 1, ["boom: cannot start"]
        counters_port = COUNTERS_PORT_OFFSET + server.port if launch.stack.counters else None
        return Started(server, server.port, problem, START_S, counters_port)

    def stop(self, registry: ProcessRegistry, server: ServerProcess, grace: float) -> None:
        assert isinstance(server, FakeServer)
        if server.returncode is None:
            server.returncode = 0


@dataclass
class FakeMeasure:
    world: FakeExecutor

    def generate(
        self,
        tool: LoadTool,
        request: LoadRequest,
        places: list[Placement],
        registry: ProcessRegistry,
        workdir: Path,
        live: Follow | None = None,
    ) -> Generated:
        world = self.world
        server = world.servers[urlsplit(request.url).port or 0]
        assert server.alive(), "loaded a stopped stack"
        scenario, script = scenario_of(request.url), world.stacks[server.stack]
        world.loads.append(
            Loaded(
                server.stack, server.launch, scenario, request.rate, request.duration_s, world.now
            )
        )
        world.now += request.duration_s
        if script.interrupted_at_launch == server.launch:
            raise KeyboardInterrupt
        if scenario in script.load_fails:
            raise LoadToolError(f"{request.tool} exited with code 1: cannot connect")
        if script.dies_at_launch == server.launch:
            server.returncode, server.log = -9, [*server.log, "Killed"]
        figures = script.figures_for(scenario, server.launch)
        if figures.gil_wait_share is not None:
            busy = request.duration_s * 1e6  # one thread busy the whole trial
            before = server.thread_times
            server.thread_times = ThreadTimes(
                round(before.gil_wait_us + figures.gil_wait_share * busy),
                round(before.busy_us + busy),
            )
        result = script.result_at(request) if script.result_at else _result(request, figures)
        server.last_usage = TreeUsage(
            figures.cpu_pct, 40.0, 2, figures.cpu_pct / 100 * request.duration_s, "fake"
        )
        share = LoadShare(
            "local", "local", request.cores, request.connections, request.rate, result
        )
        return Generated(result, [share])

    @contextmanager
    def monitors(
        self,
        server: ServerProcess,
        steal_cores: tuple[tuple[int, ...], tuple[int, ...]],
        probes: dict[str, Callable[[], int] | None],
    ) -> Iterator[TrialMonitors]:
        assert isinstance(server, FakeServer)
        yield _FakeMonitors(server)

    def thread_times(self, address: str, port: int, source: CounterSource) -> ThreadTimes | None:
        server = self.world.servers[port - COUNTERS_PORT_OFFSET]
        return server.thread_times if server.alive() else None

    # --- WebSocket: JMeter's loads, answered from the stack's WsFigures -----------------

    def _ws_server(self, port: int) -> tuple[FakeServer, WsFigures]:
        server = self.world.servers[port]
        assert server.alive(), "loaded a stopped stack"
        figures = self.world.stacks[server.stack].ws_for(server.launch)
        server.last_usage = TreeUsage(50.0, 40.0, 1, 1.0, "fake")
        return server, figures

    def _ws_loaded(self, server: FakeServer, scenario: str, rate: float | None, s: float) -> None:
        self.world.loads.append(
            Loaded(server.stack, server.launch, scenario, rate, s, self.world.now)
        )
        self.world.now += s + JVM_START_S

    def ws_echo(self, registry: ProcessRegistry, request: EchoRequest, workdir: Path) -> EchoResult:
        server, figures = self._ws_server(request.endpoint.port)
        seconds = request.duration_s
        self._ws_loaded(server, "ws-echo", None if request.closed else request.rate,
                        seconds + request.warmup_s)  # fmt: skip
        rate = figures.echo_capacity if request.closed else request.paced_rate
        held = request.closed or rate <= figures.echo_capacity
        p99 = figures.echo_p99_ms if held else 10 * figures.echo_p99_ms
        sent = round(rate * (seconds + request.warmup_s))
        timed = round(rate * seconds)
        answered = sent - figures.dropped_echoes
        before = server.ws_counts
        server.ws_counts = WsCounters(before.frames_in + sent, before.frames_out + sent,
                                      before.deliveries)  # fmt: skip
        return EchoResult(
            sent, answered, timed, timed, 0, 0, seconds, request.rate, p99 / 2, p99, p99 / 2,
            2 * p99, 0.5, figures.late_share, None, p99 / 2, p99 / 2, figures.load_cpu_pct,
        )  # fmt: skip

    def ws_broadcast(
        self, registry: ProcessRegistry, request: BroadcastRequest, workdir: Path
    ) -> BroadcastResult:
        server, figures = self._ws_server(request.endpoint.port)
        rounds = request.rounds + request.warmup_rounds
        joins = request.receivers / request.join_rate
        self._ws_loaded(server, "ws-broadcast", None, joins + rounds * request.interval_ms / 1000)
        deliveries = rounds * request.receivers
        before = server.ws_counts
        server.ws_counts = WsCounters(before.frames_in + rounds, before.frames_out,
                                      before.deliveries + deliveries)  # fmt: skip
        p99 = figures.broadcast_p99_ms
        return BroadcastResult(
            rounds, request.receivers, deliveries, 0, 0, [p99 / 2] * request.rounds, p99 / 2,
            p99, figures.load_cpu_pct,
        )  # fmt: skip

    def ws_hold(
        self,
        registry: ProcessRegistry,
        request: HoldRequest,
        workdir: Path,
        server: ServerProcess,
        rss_limit_mb: float,
    ) -> HoldResult:
        assert isinstance(server, FakeServer)
        server, figures = self._ws_server(server.port)
        steps = []
        for index in range(1, request.steps + 1):
            asked = index * request.step
            opened = min(asked, figures.held)
            rss = 40.0 + figures.rss_per_1000_mb * opened / 1000
            steps.append(HoldStep(asked, opened, asked - opened, opened, rss))
            if opened < asked:
                break
        # Each step as JMeter times it: its ramp and settle in whole seconds.
        self._ws_loaded(server, "ws-hold", None, len(steps) * step_timing(request)[1])
        stopped = "refused" if steps[-1].refused else "steps"
        return HoldResult(steps, stopped, steps[-1].opened, figures.rss_per_1000_mb,
                          figures.load_cpu_pct)  # fmt: skip

    def drain(self, registry: ProcessRegistry, checked: CheckedStack) -> Drain:
        server = self._checked_server(checked)
        self.world.now += drain_check.expected_s()
        server.returncode = 0
        return self.world.stacks[server.stack].stopped

    def slow_clients(
        self, registry: ProcessRegistry, checked: CheckedStack, modes: list[str], rounds: int
    ) -> SlowClients:
        server = self._checked_server(checked)
        self.world.now += slow_check.expected_s(len(modes), rounds)
        if self.world.stacks[server.stack].dies_in_check:
            server.returncode, server.log = -9, ["killed by the kernel"]
        slowed = self.world.stacks[server.stack].slowed
        if slowed is not None:
            return slowed
        calm = Trial(2.0, 100.0, 0.0)
        results = [SlowResult(m, (calm,) * rounds, (calm,) * rounds) for m in modes]
        return SlowClients(32, 100, tuple(results))

    def _checked_server(self, checked: CheckedStack) -> FakeServer:
        server = checked.server
        assert isinstance(server, FakeServer) and server.alive(), "checked a stopped stack"
        self.world.resilience_checked.append((server.stack, server.launch, checked.port))
        self.world.checks.append(checked)
        stack = self.world.stacks[server.stack]
        if stack.interrupts_check:
            raise KeyboardInterrupt
        if stack.check_fails is not None:
            raise LoadToolError(stack.check_fails)
        return server


@dataclass
class FakeObserve:
    world: FakeExecutor

    def monotonic(self) -> float:
        return self.world.now

    def machine(self) -> dict[str, Any]:
        return dict(MACHINE)  # the facts tests/stored_runs.py's runs carry: nothing asked

    def commit(self) -> str | None:
        return "0123456789abcdef"

    def keeps_alive(self, address: str, port: int, path: str) -> bool:
        return True

    def conform(self, address: str, port: int, shapes: ShapeSet = CATALOGUE_SHAPES) -> Conformance:
        server = self.world.servers[port]
        assert server.alive(), "checked a stopped stack"
        self.world.now += CONFORM_S
        self.world.conformed.append(shapes)
        wrong = self.world.stacks[server.stack].misparses
        return Conformance(
            tuple(
                ShapeResult(
                    shape, 1, (Failure(7, "a wrong answer"),) if shape.name == wrong else ()
                )
                for shape in shapes.shapes
            )
        )

    def verify(
        self,
        address: str,
        port: int,
        expectations: list[Expectation],
        timeout: float,
        read_worlds: ReadWorlds | None,
        wire: Wire,
    ) -> str | None:
        server = self.world.servers[port]
        assert server.alive(), "verified a stopped stack"
        return self.world.stacks[server.stack].wrong.get(scenario_of(expectations[0].path))

    def exchange(
        self, address: str, port: int, asked: Expectation, wire: Wire, timeout: float
    ) -> Reply:
        return Reply(200, {}, asked.body or b"", "HTTP/1.1", None)

    def verify_websocket(self, address: str, port: int, echo_path: str | None = None) -> str | None:
        server = self.world.servers[port]
        assert server.alive(), "verified a stopped stack"
        return self.world.stacks[server.stack].wrong.get("websocket")

    def ws_counters(self, address: str, port: int) -> WsCounters:
        return self.world.servers[port].ws_counts


def _result(request: LoadRequest, figures: Figures) -> LoadResult:
    rps = figures.throughput_rps
    if request.rate is not None:
        rps = min(rps, request.rate)
    p50 = figures.latency_p50_ms
    percentiles = {"50": p50, "90": 2 * p50, "99": 3 * p50, "99.9": 4 * p50}
    latency = Latency(p50 / 2, p50, p50 / 4, p50, 2 * p50, 3 * p50, 4 * p50, 5 * p50, percentiles)
    requests = round(rps * request.duration_s)
    return LoadResult(
        tool=request.tool,
        requests=requests,
        duration_s=request.duration_s,
        bytes=requests * 100,
        latency=latency,
        errors=Errors(non_2xx=figures.errors),
        load_cpu_pct=50.0,
        target_rate=request.rate,
        sent_rate=rps if request.rate is not None else None,
    )


def runnable_catalogue(names: list[str]) -> dict[str, Stack]:
    """The catalogue's stacks as they are, but with nothing to build or find here (a stack
    the catalogue does not know is made from gin's entry, under its own name)."""
    catalogue = dict(CATALOGUE)
    for name in names:
        known = CATALOGUE.get(name) or dataclasses.replace(CATALOGUE["gin"], name=name)
        catalogue[name] = dataclasses.replace(
            known, build=None, needs_programs=(), needs_files=(), needs_modules=()
        )
    return catalogue


@dataclass(frozen=True)
class InProcessRun:
    outcome: RunOutcome
    store: Store
    output: str  # what the line reporter printed

    @property
    def run_id(self) -> str:
        return self.outcome.run_id

    def cells(self) -> dict[tuple[str, str], CellRecord]:
        """The stored cells by (stack, scenario)."""
        return {(c.stack, c.scenario): c for c in self.store.cells(self.run_id)}

    def trials(self, stack: str, scenario: str) -> list[TrialRecord]:
        return self.store.trials(self.cells()[(stack, scenario)].id)

    def report(self) -> dict:
        """The run's JSON report, as `benchlab report -f json` renders it."""
        return json.loads(render_json(summarise(self.store, self.run_id)))


def run_inprocess(
    directory: Path,
    recipe_toml: str,
    executor: FakeExecutor,
    *,
    deadline_s: float | None = None,
    catalogue: Mapping[str, Stack] | None = None,
    command: str = "benchlab run recipe.toml",
    resume: str | None = None,
    reporter: Any = None,
) -> InProcessRun:
    """The recipe (TOML text) run by the real runner on `executor`, stored in `directory`.
    Its stacks may be names of the test's own (made from gin's entry)."""
    path = directory / "recipe.toml"
    path.write_text(textwrap.dedent(recipe_toml))
    catalogue = catalogue or runnable_catalogue(list(executor.stacks))
    store = Store(directory / "results.db")
    output = io.StringIO()
    options = SessionOptions(command, deadline_s=deadline_s, executor=executor, resume=resume)
    lines = LineReporter(Console(file=output, width=200))
    reporter = lines if reporter is None else Reporters(lines, reporter)
    recipe, text = load_recipe(path, catalogue)
    outcome = run_recipe(build_plan(path, recipe, text, catalogue), store, reporter, options)
    return InProcessRun(outcome, store, output.getvalue())
