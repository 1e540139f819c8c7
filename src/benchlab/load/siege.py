"""siege: simulated users with keep-alive (set in its rc file), JSON summary (-j). It reports
no percentiles and times to 10 ms (two decimals of a second): those stay as given or empty.
It counts 5xx answers and socket failures together as 'failed transactions', so those are
reported as unclassified errors; 4xx answers are transactions that were not successful.
Its -t stops early on short runs, after anything from a few milliseconds to the second asked:
the duration is its own elapsed time, and a run that stopped before half of it is run again."""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchlab.core.errors import LoadToolError
from benchlab.core.request_errors import Errors
from benchlab.load.base import DebianTool, LoadRequest
from benchlab.load.result import Latency, LoadResult

MB = 1024 * 1024


class Siege(DebianTool):
    name = "siege"
    package = "siege"
    latency_resolution_ms = 10.0  # hundredths of a second
    # About 1 run in 70 deadlocks after its workers end, SIGINT ignored (JoeDog/siege#4,
    # #66); nothing was measured, so a fresh run is the honest retry.
    hang_retries = 2
    stops_early = True
    overhead_s = 0.4

    def command(self, request: LoadRequest, workdir: Path) -> list[str]:
        rc = workdir / "siegerc"
        # siege never reads a response's `Connection: close`: on a server that closes every
        # connection (Werkzeug's dev server, gunicorn's sync workers) it sends its next request
        # down the closed socket and waits its whole timeout. Told, it connects anew each time,
        # as every other tool does there by itself.
        connection = "keep-alive" if request.keep_alive else "close"
        rc.write_text(
            f"connection = {connection}\nprotocol = HTTP/1.1\nparser = false\nlogging = false\n"
            "show-logfile = false\njson_output = true\nbenchmark = true\nverbose = false\n"
            f"quiet = true\ntimeout = {request.timeout_s}\nfailures = 1000000000\n"
            f"limit = {max(request.connections, 255)}\n"
        )
        return [
            "siege", f"--rc={rc}", "-c", str(request.connections),
            "-t", f"{request.duration_s}S", request.url,
        ]  # fmt: skip

    def parse(self, output: str, request: LoadRequest, workdir: Path) -> LoadResult:
        match = re.search(r"\{.*\}", output, re.DOTALL)
        if match is None:
            raise LoadToolError(f"siege printed no JSON summary: {output.strip()[-300:]}")
        data = json.loads(match.group(0))
        transactions = int(data["transactions"])
        has = transactions > 0
        return LoadResult(
            tool="siege",
            requests=transactions,
            duration_s=float(data["elapsed_time"]),
            bytes=int(float(data["data_transferred"]) * MB),
            latency=Latency(
                min=1000.0 * data["shortest_transaction"] if has else None,
                mean=1000.0 * data["response_time"] if has else None,
                stdev=None,
                p50=None,
                p90=None,
                p99=None,
                p999=None,
                max=1000.0 * data["longest_transaction"] if has else None,
            ),
            errors=Errors(
                other=int(data["failed_transactions"]),
                non_2xx=transactions - int(data["successful_transactions"]),
            ),
        )
