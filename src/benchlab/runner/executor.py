"""What a run does outside its own process, by concern: launch (start and stop a stack),
measure (load it and watch it meanwhile, stop it under load, slow clients) and observe (ask
it over the wire, check its parsing, tell the time, describe the machine). A Session holds
one Executor; the real one (`RealExecutor`, the default) does each for real, and a stand-in
(the tests' tests/inprocess.py) lets the runner's scheduling, stopping and failure handling
run in process, as a scheduler is tested with a mock executor."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from benchlab.conformance.check import Conformance, check_server
from benchlab.conformance.shapes import CATALOGUE_SHAPES, ShapeSet
from benchlab.hosts import machine
from benchlab.hosts.base import Placement
from benchlab.hosts.generators import Generated, run_generators
from benchlab.http.answers import ReadWorlds
from benchlab.http.scenarios import Expectation
from benchlab.http.tls import TlsFiles
from benchlab.http.verify import keeps_alive, verify
from benchlab.http.wire import Reply, Wire, exchange
from benchlab.http.ws_verify import WsCounters, read_counters, verify_websocket
from benchlab.load import LoadRequest
from benchlab.load.base import LoadTool
from benchlab.load.live import Follow
from benchlab.load.ws_requests import (
    BroadcastRequest,
    BroadcastResult,
    EchoRequest,
    EchoResult,
    HoldRequest,
    HoldResult,
)
from benchlab.measure.monitor import (
    CoreSteal,
    PeakSampler,
    ProcessTreeSampler,
    StealSampler,
    TreeUsage,
)
from benchlab.measure.server_counters import CounterSource, ThreadTimes
from benchlab.resilience.drain import Drain, stop_under_load
from benchlab.resilience.slow_clients import SlowClients, with_and_without
from benchlab.resilience.target import CheckTarget
from benchlab.runner import ws_load
from benchlab.runner.failure import FailureKind
from benchlab.runner.launch import Attached, ServerPlace, start_answering
from benchlab.stacks import Stack
from benchlab.system.process import ManagedProcess, ProcessRegistry


class ServerProcess(Protocol):
    """A launched stack, as the runner sees it."""

    @property
    def returncode(self) -> int | None: ...
    def alive(self) -> bool: ...
    def log_tail(self, lines: int = 5) -> str: ...
    def oom_kills(self) -> int: ...


@dataclass(frozen=True)
class StartOrder:
    """One start of a stack: what it runs, where, and how a client reaches it."""

    stack: Stack
    place: ServerPlace
    launch: tuple[int, int | None]  # workers, threads
    workdir: Path
    env: dict[str, str]
    timeout: float
    on_port_taken: Callable[[int], None]
    wire: Wire
    tls: TlsFiles | None
    user: str | None


@dataclass(frozen=True)
class Started:
    """A started stack: its process, where clients reach it (`port`: nginx's when nginx is in
    front of it), its own port and its counters' port, or why it does not answer."""

    server: ServerProcess
    port: int
    problem: str | None = None  # why it does not answer; None: it does
    seconds: float = 0.0  # from its start until it answered
    counters_port: int | None = None  # where it serves its own counters (Stack.counters)
    own_port: int | None = None  # nginx in front of it: the stack's own port
    failed_as: FailureKind = FailureKind.START  # the problem: it did not start, or not fit

    @property
    def proxied(self) -> bool:
        return self.own_port is not None

    @property
    def stack_port(self) -> int:
        """The stack's own port (nginx's in front of it aside)."""
        return self.port if self.own_port is None else self.own_port


@dataclass(frozen=True)
class CheckedStack:
    """A started stack a resilience check loads (and, for drain, stops): the check's files
    go in `workdir`, its load on `load_cores`."""

    stack: Stack
    server: ServerProcess
    address: str
    port: int  # the stack's own, or nginx's in front of it
    workdir: Path
    load_cores: tuple[int, ...]
    requests: tuple[Expectation, ...] = ()  # a user's app's (tune); () : GET /plaintext
    rate: float | None = None  # the slow-client check's rate; None: its own
    serves_read_file: bool = False  # it serves the slow readers' file (resilience.target)


class TrialMonitors(Protocol):
    """What watches the server during one trial; read once the trial's load has ended."""

    def count_until(self, deadline: float) -> None: ...
    def usage(self) -> TreeUsage | None:
        """The server's CPU and memory in the trial; None: not counted (a running server
        benchlab did not start and was given no pid or control group of)."""
        ...

    def steal(self) -> CoreSteal: ...
    def peaks(self) -> Mapping[str, int | None]: ...
    def errors(self) -> Mapping[str, str]: ...


class Launching(Protocol):
    """Starting and stopping a stack."""

    def start(self, registry: ProcessRegistry, launch: StartOrder) -> Started: ...
    def stop(self, registry: ProcessRegistry, server: ServerProcess, grace: float) -> None: ...


class Measuring(Protocol):
    """Loading a started stack, and what watches it meanwhile."""

    def generate(
        self,
        tool: LoadTool,
        request: LoadRequest,
        places: list[Placement],
        registry: ProcessRegistry,
        workdir: Path,
        live: Follow | None = None,
    ) -> Generated: ...
    def monitors(
        self,
        server: ServerProcess,
        steal_cores: tuple[tuple[int, ...], tuple[int, ...]],
        probes: dict[str, Callable[[], int] | None],
    ) -> AbstractContextManager[TrialMonitors]: ...
    def thread_times(self, address: str, port: int, source: CounterSource) -> ThreadTimes | None:
        """The server's own counters of its threads' time, now (None: not answered)."""
        ...

    # --- WebSocket (runner/websocket.py) ---
    def ws_echo(
        self, registry: ProcessRegistry, request: EchoRequest, workdir: Path
    ) -> EchoResult: ...
    def ws_broadcast(
        self, registry: ProcessRegistry, request: BroadcastRequest, workdir: Path
    ) -> BroadcastResult: ...
    def ws_hold(
        self,
        registry: ProcessRegistry,
        request: HoldRequest,
        workdir: Path,
        server: ServerProcess,
        rss_limit_mb: float,
    ) -> HoldResult: ...

    def drain(self, registry: ProcessRegistry, checked: CheckedStack) -> Drain:
        """Stop the stack under load (one that hangs is still running when this returns)."""
        ...

    def slow_clients(
        self, registry: ProcessRegistry, checked: CheckedStack, modes: list[str], rounds: int
    ) -> SlowClients: ...


class Observing(Protocol):
    """Asking a stack over the wire without load; the clock and the machine."""

    def monotonic(self) -> float: ...
    def machine(self) -> dict[str, Any]:
        """The facts of this machine a result depends on (CPU, kernel, versions)."""
        ...

    def commit(self) -> str | None:
        """benchlab's own commit ("+dirty" when changed), None outside a repository."""
        ...

    def keeps_alive(self, address: str, port: int, path: str) -> bool: ...
    def conform(self, address: str, port: int, shapes: ShapeSet = CATALOGUE_SHAPES) -> Conformance:
        """Every shape, whole and split at each byte (a user's app: `shapes_for` its request)."""
        ...

    def verify(
        self,
        address: str,
        port: int,
        expectations: list[Expectation],
        timeout: float,
        read_worlds: ReadWorlds | None,
        wire: Wire,
    ) -> str | None: ...
    def exchange(
        self, address: str, port: int, asked: Expectation, wire: Wire, timeout: float
    ) -> Reply: ...
    def verify_websocket(
        self, address: str, port: int, echo_path: str | None = None
    ) -> str | None: ...
    def ws_counters(self, address: str, port: int) -> WsCounters: ...


class Executor(Protocol):
    """What a run does outside its process, by concern: a new feature adds its call to one."""

    @property
    def launch(self) -> Launching: ...
    @property
    def measure(self) -> Measuring: ...
    @property
    def observe(self) -> Observing: ...


@dataclass(frozen=True)
class _Samplers:
    tree: ProcessTreeSampler | None
    steal_sampler: StealSampler
    peak_sampler: PeakSampler

    def count_until(self, deadline: float) -> None:
        self.peak_sampler.count_until(deadline)

    def usage(self) -> TreeUsage | None:
        return self.tree.usage() if self.tree is not None else None

    def steal(self) -> CoreSteal:
        return self.steal_sampler.result

    def peaks(self) -> Mapping[str, int | None]:
        return self.peak_sampler.peaks

    def errors(self) -> Mapping[str, str]:
        return self.peak_sampler.errors


def _process(server: ServerProcess) -> ManagedProcess:
    assert isinstance(server, ManagedProcess), "the real executor started it"
    return server


def _counted(server: ServerProcess) -> ManagedProcess | Attached:
    assert isinstance(server, ManagedProcess | Attached), "the real executor started it"
    return server


def _target(registry: ProcessRegistry, checked: CheckedStack) -> CheckTarget:
    return CheckTarget(
        checked.stack, _process(checked.server), checked.address, checked.port, registry,
        checked.workdir, checked.load_cores, checked.requests, checked.rate,
        checked.serves_read_file,
    )  # fmt: skip


class RealLaunch:
    """Real processes, started pinned as their user."""

    def start(self, registry: ProcessRegistry, launch: StartOrder) -> Started:
        running = launch.stack.running
        if running is not None:  # already running: nothing to start
            return Started(Attached(running), running.port, None, 0.0)
        started = start_answering(
            registry, launch.stack, launch.place, launch.launch, launch.workdir, launch.env,
            launch.timeout, launch.on_port_taken, launch.wire, launch.tls, launch.user,
        )  # fmt: skip
        return Started(
            started.server, started.ctx.port, started.problem, started.seconds,
            started.ctx.counters_port,
        )  # fmt: skip

    def stop(self, registry: ProcessRegistry, server: ServerProcess, grace: float) -> None:
        if isinstance(server, Attached):
            return  # not benchlab's to stop
        registry.stop(_process(server), grace=grace)


class RealMeasure:
    """Real load tools and samplers."""

    def generate(
        self,
        tool: LoadTool,
        request: LoadRequest,
        places: list[Placement],
        registry: ProcessRegistry,
        workdir: Path,
        live: Follow | None = None,
    ) -> Generated:
        return run_generators(tool, request, places, registry, workdir, live=live)

    @contextlib.contextmanager
    def monitors(
        self,
        server: ServerProcess,
        steal_cores: tuple[tuple[int, ...], tuple[int, ...]],
        probes: dict[str, Callable[[], int] | None],
    ) -> Iterator[TrialMonitors]:
        counted = not isinstance(server, Attached) or server.counted
        tree_sampler = ProcessTreeSampler(_counted(server)) if counted else None
        with (
            tree_sampler or contextlib.nullcontext() as tree,
            StealSampler(*steal_cores) as steal,
            PeakSampler(probes) as peaks,
        ):
            yield _Samplers(tree, steal, peaks)

    def thread_times(self, address: str, port: int, source: CounterSource) -> ThreadTimes | None:
        return source.read(address, port)

    def ws_echo(self, registry: ProcessRegistry, request: EchoRequest, workdir: Path) -> EchoResult:
        return ws_load.run_echo(registry, request, workdir)

    def ws_broadcast(
        self, registry: ProcessRegistry, request: BroadcastRequest, workdir: Path
    ) -> BroadcastResult:
        return ws_load.run_broadcast(registry, request, workdir)

    def ws_hold(
        self,
        registry: ProcessRegistry,
        request: HoldRequest,
        workdir: Path,
        server: ServerProcess,
        rss_limit_mb: float,
    ) -> HoldResult:
        return ws_load.run_hold(registry, request, workdir, _process(server), rss_limit_mb)

    def drain(self, registry: ProcessRegistry, checked: CheckedStack) -> Drain:
        return stop_under_load(_target(registry, checked))

    def slow_clients(
        self, registry: ProcessRegistry, checked: CheckedStack, modes: list[str], rounds: int
    ) -> SlowClients:
        return with_and_without(_target(registry, checked), modes, rounds)


class RealObserve:
    """Real sockets, the machine's clock and its facts."""

    def monotonic(self) -> float:
        return time.monotonic()

    def machine(self) -> dict[str, Any]:
        return machine.describe()

    def commit(self) -> str | None:
        return machine.git_commit()

    def keeps_alive(self, address: str, port: int, path: str) -> bool:
        return keeps_alive(address, port, path)

    def conform(self, address: str, port: int, shapes: ShapeSet = CATALOGUE_SHAPES) -> Conformance:
        return check_server(address, port, shapes)

    def verify(
        self,
        address: str,
        port: int,
        expectations: list[Expectation],
        timeout: float,
        read_worlds: ReadWorlds | None,
        wire: Wire,
    ) -> str | None:
        return verify(
            address, port, expectations, timeout=timeout, read_worlds=read_worlds, wire=wire
        )

    def exchange(
        self, address: str, port: int, asked: Expectation, wire: Wire, timeout: float
    ) -> Reply:
        return exchange(
            address, port, asked.method, asked.path,
            headers=asked.headers, body=asked.request_body, wire=wire, timeout=timeout,
        )  # fmt: skip

    def verify_websocket(self, address: str, port: int, echo_path: str | None = None) -> str | None:
        return verify_websocket(address, port, echo_path=echo_path)

    def ws_counters(self, address: str, port: int) -> WsCounters:
        return read_counters(address, port)


@dataclass(frozen=True)
class RealExecutor:
    """Everything for real (a Session's default)."""

    launch: Launching = field(default_factory=RealLaunch)
    measure: Measuring = field(default_factory=RealMeasure)
    observe: Observing = field(default_factory=RealObserve)
