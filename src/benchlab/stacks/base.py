"""What a stack is: how to check it can run here, build it, and the command that launches it."""

from __future__ import annotations

import importlib.util
import shutil
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchlab.http.protocols import PROTOCOLS
from benchlab.http.scenarios import API_SCENARIOS, SCENARIOS, WEBSOCKET_SCENARIOS
from benchlab.http.tls import TlsFiles
from benchlab.measure.server_counters import CounterSource
from benchlab.stacks.servers import PerWorker, ServerKind
from benchlab.system.cpu_account import Limits
from benchlab.system.trusted_path import NEUTRAL_DIR
from benchlab.system.watch import Watch

APPS_DIR = Path(__file__).resolve().parent.parent / "apps"
ALL_SCENARIOS = ("plaintext", "json", "db", "db-delay", "cache", "sleep")
# The apps that serve GET /cpu?us=N too (Flask's, FastAPI's, the Go ones).
WITH_CPU = (*ALL_SCENARIOS, "cpu")
# The apps that serve the API scenarios too (FastAPI's, Flask's, Django's, Gin's).
WITH_API = (*WITH_CPU, *API_SCENARIOS)
# Why a stack does not serve a scenario, unless it says more of its own.
NOT_IN_ITS_APP = {
    **dict.fromkeys(
        API_SCENARIOS,
        "its reference app serves the first contract only; the API scenarios are served by "
        "the FastAPI, Flask, Django and Gin apps",
    ),
    "cpu": "GET /cpu is served by the Flask, FastAPI and Go apps",
    **dict.fromkeys(
        WEBSOCKET_SCENARIOS,
        "its reference app has no WebSocket endpoint; the Starlette, FastAPI, Sanic, aiohttp, "
        "Tornado and Go net/http apps have",
    ),
}
# Why a server cannot serve the WebSocket scenarios, by its interface.
NO_WEBSOCKET_INTERFACE = {
    "wsgi": "WSGI has no WebSocket: a request is one call that returns its whole response",
}


# What a stack's note means for its figures (the report's reading guide prints it).
NOTE_MEANINGS = (
    (
        "keep-alive",
        "its workers close every connection, so the load tool opens a new one for each "
        "request, which costs both sides",
    ),
    ("dev server", "the framework's development server, not meant for production"),
    (
        "ceiling",
        "nginx answering from memory: the most this machine and its load tool carry at each "
        "point, shown and not ranked; each stack's share of it says how far below it sits",
    ),
    (
        "deliberate mistake",
        "a mistake kept on purpose to show its cost: gevent patches the standard library after "
        "the app imported it, so its calls still block",
    ),
)


# A launch's fact: the stack is the WebSocket ceiling (its WebSocket cells are shown, not
# ranked: analysis/relative.py reads it).
WEBSOCKET_CEILING = "websocket_ceiling"


@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str = ""
    fix: str = ""


@dataclass(frozen=True)
class LaunchContext:
    """Everything a stack needs to build its command line."""

    host: str
    port: int
    workdir: Path
    server_cores: tuple[int, ...]
    workers: int
    threads: int | None = None  # threads (or greenlets) per worker, for stacks that have them
    protocol: str = "h1"  # what the server speaks to its clients (protocols.PROTOCOLS)
    tls: TlsFiles | None = None  # its certificate and key, for a protocol over TLS
    static_dir: Path | None = None  # the static scenario's files ($BENCHLAB_STATIC_DIR)
    counters_port: int | None = None  # where it serves its own counters (Stack.counters)
    # The Python a Python stack runs and its reference apps (python_env.py: benchlab's own,
    # or the stacks' environment when their user cannot run benchlab's).
    python: str = sys.executable
    python_apps: Path = APPS_DIR / "python"


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path = NEUTRAL_DIR  # where it runs: its apps' directory, else / (root's, empty of use)


@dataclass(frozen=True)
class Running:
    """A server already running that a launch attaches to instead of starting (tune's
    endpoint): benchlab starts, pins and stops nothing of it. Its CPU and memory are counted
    by `watch` (its pid or control group on this machine); without one they are not
    measured, for the reason `unwatched` gives."""

    address: str  # as the user named it: an address or a host name
    port: int
    watch: Watch | None = None
    unwatched: str = ""


@dataclass(frozen=True)
class Stack:
    name: str
    framework: str
    server: str
    worker_model: str
    scenarios: tuple[str, ...]
    launch: Callable[[LaunchContext], Launch]
    flavours: tuple[str, ...] = ()  # driver flavours (sync, async); the first is the default
    # Threads or greenlets per worker: always passed explicitly and shown in the label.
    concurrency: PerWorker | None = None  # threads (label t=N) or greenlets (label c=N)
    default_concurrency: int = 1
    fixed_workers: bool = False  # one process only (a dev server, waitress, gevent's server)
    one_at_a_time: bool = False  # each worker serves one request at a time (gunicorn sync)
    threadpool: int | None = None  # sync-flavour endpoints run in a pool of this many threads
    unavailable: str | None = None  # why it cannot run anywhere (e.g. does not install on 3.11)
    needs_modules: tuple[str, ...] = ()
    needs_programs: tuple[str, ...] = ()
    needs_files: tuple[str, ...] = ()  # e.g. nginx modules
    fix: str = "run ./lab setup"
    note: str = ""
    build: Callable[[], None] | None = None
    start_timeout: float = 30.0
    # A user's app (benchlab tune): the command line that deploys this launch, by workers
    # and threads, and the worker class it uses.
    deploy: Callable[[int, int | None], str] | None = None
    worker_class: str | None = None
    # The user's own app: it sees the user's environment and what the user asked for
    # (--env, --with), nothing of benchlab's (no BENCHLAB_ variable, no pool settings).
    isolated_env: bool = False
    # Why it does not serve a scenario, where NOT_IN_ITS_APP's reason is not the one.
    unserved: tuple[tuple[str, str], ...] = ()
    # The CPU quota and memory limit it runs under (tune --cpus, --memory: the target's).
    limits: Limits | None = None
    # The protocols its server speaks as benchlab launches it (TLS terminated by the server
    # itself), and why not the others.
    protocols: tuple[str, ...] = ("h1",)
    protocol_note: str = ""
    # The server kind of servers.py it runs under; None: the app starts its own server.
    served_by: ServerKind | None = None
    # The counters its server keeps of its own, read around each trial (tune's candidates).
    counters: CounterSource | None = None
    # The signal its server documents for a graceful stop (nginx: SIGQUIT; SIGTERM stops
    # it at once), sent to its main process by `benchlab drain`.
    stop_signal: signal.Signals = signal.SIGTERM
    # The WebSocket ceiling (go-nethttp): what the WebSocket tool reaches against it is the
    # tool's limit, as nginx-static's throughput is for HTTP.
    websocket_ceiling: bool = False
    # A server already running, attached to (tune's endpoint): nothing is started.
    running: Running | None = None
    # Its label whatever the launch (a command's candidate: its knobs, as the user's grid
    # names them; an endpoint: its URL); None: the name and the launch's settings.
    shown_as: str | None = None

    def why_not_protocol(self, protocol: str, proxied: bool = False) -> str | None:
        """None when it can be measured over `protocol` (its own server, or nginx in front
        with [services] proxy = "nginx"), else why not."""
        if protocol in self.protocols or proxied:
            return None
        spoken = ", ".join(self.protocols)
        note = f" ({self.protocol_note})" if self.protocol_note else ""
        return (
            f"{self.server} speaks {spoken} as benchlab launches it{note}, not "
            f'{PROTOCOLS[protocol].description}; [services] proxy = "nginx" terminates it '
            "in front"
        )

    def why_not(self, scenario: str) -> str | None:
        """None when it serves `scenario`, else why not (benchlab stacks, the plan)."""
        if scenario in self.scenarios:
            return None
        parts = SCENARIOS[scenario].parts if scenario in SCENARIOS else ()
        if parts:  # a mix: served when every part is
            return next((w for p in parts if (w := self.why_not(p.scenario))), None)
        own = dict(self.unserved).get(scenario)
        if own is None and scenario in WEBSOCKET_SCENARIOS and self.served_by is not None:
            own = NO_WEBSOCKET_INTERFACE.get(self.served_by.interface)
        return own or NOT_IN_ITS_APP.get(scenario, "not implemented by its reference app")

    def unserved_reasons(self) -> dict[str, list[str]]:
        """The scenarios of the contract it does not serve, by reason."""
        reasons: dict[str, list[str]] = {}
        for scenario in SCENARIOS:
            why = self.why_not(scenario)
            if why is not None:
                reasons.setdefault(why, []).append(scenario)
        return reasons

    @property
    def note_meaning(self) -> str:
        """What the note means for the figures, in a sentence a report can print."""
        return next((meaning for key, meaning in NOTE_MEANINGS if key in self.note), "")

    def availability(self) -> Availability:
        if self.unavailable:
            return Availability(False, self.unavailable, "none: kept in the catalogue as a record")
        for program in self.needs_programs:
            if shutil.which(program) is None:
                return Availability(False, f"'{program}' is not installed", self.fix)
        for path in self.needs_files:
            if not Path(path).exists():
                return Availability(False, f"'{path}' is missing", self.fix)
        for module in self.needs_modules:
            if importlib.util.find_spec(module) is None:
                return Availability(
                    False, f"Python package '{module}' is missing", "run ./lab setup"
                )
        return Availability(True)

    def concurrency_limit(
        self, workers: int, threads: int | None, flavour: str | None
    ) -> int | None:
        """How many requests the launch can hold in progress at once; None when an event loop
        (or Go's scheduler) sets no limit of its own."""
        if self.concurrency and threads is not None:
            return workers * threads
        if self.one_at_a_time:
            return workers
        if flavour == "sync" and self.threadpool:
            return workers * self.threadpool
        return None

    def facts(self, workers: int, threads: int | None) -> dict[str, object]:
        """What reports say of a launch, stored with its cells (a report needs no catalogue)."""
        facts: dict[str, object] = {
            "framework": self.framework,
            "server": self.server,
            "worker_model": self.worker_model,
        }
        if self.worker_class is not None:
            facts["worker_class"] = self.worker_class
        if self.served_by is not None:  # typed: what a report reads instead of the sentences
            kind = self.served_by
            facts["server_name"] = kind.server.name
            facts["io_model"] = kind.io_model.value
            facts["per_worker"] = kind.concurrency.value if kind.concurrency else None
        if self.deploy is not None:
            facts["command"] = self.deploy(workers, threads)
        if self.websocket_ceiling:
            facts[WEBSOCKET_CEILING] = True
        return facts

    def label(self, workers: int, flavour: str | None = None, threads: int | None = None) -> str:
        if self.shown_as is not None:
            return self.shown_as
        note = f" ({self.note})" if self.note else ""
        shown = f"[{flavour}]" if flavour else ""
        per_worker = ""
        if self.concurrency and threads is not None:
            per_worker = f" {'t' if self.concurrency == 'threads' else 'c'}={threads}"
        elif flavour == "sync" and self.threadpool:
            per_worker = f" t={self.threadpool}"
        return f"{self.name}{shown} w={workers}{per_worker}{note}"
