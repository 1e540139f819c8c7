"""Candidates: the ways to serve the user's app that its environment offers — server ×
worker class × workers × threads (or greenlets) — each a Stack the runner launches like any
in the catalogue, with the command line that deploys it.

Every server runs with the settings its documentation gives for production, access logs
off (they are off by default on all of them) and the same listen backlog (2048) everywhere.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass
from pathlib import Path

from benchlab.runner.launch import bounded_start_s
from benchlab.stacks.base import Launch, LaunchContext, Stack
from benchlab.stacks.servers import TUNE_KINDS, AppRef, PerWorker, ServerKind, Settings
from benchlab.system.cpu_account import Limits
from benchlab.tune.app import AppInfo, app_path
from benchlab.tune.user_env import deploy_assignments

SCENARIO = "app"
THREADS = (4, 16, 64)
GREENLETS = (100, 1000)
# A candidate's start is an interpreter, the server's imports and the app's, which the probe
# timed once: its timeout is bounded from that time as any start's is from its learned one.
START_CEILING_S = 60.0


DEPLOY_HOST, DEPLOY_PORT = "0.0.0.0", 8000

# A server with a worker class (servers.py): one Stack; workers and threads vary per cell.
Kind = ServerKind
KINDS = TUNE_KINDS


def _app(info: AppInfo) -> AppRef:
    return AppRef(info.spec.module, info.spec.attr, info.spec.call)


def factory_unsupported(kind: Kind, info: AppInfo) -> str | None:
    """Why a server cannot load the app's factory as called, or None when it can."""
    return kind.server.factory_unsupported(_app(info))


def unavailable(kind: Kind, info: AppInfo) -> str | None:
    """Why a kind whose packages the environment has cannot serve the app there: its
    server too old for the worker class, or unable to call the app's factory."""
    return kind.too_old(info.versions) or factory_unsupported(kind, info)


def _server_argv(kind: Kind, info: AppInfo, host: str, port: int, workers: int,
                 threads: int | None, workdir: Path | None) -> list[str]:  # fmt: skip
    """The command line of a kind; `workdir` None: the deployable form (console scripts)."""
    settings = Settings(
        _app(info), host, port, workers, threads, info.python, workdir,
        uvloop=bool(info.servers.get("uvloop")),
    )  # fmt: skip
    return kind.argv(settings)


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
    counters = kind.server.counters

    def launch(ctx: LaunchContext) -> Launch:
        argv = _server_argv(kind, info, ctx.host, ctx.port, ctx.workers, ctx.threads, ctx.workdir)
        env = {**info.env_from_file, **info.env}
        if counters is not None and ctx.counters_port is not None:
            # By its environment: the command line stays the one the user deploys.
            env |= counters.environment(ctx.host, ctx.counters_port)
        return Launch(argv=argv, env=env, cwd=info.spec.directory)

    def deploy(workers: int, threads: int | None) -> str:
        return deploy_command(kind, info, workers, threads)

    return Stack(
        name=kind.name,
        framework=f"your app ({info.spec.factory_target}, {info.interface.upper()})",
        server=kind.tune_server,
        worker_model=kind.worker_model,
        scenarios=(SCENARIO,),
        launch=launch,
        concurrency=kind.concurrency,
        fixed_workers=kind.fixed_workers,
        one_at_a_time=kind.one_at_a_time,
        start_timeout=bounded_start_s(info.load_s, START_CEILING_S),
        deploy=deploy,
        worker_class=kind.worker_class,
        isolated_env=True,
        served_by=kind,
        counters=counters,
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
        framework=f"{searched.framework}, by its printed command", counters=None,
    )  # fmt: skip


@dataclass(frozen=True)
class Candidate:
    """One way to serve the subject: its stack in the tune's catalogue, its launch's workers
    and threads, and what it is given before anything is measured (`size`: its workers, or
    a command's knob values; smaller is cheaper)."""

    stack: str
    label: str
    workers: int = 1
    threads: int | None = None
    concurrency: PerWorker | None = None  # threads or greenlets per worker
    one_at_a_time: bool = False  # each worker serves one request at a time
    size: tuple[float, ...] = ()
    # The stack that runs its printed command as printed (the proof's); None: its own (an
    # endpoint already running: nothing is printed, nothing started).
    replay: str | None = None
    kind: Kind | None = None  # a Python app's server kind

    @classmethod
    def of_kind(cls, kind: Kind, workers: int, threads: int | None) -> Candidate:
        per = (
            ""
            if threads is None
            else f" {'c' if kind.concurrency is PerWorker.GREENLETS else 't'}={threads}"
        )
        return cls(
            kind.name, f"{kind.name} w={workers}{per}", workers, threads, kind.concurrency,
            kind.one_at_a_time, (float(workers),), f"{kind.name}{REPLAY}", kind,
        )  # fmt: skip

    @property
    def replay_stack(self) -> str:
        return self.replay or self.stack


def worker_counts(cores: int) -> list[int]:
    """1, one per core, and the 2 × cores + 1 that gunicorn's documentation suggests."""
    return sorted({1, cores, 2 * cores + 1})


def candidates(
    info: AppInfo,
    cores: int,
    memory_mb: float | None,
    servers: list[str] | None = None,
    workers: list[int] | None = None,
    threads: list[int] | None = None,
    greenlets: list[int] | None = None,
) -> list[Candidate]:
    """Every candidate the environment offers, bounded by the server cores and by memory
    (the workers must fit in half of the memory free, at the app's own size each; None:
    a memory limit decides, which the kernel enforces — one that does not fit is tried, and
    reported as not fitting)."""
    kinds = [
        k for k in KINDS
        if k.interface == info.interface and all(info.servers.get(p.name) for p in k.packages)
        and (servers is None or k.server.name in servers or k.name in servers)
        and unavailable(k, info) is None
    ]  # fmt: skip
    per_worker = max(info.rss_mb, 30.0)
    found = []
    for kind in kinds:
        counts = [1] if kind.fixed_workers else (workers or worker_counts(cores))
        if kind.concurrency is PerWorker.GREENLETS:
            per: list[int | None] = list(greenlets or GREENLETS)
        elif kind.concurrency:
            per = list(threads or THREADS)
        else:
            per = [None]
        for w in counts:
            if memory_mb is not None and w * per_worker > memory_mb / 2:
                continue
            found += [Candidate.of_kind(kind, w, t) for t in per]
    return found


def skipped_servers(info: AppInfo) -> dict[str, str]:
    """Servers the environment has that cannot load the app as given, and why."""
    return {
        (k.tune_server if k.too_old(info.versions) else k.server.name): why
        for k in KINDS
        if k.interface == info.interface and all(info.servers.get(p.name) for p in k.packages)
        and (why := unavailable(k, info)) is not None
    }  # fmt: skip


def catalogue(info: AppInfo, limits: Limits | None = None) -> dict[str, Stack]:
    """Every kind's stack, and the stack that replays its printed command; each under the
    target's `limits` (a CPU quota, a memory limit) when there are any."""
    kinds = [kind for kind in KINDS if kind.interface == info.interface]
    stacks = {
        **{kind.name: stack_for(kind, info) for kind in kinds},
        **{f"{kind.name}{REPLAY}": replay_stack_for(kind, info) for kind in kinds},
    }
    return {name: dataclasses.replace(stack, limits=limits) for name, stack in stacks.items()}
