"""wrk: its Lua done() hook prints one JSON line; its human text is never parsed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from benchlab.core.errors import LoadToolError
from benchlab.core.request_errors import Errors
from benchlab.load import histogram
from benchlab.load.base import DebianTool, LoadRequest
from benchlab.load.result import Latency, LoadResult
from benchlab.system.trusted_path import NEUTRAL_DIR

REPORT_SCRIPT = Path(__file__).with_name("wrk_report.lua")
MARKER = "BENCHLAB_WRK_JSON "


class Wrk(DebianTool):
    name = "wrk"
    is_default = True
    package = "wrk"
    version_command = ("wrk", "-v")
    merges_exactly = True  # its done() hook prints the whole histogram
    sends_any_request = True  # its Lua sets the method, headers and body
    protocols = ("h1", "h1-tls")  # https:// URLs, ALPN http/1.1
    overhead_s = 0.15

    def command(self, request: LoadRequest, workdir: Path) -> list[str]:
        return [
            "wrk",
            f"--threads={request.threads}",
            f"--connections={request.connections}",
            f"--duration={request.duration_s}s",
            f"--timeout={request.timeout_s}s",
            f"--script={_script(request, workdir)}",
            request.url,
        ]

    def parse(self, output: str, request: LoadRequest, workdir: Path) -> LoadResult:
        return parse_wrk_output(output)


def _script(request: LoadRequest, workdir: Path) -> Path:
    """The report hook, in the trial's directory (copied wherever wrk runs), preceded by the
    request's method, headers and body when it is not a plain GET (the body from a file:
    Lua reads it whole, whatever bytes it holds)."""
    lines = []
    if request.close_each:  # wrk opens a new connection when the answer says close
        lines.append('wrk.headers["Connection"] = "close"')
    if request.targets:
        (target,) = request.targets
        lines.append(f"wrk.method = {_lua_string(target.method)}")
        for name, value in target.headers:
            lines.append(f"wrk.headers[{_lua_string(name)}] = {_lua_string(value)}")
        if target.body is not None:
            body = workdir / "wrk-body.bin"
            body.write_bytes(target.body)
            lines.append(
                f'local body_file = io.open({_lua_string(str(body))}, "rb")\n'
                'wrk.body = body_file:read("*a")\nbody_file:close()'
            )
    script = workdir / "wrk.lua"
    script.write_text("\n".join([*lines, REPORT_SCRIPT.read_text()]))
    return script


def _lua_string(text: str) -> str:
    return json.dumps(text)  # a JSON string of printable ASCII escapes is a Lua string too


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


def bare_throughput(request: LoadRequest) -> float:
    """Plain wrk, no script, pinned like benchlab's; its own 'Requests/sec' line (the
    selfcheck's yardstick for what benchlab's measurement path costs)."""
    argv = [
        "taskset", "--cpu-list", ",".join(map(str, request.cores)), "wrk",
        f"--threads={request.threads}", f"--connections={request.connections}",
        f"--duration={request.duration_s}s", request.url,
    ]  # fmt: skip
    if shutil.which("wrk") is None:
        raise LoadToolError("wrk is not installed (apt-get install wrk, or ./lab setup)")
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, check=False, cwd=NEUTRAL_DIR,
            timeout=request.duration_s + request.timeout_s + 15,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise LoadToolError(
            f"bare wrk did not end {request.duration_s} s after it started"
        ) from None
    if done.returncode != 0:
        raise LoadToolError(f"bare wrk exited with {done.returncode}: {done.stderr.strip()[-300:]}")
    output = done.stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", output)
    if match is None:
        raise LoadToolError(f"bare wrk printed no Requests/sec: {output[-300:]}")
    return float(match.group(1))


def bare_command(threads: int, connections: int, duration: int) -> str:
    """The bare command as the selfcheck shows it."""
    return f"wrk -t{threads} -c{connections} -d{duration}s URL"
