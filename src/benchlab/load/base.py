"""What every load tool adapter shares: the request, the error type, and the runner that
starts the tool pinned to the load cores and reads its CPU use from wait4."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from benchlab.errors import BenchlabError
from benchlab.load.result import LoadResult
from benchlab.process import ProcessRegistry

HANG_MARGIN_S = 15.0


class LoadToolError(BenchlabError):
    """The load tool failed to run or printed no result."""


@dataclass(frozen=True)
class HttpTarget:
    """One request of a mix, sent `weight` times in every round of the mix."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    weight: int = 1


@dataclass(frozen=True)
class LoadRequest:
    url: str
    connections: int  # closed loop: connections held open; fixed rate: the most it may open
    threads: int
    duration_s: int
    timeout_s: int
    cores: tuple[int, ...]
    tool: str = "wrk"
    rate: float | None = None  # requests per second on a fixed schedule; None: closed loop
    # A mix of requests (a user's app); empty: GET `url` only, what every tool can send.
    targets: tuple[HttpTarget, ...] = ()
    # Whether the server keeps connections open (learnt at verification): a server that
    # answers `Connection: close` (or HTTP/1.0 without keep-alive) does not.
    keep_alive: bool = True


class LoadTool(Protocol):
    name: str
    install: str  # how to get it: the Debian package, or the benchlab command that builds it
    can_pace: bool  # sends at a fixed rate (open loop), not only in a closed loop
    latency_resolution_ms: float  # the finest latency it reports
    # Fresh attempts after the tool hangs without a result (a known upstream deadlock).
    hang_retries: int
    build: Callable[[], object] | None  # builds it into benchlab's cache (None: a package)

    def executable(self) -> str | None: ...

    def threads_for(self, asked: int | None, connections: int, load_cores: int) -> int:
        """Threads (the cores it can keep busy) the tool runs with for a profile."""
        ...

    def command(self, request: LoadRequest, workdir: Path) -> list[str]: ...

    def parse(self, output: str, request: LoadRequest, workdir: Path) -> LoadResult: ...


class DebianTool:
    """A load tool installed from a Debian package: found on PATH."""

    name = ""
    package = ""
    can_pace = False
    hang_retries = 0
    build = None
    latency_resolution_ms = 0.001

    @property
    def install(self) -> str:
        return f"apt-get install {self.package}"

    def executable(self) -> str | None:
        return shutil.which(self.name)

    def threads_for(self, asked: int | None, connections: int, load_cores: int) -> int:
        return min(asked or load_cores, connections)


def run_load(
    tool: LoadTool, request: LoadRequest, registry: ProcessRegistry, workdir: Path
) -> LoadResult:
    if tool.executable() is None:
        raise LoadToolError(f"{tool.name} is not installed ({tool.install})")
    if request.targets and not tool.can_pace:
        raise LoadToolError(f"{tool.name} sends one GET only; a mix of requests needs vegeta")
    log = workdir / f"{tool.name}.out"
    for _attempt in range(tool.hang_retries + 1):
        log.unlink(missing_ok=True)
        argv = tool.command(request, workdir)
        # HOME: siege writes a settings template there on its first run; keep it in the workdir.
        process = registry.start(
            argv, cores=request.cores, log_path=log, env={"HOME": str(workdir)}
        )
        try:
            # Every tool stops itself after the duration; the margin covers set-up and timeouts.
            code = process.wait(timeout=request.duration_s + request.timeout_s + HANG_MARGIN_S)
        finally:
            registry.stop(process)
        if code is not None:
            break
    else:
        raise LoadToolError(
            f"{tool.name} did not finish within its duration + margin"
            f" ({tool.hang_retries + 1} attempts)"
        )
    output = log.read_text(errors="replace")
    if code != 0:
        raise LoadToolError(f"{tool.name} exited with {code}: {output.strip()[-500:]}")
    result = tool.parse(output, request, workdir)
    cpu_pct = None
    if process.rusage is not None and result.duration_s > 0:
        used = process.rusage.ru_utime + process.rusage.ru_stime
        cpu_pct = 100.0 * used / result.duration_s
    return dataclasses.replace(result, load_cpu_pct=cpu_pct)
