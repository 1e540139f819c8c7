"""A started stack, as a resilience check sees it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchlab.http.scenarios import Expectation
from benchlab.load.base import HttpTarget
from benchlab.stacks.base import Stack
from benchlab.system.process import ManagedProcess, ProcessRegistry


@dataclass(frozen=True)
class CheckTarget:
    """A stack answering at address:port — its own port, or nginx's in front of it — with
    its server process (a check that stops it signals this one). What a check starts beside
    it (a load tool, slow clients) goes in `registry` and runs on `load_cores`; its files go
    in `workdir`, a directory of the check's own. A user's app (tune) is loaded with its own
    requests at a rate its capacity allows; a catalogue stack with GET /plaintext at the
    check's own rate."""

    stack: Stack
    server: ManagedProcess
    address: str
    port: int
    registry: ProcessRegistry
    workdir: Path
    load_cores: tuple[int, ...]
    requests: tuple[Expectation, ...] = ()  # () : GET /plaintext
    rate: float | None = None  # None: the check's own
    # It was started with benchlab's static files, slow_clients.READ_PATH among them (its
    # app serves them where it serves the static scenario).
    serves_read_file: bool = False

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}"

    @property
    def path(self) -> str:
        """Where the load and the slow clients go: the first request's path."""
        return self.requests[0].path if self.requests else "/plaintext"

    def targets(self) -> tuple[HttpTarget, ...]:
        """The requests as the load tool sends them (() : GET `url` + `path`)."""
        return tuple(
            HttpTarget(r.method, f"{self.url}{r.path}", r.headers, r.request_body, r.weight)
            for r in self.requests
        )
