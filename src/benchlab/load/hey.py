"""hey: Go, closed loop, keep-alive. It prints no machine-readable summary (its CSV lists only
successful requests, so errors would vanish), so its summary text is read; latencies come at
0.1 ms resolution, percentiles up to p99 (p99.9 left empty), no standard deviation."""

from __future__ import annotations

import re
from pathlib import Path

from benchlab.core.errors import LoadToolError
from benchlab.core.request_errors import Errors
from benchlab.load.base import DebianTool, LoadRequest
from benchlab.load.result import Latency, LoadResult


def _seconds_ms(pattern: str, text: str) -> float | None:
    match = re.search(pattern, text, re.MULTILINE)
    return None if match is None else 1000.0 * float(match.group(1))


class Hey(DebianTool):
    name = "hey"
    package = "hey"
    latency_resolution_ms = 0.1  # tenths of a millisecond
    overhead_s = 0.2

    def command(self, request: LoadRequest, workdir: Path) -> list[str]:
        return [
            "hey",
            "-z", f"{request.duration_s}s",
            "-c", str(request.connections),
            "-t", str(request.timeout_s),
            "-cpus", str(len(request.cores)),
            *(["-disable-keepalive"] if request.close_each else []),
            request.url,
        ]  # fmt: skip

    def parse(self, output: str, request: LoadRequest, workdir: Path) -> LoadResult:
        total = re.search(r"^\s+Total:\s+([\d.]+) secs", output, re.MULTILINE)
        if total is None:
            raise LoadToolError(f"hey printed no summary: {output.strip()[-300:]}")
        statuses = {
            int(code): int(count)
            for code, count in re.findall(r"^\s+\[(\d+)\]\s+(\d+) responses", output, re.MULTILINE)
        }
        requests = sum(statuses.values())
        percentiles = {
            pct: 1000.0 * float(value)
            for pct, value in re.findall(r"^\s+(\d+)% in ([\d.]+) secs", output, re.MULTILINE)
        }
        has = requests > 0
        errors = _classify(
            re.findall(r"^\s+\[(\d+)\]\s+(.+)$", _error_section(output), re.MULTILINE)
        )
        size = re.search(r"^\s+Total data:\s+(\d+) bytes", output, re.MULTILINE)
        return LoadResult(
            tool="hey",
            requests=requests,
            duration_s=float(total.group(1)),
            bytes=int(size.group(1)) if size else 0,
            latency=Latency(
                min=_seconds_ms(r"^\s+Fastest:\s+([\d.]+) secs", output) if has else None,
                mean=_seconds_ms(r"^\s+Average:\s+([\d.]+) secs", output) if has else None,
                stdev=None,
                p50=percentiles.get("50"),
                p90=percentiles.get("90"),
                p99=percentiles.get("99"),
                p999=None,
                max=_seconds_ms(r"^\s+Slowest:\s+([\d.]+) secs", output) if has else None,
                percentiles={
                    k: v for k, v in percentiles.items() if k in {"50", "75", "90", "95", "99"}
                },
            ),
            errors=Errors(
                non_2xx=sum(n for code, n in statuses.items() if not 200 <= code < 300),
                **errors,
            ),
        )


def _error_section(output: str) -> str:
    marker = "Error distribution:"
    return output.split(marker, 1)[1] if marker in output else ""


def _classify(lines: list[tuple[str, str]]) -> dict[str, int]:
    kinds = {"connect": 0, "read": 0, "write": 0, "timeout": 0}
    for count, message in lines:
        text = message.lower()
        if "timeout" in text or "deadline exceeded" in text:
            kinds["timeout"] += int(count)
        elif "connection refused" in text or "dial tcp" in text:
            kinds["connect"] += int(count)
        elif "write" in text or "broken pipe" in text:
            kinds["write"] += int(count)
        else:  # EOF, connection reset, malformed response
            kinds["read"] += int(count)
    return kinds
