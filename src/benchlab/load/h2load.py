"""h2load (nghttp2): HTTP/2 load, over TLS (h2, by ALPN) or prior knowledge (h2c), and
HTTP/1.1 (--h1) over either, in a closed loop: `connections` connections with one stream
each, so that as many requests are in flight as under an HTTP/1.1 closed loop at the same
connections. Its per-request log
(`--log-file`: start µs, status, µs to the end of the answer) gives the whole histogram; its
summary gives the duration, the failures and the bytes; its "Application protocol" line says
what was negotiated, and a load over anything else is refused, not measured."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy

from benchlab.core.errors import LoadToolError
from benchlab.core.request_errors import Errors
from benchlab.load.base import DebianTool, LoadRequest
from benchlab.load.histogram import LatencyTally
from benchlab.load.result import LoadResult

LOG = "h2load.tsv"
CHUNK_ROWS = 65_536
EXPECTED_PROTOCOL = {"h2": "h2", "h2c": "h2c", "h1": "http/1.1", "h1-tls": "http/1.1"}


class H2load(DebianTool):
    name = "h2load"
    package = "nghttp2-client"
    version_command = ("h2load", "--version")
    # HTTP/1.1 too (--h1): the same tool on every protocol, so that what TLS or HTTP/2 costs
    # a stack is not mixed up with what changing tools does.
    protocols = ("h1", "h1-tls", "h2", "h2c")
    sends_any_request = True  # -H headers, -d a body (sent as a POST)
    reconnects = False  # over HTTP/1.1 it hangs on a server that closes after each answer
    merges_exactly = True  # every request's latency is in its log
    overhead_s = 0.2

    def command(self, request: LoadRequest, workdir: Path) -> list[str]:
        extra: list[str] = []
        if request.targets:
            (target,) = request.targets
            for header, value in target.headers:
                extra += ["-H", f"{header}: {value}"]
            if target.body is not None:  # -d sends it as a POST
                body = workdir / "h2load-body.bin"
                body.write_bytes(target.body)
                extra += ["-d", str(body)]
        if request.protocol in ("h1", "h1-tls"):
            extra.append("--h1")
        return [
            "h2load", f"--clients={request.connections}", f"--threads={request.threads}",
            "--max-concurrent-streams=1", f"--duration={request.duration_s}",
            f"--log-file={workdir / LOG}", *extra, request.url,
        ]  # fmt: skip

    def parse(self, output: str, request: LoadRequest, workdir: Path) -> LoadResult:
        finished = re.search(r"^finished in ([\d.]+)(ms|s),", output, re.MULTILINE)
        counts = re.search(
            r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
            r"(\d+) errored, (\d+) timeout",
            output,
            re.MULTILINE,
        )
        if finished is None or counts is None:
            raise LoadToolError(f"h2load printed no summary: {output.strip()[-300:]}")
        negotiated = re.search(r"^Application protocol: (\S+)", output, re.MULTILINE)
        wanted = EXPECTED_PROTOCOL.get(request.protocol)
        if wanted and negotiated and negotiated.group(1) != wanted:
            raise LoadToolError(
                f"h2load negotiated {negotiated.group(1)}, not {wanted}: no measurement over "
                "a protocol the cell did not ask for"
            )
        log = workdir / LOG
        tally, requests, non_2xx, not_3xx = _read_log(log)
        log.unlink(missing_ok=True)
        seconds = float(finished.group(1)) / (1000 if finished.group(2) == "ms" else 1)
        traffic = re.search(r"^traffic: \S+ \((\d+)\) total", output, re.MULTILINE)
        failed, timeout = int(counts.group(5)), int(counts.group(7))
        latency, encoded = tally.latency()
        # h2load's "failed" counts non-2xx/3xx answers too; the rest got no answer.
        unanswered = max(0, failed - not_3xx)
        timeout = min(timeout, unanswered)
        return LoadResult(
            tool=self.name,
            requests=requests,
            duration_s=seconds,
            bytes=int(traffic.group(1)) if traffic else 0,
            latency=latency,
            errors=Errors(non_2xx=non_2xx, timeout=timeout, read=unanswered - timeout),
            histogram=encoded,
        )


def _read_log(log: Path) -> tuple[LatencyTally, int, int, int]:
    """h2load's log (start µs, status, µs to the end of the answer), read in chunks into a
    histogram: (latencies, requests, non-2xx answers, answers neither 2xx nor 3xx)."""
    tally, requests, non_2xx, not_3xx = LatencyTally(), 0, 0, 0
    if not log.exists():
        return tally, 0, 0, 0
    with log.open() as handle:
        while batch := [line for line in itertools.islice(handle, CHUNK_ROWS) if line.strip()]:
            rows = numpy.loadtxt(batch, delimiter="\t", usecols=(1, 2), dtype=numpy.int64, ndmin=2)
            statuses, latencies = rows.T
            tally.add(numpy.maximum(1, latencies))
            requests += int(statuses.size)
            non_2xx += int(((statuses < 200) | (statuses >= 300)).sum())
            not_3xx += int(((statuses < 200) | (statuses >= 400)).sum())
    return tally, requests, non_2xx, not_3xx
