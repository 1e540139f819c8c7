"""wrk adapter: runs wrk pinned to the load cores and reads the JSON its Lua done() prints."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from benchlab.load.result import Errors, Latency, LoadResult
from benchlab.process import ProcessRegistry

REPORT_SCRIPT = Path(__file__).with_name("wrk_report.lua")
MARKER = "BENCHLAB_WRK_JSON "


class LoadToolError(RuntimeError):
    """The load tool failed to run or printed no result."""


@dataclass(frozen=True)
class LoadRequest:
    url: str
    connections: int
    threads: int
    duration_s: float
    timeout_s: float
    cores: tuple[int, ...]


def wrk_command(request: LoadRequest) -> list[str]:
    return [
        "wrk",
        f"--threads={request.threads}",
        f"--connections={request.connections}",
        f"--duration={max(1, round(request.duration_s))}s",
        f"--timeout={max(1, round(request.timeout_s))}s",
        f"--script={REPORT_SCRIPT}",
        request.url,
    ]


def run_wrk(request: LoadRequest, registry: ProcessRegistry, workdir: Path) -> LoadResult:
    if shutil.which("wrk") is None:
        raise LoadToolError("wrk is not installed (apt-get install wrk)")
    log = workdir / "wrk.out"
    log.unlink(missing_ok=True)
    process = registry.start(wrk_command(request), cores=request.cores, log_path=log)
    try:
        # wrk stops itself after --duration; the margin covers connection set-up and --timeout.
        code = process.wait(timeout=request.duration_s + request.timeout_s + 15)
        if code is None:
            raise LoadToolError(f"wrk did not finish within its duration + margin ({request.url})")
    finally:
        registry.stop(process)
    output = log.read_text(errors="replace")
    if code != 0:
        raise LoadToolError(f"wrk exited with {code}: {output.strip()[-500:]}")
    result = parse_wrk_output(output)
    cpu_pct = None
    if process.rusage is not None and result.duration_s > 0:
        used = process.rusage.ru_utime + process.rusage.ru_stime
        cpu_pct = 100.0 * used / result.duration_s
    return LoadResult(**{**result.__dict__, "load_cpu_pct": cpu_pct})


def parse_wrk_output(output: str) -> LoadResult:
    """Parse the line our done() hook printed; wrk's human text above it is ignored."""
    lines = [line for line in output.splitlines() if line.startswith(MARKER)]
    if not lines:
        raise LoadToolError(
            f"wrk printed no JSON summary; its output ends: {output.strip()[-300:]}"
        )
    data = json.loads(lines[-1][len(MARKER) :])
    lat = data["latency_us"]
    pct = {q: v / 1000.0 for q, v in lat["percentiles"].items()}
    has = data["requests"] > 0
    errors = data["errors"]
    return LoadResult(
        tool="wrk",
        requests=data["requests"],
        duration_s=data["duration_us"] / 1e6,
        bytes=data["bytes"],
        latency=Latency(
            min=lat["min"] / 1000.0 if has else None,
            mean=lat["mean"] / 1000.0 if has else None,
            stdev=lat["stdev"] / 1000.0 if has else None,
            p50=pct["50"] if has else None,
            p90=pct["90"] if has else None,
            p99=pct["99"] if has else None,
            p999=pct["99.9"] if has else None,
            max=lat["max"] / 1000.0 if has else None,
            percentiles=pct if has else {},
        ),
        errors=Errors(
            connect=errors["connect"],
            read=errors["read"],
            write=errors["write"],
            timeout=errors["timeout"],
            non_2xx=errors["status"],
        ),
    )
