"""What every load tool adapter shares: the request, the error type, and the runner that
starts the tool pinned to the load cores and reads its CPU use from wait4."""

from __future__ import annotations

import shutil
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
class LoadRequest:
    url: str
    connections: int
    threads: int
    duration_s: int
    timeout_s: int
    cores: tuple[int, ...]
    tool: str = "wrk"


class LoadTool(Protocol):
    name: str
    package: str  # the Debian package that provides it
    # Fresh attempts after the tool hangs without a result (a known upstream deadlock).
    hang_retries: int

    def command(self, request: LoadRequest, workdir: Path) -> list[str]: ...

    def parse(self, output: str, request: LoadRequest, workdir: Path) -> LoadResult: ...


def run_load(
    tool: LoadTool, request: LoadRequest, registry: ProcessRegistry, workdir: Path
) -> LoadResult:
    if shutil.which(tool.name) is None:
        raise LoadToolError(f"{tool.name} is not installed (apt-get install {tool.package})")
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
    return LoadResult(**{**result.__dict__, "load_cpu_pct": cpu_pct})
