"""Start a stack: pinned to its cores, on a free port, answering from its own socket."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from benchlab.hosts.base import THIS_MACHINE, Host
from benchlab.http.tls import TlsFiles
from benchlab.http.verify import PORT_TAKEN, wait_until_answering
from benchlab.http.wire import Wire
from benchlab.services.ports import free_port
from benchlab.stacks import LaunchContext, Stack, python_env
from benchlab.stacks.base import Running
from benchlab.system.process import ManagedProcess, ProcessRegistry
from benchlab.system.safe_files import new_dir, new_owner
from benchlab.system.watch import memory_sample

HOST = "127.0.0.1"
PORT_ATTEMPTS = 3
# A start that takes ten times what this stack's starts cost here (learned, at least 15 s)
# is not coming: it fails in seconds, not at the stack's ceiling.
START_FLOOR_S = 15.0
STATIC = "BENCHLAB_STATIC_DIR"  # where the run wrote the static scenario's files
START_MARGIN = 10.0


def bounded_start_s(typical_s: float, ceiling_s: float) -> float:
    """Ten times what a start typically takes here, at least 15 s, at most `ceiling_s`."""
    return min(ceiling_s, max(START_FLOOR_S, START_MARGIN * typical_s))


def start_timeout(stack: Stack, learned_s: float | None) -> float:
    """How long a start may take before it fails: the stack's ceiling until its starts have
    been timed on this machine."""
    if learned_s is None:
        return stack.start_timeout
    return bounded_start_s(learned_s, stack.start_timeout)


@contextlib.contextmanager
def pinned_to(cores: tuple[int, ...]) -> Iterator[None]:
    """benchlab itself (sampling, bookkeeping) stays off the server's cores."""
    try:
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, cores)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, before)


def start_stack(
    registry: ProcessRegistry,
    stack: Stack,
    ctx: LaunchContext,
    cores: tuple[int, ...],
    env: dict[str, str] | None = None,
    host: Host = THIS_MACHINE,
    user: str | None = None,
) -> ManagedProcess:
    """Launch a stack pinned to `cores` on `host`, as `user` (None: as benchlab); anything
    it writes (TMPDIR, a pid file) stays in its workdir, a new directory handed to `user`
    once benchlab has written its configuration there (and copied to the host first when it
    is another machine). Its log is beside it, benchlab's own.

    Paths stay short on purpose: servers put Unix sockets in TMPDIR (Sanic's and uvicorn's
    multiprocessing do), and a socket path may not exceed 107 bytes.
    """
    new_dir(ctx.workdir, 0o700)
    if host.same_machine:
        own = python_env.for_user(user)
        ctx = dataclasses.replace(ctx, python=own.python, python_apps=own.apps)
    spec = stack.launch(ctx)  # its configuration, written now, while the directory is root's
    private_tmp = new_dir(ctx.workdir / "t", 0o700, owner=user)
    if user is not None:
        new_owner(ctx.workdir, user)
    host.push(ctx.workdir)
    if user is not None and not host.same_machine:
        host.check(["chown", "-h", f"{user}:", str(ctx.workdir), str(private_tmp)])
    return registry.start(
        spec.argv,
        host=host,
        cores=cores,
        log_path=ctx.workdir.parent / f"{ctx.workdir.name}.log",
        cwd=spec.cwd,
        # Its runtime directory too: gunicorn (since 25.1) opens a control socket there,
        # else in ~/.gunicorn/, which would be made in the home of whoever runs it.
        env={
            **dict.fromkeys(("TMPDIR", "XDG_RUNTIME_DIR"), str(private_tmp)),
            **(env or {}),
            **spec.env,
        },
        user=user,
        # Its own control group: the trial's CPU time is counted over every process it forks.
        cpu_group=host.create_cpu_group(stack.limits),
        isolated_env=stack.isolated_env,
    )


@dataclass(frozen=True)
class StartedProcess:
    """A stack's process started on this machine (or a host of its), with its launch
    context (port, counters' port), or why it does not answer; the executor gives the runner
    a `Started` made of it."""

    server: ManagedProcess
    ctx: LaunchContext
    problem: str | None  # why it does not answer; None: it does
    seconds: float  # from its start until it answered


@dataclass(frozen=True)
class ServerPlace:
    """Where a launch runs: the address it answers on, its host and cores."""

    address: str
    host: Host
    cores: tuple[int, ...]


def start_answering(
    registry: ProcessRegistry,
    stack: Stack,
    place: ServerPlace,
    launch: tuple[int, int | None],  # workers, threads
    workdir: Path,
    env: dict[str, str],
    timeout: float,
    on_port_taken: Callable[[int], None] | None = None,
    wire: Wire | None = None,
    tls: TlsFiles | None = None,
    user: str | None = None,
) -> StartedProcess:
    """Start the stack on a free port and wait until it answers from its own socket. A port
    taken in between (by another program: ports are chosen, released, then bound) is given up
    for a fresh one, twice at most; `on_port_taken(port)` hears of it."""
    workers, threads = launch
    for attempt in range(PORT_ATTEMPTS):
        # A directory of its own each attempt: the last one's may hold what its user wrote.
        own = workdir / ("stack" if attempt == 0 else f"stack-{attempt}")
        ctx = LaunchContext(
            host=place.address, port=free_port(), workdir=own, server_cores=place.cores,
            workers=workers, threads=threads, protocol=wire.protocol.name if wire else "h1",
            tls=tls, static_dir=Path(env[STATIC]) if env.get(STATIC) else None,
            counters_port=free_port() if stack.counters is not None else None,
        )  # fmt: skip
        began = time.monotonic()
        server = start_stack(registry, stack, ctx, place.cores, env, place.host, user)
        with server.exits_counted() as lost:
            problem = wait_until_answering(
                place.address, ctx.port, server.alive, timeout,
                owns_port=lambda server=server, port=ctx.port: server.listens_on(port),
                wire=wire, lost=lost,
            )  # fmt: skip
        taken = problem is not None and (
            PORT_TAKEN in problem or "address already in use" in server.log_tail(20).lower()
        )
        if not taken or attempt == PORT_ATTEMPTS - 1:
            return StartedProcess(server, ctx, problem, time.monotonic() - began)
        if on_port_taken is not None:
            on_port_taken(ctx.port)
        registry.stop(server)
    raise AssertionError("unreachable")


class Attached:
    """A server already running (Stack.running), as the runner sees a started one: alive
    while its watched processes are (always, when nothing watches it), no log of benchlab's,
    and its CPU and memory counted by its watch, if it has one."""

    def __init__(self, running: Running) -> None:
        self.running = running

    @property
    def returncode(self) -> int | None:
        return None

    @property
    def counted(self) -> bool:
        return self.running.watch is not None

    def alive(self) -> bool:
        return self.running.watch is None or self.running.watch.alive()

    def log_tail(self, lines: int = 5) -> str:
        return f"(not started by benchlab: {self.running.address}:{self.running.port})"

    def oom_kills(self) -> int:
        return 0

    def cpu_seconds(self) -> tuple[float, str]:
        assert self.running.watch is not None, "counted only when watched"
        return self.running.watch.cpu_seconds()

    def memory_sample(self) -> tuple[int, set[tuple[int, float]]]:
        assert self.running.watch is not None, "counted only when watched"
        return memory_sample(self.running.watch)
