"""`benchlab selfcheck --noise`: measure where this machine's variation comes from, so that a
run can choose its ratio method before it sees its own data (analysis/noise.py).

Rounds of every stack, each launched several times and measured several times per launch,
interleaved (the stacks' order rotates each round). The result is kept in benchlab's cache
with the machine it was measured on; a run on the same machine reads it.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchlab.analysis.noise import NoiseComponents, decompose
from benchlab.analysis.noise_record import keep_noise
from benchlab.core.errors import LoadToolError
from benchlab.hosts.generators import run_tool
from benchlab.http.verify import wait_until_answering
from benchlab.load import DEFAULT_TOOL
from benchlab.load.base import LoadRequest
from benchlab.runner import HOST, free_port, pinned_to, start_stack
from benchlab.stacks import CATALOGUE, LaunchContext
from benchlab.system.process import ProcessRegistry, sigterm_interrupts
from benchlab.system.safe_files import reachable_tmpdir
from benchlab.system.users import stack_user

NOISE_STACKS = ("fastapi+uvicorn", "flask+gunicorn")
SCENARIO_PATH = "/json"


@dataclass(frozen=True)
class NoiseDesign:
    rounds: int = 6
    launches: int = 2
    trials: int = 2
    duration: int = 2
    connections: int = 64
    stacks: tuple[str, ...] = NOISE_STACKS


def _one_launch(
    registry: ProcessRegistry, stack_name: str, design: NoiseDesign, cores, workdir: Path
) -> list[float]:
    stack = CATALOGUE[stack_name]
    ctx = LaunchContext(
        HOST, free_port(), workdir / f"stack-{time.monotonic_ns()}", cores.server, 1
    )
    server = start_stack(registry, stack, ctx, cores.server, user=stack_user())
    try:
        problem = wait_until_answering(HOST, ctx.port, server.alive, 30)
        if problem:
            raise LoadToolError(f"{stack_name} {problem}")
        request = LoadRequest(
            url=f"http://{HOST}:{ctx.port}{SCENARIO_PATH}", connections=design.connections,
            threads=len(cores.load), duration_s=1, timeout_s=5, cores=cores.load,
            tool=DEFAULT_TOOL,
        )  # fmt: skip
        run_tool(request, registry, workdir)  # warm-up, discarded
        timed = LoadRequest(**{**request.__dict__, "duration_s": design.duration})
        return [run_tool(timed, registry, workdir).throughput_rps for _ in range(design.trials)]
    finally:
        registry.stop(server)


def measure_noise(design: NoiseDesign, cores, progress: Callable[[str], None]) -> NoiseComponents:
    registry = ProcessRegistry()
    measured: list[list[list[list[float]]]] = []
    tmp = reachable_tmpdir("bl-", others_need_it=stack_user() is not None)
    with sigterm_interrupts(), contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, tmp, ignore_errors=True)
        try:
            with pinned_to(cores.load):
                for r in range(design.rounds):
                    shift = r % len(design.stacks)
                    order = design.stacks[shift:] + design.stacks[:shift]
                    this_round: dict[str, list[list[float]]] = {s: [] for s in design.stacks}
                    for launch in range(design.launches):
                        for name in order:
                            workdir = tmp / f"r{r}l{launch}{name.replace('+', '-')}"
                            workdir.mkdir(mode=0o711)
                            this_round[name].append(
                                _one_launch(registry, name, design, cores, workdir)
                            )
                    measured.append([this_round[s] for s in design.stacks])
                    progress(f"round {r + 1}/{design.rounds} measured")
        finally:
            registry.stop_all()
    found = decompose(measured)
    keep_noise(found, design.__dict__)
    return found
