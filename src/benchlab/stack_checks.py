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

from benchlab.errors import BenchlabError, UserError
from benchlab.hosts.base import THIS_MACHINE
from benchlab.process import ManagedProcess, ProcessRegistry, sigterm_interrupts, stack_user
from benchlab.runner import HOST, ServerPlace, start_answering
from benchlab.safe_files import new_dir, reachable_tmpdir
from benchlab.stacks import CATALOGUE

Result = TypeVar("Result")


@dataclass(frozen=True)
class Started:
    """A stack answering on HOST:port, for a check to use (and stop, if it checks that)."""

    name: str
    server: ManagedProcess
    port: int
    registry: ProcessRegistry  # what the check starts beside it (a load tool) goes here
    workdir: Path  # the check's own files


@dataclass(frozen=True)
class StackCheck(Generic[Result]):
    stack: str
    result: Result | None
    problem: str | None = None  # it could not be checked: why (it did not start)


def check_each(
    names: list[str], cores: tuple[int, ...], progress: Callable[[str], None],
    check: Callable[[Started], Result], said: Callable[[Result], str | None] = lambda _: None,
) -> list[StackCheck[Result]]:  # fmt: skip
    """`check` on every stack in turn, one worker on `cores`; `said(result)`, when it says
    something, is shown under the stack's progress line."""
    out: list[StackCheck[Result]] = []
    user = stack_user()
    workdir = reachable_tmpdir("bl-", others_need_it=user is not None)
    with sigterm_interrupts(), contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, workdir, ignore_errors=True)
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
                    new_dir(directory / "server", 0o711), {}, stack.start_timeout, user=user,
                )  # fmt: skip
                if started.problem is not None:
                    log = started.server.log_tail()
                    out.append(StackCheck(name, None, f"{started.problem}: {log}"))
                    continue
                own = new_dir(directory / "check", 0o700)
                try:
                    result = check(Started(name, started.server, started.ctx.port, registry, own))
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
