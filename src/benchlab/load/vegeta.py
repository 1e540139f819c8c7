"""vegeta: requests at a fixed rate (open loop), or as fast as N workers go (closed loop).

vegeta stamps each request when a worker starts it and times its latency from there. When
the generator falls behind its schedule (its core saturated), that stamp is later than the
moment the request was due, and the wait would vanish from the latency: coordinated
omission. So every result is read back (`vegeta encode`), the due time of request number
`seq` is computed from the schedule (vegeta's constant pacer sends request `seq` at
start + (seq + 1) / rate), and the lag between due and sent is added to its latency. The
largest lag is reported. Workers are unbounded, so no request waits for a worker; it may
wait for one of the `connections` connections, and that wait is inside its latency.

Built from source by `benchlab build` (a pinned version from the Go module proxy).
"""

from __future__ import annotations

import base64
import csv
import json
import math
import os
import statistics
import subprocess
from pathlib import Path

from benchlab.build_cache import cache_dir
from benchlab.errors import LoadToolError, UserError
from benchlab.load import histogram
from benchlab.load.base import HttpTarget, LoadRequest
from benchlab.load.result import Errors, LoadResult

MODULE = "github.com/tsenart/vegeta/v12"
VERSION = "v12.13.0"
SUCCESS = range(200, 400)  # vegeta's own definition of a successful response


def binary() -> Path:
    return cache_dir() / f"vegeta-{VERSION}"


def build() -> Path:
    """`go install` of the pinned version into benchlab's cache (once)."""
    target = binary()
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    gobin = target.parent / "vegeta-build"
    env = {**os.environ, "GOBIN": str(gobin), "GOFLAGS": "-trimpath", "CGO_ENABLED": "0"}
    try:
        result = subprocess.run(
            ["go", "install", f"{MODULE}@{VERSION}"],
            env=env, capture_output=True, text=True, check=False, timeout=600,
        )  # fmt: skip
    except FileNotFoundError:
        raise UserError(
            "cannot build vegeta: 'go' is not installed (apt-get install golang, or Go from go.dev)"
        ) from None
    except subprocess.TimeoutExpired:
        raise UserError("cannot build vegeta: 'go install' took over 10 minutes") from None
    if result.returncode != 0:
        raise UserError(f"go install {MODULE}@{VERSION} failed:\n{result.stderr.strip()[-1500:]}")
    (gobin / "vegeta").rename(target)
    gobin.rmdir()
    return target


class Vegeta:
    name = "vegeta"
    is_default = False
    install = "built on its first use (needs Go); benchlab build builds it ahead"
    package = None
    pinned_version = VERSION
    version_command = ()
    can_pace = True
    sends_any_request = True
    protocols = ("h1", "h1-tls", "h2", "h2c")
    records_each_request = True
    reconnects = True
    merges_exactly = True  # every request is read back (see merge)
    latency_resolution_ms = 0.001
    hang_retries = 0
    overhead_s = 0.4

    @staticmethod
    def build() -> Path:
        return build()

    def executable(self) -> str | None:
        path = binary()
        return str(path) if path.exists() else None

    def program(self) -> str:
        return str(binary())

    def threads_for(self, asked: int | None, connections: int, load_cores: int) -> int:
        return load_cores  # Go runs on every core it is pinned to

    def command(self, request: LoadRequest, workdir: Path) -> list[str]:
        targets = workdir / "vegeta-targets.json"
        targets.write_text(_targets_json(request))
        if request.rate is None:
            # Closed loop: exactly `connections` workers, each sending when its last returns.
            pacing = ["-rate=0", f"-workers={request.connections}",
                      f"-max-workers={request.connections}"]  # fmt: skip
        else:
            # Per 10 s so that a rate like 152.5 req/s is kept exactly.
            pacing = [f"-rate={round(request.rate * 10)}/10s"]
        return [
            str(binary()), "attack", "-format=json", f"-targets={targets}", *pacing,
            f"-duration={request.duration_s}s", f"-timeout={request.timeout_s}s",
            f"-max-connections={request.connections}", f"-connections={request.connections}",
            "-max-body=0", *_protocol_flags(request),
            f"-keepalive={str(not request.close_each).lower()}",
            *([f"-name={request.name}"] if request.name else []),
            f"-output={workdir / 'vegeta.bin'}",
        ]  # fmt: skip

    def parse(self, output: str, request: LoadRequest, workdir: Path) -> LoadResult:
        result = _read_encoded([workdir / "vegeta.bin"], request.rate, workdir)
        if not request.name:  # a named generator's results are kept for the merge
            (workdir / "vegeta.bin").unlink(missing_ok=True)
        return result

    def merge(self, parts: list[tuple[LoadRequest, Path]], results: list[LoadResult]) -> LoadResult:
        """Every request of every generator, read back together (`vegeta encode` of all
        their result files), each timed against its own generator's schedule (its attack
        name says whose)."""
        files = [directory / "vegeta.bin" for _, directory in parts]
        rates = {request.name: request.rate for request, _ in parts}
        if any(rate is None for rate in rates.values()):
            return _read_encoded(files, None, parts[0][1])
        return _read_encoded(files, rates, parts[0][1])  # type: ignore[arg-type]


def _read_encoded(
    files: list[Path], rate: float | dict[str, float] | None, workdir: Path
) -> LoadResult:
    encoded = workdir / "vegeta.csv"
    with encoded.open("w") as handle:
        done = subprocess.run(
            [str(binary()), "encode", "--to", "csv", *map(str, files)],
            stdout=handle, stderr=subprocess.PIPE, text=True, check=False, timeout=300,
        )  # fmt: skip
    if done.returncode != 0:
        raise LoadToolError(f"vegeta encode failed: {done.stderr.strip()[-300:]}")
    try:
        with encoded.open(newline="") as handle:
            return read_results(csv.reader(handle), rate)
    finally:
        encoded.unlink(missing_ok=True)


def _protocol_flags(request: LoadRequest) -> list[str]:
    """HTTP/2 only when asked (vegeta's default would take it over TLS by ALPN); the run's
    authority trusted for TLS."""
    flags = [f"-http2={str(request.protocol == 'h2').lower()}"]
    if request.protocol == "h2c":
        flags.append("-h2c")
    if request.ca:
        flags.append(f"-root-certs={request.ca}")
    return flags


def _targets_json(request: LoadRequest) -> str:
    """vegeta's JSON targets, one per line; a target of weight N is listed N times (vegeta
    goes round the list in order, so the mix holds in every round of it)."""
    targets = request.targets or (HttpTarget("GET", request.url),)
    lines = []
    for target in targets:
        line: dict[str, object] = {"method": target.method, "url": target.url}
        if target.headers:
            headers: dict[str, list[str]] = {}
            for name, value in target.headers:
                headers.setdefault(name, []).append(value)
            line["header"] = headers
        if target.body:
            line["body"] = base64.b64encode(target.body).decode()
        lines += [json.dumps(line)] * target.weight
    return "\n".join(lines) + "\n"


def _error_kind(error: str) -> str:
    text = error.lower()
    if "timeout" in text or "deadline exceeded" in text:
        return "timeout"
    if "connection refused" in text or "dial" in text or "connect:" in text:
        return "connect"
    if "write:" in text or "broken pipe" in text:
        return "write"
    if "eof" in text or "reset by peer" in text or "read:" in text:
        return "read"
    return "other"


def read_results(rows, rate: float | dict[str, float] | None) -> LoadResult:
    """One LoadResult from vegeta's CSV results (see `vegeta encode -h` for the columns).
    Several generators' results together: `rate` gives each attack name its own rate."""
    by_attack: dict[str, list[tuple[int, int, int, int, int, str]]] = {}
    requests_of: dict[tuple[str, int], str] = {}  # (attack, seq) -> "METHOD path"
    for row in rows:  # seq, sent ns, latency ns, code, bytes in, error; method, url
        send = (int(row[8]), int(row[0]), int(row[2]), int(row[1]), int(row[4]), row[5])
        by_attack.setdefault(row[7], []).append(send)
        requests_of[(row[7], send[0])] = f"{row[9]} {_path(row[10])}"
    if not by_attack:
        raise LoadToolError("vegeta sent no request")
    rates = rate if isinstance(rate, dict) else dict.fromkeys(by_attack, rate)
    sends, lags, kinds = [], [], []
    for name, attack in by_attack.items():
        attack.sort()
        sends += attack
        lags += _lags(attack, rates[name])
        kinds += [requests_of[(name, s[0])] for s in attack]
    if len(by_attack) > 1:  # in the order they were sent, whoever sent them
        order = sorted(range(len(sends)), key=lambda i: (sends[i][1], sends[i][0]))
        sends, lags = [sends[i] for i in order], [lags[i] for i in order]
        kinds = [kinds[i] for i in order]
    per_kind: dict[str, list[int]] = {}
    failed_kind: dict[str, int] = {}
    first_sent = min(s[1] for s in sends)
    counts = {"connect": 0, "read": 0, "write": 0, "timeout": 0, "other": 0}
    latencies_us: list[int] = []
    answered = non_2xx = received = 0
    end = first_sent
    for (_seq, sent, latency, code, bytes_in, error), lag, what in zip(
        sends, lags, kinds, strict=True
    ):
        end = max(end, sent + latency)
        if code == 0 or code not in SUCCESS:
            failed_kind[what] = failed_kind.get(what, 0) + 1
        if code == 0:
            kind = _error_kind(error)
            counts[kind] += 1
            if kind != "timeout":
                continue  # it failed without waiting: not a latency
        else:
            answered += 1
            received += bytes_in
            non_2xx += code not in SUCCESS
        latencies_us.append(max(1, (latency + lag) // 1000))
        per_kind.setdefault(what, []).append(latencies_us[-1])
    duration_s = max(end - first_sent, 1) / 1e9
    latency, encoded = histogram.latency_of(latencies_us)
    quarter = max(1, len(latencies_us) // 4)
    paced = all(rates.values())
    return LoadResult(
        tool="vegeta",
        requests=answered,
        duration_s=duration_s,
        bytes=received,
        latency=latency,
        errors=Errors(non_2xx=non_2xx, **counts),
        histogram=encoded,
        target_rate=sum(rates.values()) if paced else None,  # type: ignore[arg-type]
        sent_rate=sum(_sent_rate(a) for a in by_attack.values()) if paced else None,
        schedule_lag_ms=max(lags) / 1e6 if paced else None,
        latency_first_ms=_median_ms(latencies_us[:quarter]),
        latency_last_ms=_median_ms(latencies_us[-quarter:]),
        window_p99_ms=window_p99s(latencies_us),
        parts=_parts(per_kind, failed_kind) if len(set(kinds)) > 1 else {},
    )


def _parts(
    latencies: dict[str, list[int]], failed: dict[str, int]
) -> dict[str, dict[str, float | int | None]]:
    """Each request of a mix on its own: how many, how many failed, its latency."""
    found: dict[str, dict[str, float | int | None]] = {}
    for what in sorted(set(latencies) | set(failed)):
        values = sorted(latencies.get(what, []))
        found[what] = {
            "requests": len(values),
            "errors": failed.get(what, 0),
            "p50_ms": _quantile_ms(values, 0.50),
            "p99_ms": _quantile_ms(values, 0.99),
        }
    return found


def _quantile_ms(sorted_us: list[int], q: float) -> float | None:
    if not sorted_us:
        return None
    return sorted_us[max(0, math.ceil(q * len(sorted_us)) - 1)] / 1000


def _path(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


LATENCY_WINDOWS = 4


def window_p99s(latencies_us: list[int], windows: int = LATENCY_WINDOWS) -> tuple[float, ...]:
    """The p99 (ms) of each of `windows` consecutive equal parts of the latencies, in send
    order; none when a part would hold under 100 requests (its p99 would be its maximum)."""
    size = len(latencies_us) // windows
    if size < 100:
        return ()
    found = []
    for i in range(windows):
        part = sorted(latencies_us[i * size : (i + 1) * size])
        found.append(part[math.ceil(0.99 * len(part)) - 1] / 1000)
    return tuple(found)


def _lags(sends: list[tuple[int, int, int, int, int, str]], rate: float | None) -> list[int]:
    """How late each request of one attack was sent, in ns: due time of request seq is
    start + (seq + 1) / rate. The start is not in the results; the least-late request fixes
    it (so the lag is a lower bound, off by that one's)."""
    if not rate:
        return [0] * len(sends)
    interval = 1e9 / rate
    start = min(sent - (seq + 1) * interval for seq, sent, *_ in sends)
    return [max(0, round(sent - start - (seq + 1) * interval)) for seq, sent, *_ in sends]


def _sent_rate(sends: list[tuple[int, int, int, int, int, str]]) -> float:
    first, last = min(s[1] for s in sends), max(s[1] for s in sends)
    return (len(sends) - 1) / ((last - first) / 1e9) if last > first else 0.0


def _median_ms(values_us: list[int]) -> float | None:
    return statistics.median(values_us) / 1000 if values_us else None
