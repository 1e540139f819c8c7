"""Every Python server, declared once: its package, how its command line is built (workers,
threads or greenlets, the app or its factory, TLS, host and port), the protocols it speaks
over its own TLS and its worker model, typed. The catalogue's stacks (stacks/) and tune's
candidates (tune/) are both built from these declarations, and so are the package lists of
machine.py and of tune's probe.

A server kind is a server with one worker class (gunicorn's gthread, granian's WSGI
interface, ...): adding one here adds it to tune's candidates, and to the catalogue for any
stack that names it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from benchlab.http.tls import TlsFiles
from benchlab.measure.server_counters import GRANIAN_METRICS, CounterSource

LISTEN_BACKLOG = 2048  # the same for every server that lets us set it (DESIGN: fair settings)
BACKLOG = str(LISTEN_BACKLOG)
H1_TLS = ("h1", "h1-tls")
EVERY_PROTOCOL = ("h1", "h1-tls", "h2", "h2c")


class IoModel(StrEnum):
    """How a worker waits for I/O."""

    PROCESSES = "sync processes"  # a worker serves one request at a time
    THREADS = "threads"
    GREENLETS = "greenlets"
    ASYNCIO = "asyncio"


class PerWorker(StrEnum):
    """What a worker's concurrency is given as (label t=N or c=N); None: nothing to give."""

    THREADS = "threads"
    GREENLETS = "greenlets"


@dataclass(frozen=True)
class Package:
    name: str  # as tune names it (--servers, the probe's answer, the install hint)
    module: str  # what is imported to see it is there
    distribution: str  # what pip installs and importlib.metadata versions


@dataclass(frozen=True)
class AppRef:
    """The app a server loads: module:attr, or a factory called with `call` ("()", "(1)")."""

    module: str
    attr: str
    call: str | None = None

    @property
    def target(self) -> str:
        return f"{self.module}:{self.attr}"


@dataclass(frozen=True)
class Settings:
    """One command line's settings, whoever launches it."""

    app: AppRef
    host: str
    port: int
    workers: int
    threads: int | None = None  # threads or greenlets per worker, for kinds that take them
    python: str = "python"  # the interpreter that has the server
    # Where benchlab lets it write; None: the deployable form a user runs (console scripts,
    # the server's own logging).
    workdir: Path | None = None
    tls: TlsFiles | None = None
    protocol: str = "h1"
    # The catalogue's settings for a fair comparison (event loop, HTTP parser, runtime,
    # limits); tune leaves the server's defaults, as a user deploys it.
    pinned: bool = False
    uvloop: bool = True  # the environment has uvloop (hypercorn's worker class)

    @property
    def launched(self) -> bool:
        return self.workdir is not None


def _call_in_target(app: AppRef) -> list[str]:
    """gunicorn and hypercorn call `module:create_app(...)` themselves."""
    return [f"{app.target}{app.call or ''}"]


def _uwsgi_app(app: AppRef) -> list[str]:
    if app.call is None:
        return ["--module", app.target]
    return ["--eval", f"import {app.module}; application = {app.module}.{app.attr}{app.call}"]


@dataclass(frozen=True)
class Server:
    name: str  # gunicorn, uvicorn, granian, hypercorn, waitress, uwsgi
    package: Package
    script: str  # its console script
    run_module: str | None  # `python -m` runs it; None: its script next to the interpreter
    build: Callable[[ServerKind, Settings], list[str]]
    tls_flags: tuple[str, str] | None = None  # key, certificate
    factory_flag: str | None = None  # a flag that names a factory, called without arguments
    app_args: Callable[[AppRef], list[str]] | None = None  # None: the target, or the flag's
    counters: CounterSource | None = None  # the counters it keeps of its own, when asked

    def program(self, s: Settings) -> list[str]:
        if not s.launched:
            return [self.script]
        if self.run_module is not None:
            return [s.python, "-m", self.run_module]
        return [str(Path(s.python).with_name(self.script))]

    def app(self, app: AppRef) -> list[str]:
        if self.app_args is not None:
            return self.app_args(app)
        if app.call is None:
            return [app.target]
        return [str(self.factory_flag), app.target]

    def factory_unsupported(self, app: AppRef) -> str | None:
        """Why it cannot load the app's factory as called, or None when it can."""
        if self.factory_flag is None or app.call in (None, "()"):
            return None
        return f"its {self.factory_flag} calls the factory without arguments"

    def tls(self, s: Settings) -> list[str]:
        if s.tls is None or self.tls_flags is None:
            return []
        key_flag, cert_flag = self.tls_flags
        return [key_flag, str(s.tls.key), cert_flag, str(s.tls.cert)]


@dataclass(frozen=True)
class ServerKind:
    """A server with one worker class: one stack of tune's, or of the catalogue per app."""

    name: str  # tune's candidate name: gunicorn-gthread, uvicorn, waitress, ...
    server: Server
    worker_class: str  # as reports name it: sync, gthread, uvicorn-worker, asgi, threads, ...
    interface: str  # the app it serves: wsgi, asgi (tune's), tornado, aiohttp
    io_model: IoModel
    concurrency: PerWorker | None
    worker_model: str  # the sentence reports print, of the fields above
    shown: str  # the server as the catalogue shows it, with its pinned settings
    class_argument: str | None = None  # what its --worker-class receives, where it differs
    default_concurrency: int = 1
    fixed_workers: bool = False  # one process only
    protocols: tuple[str, ...] = ("h1",)  # over its own TLS, as benchlab launches it
    needs: tuple[Package, ...] = ()  # beyond the server's own package
    uses_if_present: tuple[Package, ...] = ()  # e.g. uvloop: chosen when installed
    candidate: bool = True  # tune offers it
    since: tuple[int, ...] = ()  # the server's first version with this worker class
    # Its WebSocket: "" the server's default; "off" launched without (granian's --no-ws,
    # benchlab's pinned HTTP setting); else the implementation it is told to use (uvicorn's
    # --ws wsproto) or "on".
    ws: str = ""

    def too_old(self, versions: dict[str, str]) -> str | None:
        """Why the environment's server lacks this worker class (None: it has it, or its
        version is not known)."""
        have = versions.get(self.server.package.distribution)
        if not self.since or have is None or _release(have) >= self.since:
            return None
        wanted = ".".join(map(str, self.since))
        return f"its {self.worker_class} worker needs {self.server.name} ≥ {wanted} (have {have})"

    @property
    def one_at_a_time(self) -> bool:
        return self.io_model is IoModel.PROCESSES

    @property
    def packages(self) -> tuple[Package, ...]:
        return (self.server.package, *self.needs)

    @property
    def tune_server(self) -> str:
        """The server as tune shows it: gunicorn (gthread)."""
        return f"{self.server.name} ({self.worker_class})"

    def argv(self, s: Settings) -> list[str]:
        return self.server.build(self, s)


def _release(version: str) -> tuple[int, ...]:
    """A version's leading numbers: 27.0.1 -> (27, 0, 1); 24.1b1 -> (24, 1)."""
    numbers = []
    for part in version.split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        numbers.append(int(digits.group()))
        if digits.group() != part:
            break
    return tuple(numbers)


def _per_worker(kind: ServerKind, s: Settings, threads: str, greenlets: str) -> list[str]:
    flags: dict[PerWorker | None, str] = {
        PerWorker.THREADS: threads,
        PerWorker.GREENLETS: greenlets,
    }
    flag = flags.get(kind.concurrency)
    return [flag, str(s.threads)] if flag else []


def _gunicorn(kind: ServerKind, s: Settings) -> list[str]:
    server = kind.server
    quiet = ["--log-level", "warning", "--worker-tmp-dir", str(s.workdir)] if s.launched else []
    return [
        *server.program(s), *server.app(s.app), "--bind", f"{s.host}:{s.port}",
        "--workers", str(s.workers), "--worker-class", kind.class_argument or kind.worker_class,
        *_per_worker(kind, s, "--threads", "--worker-connections"), "--backlog", BACKLOG,
        *_gunicorn_asgi(kind, s), *quiet, *server.tls(s),
    ]  # fmt: skip


def _gunicorn_asgi(kind: ServerKind, s: Settings) -> list[str]:
    """gunicorn's native ASGI worker (gunicorn ≥ 24): uvloop pinned in the catalogue as
    uvicorn's is."""
    return ["--asgi-loop", "uvloop"] if kind.worker_class == "asgi" and s.pinned else []


def _uvicorn(kind: ServerKind, s: Settings) -> list[str]:
    server = kind.server
    return [
        *server.program(s), *server.app(s.app), "--host", s.host, "--port", str(s.port),
        "--workers", str(s.workers),
        *(["--loop", "uvloop", "--http", "httptools"] if s.pinned else []), "--no-access-log",
        *(["--ws", kind.ws] if kind.ws else []),
        *(["--log-level", "warning"] if s.launched else []), "--backlog", BACKLOG,
        *server.tls(s),
    ]  # fmt: skip


def _granian(kind: ServerKind, s: Settings) -> list[str]:
    server = kind.server
    return [
        *server.program(s), "--interface", kind.interface, "--host", s.host,
        "--port", str(s.port), "--workers", str(s.workers),
        *_per_worker(kind, s, "--blocking-threads", "--blocking-threads"),
        *(["--runtime-threads", "1", "--runtime-mode", "st", "--loop", "uvloop"]
          if s.pinned else []),
        "--backlog", BACKLOG, *(["--log-level", "warning"] if s.launched else []),
        *(["--no-ws"] if s.pinned and kind.ws == "off" else []), *server.tls(s),
        # HTTP/2 only when asked (h2c is prior knowledge); otherwise its default, auto
        *(["--http", "2"] if s.protocol == "h2c" else []), *server.app(s.app),
    ]  # fmt: skip


def _hypercorn_config(s: Settings) -> list[str]:
    """Hypercorn closes a connection after 1000 requests unless told (config file only)."""
    if not s.pinned or s.workdir is None:
        return []
    config = s.workdir / "hypercorn.toml"
    config.write_text("keep_alive_max_requests = 1000000000\n")
    return ["--config", str(config)]


def _hypercorn(kind: ServerKind, s: Settings) -> list[str]:
    server = kind.server
    return [
        *server.program(s), *_hypercorn_config(s), "--bind", f"{s.host}:{s.port}",
        "--workers", str(s.workers), *(["--worker-class", "uvloop"] if s.uvloop else []),
        "--backlog", BACKLOG, *(["--log-level", "warning"] if s.launched else []),
        *server.tls(s), *server.app(s.app),
    ]  # fmt: skip


def _waitress(kind: ServerKind, s: Settings) -> list[str]:
    server = kind.server
    return [
        *server.program(s), f"--host={s.host}", f"--port={s.port}", f"--threads={s.threads}",
        *(["--connection-limit=100000"] if s.pinned else []), f"--backlog={BACKLOG}",
        *(["--channel-timeout=120"] if s.pinned else []), *server.app(s.app),
    ]  # fmt: skip


def _uwsgi(kind: ServerKind, s: Settings) -> list[str]:
    server = kind.server
    return [
        *server.program(s), "--http11-socket", f"{s.host}:{s.port}", "--master",
        "--processes", str(s.workers), "--threads", str(s.threads), "--enable-threads",
        "--disable-logging", "--die-on-term", "--single-interpreter", "--lazy-apps",
        "--listen", BACKLOG, *server.app(s.app),
    ]  # fmt: skip


def _package(name: str, module: str | None = None, distribution: str | None = None) -> Package:
    return Package(name, module or name, distribution or name)


GEVENT = _package("gevent")
UVICORN_WORKER = _package("uvicorn-worker", "uvicorn_worker")
UVLOOP = _package("uvloop")
MEINHELD = _package("meinheld")

GUNICORN = Server("gunicorn", _package("gunicorn"), "gunicorn", "gunicorn", _gunicorn,
                  ("--keyfile", "--certfile"), app_args=_call_in_target)  # fmt: skip
UVICORN = Server("uvicorn", _package("uvicorn"), "uvicorn", "uvicorn", _uvicorn,
                 ("--ssl-keyfile", "--ssl-certfile"), "--factory")  # fmt: skip
GRANIAN = Server("granian", _package("granian"), "granian", "granian", _granian,
                 ("--ssl-keyfile", "--ssl-certificate"), "--factory",
                 counters=GRANIAN_METRICS)  # fmt: skip
HYPERCORN = Server("hypercorn", _package("hypercorn"), "hypercorn", "hypercorn", _hypercorn,
                   ("--keyfile", "--certfile"), app_args=_call_in_target)  # fmt: skip
WAITRESS = Server("waitress", _package("waitress"), "waitress-serve", "waitress", _waitress,
                  factory_flag="--call")  # fmt: skip
UWSGI = Server("uwsgi", _package("uwsgi", "pyuwsgi", "pyuwsgi"), "uwsgi", None, _uwsgi,
               app_args=_uwsgi_app)  # fmt: skip

ASYNC_LOOP = "asyncio event loop per process"
RUST_IO = ASYNC_LOOP + " (Rust I/O)"
THREAD_PER_REQUEST = "a thread per request, N threads per process"
GREENLET_PER_REQUEST = "a greenlet per request (gevent), N per process"
ONE_AT_A_TIME = "one request at a time per process"
A, T, G, P = IoModel.ASYNCIO, IoModel.THREADS, IoModel.GREENLETS, IoModel.PROCESSES
PT, PG = PerWorker.THREADS, PerWorker.GREENLETS

# In the order tune tries them (its WSGI kinds, then its ASGI ones), then the catalogue's own.
SERVER_KINDS = (
    ServerKind("gunicorn-sync", GUNICORN, "sync", "wsgi", P, None, ONE_AT_A_TIME,
               "gunicorn (sync workers)", protocols=H1_TLS),
    ServerKind("gunicorn-gthread", GUNICORN, "gthread", "wsgi", T, PT, THREAD_PER_REQUEST,
               "gunicorn (gthread workers)", default_concurrency=4, protocols=H1_TLS),
    ServerKind("gunicorn-gevent", GUNICORN, "gevent", "wsgi", G, PG, GREENLET_PER_REQUEST,
               "gunicorn (gevent workers)", default_concurrency=1000, protocols=H1_TLS,
               needs=(GEVENT,)),
    ServerKind("waitress", WAITRESS, "threads", "wsgi", T, PT,
               THREAD_PER_REQUEST + " (one process)", "waitress", default_concurrency=4,
               fixed_workers=True),
    ServerKind("granian-wsgi", GRANIAN, "wsgi", "wsgi", T, PT,
               "N blocking threads per process (Rust I/O)", "granian (--interface wsgi)",
               protocols=EVERY_PROTOCOL, ws="off"),
    ServerKind("uwsgi", UWSGI, "threads", "wsgi", T, PT, THREAD_PER_REQUEST,
               "uWSGI (--http11-socket; Date added by a WSGI wrapper)"),
    ServerKind("uvicorn", UVICORN, "asgi", "asgi", A, None, ASYNC_LOOP,
               "uvicorn (uvloop, httptools)", protocols=H1_TLS),
    ServerKind("gunicorn-uvicorn", GUNICORN, "uvicorn-worker", "asgi", A, None, ASYNC_LOOP,
               "gunicorn + uvicorn-worker", "uvicorn_worker.UvicornWorker", protocols=H1_TLS,
               needs=(UVICORN_WORKER,)),
    # Its HTTP/2 answers carry no Date header (the endpoint contract's): h2 is not offered.
    ServerKind("gunicorn-asgi", GUNICORN, "asgi", "asgi", A, None, ASYNC_LOOP,
               "gunicorn (native asgi workers, uvloop)", protocols=H1_TLS, since=(24,)),
    ServerKind("granian-asgi", GRANIAN, "asgi", "asgi", A, None, RUST_IO,
               "granian (--interface asgi)", protocols=EVERY_PROTOCOL, ws="off"),
    ServerKind("hypercorn", HYPERCORN, "asgi", "asgi", A, None, ASYNC_LOOP,
               "hypercorn (uvloop)", protocols=EVERY_PROTOCOL, uses_if_present=(UVLOOP,)),
    # The WebSocket stacks' own (not tune's): uvicorn on wsproto, granian with its WebSocket.
    ServerKind("uvicorn-wsproto", UVICORN, "asgi", "asgi", A, None, ASYNC_LOOP,
               "uvicorn (uvloop, httptools, wsproto)", protocols=H1_TLS, candidate=False,
               ws="wsproto"),
    ServerKind("granian-asgi-ws", GRANIAN, "asgi", "asgi", A, None, RUST_IO,
               "granian (--interface asgi, WebSocket on)", protocols=EVERY_PROTOCOL,
               candidate=False, ws="on"),
    # gunicorn's own TLS is not wired for these worker classes here.
    ServerKind("gunicorn-tornado", GUNICORN, "tornado", "tornado", A, None, ASYNC_LOOP,
               "gunicorn tornado worker", candidate=False),
    ServerKind("gunicorn-aiohttp", GUNICORN, "aiohttp", "aiohttp", A, None, ASYNC_LOOP,
               "gunicorn aiohttp worker (uvloop)", "aiohttp.GunicornUVLoopWebWorker",
               candidate=False),
    ServerKind("gunicorn-meinheld", GUNICORN, "meinheld", "wsgi", G, None,
               "greenlets (meinheld)", "meinheld", "egg:meinheld#gunicorn_worker",
               needs=(MEINHELD,), candidate=False),
)  # fmt: skip
KIND_BY_NAME = {kind.name: kind for kind in SERVER_KINDS}
TUNE_KINDS = tuple(kind for kind in SERVER_KINDS if kind.candidate)


def tune_packages() -> tuple[Package, ...]:
    """What tune's probe looks for in the app's environment, in the kinds' order."""
    found = [p for kind in TUNE_KINDS for p in (*kind.packages, *kind.uses_if_present)]
    return tuple(dict.fromkeys(found))


def tune_servers(interface: str) -> tuple[str, ...]:
    """The packages tune's kinds of an interface need, in order (for the install hint)."""
    found = (p.name for k in TUNE_KINDS if k.interface == interface for p in k.packages)
    return tuple(dict.fromkeys(found))


def distributions() -> tuple[str, ...]:
    """Every server's distribution, for the versions a run records."""
    found = (p.distribution for k in SERVER_KINDS for p in (*k.packages, *k.uses_if_present))
    return tuple(dict.fromkeys(found))
