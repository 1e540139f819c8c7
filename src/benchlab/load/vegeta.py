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
import json
import subprocess
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

from benchlab.core.errors import LoadToolError, UserError
from benchlab.load.base import HttpTarget, LoadRequest
from benchlab.load.live import Follow
from benchlab.load.request_records import Generator, Lines, read_results
from benchlab.load.result import LoadResult
from benchlab.load.vegeta_live import VegetaFollower
from benchlab.system.build_cache import cache_dir, trusted, usable_cache
from benchlab.system.go_toolchain import build_env, go_command
from benchlab.system.trusted_path import NEUTRAL_DIR

MODULE = "github.com/tsenart/vegeta/v12"
VERSION = "v12.13.0"


def binary() -> Path:
    return cache_dir() / f"vegeta-{VERSION}"


def build() -> Path:
    """`go install` of the pinned version into benchlab's cache (once)."""
    target = binary()
    if trusted(target):
        return target
    usable_cache()
    target.unlink(missing_ok=True)
    gobin = target.parent / "vegeta-build"
    env = {**build_env(), "GOBIN": str(gobin), "GOFLAGS": "-trimpath", "CGO_ENABLED": "0"}
    try:
        result = subprocess.run(
            [go_command(), "install", f"{MODULE}@{VERSION}"],
            env=env, capture_output=True, text=True, check=False, timeout=600, cwd=NEUTRAL_DIR,
        )  # fmt: skip
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
    install = (
        "built on its first use (with Go, installed if missing); benchlab build builds it ahead"
    )
    package = None
    pinned_version = VERSION
    version_command = ()
    can_pace = True
    websocket = False
    sends_any_request = True
    protocols = ("h1", "h1-tls", "h2", "h2c")
    records_each_request = True
    reconnects = True
    merges_exactly = True  # every request is read back (see merge)
    latency_resolution_ms = 0.001
    hang_retries = 0
    stops_early = False
    overhead_s = 0.4

    @staticmethod
    def build() -> Path:
        return build()

    def executable(self) -> str | None:
        path = binary()
        return str(path) if trusted(path) else None

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
        records = workdir / "vegeta.bin"
        result = read_results([Generator(_encoded(records), request.rate)], _mixed(request))
        if not request.name:  # a named generator's results are kept for the merge
            records.unlink(missing_ok=True)
        return result

    def merge(self, parts: list[tuple[LoadRequest, Path]], results: list[LoadResult]) -> LoadResult:
        """Every request of every generator, read back together, each timed against its own
        generator's schedule (a closed loop has none: no lag then)."""
        paced = all(request.rate for request, _ in parts)
        generators = [
            Generator(_encoded(directory / "vegeta.bin"), request.rate if paced else None)
            for request, directory in parts
        ]
        return read_results(generators, _mixed(parts[0][0]))

    def follower(
        self, request: LoadRequest, workdir: Path, follow: Follow
    ) -> AbstractContextManager[object] | None:
        """Its results file as it writes it, counted by its own report once a second."""
        return VegetaFollower(str(binary()), workdir / "vegeta.bin", request.duration_s, follow)


def _mixed(request: LoadRequest) -> bool:
    return len({(t.method, t.url) for t in request.targets}) > 1


def kept_records(records: Path) -> Lines:
    """A named attack's result file (kept after its trial), as CSV lines."""
    return _encoded(records)


def _encoded(records: Path) -> Lines:
    """A way to read a result file's records as CSV lines, streamed from `vegeta encode`
    (as often as asked: the reading takes two passes)."""

    def lines() -> Iterator[str]:
        with subprocess.Popen(
            [str(binary()), "encode", "--to", "csv", str(records)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=NEUTRAL_DIR,
        ) as encode:  # fmt: skip
            assert encode.stdout is not None and encode.stderr is not None
            try:
                yield from encode.stdout
            finally:
                encode.stdout.close()
                if encode.wait(timeout=60) not in (0, None) and encode.returncode != -13:
                    said = encode.stderr.read().strip()[-300:]
                    raise LoadToolError(f"vegeta encode failed: {said}")

    return lines


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
