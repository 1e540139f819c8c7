"""An endpoint already running (`benchlab tune http://HOST:PORT/PATH`): a server benchlab
neither starts nor stops — in any language, behind its own proxy, in a container — measured
as it runs. It is the one candidate; the first pass, the capacity search and the proof load
it at its address, and every answer is checked before any load (a wrong answer is never a
figure).

What can be measured of it depends on where it runs. Its CPU per request and memory are
counted only when it runs on this machine and tune is told which processes are its: `--pid
PID` (its main process and everything it forks), `--cgroup PATH` or `--unit NAME` (a
control group, a systemd unit's); otherwise the report says they were not measured and
why. Nothing is pinned or limited (`--cpus`/`--memory` are a started server's), and the
load tool shares this machine's cores with it when it runs here.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from benchlab.analysis.tune_options import SubjectKind
from benchlab.core.errors import UserError
from benchlab.http.scenarios import Expectation
from benchlab.http.verify import verify
from benchlab.http.wire import ExchangeError, ExchangeTimeout, exchange
from benchlab.stacks import Launch, LaunchContext, Stack
from benchlab.stacks.base import Running
from benchlab.system.cpu_account import Limits
from benchlab.system.watch import Watch
from benchlab.tune.candidates import SCENARIO, Candidate
from benchlab.tune.subject import Described

STACK = "endpoint"
CHECK_TIMEOUT_S = 10.0  # an answer slower than this alone is a stall, not a figure
UNWATCHED = (
    "not measured: benchlab did not start it, and was given none of its processes (--pid, "
    "--cgroup or --unit, when it runs on this machine)"
)


def is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


@dataclass(frozen=True)
class Url:
    """An endpoint's URL, read: its host, port and the request its path makes."""

    text: str
    host: str
    port: int
    target: str  # its path and query: the request sent when no --request says otherwise

    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def parse_url(text: str) -> Url:
    parts = urlsplit(text)
    if parts.scheme == "https":
        raise UserError(
            f"{text}: https is not measured yet; give its plain-HTTP address (the port behind "
            "its TLS), e.g. http://127.0.0.1:8080/"
        )
    try:
        port = parts.port or 80
    except ValueError:
        raise UserError(f"{text}: its port is not a number from 1 to 65535") from None
    if parts.scheme != "http" or not parts.hostname:
        raise UserError(f"{text}: give an http:// URL with a host, e.g. http://127.0.0.1:8080/")
    if parts.username or parts.password:
        raise UserError(f"{text}: a URL with a user or password is not sent; drop it")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Url(text, parts.hostname, port, target)


def check_answers(url: Url, requests: list[Expectation]) -> None:
    """Each request asked once, before any load: a host that is not known, a refused
    connection, a stall or a wrong answer is one line, and no figure."""
    if requests:
        _reach(url, requests[0])
    problem = verify(url.host, url.port, requests, timeout=CHECK_TIMEOUT_S)
    if problem is not None:
        raise UserError(
            f"{url.text}: {problem}; fix the request or its check (--check-status, --check-body)"
        )


def _reach(url: Url, first: Expectation) -> None:
    """The first request answered at all, whatever its answer: why not, told by what failed
    (the name's lookup, the connection, the time), never by reading the error's words."""
    began = time.monotonic()
    try:
        exchange(
            url.host, url.port, first.method, first.path, headers=first.headers,
            body=first.request_body, timeout=CHECK_TIMEOUT_S,
        )  # fmt: skip
    except ExchangeError as exc:
        cause = exc.__cause__
        if isinstance(cause, socket.gaierror):
            fix = f"is the host name right? {url.host} is not known here"
        elif isinstance(exc, ExchangeTimeout) or time.monotonic() - began >= CHECK_TIMEOUT_S:
            fix = f"it must answer each request alone within {CHECK_TIMEOUT_S:g} s (it stalls)"
        else:
            fix = "is it running, and listening there?"
        raise UserError(f"{url.text}: {first.describe()} failed: {exc}; {fix}") from None


@dataclass(frozen=True)
class Endpoint:
    """A server already running at `url`; `watch`: its processes on this machine, if given."""

    url: Url
    watch: Watch | None = None

    @property
    def kind(self) -> SubjectKind:
        return SubjectKind.ENDPOINT

    @property
    def shown(self) -> str:
        return self.url.origin

    @property
    def owner(self) -> str | None:
        return None  # nothing of it is started

    @property
    def address(self) -> str | None:
        return self.url.host

    @property
    def checks_slow_clients(self) -> bool:
        return False  # a running server is measured, not stopped and restarted for checks

    @property
    def unmeasured(self) -> str | None:
        return None if self.watch is not None else UNWATCHED

    def candidates(self, cores: int, memory_mb: float | None) -> list[Candidate]:
        return [Candidate(STACK, self.url.origin)]

    def stack(self) -> Stack:
        def launch(ctx: LaunchContext) -> Launch:
            raise AssertionError("an endpoint already running is never launched")

        return Stack(
            name=STACK, framework=f"your endpoint ({self.url.origin})", server="already running",
            worker_model="as it runs", scenarios=(SCENARIO,), launch=launch, fixed_workers=True,
            isolated_env=True, shown_as=self.url.origin,
            running=Running(self.url.host, self.url.port, self.watch, self.unmeasured or ""),
        )  # fmt: skip

    def catalogue(self, limits: Limits | None) -> dict[str, Stack]:
        return {STACK: self.stack()}

    def announce(self, say: Callable[[str], None], runs_as: str) -> None:
        watched = (
            f"its CPU and memory counted by its {self.watch.source}"
            if self.watch is not None
            else f"its CPU and memory {UNWATCHED}"
        )
        say(f"your endpoint: {self.url.origin}, already running (nothing started); {watched}")

    def described(self) -> Described:
        return Described(
            given=self.url.text, subject=self.url.origin, directory="", interface="http",
            unmeasured=self.unmeasured,
        )  # fmt: skip
