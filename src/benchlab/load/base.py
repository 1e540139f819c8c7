"""What every load tool adapter shares: the request, and the traits every tool declares
(hosts/generators.py runs a tool on one host or several)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from benchlab.load.live import Follow
from benchlab.load.merge import merge_histograms
from benchlab.load.result import LoadResult


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
    # Whole seconds for a recipe's loads; a tune proof's warm-up may be a fraction (5.6 s),
    # always at a fixed rate, so given to vegeta, whose Go durations take one.
    duration_s: float
    timeout_s: int
    cores: tuple[int, ...]
    tool: str
    rate: float | None = None  # requests per second on a fixed schedule; None: closed loop
    # A mix of requests (a user's app); empty: GET `url` only, what every tool can send.
    targets: tuple[HttpTarget, ...] = ()
    # Whether the server keeps connections open (learnt at verification): a server that
    # answers `Connection: close` (or HTTP/1.0 without keep-alive) does not.
    keep_alive: bool = True
    # The client closes each connection after one request (a profile's keepalive = false).
    close_each: bool = False
    protocol: str = "h1"  # protocols.PROTOCOLS; the URL's scheme says TLS or not
    ca: str | None = None  # the run's certificate authority, for a client that checks it
    # The generator's name when several share a trial (its host's): vegeta's attack name,
    # by which their merged results tell whose schedule a request followed.
    name: str = ""


class LoadTool(Protocol):
    name: str
    is_default: bool  # the tool of a load profile that names none (one tool says so)

    # Read-only (properties): a tool gives each as a class attribute of a narrower type (a
    # Debian tool's package is a str, its build None, wrk's protocols two) or works it out (a
    # Debian tool's install).
    @property
    def install(self) -> str:
        """How to get it: the Debian package, or the benchlab command that builds it."""
        ...

    @property
    def package(self) -> str | None:
        """The Debian package it comes from (None: benchlab builds it)."""
        ...

    @property
    def build(self) -> Callable[[], object] | None:
        """Builds it into benchlab's cache (None: a package)."""
        ...

    @property
    def pinned_version(self) -> str | None:
        """The version benchlab builds (None: its package's)."""
        ...

    @property
    def version_command(self) -> tuple[str, ...]:
        """Prints its version beyond its package's; () none."""
        ...

    @property
    def protocols(self) -> tuple[str, ...]:
        """The protocols (protocols.PROTOCOLS) it speaks."""
        ...

    can_pace: bool  # sends at a fixed rate (open loop), not only in a closed loop
    # Loads the WebSocket scenarios (and nothing else): runner/websocket.py drives it.
    websocket: bool
    # Sends any method, headers and body (an upload, a gzip request), not only a plain GET.
    sends_any_request: bool
    # Keeps each request's own latency and status (a mix's parts are told apart).
    records_each_request: bool
    # Opens a new connection when a server closes one after its answer (gunicorn's sync
    # workers do after every request); h2load's HTTP/1.1 waits instead.
    reconnects: bool
    # Several generators' results merge exactly: it keeps every latency (a whole histogram
    # or each request), not only percentiles, which cannot be added up.
    merges_exactly: bool
    latency_resolution_ms: float  # the finest latency it reports
    # Fresh attempts after the tool hangs without a result (a known upstream deadlock), or,
    # for one that may stop early, ends before half its duration.
    hang_retries: int
    # Its timer sometimes ends a run after a few milliseconds (siege's -t).
    stops_early: bool
    # Its time beyond a trial's duration (start-up, draining, reading its results): the
    # estimate a plan uses until this machine has measured it.
    overhead_s: float

    def executable(self) -> str | None: ...

    def program(self) -> str:
        """How a host finds it: its name on the PATH, or its path in benchlab's cache."""
        ...

    def threads_for(self, asked: int | None, connections: int, load_cores: int) -> int:
        """Threads (the cores it can keep busy) the tool runs with for a profile."""
        ...

    def command(self, request: LoadRequest, workdir: Path) -> list[str]: ...

    def parse(self, output: str, request: LoadRequest, workdir: Path) -> LoadResult: ...

    def merge(self, parts: list[tuple[LoadRequest, Path]], results: list[LoadResult]) -> LoadResult:
        """One result from several generators' (each with its request and directory)."""
        ...

    def follower(
        self, request: LoadRequest, workdir: Path, follow: Follow
    ) -> AbstractContextManager[object] | None:
        """Around its running process: its figures so far, to `follow`, as it goes (None:
        it gives none until it ends)."""
        ...


class DebianTool:
    """A load tool installed from a Debian package: found on PATH."""

    name = ""
    is_default = False
    package = ""
    build = None
    pinned_version = None
    version_command: tuple[str, ...] = ()
    can_pace = False
    websocket = False
    sends_any_request = False
    protocols: tuple[str, ...] = ("h1",)
    records_each_request = False
    reconnects = True
    merges_exactly = False
    latency_resolution_ms = 0.001
    hang_retries = 0
    stops_early = False
    overhead_s = 0.3

    @property
    def install(self) -> str:
        return f"apt-get install {self.package}"

    def executable(self) -> str | None:
        return shutil.which(self.name)

    def program(self) -> str:
        return self.name

    def threads_for(self, asked: int | None, connections: int, load_cores: int) -> int:
        return min(asked or load_cores, connections)

    def merge(self, parts: list[tuple[LoadRequest, Path]], results: list[LoadResult]) -> LoadResult:
        return merge_histograms(results)

    def follower(
        self, request: LoadRequest, workdir: Path, follow: Follow
    ) -> AbstractContextManager[object] | None:
        return None  # its figures come when it ends
