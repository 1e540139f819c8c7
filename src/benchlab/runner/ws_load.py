"""The WebSocket tool's runs (JMeter, load/jmeter.py) against a launched stack: a plan
written, JMeter started pinned to the load cores, its samples read back. The hold is watched
while it runs: after each step the tool's opens, the kernel's established sockets on the
server's port and the server's memory are read, and the steps stop as soon as the server
refuses, stalls, drops connections or passes the memory limit."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

from benchlab.core.errors import LoadToolError
from benchlab.load import jmeter, ws_results
from benchlab.load.jmeter_plans import broadcast_plan, echo_plan, hold_plan, step_timing
from benchlab.load.ws_requests import (
    AT_LAST_STEP,
    DROPPED,
    MEMORY,
    REFUSED,
    STALLED,
    BroadcastRequest,
    BroadcastResult,
    EchoRequest,
    EchoResult,
    HoldRequest,
    HoldResult,
    HoldStep,
)
from benchlab.system.process import ManagedProcess, ProcessRegistry
from benchlab.system.trusted_path import NEUTRAL_DIR

START_S = 30.0  # the most the JVM may take before its first sample
POLL_S = 0.1


# What JMeter logs as its threads start: its start-up is over.
STARTED = "Running the test!"


@dataclass
class _Run:
    process: ManagedProcess
    results: Path
    log: Path
    live: bool  # its samples written as they come
    cpu_at_start: float | None = None  # the JVM's CPU seconds when its test began
    first_ms: int | None = None  # a live run's first sample's start (epoch ms)

    def watch_start(self) -> None:
        """Waits for the test to begin (and a live run's first sample) and notes the JVM's
        CPU then, so that its start-up is not counted as load."""
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline and self.process.alive():
            if self.cpu_at_start is None and self._began():
                with contextlib.suppress(psutil.Error):
                    times = psutil.Process(self.process.pid).cpu_times()
                    self.cpu_at_start = times.user + times.system
            if self.cpu_at_start is not None and not self.live:
                return
            first = next(ws_results.samples(self.results), None) if self.live else None
            if first is not None:
                self.first_ms = first.start_ms
                return
            time.sleep(POLL_S)

    def _began(self) -> bool:
        try:
            return STARTED in self.log.read_text(errors="replace")
        except OSError:
            return False

    def load_cpu_pct(self, seconds: float) -> float | None:
        total = self.process.tool_cpu_seconds()
        if total is None or self.cpu_at_start is None or seconds <= 0:
            return None
        return 100.0 * max(total - self.cpu_at_start, 0.0) / seconds


@contextlib.contextmanager
def _jmeter(
    registry: ProcessRegistry,
    plan: str,
    workdir: Path,
    cores: tuple[int, ...],
    name: str,
    live: bool = False,
) -> Iterator[_Run]:
    if jmeter.JMeter().executable() is None:
        raise LoadToolError(f"jmeter is not installed ({jmeter.JMeter.install})")
    workdir.mkdir(parents=True, exist_ok=True)
    plan_file, results = workdir / f"{name}.jmx", workdir / f"{name}.csv"
    plan_file.write_text(plan)
    results.unlink(missing_ok=True)
    (workdir / "jmeter.log").unlink(missing_ok=True)  # a run's log tells when its test began
    process = registry.start(
        jmeter.command(plan_file, results, workdir, live), cores=cores,
        log_path=workdir / f"{name}.out", env={"HOME": str(workdir)},
    )  # fmt: skip
    run = _Run(process, results, workdir / "jmeter.log", live)
    try:
        run.watch_start()
        yield run
    finally:
        registry.stop(process, grace=2.0)


def _finish(run: _Run, timeout_s: float) -> None:
    code = run.process.wait(timeout=timeout_s)
    if code is None:
        raise LoadToolError(f"jmeter did not finish within {timeout_s:.0f} s")
    if code != 0:
        raise LoadToolError(f"jmeter exited with {code}: {run.process.log_tail(3)}")


def run_echo(registry: ProcessRegistry, request: EchoRequest, workdir: Path) -> EchoResult:
    with _jmeter(registry, echo_plan(request), workdir, request.endpoint.cores, "echo") as run:
        _finish(run, START_S + request.duration_s + request.timeout_ms / 1000 + 15)
    result = ws_results.echo_result(run.results, request)
    cpu = run.load_cpu_pct(result.duration_s)
    return EchoResult(**{**result.__dict__, "load_cpu_pct": cpu})


def run_broadcast(
    registry: ProcessRegistry, request: BroadcastRequest, workdir: Path
) -> BroadcastResult:
    plan = broadcast_plan(request)
    with _jmeter(registry, plan, workdir, request.endpoint.cores, "broadcast") as run:
        rounds = request.rounds + request.warmup_rounds
        span = request.receivers / request.join_rate + rounds * request.interval_ms / 1000
        _finish(run, START_S + span + request.timeout_ms / 1000 + 15)
    result = ws_results.broadcast_result(
        run.results, request.receivers, request.rounds, request.warmup_rounds
    )
    seconds = request.rounds * request.interval_ms / 1000
    return BroadcastResult(**{**result.__dict__, "load_cpu_pct": run.load_cpu_pct(seconds)})


def established(port: int) -> int:
    """Established TCP connections whose local port is the server's (the kernel's count)."""
    done = subprocess.run(
        ["ss", "-Htn", "state", "established", f"( sport = :{port} )"],
        capture_output=True, text=True, timeout=30, check=False, cwd=NEUTRAL_DIR,
    )  # fmt: skip
    return sum(1 for line in done.stdout.splitlines() if line.strip())


def run_hold(
    registry: ProcessRegistry,
    request: HoldRequest,
    workdir: Path,
    server: ManagedProcess,
    rss_limit_mb: float,
) -> HoldResult:
    """Steps of idle connections until one of them shows the server's limit."""
    port = request.endpoint.port
    rss = _server_rss(server)
    baseline = HoldStep(0, 0, 0, established(port), rss())
    steps = [baseline]
    _, length = step_timing(request)
    stopped = AT_LAST_STEP
    plan = hold_plan(request)
    with _jmeter(registry, plan, workdir, request.endpoint.cores, "hold", live=True) as run:
        if run.first_ms is None:
            raise LoadToolError(f"jmeter opened no connection: {run.process.log_tail(3)}")
        for index in range(request.steps):
            due_ms = run.first_ms + index * length * 1000 + (length - 0.25) * 1000
            _sleep_until_ms(due_ms, run.process.alive)
            _wait_for_opens(run, index, request)
            step = _step(run.results, index, request, port, rss())
            steps.append(step)
            stopped = _why_stop(step, request, index, rss_limit_mb) or stopped
            if stopped != AT_LAST_STEP:
                break
    return HoldResult(
        steps=steps, stopped=stopped, held=_held(steps, stopped),
        rss_per_1000_mb=_slope_per_1000(steps),
        load_cpu_pct=None,
    )  # fmt: skip


def _server_rss(server: ManagedProcess) -> Callable[[], float | None]:
    def read() -> float | None:
        size, _ = server.memory_sample()
        return size / 2**20 if size else None

    return read


def _sleep_until_ms(due_ms: float, alive: Callable[[], bool]) -> None:
    while time.time() * 1000 < due_ms and alive():
        time.sleep(min(POLL_S, max(due_ms / 1000 - time.time(), 0.0)))


def _wait_for_opens(run: _Run, index: int, request: HoldRequest) -> None:
    """A step's last opens may end a moment after its settle time (its last threads start at
    the ramp's very end): up to one settle time more before it is judged stalled."""
    deadline = time.monotonic() + request.settle_s
    while time.monotonic() < deadline and run.process.alive():
        counts = ws_results.opened(run.results)
        done = sum(sum(counts.get(i, (0, 0))) for i in range(index + 1))
        if done >= (index + 1) * request.step:
            return
        time.sleep(POLL_S)


def _step(
    results: Path, index: int, request: HoldRequest, port: int, rss_mb: float | None
) -> HoldStep:
    counts = ws_results.opened(results)
    ok = sum(counts.get(i, (0, 0))[0] for i in range(index + 1))
    failed = sum(counts.get(i, (0, 0))[1] for i in range(index + 1))
    return HoldStep((index + 1) * request.step, ok, failed, established(port), rss_mb)


def _why_stop(step: HoldStep, request: HoldRequest, index: int, limit_mb: float) -> str | None:
    if step.refused:
        return REFUSED
    if step.opened + step.refused < step.asked:
        return STALLED
    if step.established < step.opened:
        return DROPPED
    if step.rss_mb is not None and step.rss_mb > limit_mb:
        return MEMORY
    return None


def _held(steps: list[HoldStep], stopped: str) -> int:
    """Connections held at the end: established and the tool's own; past the memory limit,
    those of the step before."""
    last = steps[-2] if stopped == MEMORY else steps[-1]
    return min(last.opened, last.established) if last.asked else 0


def _slope_per_1000(steps: list[HoldStep]) -> float | None:
    """Least squares of the server's RSS over its established connections, MB per 1,000."""
    points = [(s.established, s.rss_mb) for s in steps if s.rss_mb is not None]
    if len(points) < 2:
        return None
    xs, ys = [float(x) for x, _ in points], [float(y) for _, y in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if spread == 0:
        return None
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
    return 1000.0 * slope
