"""wrk: its Lua done() hook prints one JSON line; its human text is never parsed."""

from __future__ import annotations

import json
from pathlib import Path

from benchlab.load import histogram
from benchlab.load.base import DebianTool, LoadRequest, LoadToolError
from benchlab.load.result import Errors, Latency, LoadResult

REPORT_SCRIPT = Path(__file__).with_name("wrk_report.lua")
MARKER = "BENCHLAB_WRK_JSON "


class Wrk(DebianTool):
    name = "wrk"
    package = "wrk"

    def command(self, request: LoadRequest, workdir: Path) -> list[str]:
        return [
            "wrk",
            f"--threads={request.threads}",
            f"--connections={request.connections}",
            f"--duration={request.duration_s}s",
            f"--timeout={request.timeout_s}s",
            f"--script={REPORT_SCRIPT}",
            request.url,
        ]

    def parse(self, output: str, request: LoadRequest, workdir: Path) -> LoadResult:
        return parse_wrk_output(output)


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
    buckets = lat.get("buckets") or []
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
        histogram=histogram.encode(histogram.from_counts(buckets)) if buckets else None,
    )
