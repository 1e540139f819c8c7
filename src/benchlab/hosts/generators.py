"""Load from one host or several at once: each generator gets its share of the profile (of
the connections in a closed loop, of the rate at a fixed one), they run side by side, and
their results are merged exactly (merge.py): what a report shows is the whole load, with
each host's share and its own CPU beside it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from benchlab.core.errors import LoadToolError
from benchlab.hosts.base import THIS_MACHINE, Placement, ThisMachine
from benchlab.load import TOOLS
from benchlab.load.base import LoadRequest, LoadTool
from benchlab.load.live import Follow, NoLive
from benchlab.load.result import LoadResult, LoadShare, busiest_machine
from benchlab.system.process import ManagedProcess, ProcessRegistry

HANG_MARGIN_S = 15.0
# A run of a tool that may stop early (siege) that ended before this share of its duration
# measured something else than was asked: a fresh attempt, as after a hang.
EARLY_STOP_SHARE = 0.5


@dataclass(frozen=True)
class Generated:
    result: LoadResult  # the merged whole (its load_cpu_pct: the busiest machine's cores)
    shares: list[LoadShare]


def split(request: LoadRequest, tool: LoadTool, placements: list[Placement]) -> list[LoadRequest]:
    """Each host's request: connections shared out (the first hosts get one more when they
    do not divide), the rate divided, threads for its own share and cores."""
    count = len(placements)
    base, extra = divmod(request.connections, count)
    out = []
    for index, placement in enumerate(placements):
        connections = base + (index < extra)
        out.append(
            dataclasses.replace(
                request,
                connections=connections,
                rate=None if request.rate is None else request.rate / count,
                threads=tool.threads_for(request.threads, connections, len(placement.cores)),
                cores=placement.cores,
                name=placement.host.name if count > 1 else request.name,
            )
        )
    return out


def run_generators(
    tool: LoadTool,
    request: LoadRequest,
    placements: list[Placement],
    registry: ProcessRegistry,
    workdir: Path,
    keep: Path | None = None,
    live: Follow | None = None,
) -> Generated:
    """`keep`: a directory to move each generator's raw results to (by host) rather than
    remove them, to look at them again; `live`: where a fixed-rate load's figures go while
    it runs (or why there are none)."""
    if tool.executable() is None:
        raise LoadToolError(f"{tool.name} is not installed ({tool.install})")
    if len(request.targets) > 1 and not tool.can_pace:
        raise LoadToolError(f"{tool.name} sends one request only; a mix of requests needs vegeta")
    if request.targets and not tool.sends_any_request:
        raise LoadToolError(
            f"{tool.name} sends a plain GET only; this request needs wrk, vegeta or h2load"
        )
    if not request.keep_alive and not tool.reconnects:
        raise LoadToolError(
            f"{tool.name} does not reconnect when a server closes its connection after an "
            "answer, as this one does: use wrk or vegeta for it"
        )
    requests = split(request, tool, placements)
    single = len(placements) == 1
    dirs = [workdir if single else workdir / f"load-{p.host.name}" for p in placements]
    for attempt in range(tool.hang_retries + 1):
        processes = _start_all(tool, requests, placements, registry, dirs)
        try:
            with _followed(tool, requests, placements, dirs, live):
                codes = _wait_all(processes, request.duration_s + request.timeout_s + HANG_MARGIN_S)
        finally:
            for process in processes:
                registry.stop(process)
        last = attempt == tool.hang_retries
        if any(code is None for code in codes):
            if last:
                raise LoadToolError(
                    f"{tool.name} did not finish within its duration + margin"
                    f" ({tool.hang_retries + 1} attempts)"
                )
            continue
        results = [
            _result(tool, placement, sub, directory, process, code, single)
            for placement, sub, directory, process, code in zip(
                placements, requests, dirs, processes, codes, strict=True
            )
        ]
        short = min(result.duration_s for result in results)
        if not tool.stops_early or short >= EARLY_STOP_SHARE * request.duration_s:
            break
        if last:
            raise LoadToolError(
                f"{tool.name} stopped after {short:.2f} s of the {request.duration_s} s asked"
                f" ({tool.hang_retries + 1} attempts): it measured too little to count"
            )
    merged = results[0] if single else tool.merge(list(zip(requests, dirs, strict=True)), results)
    shares = [
        LoadShare(p.host.name, p.machine, p.cores, sub.connections, sub.rate, result)
        for p, sub, result in zip(placements, requests, results, strict=True)
    ]
    if not single:
        for placement, directory in zip(placements, dirs, strict=True):
            if keep is not None:
                shutil.move(directory, keep / placement.host.name)
            else:
                shutil.rmtree(directory, ignore_errors=True)
    return Generated(dataclasses.replace(merged, load_cpu_pct=busiest_machine(shares)), shares)


def run_load(
    tool: LoadTool, request: LoadRequest, registry: ProcessRegistry, workdir: Path
) -> LoadResult:
    """The tool on this machine, on the request's cores (one generator)."""
    return run_generators(
        tool, request, [Placement(THIS_MACHINE, request.cores)], registry, workdir
    ).result


def run_tool(request: LoadRequest, registry: ProcessRegistry, workdir: Path) -> LoadResult:
    """Run the request's tool pinned to its cores; one LoadResult whatever the tool."""
    return run_load(TOOLS[request.tool], request, registry, workdir)


def _start_all(
    tool: LoadTool,
    requests: list[LoadRequest],
    placements: list[Placement],
    registry: ProcessRegistry,
    dirs: list[Path],
) -> list[ManagedProcess]:
    """Every generator's command, its files copied where it runs, then all started."""
    ready = []
    for sub, placement, directory in zip(requests, placements, dirs, strict=True):
        directory.mkdir(exist_ok=True)
        (directory / f"{tool.name}.out").unlink(missing_ok=True)
        argv = tool.command(sub, directory)
        placement.host.push(directory)
        ready.append((argv, placement, directory))
    started = []
    try:
        for argv, placement, directory in ready:
            # HOME: siege writes a settings template there on its first run.
            started.append(
                registry.start(
                    argv,
                    host=placement.host,
                    cores=placement.cores,
                    log_path=directory / f"{tool.name}.out",
                    env={"HOME": str(directory)},
                )
            )
    except BaseException:
        for process in started:
            registry.stop(process)
        raise
    return started


def _followed(
    tool: LoadTool,
    requests: list[LoadRequest],
    placements: list[Placement],
    dirs: list[Path],
    live: Follow | None,
) -> AbstractContextManager[object]:
    """A fixed-rate load followed while it runs, where its tool and place allow: one
    generator on this machine (its files are ours as it writes them); otherwise `live` is
    told why it gets no figure until the load ends."""
    if live is None or requests[0].rate is None:
        return contextlib.nullcontext()
    host = placements[0].host
    if len(placements) > 1:
        why = f"its load comes from {len(placements)} generators, merged when they end"
    elif not isinstance(host, ThisMachine):
        why = f"{tool.name} runs on {host.where}: its results come back when it ends"
    elif (follower := tool.follower(requests[0], dirs[0], live)) is not None:
        return follower
    else:
        why = f"{tool.name} gives its figures only when it ends"
    live(NoLive(why))
    return contextlib.nullcontext()


def _result(
    tool: LoadTool,
    placement: Placement,
    request: LoadRequest,
    directory: Path,
    process: ManagedProcess,
    code: int | None,
    single: bool,
) -> LoadResult:
    """One generator's result, read where it ran, with the CPU its process used."""
    placement.host.pull(directory)
    output = (directory / f"{tool.name}.out").read_text(errors="replace")
    where = "" if single else f" on host '{placement.host.name}'"
    if code != 0:
        raise LoadToolError(f"{tool.name}{where} exited with {code}: {output.strip()[-500:]}")
    result = tool.parse(output, request, directory)
    used = process.tool_cpu_seconds()
    cpu = 100.0 * used / result.duration_s if used is not None and result.duration_s else None
    return dataclasses.replace(result, load_cpu_pct=cpu)


def _wait_all(processes: list[ManagedProcess], timeout: float) -> list[int | None]:
    deadline = time.monotonic() + timeout
    return [p.wait(timeout=max(deadline - time.monotonic(), 0.0)) for p in processes]
