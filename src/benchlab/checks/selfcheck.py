"""Does the harness cost throughput? Bare wrk vs benchlab's measurement path, alternated.

Both drive the same nginx-static on the same cores with the same connections, threads and
duration; pairs alternate, and so does which side of a pair goes first, so the machine's
drift falls on both sides equally.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass

from benchlab.analysis.stats import Estimate, median_interval
from benchlab.core.errors import LoadToolError
from benchlab.hosts.generators import run_tool
from benchlab.http.verify import wait_until_answering
from benchlab.load import wrk
from benchlab.load.base import LoadRequest
from benchlab.measure.monitor import ProcessTreeSampler
from benchlab.runner import HOST, free_port, pinned_to, start_stack
from benchlab.stacks import CATALOGUE, LaunchContext
from benchlab.system.process import ProcessRegistry, sigterm_interrupts
from benchlab.system.safe_files import reachable_tmpdir
from benchlab.system.users import stack_user


@dataclass(frozen=True)
class SelfCheck:
    bare: Estimate
    harness: Estimate
    ratio: Estimate  # harness / bare, pair by pair
    command: str


def run_selfcheck(
    *, pairs: int, duration: int, connections: int, server_cores: tuple[int, ...],
    load_cores: tuple[int, ...], progress=print,
) -> SelfCheck:  # fmt: skip
    registry = ProcessRegistry()
    user = stack_user()
    workdir = reachable_tmpdir("bl-", others_need_it=user is not None)
    with sigterm_interrupts(), contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, workdir, ignore_errors=True)
        ctx = LaunchContext(HOST, free_port(), workdir / "stack", server_cores, len(server_cores))
        server = start_stack(registry, CATALOGUE["nginx-static"], ctx, server_cores, user=user)
        try:
            problem = wait_until_answering(HOST, ctx.port, server.alive, 10)
            if problem:
                raise LoadToolError(f"nginx-static {problem}")
            request = LoadRequest(
                url=f"http://{HOST}:{ctx.port}/plaintext",
                connections=connections,
                threads=len(load_cores),
                duration_s=duration,
                timeout_s=5,
                cores=load_cores,
                tool=wrk.Wrk.name,
            )

            def measure_harness() -> float:
                with ProcessTreeSampler(server):
                    return run_tool(request, registry, workdir).throughput_rps

            bare, harness = [], []
            with pinned_to(load_cores):
                run_tool(LoadRequest(**{**request.__dict__, "duration_s": 1}), registry, workdir)
                for i in range(pairs):
                    # Every other pair goes harness first (ABBA): drift within a pair, or an
                    # advantage of running second, then falls on both sides equally.
                    if i % 2:
                        harness.append(measure_harness())
                        bare.append(wrk.bare_throughput(request))
                    else:
                        bare.append(wrk.bare_throughput(request))
                        harness.append(measure_harness())
                    progress(
                        f"pair {i + 1}/{pairs}: bare {bare[-1]:,.0f}  benchlab {harness[-1]:,.0f}"
                    )
        finally:
            registry.stop_all()
    ratios = [h / b for h, b in zip(harness, bare, strict=True)]
    bare_rate, harness_rate, ratio = (median_interval(v) for v in (bare, harness, ratios))
    assert bare_rate is not None and harness_rate is not None and ratio is not None
    cores = ",".join(map(str, load_cores))
    bare_command = wrk.bare_command(len(load_cores), connections, duration)
    command = f"taskset --cpu-list {cores} {bare_command}"
    return SelfCheck(bare_rate, harness_rate, ratio, command=command)
