"""What every load tool adapter shares: the request, the error type, and the way to run one
tool on this machine (generators.py runs it on one host or several)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from benchlab.errors import BenchlabError
from benchlab.load.result import LoadResult
from benchlab.process import ProcessRegistry


class LoadToolError(BenchlabError):
    """The load tool failed to run or printed no result."""


@dataclass(frozen=True)
class HttpTarget:
    """One request of a mix, sent `weight` times in every round of the mix."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    weight: int = 1


@dataclass(frozen=True)
class LoadRequest:
    url: str
    connections: int  # closed loop: connections held open; fixed rate: the most it may open
    threads: int
    duration_s: int
    timeout_s: int
    cores: tuple[int, ...]
    tool: str = "wrk"
    rate: float | None = None  # requests per second on a fixed schedule; None: closed loop
    # A mix of requests (a user's app); empty: GET `url` only, what every tool can send.
    targets: tuple[HttpTarget, ...] = ()
    # Whether the server keeps connections open (learnt at verification): a server that
    # answers `Connection: close` (or HTTP/1.0 without keep-alive) does not.
    keep_alive: bool = True
    # The generator's name when several share a trial (its host's): vegeta's attack name,
    # by which their merged results tell whose schedule a request followed.
    name: str = ""


class LoadTool(Protocol):
    name: str
    install: str  # how to get it: the Debian package, or the benchlab command that builds it
    can_pace: bool  # sends at a fixed rate (open loop), not only in a closed loop
    latency_resolution_ms: float  # the finest latency it reports
    # Fresh attempts after the tool hangs without a result (a known upstream deadlock).
    hang_retries: int
    build: Callable[[], object] | None  # builds it into benchlab's cache (None: a package)

    def executable(self) -> str | None: ...

    def threads_for(self, asked: int | None, connections: int, load_cores: int) -> int:
        """Threads (the cores it can keep busy) the tool runs with for a profile."""
        ...

    def command(self, request: LoadRequest, workdir: Path) -> list[str]: ...

    def parse(self, output: str, request: LoadRequest, workdir: Path) -> LoadResult: ...

    def merge(self, parts: list[tuple[LoadRequest, Path]], results: list[LoadResult]) -> LoadResult:
        """One result from several generators' (each with its request and directory)."""
        ...


class DebianTool:
    """A load tool installed from a Debian package: found on PATH."""

    name = ""
    package = ""
    can_pace = False
    hang_retries = 0
    build = None
    latency_resolution_ms = 0.001

    @property
    def install(self) -> str:
        return f"apt-get install {self.package}"

    def executable(self) -> str | None:
        return shutil.which(self.name)

    def threads_for(self, asked: int | None, connections: int, load_cores: int) -> int:
        return min(asked or load_cores, connections)

    def merge(self, parts: list[tuple[LoadRequest, Path]], results: list[LoadResult]) -> LoadResult:
        from benchlab.load.merge import merge_histograms

        return merge_histograms(results)


def run_load(
    tool: LoadTool, request: LoadRequest, registry: ProcessRegistry, workdir: Path
) -> LoadResult:
    """The tool on this machine, on the request's cores (one generator)."""
    from benchlab.hosts.base import THIS_MACHINE, Placement
    from benchlab.load.generators import run_generators

    return run_generators(
        tool, request, [Placement(THIS_MACHINE, request.cores)], registry, workdir
    ).result
