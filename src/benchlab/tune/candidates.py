"""Candidates: the ways to serve the user's app that its environment offers — server ×
worker class × workers × threads (or greenlets) — each a Stack the runner launches like any
in the catalogue, with the command line that deploys it.

Every server runs with the settings its documentation gives for production, access logs
off (they are off by default on all of them) and the same listen backlog (2048) everywhere.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchlab.stacks.base import LISTEN_BACKLOG, Launch, LaunchContext, Stack
from benchlab.tune.app import AppInfo

BACKLOG = str(LISTEN_BACKLOG)
SCENARIO = "app"
THREADS = (4, 16, 64)
GREENLETS = (100, 1000)
DEPLOY_HOST, DEPLOY_PORT = "0.0.0.0", 8000


@dataclass(frozen=True)
class Kind:
    """A server with a worker class: one Stack; workers and threads vary per cell."""

    name: str  # the stack name in reports: gunicorn-gthread, uvicorn, waitress, ...
    server: str  # the server's package: gunicorn, uvicorn, granian, hypercorn, waitress, uwsgi
    worker_class: str  # sync, gthread, gevent, uvicorn-worker, asgi, wsgi, threads
    interface: str
    needs: tuple[str, ...]  # what the environment must have (probe names)
    concurrency: str | None = None  # "threads" or "greenlets" per worker
    fixed_workers: bool = False  # one process (waitress)
    one_at_a_time: bool = False  # a worker serves one request at a time (gunicorn sync)
    model: str = ""


KINDS = (
    Kind("gunicorn-sync", "gunicorn", "sync", "wsgi", ("gunicorn",), one_at_a_time=True,
         model="one request at a time per process"),
    Kind("gunicorn-gthread", "gunicorn", "gthread", "wsgi", ("gunicorn",), "threads",
         model="a thread per request, N threads per process"),
    Kind("gunicorn-gevent", "gunicorn", "gevent", "wsgi", ("gunicorn", "gevent"), "greenlets",
         model="a greenlet per request (gevent), N per process"),
    Kind("waitress", "waitress", "threads", "wsgi", ("waitress",), "threads",
         fixed_workers=True, model="a thread per request, N threads (one process)"),
    Kind("granian-wsgi", "granian", "wsgi", "wsgi", ("granian",), "threads",
         model="N blocking threads per process (Rust I/O)"),
    Kind("uwsgi", "uwsgi", "threads", "wsgi", ("uwsgi",), "threads",
         model="a thread per request, N threads per process"),
    Kind("uvicorn", "uvicorn", "asgi", "asgi", ("uvicorn",),
         model="asyncio event loop per process"),
    Kind("gunicorn-uvicorn", "gunicorn", "uvicorn-worker", "asgi",
         ("gunicorn", "uvicorn-worker"), model="asyncio event loop per process"),
    Kind("granian-asgi", "granian", "asgi", "asgi", ("granian",),
         model="asyncio event loop per process (Rust I/O)"),
    Kind("hypercorn", "hypercorn", "asgi", "asgi", ("hypercorn",),
         model="asyncio event loop per process"),
)  # fmt: skip


def _server_argv(kind: Kind, info: AppInfo, host: str, port: int, workers: int,
                 threads: int | None, workdir: Path | None) -> list[str]:  # fmt: skip
    """The command line of a kind; `workdir` None: the deployable form (console scripts)."""
    target = info.spec.target
    deploy = workdir is None

    def module(name: str) -> list[str]:
        return [name] if deploy else [info.python, "-m", name]

    if kind.server == "gunicorn":
        cls = {"uvicorn-worker": "uvicorn_worker.UvicornWorker"}.get(
            kind.worker_class, kind.worker_class
        )
        per_worker = {
            "threads": ["--threads", str(threads)],
            "greenlets": ["--worker-connections", str(threads)],
        }.get(kind.concurrency or "", [])
        argv = [*module("gunicorn"), target, "--bind", f"{host}:{port}", "--workers", str(workers),
                "--worker-class", cls, *per_worker, "--backlog", BACKLOG]  # fmt: skip
        return (
            argv if deploy else [*argv, "--log-level", "warning", "--worker-tmp-dir", str(workdir)]
        )
    if kind.server == "uvicorn":
        argv = [*module("uvicorn"), target, "--host", host, "--port", str(port), "--workers",
                str(workers), "--backlog", BACKLOG, "--no-access-log"]  # fmt: skip
        return argv if deploy else [*argv, "--log-level", "warning"]
    if kind.server == "granian":
        blocking = ["--blocking-threads", str(threads)] if kind.interface == "wsgi" else []
        argv = [*module("granian"), "--interface", kind.interface, "--host", host, "--port",
                str(port), "--workers", str(workers), *blocking, "--backlog", BACKLOG]  # fmt: skip
        return [*argv, target] if deploy else [*argv, "--log-level", "warning", target]
    if kind.server == "hypercorn":
        loop = ["--worker-class", "uvloop"] if info.servers.get("uvloop") else []
        return [*module("hypercorn"), target, "--bind", f"{host}:{port}", "--workers",
                str(workers), *loop, "--backlog", BACKLOG]  # fmt: skip
    if kind.server == "waitress":
        program = ["waitress-serve"] if deploy else [info.python, "-m", "waitress"]
        return [*program, f"--host={host}", f"--port={port}", f"--threads={threads}",
                f"--backlog={BACKLOG}", target]  # fmt: skip
    if kind.server == "uwsgi":
        program = "uwsgi" if deploy else str(Path(info.python).with_name("uwsgi"))
        argv = [program, "--http11-socket", f"{host}:{port}", "--master", "--processes",
                str(workers), "--threads", str(threads), "--enable-threads", "--listen", BACKLOG,
                "--module", target, "--disable-logging"]  # fmt: skip
        return argv if deploy else [*argv, "--die-on-term", "--single-interpreter", "--lazy-apps"]
    raise ValueError(kind.server)


def _relative(directory: Path, cwd: Path) -> str:
    try:
        return str(directory.relative_to(cwd.resolve())) or "."
    except ValueError:
        return str(directory)


def stack_for(kind: Kind, info: AppInfo) -> Stack:
    def launch(ctx: LaunchContext) -> Launch:
        argv = _server_argv(kind, info, ctx.host, ctx.port, ctx.workers, ctx.threads, ctx.workdir)
        return Launch(argv=argv, env=dict(info.env), cwd=info.spec.directory)

    def deploy(workers: int, threads: int | None) -> str:
        """Run from where `benchlab tune` ran: it goes to the app's directory first."""
        argv = _server_argv(kind, info, DEPLOY_HOST, DEPLOY_PORT, workers, threads, None)
        where = _relative(info.spec.directory, info.cwd)
        return (
            shlex.join(argv) if where == "." else f"cd {shlex.quote(where)} && {shlex.join(argv)}"
        )

    return Stack(
        name=kind.name,
        framework=f"your app ({info.spec.target}, {info.interface.upper()})",
        server=f"{kind.server} ({kind.worker_class})",
        worker_model=kind.model,
        scenarios=(SCENARIO,),
        launch=launch,
        concurrency=kind.concurrency,
        fixed_workers=kind.fixed_workers,
        one_at_a_time=kind.one_at_a_time,
        start_timeout=60.0,
        deploy=deploy,
        worker_class=kind.worker_class,
    )


@dataclass(frozen=True)
class Candidate:
    kind: Kind
    workers: int
    threads: int | None

    @property
    def label(self) -> str:
        per = (
            ""
            if self.threads is None
            else f" {'c' if self.kind.concurrency == 'greenlets' else 't'}={self.threads}"
        )
        return f"{self.kind.name} w={self.workers}{per}"


def worker_counts(cores: int) -> list[int]:
    """1, one per core, and the 2 × cores + 1 that gunicorn's documentation suggests."""
    return sorted({1, cores, 2 * cores + 1})


def candidates(
    info: AppInfo,
    cores: int,
    memory_mb: float,
    servers: list[str] | None = None,
    workers: list[int] | None = None,
    threads: list[int] | None = None,
    greenlets: list[int] | None = None,
) -> list[Candidate]:
    """Every candidate the environment offers, bounded by the server cores and by memory
    (the workers must fit in half of the memory free, at the app's own size each)."""
    kinds = [
        k for k in KINDS
        if k.interface == info.interface and all(info.servers.get(n) for n in k.needs)
        and (servers is None or k.server in servers or k.name in servers)
    ]  # fmt: skip
    per_worker = max(info.rss_mb, 30.0)
    found = []
    for kind in kinds:
        counts = [1] if kind.fixed_workers else (workers or worker_counts(cores))
        if kind.concurrency == "greenlets":
            per: list[int | None] = list(greenlets or GREENLETS)
        elif kind.concurrency:
            per = list(threads or THREADS)
        else:
            per = [None]
        for w in counts:
            if w * per_worker > memory_mb / 2:
                continue
            found += [Candidate(kind, w, t) for t in per]
    return found


def catalogue(info: AppInfo) -> dict[str, Stack]:
    return {kind.name: stack_for(kind, info) for kind in KINDS if kind.interface == info.interface}


Deploy = Callable[[int, int | None], str]
