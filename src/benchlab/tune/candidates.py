"""Candidates: the ways to serve the user's app that its environment offers — server ×
worker class × workers × threads (or greenlets) — each a Stack the runner launches like any
in the catalogue, with the command line that deploys it.

Every server runs with the settings its documentation gives for production, access logs
off (they are off by default on all of them) and the same listen backlog (2048) everywhere.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchlab.runner.launch import bounded_start_s
from benchlab.stacks.base import LISTEN_BACKLOG, Launch, LaunchContext, Stack
from benchlab.tune.app import AppInfo, AppSpec, app_path
from benchlab.tune.user_env import deploy_assignments

BACKLOG = str(LISTEN_BACKLOG)
SCENARIO = "app"
THREADS = (4, 16, 64)
GREENLETS = (100, 1000)
# A candidate's start is an interpreter, the server's imports and the app's, which the probe
# timed once: its timeout is bounded from that time as any start's is from its learned one.
START_CEILING_S = 60.0


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


# Servers that call a factory named by a flag, always without arguments.
FACTORY_FLAGS = {"uvicorn": "--factory", "granian": "--factory", "waitress": "--call"}


def factory_unsupported(kind: Kind, info: AppInfo) -> str | None:
    """Why a server cannot load the app's factory as called, or None when it can."""
    call = info.spec.call
    if call is None or call == "()" or kind.server in ("gunicorn", "hypercorn", "uwsgi"):
        return None
    flag = FACTORY_FLAGS[kind.server]
    return f"its {flag} calls the factory without arguments"


def _app_argv(kind: Kind, spec: AppSpec) -> list[str]:
    """How the server is told which app to load: the object, or its factory in the
    server's own syntax (gunicorn and hypercorn call `module:create_app(...)` themselves,
    uvicorn and granian take --factory, waitress --call, uWSGI evaluates the call)."""
    if spec.call is None:
        return ["--module", spec.target] if kind.server == "uwsgi" else [spec.target]
    if kind.server in ("gunicorn", "hypercorn"):
        return [spec.factory_target]
    if kind.server == "uwsgi":
        code = f"import {spec.module}; application = {spec.module}.{spec.attr}{spec.call}"
        return ["--eval", code]
    flag = FACTORY_FLAGS[kind.server]
    return [flag, spec.target]


def _server_argv(kind: Kind, info: AppInfo, host: str, port: int, workers: int,
                 threads: int | None, workdir: Path | None) -> list[str]:  # fmt: skip
    """The command line of a kind; `workdir` None: the deployable form (console scripts)."""
    app = _app_argv(kind, info.spec)
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
        argv = [*module("gunicorn"), *app, "--bind", f"{host}:{port}", "--workers", str(workers),
                "--worker-class", cls, *per_worker, "--backlog", BACKLOG]  # fmt: skip
        return (
            argv if deploy else [*argv, "--log-level", "warning", "--worker-tmp-dir", str(workdir)]
        )
    if kind.server == "uvicorn":
        argv = [*module("uvicorn"), *app, "--host", host, "--port", str(port), "--workers",
                str(workers), "--backlog", BACKLOG, "--no-access-log"]  # fmt: skip
        return argv if deploy else [*argv, "--log-level", "warning"]
    if kind.server == "granian":
        blocking = ["--blocking-threads", str(threads)] if kind.interface == "wsgi" else []
        argv = [*module("granian"), "--interface", kind.interface, "--host", host, "--port",
                str(port), "--workers", str(workers), *blocking, "--backlog", BACKLOG]  # fmt: skip
        return [*argv, *app] if deploy else [*argv, "--log-level", "warning", *app]
    if kind.server == "hypercorn":
        loop = ["--worker-class", "uvloop"] if info.servers.get("uvloop") else []
        return [*module("hypercorn"), *app, "--bind", f"{host}:{port}", "--workers",
                str(workers), *loop, "--backlog", BACKLOG]  # fmt: skip
    if kind.server == "waitress":
        program = ["waitress-serve"] if deploy else [info.python, "-m", "waitress"]
        return [*program, f"--host={host}", f"--port={port}", f"--threads={threads}",
                f"--backlog={BACKLOG}", *app]  # fmt: skip
    if kind.server == "uwsgi":
        program = "uwsgi" if deploy else str(Path(info.python).with_name("uwsgi"))
        argv = [program, "--http11-socket", f"{host}:{port}", "--master", "--processes",
                str(workers), "--threads", str(threads), "--enable-threads", "--listen", BACKLOG,
                *app, "--disable-logging", "--die-on-term", "--single-interpreter",
                "--lazy-apps"]  # fmt: skip
        return argv
    raise ValueError(kind.server)


def _relative(directory: Path, cwd: Path) -> str:
    try:
        return str(directory.relative_to(cwd.resolve())) or "."
    except ValueError:
        return str(directory)


def deploy_command(
    kind: Kind, info: AppInfo, workers: int, threads: int | None, host: str = DEPLOY_HOST,
    port: int = DEPLOY_PORT,
) -> str:  # fmt: skip
    """The command that deploys a candidate, run from where `benchlab tune` ran: it reads
    the --env-file there (the shell's `set -a`), goes to the app's root, and passes the
    --env variables by name (`KEY="$KEY"`: their values are the deploying shell's)."""
    argv = _server_argv(kind, info, host, port, workers, threads, None)
    steps = []
    if info.env_file is not None:
        env_file = shlex.quote(_relative(info.env_file, info.cwd))
        steps.append(f"set -a && . {'./' if '/' not in env_file else ''}{env_file} && set +a")
    where = _relative(info.spec.directory, info.cwd)
    if where != ".":
        steps.append(f"cd {shlex.quote(where)}")
    # --env values come from the deploying shell by name: a report shows no secret.
    assignments = deploy_assignments(info.env)
    steps.append(f"{assignments} {shlex.join(argv)}" if assignments else shlex.join(argv))
    return " && ".join(steps)


def stack_for(kind: Kind, info: AppInfo) -> Stack:
    def launch(ctx: LaunchContext) -> Launch:
        argv = _server_argv(kind, info, ctx.host, ctx.port, ctx.workers, ctx.threads, ctx.workdir)
        return Launch(argv=argv, env={**info.env_from_file, **info.env}, cwd=info.spec.directory)

    def deploy(workers: int, threads: int | None) -> str:
        return deploy_command(kind, info, workers, threads)

    return Stack(
        name=kind.name,
        framework=f"your app ({info.spec.factory_target}, {info.interface.upper()})",
        server=f"{kind.server} ({kind.worker_class})",
        worker_model=kind.model,
        scenarios=(SCENARIO,),
        launch=launch,
        concurrency=kind.concurrency,
        fixed_workers=kind.fixed_workers,
        one_at_a_time=kind.one_at_a_time,
        start_timeout=bounded_start_s(info.load_s, START_CEILING_S),
        deploy=deploy,
        worker_class=kind.worker_class,
        isolated_env=True,
    )


REPLAY = "-as-printed"  # the stack that runs a candidate's deploy command itself


def replay_stack_for(kind: Kind, info: AppInfo) -> Stack:
    """The candidate's deploy command exactly as printed, run by a shell from where tune ran
    with the app's environment first on PATH (as an activated venv has it); only its
    address differs: it listens where benchlab loads it (loopback), not on 0.0.0.0:8000."""
    searched = stack_for(kind, info)

    def launch(ctx: LaunchContext) -> Launch:
        command = deploy_command(kind, info, ctx.workers, ctx.threads, ctx.host, ctx.port)
        # The --env values in its environment, where the command's `KEY="$KEY"` reads them
        # (never in its argv, which every local user can read).
        env = {**info.env, "PATH": app_path(info.python)}
        return Launch(argv=["bash", "-c", command], env=env, cwd=info.cwd)

    return dataclasses.replace(
        searched, name=f"{kind.name}{REPLAY}", launch=launch,
        framework=f"{searched.framework}, by its printed command",
    )  # fmt: skip


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
        and factory_unsupported(k, info) is None
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


def skipped_servers(info: AppInfo) -> dict[str, str]:
    """Servers the environment has that cannot load the app as given, and why."""
    return {
        k.server: why
        for k in KINDS
        if k.interface == info.interface and all(info.servers.get(n) for n in k.needs)
        and (why := factory_unsupported(k, info)) is not None
    }  # fmt: skip


def catalogue(info: AppInfo) -> dict[str, Stack]:
    """Every kind's stack, and the stack that replays its printed command."""
    kinds = [kind for kind in KINDS if kind.interface == info.interface]
    return {
        **{kind.name: stack_for(kind, info) for kind in kinds},
        **{f"{kind.name}{REPLAY}": replay_stack_for(kind, info) for kind in kinds},
    }


Deploy = Callable[[int, int | None], str]
