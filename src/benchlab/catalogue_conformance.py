"""Each stack of the catalogue started as a run starts it (the runner's `start_answering`:
its own user, pinned, its workdir, a fresh port if another program took the first), checked
for conformance, and stopped: nothing is left behind."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass

from benchlab.conformance.check import Conformance, check_server
from benchlab.hosts.base import THIS_MACHINE
from benchlab.process import ProcessRegistry, sigterm_interrupts, stack_user
from benchlab.runner import HOST, ServerPlace, start_answering
from benchlab.safe_files import new_dir, reachable_tmpdir
from benchlab.stacks import CATALOGUE


@dataclass(frozen=True)
class StackConformance:
    stack: str
    result: Conformance | None
    problem: str | None = None  # it could not be checked: why (it did not start)


def conform_stacks(
    names: list[str], cores: tuple[int, ...], progress: Callable[[str], None]
) -> list[StackConformance]:
    """Every stack in turn, one worker on `cores`; the checks run one request at a time."""
    out = []
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
            # One worker with the stack's own threads or greenlets, as a run launches it.
            threads = stack.default_concurrency if stack.concurrency else None
            try:
                started = start_answering(
                    registry, stack, ServerPlace(HOST, THIS_MACHINE, cores), (1, threads),
                    new_dir(workdir / f"s{index}", 0o711), {}, stack.start_timeout, user=user,
                )  # fmt: skip
                if started.problem is not None:
                    log = started.server.log_tail()
                    out.append(StackConformance(name, None, f"{started.problem}: {log}"))
                    continue
                result = check_server(
                    HOST, started.ctx.port, progress=lambda line: progress(f"  {line}")
                )
                out.append(StackConformance(name, result))
            finally:
                registry.stop_all()
    return out
