"""Checks of catalogue stacks one at a time (conform, drain, slow clients): each stack
started as a run starts it (the runner's `start_answering`: its own user, pinned, its
workdir, a fresh port if another program took the first; one worker with its default
threads or greenlets), checked, and stopped, whatever the check did: nothing is left behind."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from benchlab.core.errors import BenchlabError, UserError
from benchlab.hosts.base import THIS_MACHINE
from benchlab.http.dataset import file_bytes, file_name
from benchlab.resilience.drain import Drain, stop_under_load
from benchlab.resilience.slow_clients import READ_KB, SlowClients, with_and_without
from benchlab.resilience.target import CheckTarget
from benchlab.runner import HOST, ServerPlace, start_answering
from benchlab.runner.launch import STATIC
from benchlab.stacks import CATALOGUE
from benchlab.system.process import ProcessRegistry, sigterm_interrupts
from benchlab.system.safe_files import new_dir, reachable_tmpdir
from benchlab.system.users import stack_user

Result = TypeVar("Result")


@dataclass(frozen=True)
class StackCheck(Generic[Result]):
    stack: str
    result: Result | None
    problem: str | None = None  # it could not be checked: why (it did not start)


def check_each(
    names: list[str], cores: tuple[int, ...], progress: Callable[[str], None],
    check: Callable[[CheckTarget], Result], said: Callable[[Result], str | None] = lambda _: None,
    load_cores: tuple[int, ...] = (),
    read_file: bool = False,
) -> list[StackCheck[Result]]:  # fmt: skip
    """`check` on every stack in turn, one worker on `cores` (what the check starts beside
    it on `load_cores`); `said(result)`, when it says something, is shown under the stack's
    progress line. `read_file`: the stacks get the slow readers' file to serve."""
    out: list[StackCheck[Result]] = []
    user = stack_user()
    workdir = reachable_tmpdir("bl-", others_need_it=user is not None)
    with sigterm_interrupts(), contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, workdir, ignore_errors=True)
        env = {STATIC: str(_static_files(workdir))} if read_file else {}
        for index, name in enumerate(names, 1):
            stack = CATALOGUE[name]
            progress(f"[{index}/{len(names)}] {name}")
            if stack.build is not None:
                stack.build()
            registry = ProcessRegistry()
            threads = stack.default_concurrency if stack.concurrency else None
            directory = new_dir(workdir / f"s{index}", 0o711)
            try:
                started = start_answering(
                    registry, stack, ServerPlace(HOST, THIS_MACHINE, cores), (1, threads),
                    new_dir(directory / "server", 0o711), env, stack.start_timeout, user=user,
                )  # fmt: skip
                if started.problem is not None:
                    log = started.server.log_tail()
                    out.append(StackCheck(name, None, f"{started.problem}: {log}"))
                    continue
                own = new_dir(directory / "check", 0o700)
                try:
                    result = check(CheckTarget(
                        stack, started.server, HOST, started.ctx.port, registry, own, load_cores,
                        serves_read_file=read_file,
                    ))  # fmt: skip
                except UserError:
                    raise
                except BenchlabError as exc:  # this stack's check failed; the others go on
                    out.append(StackCheck(name, None, str(exc)))
                    continue
            finally:
                registry.stop_all()
            if (line := said(result)) is not None:
                progress(f"  {line}")
            out.append(StackCheck(name, result))
    return out


def _static_files(workdir: Path) -> Path:
    """The slow readers' file, where every stack's user may read it."""
    directory = new_dir(workdir / "static", 0o755)
    path = directory / file_name(READ_KB)
    path.write_bytes(file_bytes(READ_KB))
    path.chmod(0o644)
    return directory


def drain_stacks(
    names: list[str], cores: tuple[int, ...], load_cores: tuple[int, ...],
    progress: Callable[[str], None],
) -> list[StackCheck[Drain]]:  # fmt: skip
    """Every stack stopped under load in turn, one worker on `cores`, vegeta on `load_cores`."""
    return check_each(names, cores, progress, stop_under_load, Drain.sentence, load_cores)


def slow_clients_of_stacks(
    names: list[str], cores: tuple[int, ...], load_cores: tuple[int, ...],
    modes: list[str], rounds: int, progress: Callable[[str], None],
) -> list[StackCheck[SlowClients]]:  # fmt: skip
    """Every stack in turn, one worker on `cores`; vegeta and slowhttptest on `load_cores`."""
    return check_each(
        names, cores, progress, lambda target: with_and_without(target, modes, rounds),
        SlowClients.sentence, load_cores, read_file="read" in modes,
    )  # fmt: skip
