"""ApacheBench (ab -k): one thread, keep-alive; its percentile CSV (-e) gives p50/p90/p99 at
whole percents, so p99.9 is left empty: ab cannot report it."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from benchlab.core.errors import LoadToolError
from benchlab.core.request_errors import Errors
from benchlab.load.base import DebianTool, LoadRequest
from benchlab.load.result import Latency, LoadResult

# -t alone caps ab at 50 000 requests; -n after -t lifts that cap. ab allocates 32 bytes per
# allowed request up front, so -n is sized to the duration: 250 000 req/s is beyond what ab,
# one thread, reaches on any machine we run (it stops at -n if it ever gets there).
MAX_RATE = 250_000


def _number(pattern: str, text: str, default: float | None = None) -> float:
    match = re.search(pattern, text, re.MULTILINE)
    if match is None:
        if default is not None:
            return default
        raise LoadToolError(f"ab printed no '{pattern}': {text.strip()[-300:]}")
    return float(match.group(1))


class ApacheBench(DebianTool):
    name = "ab"
    package = "apache2-utils"
    overhead_s = 0.3

    def threads_for(self, asked: int | None, connections: int, load_cores: int) -> int:
        return 1  # ab is single-threaded whatever it is told

    def command(self, request: LoadRequest, workdir: Path) -> list[str]:
        return [
            "ab", *([] if request.close_each else ["-k"]), "-q", "-r",
            "-c", str(request.connections),
            "-t", str(request.duration_s), "-n", str(max(50_000, MAX_RATE * request.duration_s)),
            "-s", str(request.timeout_s),
            "-e", str(workdir / "ab-percentiles.csv"),
            request.url,
        ]  # fmt: skip

    def parse(self, output: str, request: LoadRequest, workdir: Path) -> LoadResult:
        requests = int(_number(r"^Complete requests:\s+(\d+)", output))
        duration = _number(r"^Time taken for tests:\s+([\d.]+) seconds", output)
        failed = re.search(
            r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)", output
        )
        connect, receive, length, exceptions = (
            (int(g) for g in failed.groups()) if failed else (0,) * 4
        )
        percentiles = _percentiles(workdir / "ab-percentiles.csv") if requests else {}
        total = re.search(
            r"^Total:\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s+(\d+)", output, re.MULTILINE
        )
        mean = _number(r"^Time per request:\s+([\d.]+) \[ms\] \(mean\)$", output, 0.0)
        return LoadResult(
            tool="ab",
            requests=requests,
            duration_s=duration,
            bytes=int(_number(r"^Total transferred:\s+(\d+) bytes", output, 0)),
            latency=Latency(
                min=percentiles.get("0"),
                mean=mean if requests else None,
                stdev=float(total.group(3)) if total and requests else None,
                p50=percentiles.get("50"),
                p90=percentiles.get("90"),
                p99=percentiles.get("99"),
                p999=None,
                max=percentiles.get("100"),
                percentiles={
                    k: v for k, v in percentiles.items() if k in {"50", "75", "90", "95", "99"}
                },
            ),
            errors=Errors(
                connect=connect,
                read=receive + length + exceptions,
                write=int(_number(r"^Write errors:\s+(\d+)", output, 0)),
                timeout=0,
                non_2xx=int(_number(r"^Non-2xx responses:\s+(\d+)", output, 0)),
            ),
        )


def _percentiles(path: Path) -> dict[str, float]:
    if not path.exists():
        return {}
    with path.open() as handle:
        rows = list(csv.reader(handle))[1:]
    return {row[0]: float(row[1]) for row in rows if len(row) == 2}
