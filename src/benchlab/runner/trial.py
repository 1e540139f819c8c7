"""One trial: the load tool's run with the monitors beside it, stored the moment it ends."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

from benchlab.core.errors import LoadToolError
from benchlab.hosts.generators import Generated
from benchlab.load import TOOLS, LoadRequest
from benchlab.load.live import Follow, LiveFigure
from benchlab.measure.server_counters import ThreadTimes
from benchlab.recipe import Cell
from benchlab.runner.executor import ServerProcess
from benchlab.runner.failure import FailureKind
from benchlab.runner.records import TrialExtras, share_record, trial_record
from benchlab.runner.session import Session
from benchlab.services.redis_service import hit_counters
from benchlab.stacks import Stack
from benchlab.store import TrialRecord, now
from benchlab.system.process import signals_deferred


class StackDied(Exception):
    def __init__(self, message: str, kind: FailureKind = FailureKind.STACK_DIED) -> None:
        super().__init__(message)
        self.kind = kind


def does_not_fit(server: ServerProcess, stack: Stack) -> str | None:
    """Why a stack under a memory limit (tune --memory) does not fit in it: the kernel killed
    some of its processes there; None when it fits, or has no limit."""
    killed = server.oom_kills()
    if not killed or stack.limits is None or stack.limits.memory_bytes is None:
        return None
    return (
        f"does not fit in {stack.limits.memory_bytes / 2**20:,.0f} MB: the kernel killed "
        f"{killed} of its processes at the memory limit"
    )


def check_alive(session: Session, server: ServerProcess, cell: Cell) -> None:
    """Raise ServiceDied for a dead service, StackDied for a dead server, or one that lost a
    process to its memory limit (it does not fit in it, whether or not it carried on)."""
    session.services.check()
    if (unfit := does_not_fit(server, session.catalogue[cell.stack])) is not None:
        raise StackDied(f"{unfit} during the {cell.scenario} trial", FailureKind.OUT_OF_MEMORY)
    if server.alive():
        return
    tail = server.log_tail(3) or "(empty log)"
    raise StackDied(
        f"{cell.stack} exited with code {server.returncode} during the {cell.scenario} "
        f"trial at {cell.connections} connections; last log lines: {tail}"
    )


def generate(
    session: Session, request: LoadRequest, workdir: Path, live: Follow | None = None
) -> Generated:
    """The request's load from every load host at once, merged; `live`: where its figures
    go while it runs (a fixed-rate trial's)."""
    tool = TOOLS[request.tool]
    return session.executor.measure.generate(
        tool, request, session.hosts.load, session.registry, workdir, live
    )


def flush_cache(session: Session, needed: bool) -> None:
    if needed and session.services.cache is not None:
        try:
            session.services.cache.flushall()
        except Exception:
            session.services.check()  # a dead Redis fails its cells, not the run
            raise


def _cache_counters(session: Session, needed: bool) -> tuple[int, int] | None:
    if not needed or session.services.cache is None:
        return None
    try:
        return hit_counters(session.services.cache)
    except Exception:
        session.services.check()
        raise


def _thread_times(session: Session, cell: Cell, port: int | None) -> ThreadTimes | None:
    source = session.catalogue[cell.stack].counters
    if port is None or source is None:
        return None
    return session.executor.measure.thread_times(session.server_address, port, source)


def _threads_since(before: ThreadTimes | None, after: ThreadTimes | None) -> ThreadTimes | None:
    """What the trial added (None when a reading is missing, or a worker restarted and
    its counters with it)."""
    if before is None or after is None:
        return None
    added = after.since(before)
    return added if added.gil_wait_us >= 0 and added.busy_us >= 0 else None


def take_trial(
    session: Session,
    server: ServerProcess,
    cell: Cell,
    round_index: int,
    request: LoadRequest,
    workdir: Path,
    probe: str | None = None,
    counters_port: int | None = None,
) -> TrialRecord:
    """One trial of `request` (at its rate, or in a closed loop), stored; `probe` names a
    trial that is a step of something else (closed, alone, a search's step), and
    `counters_port` where the server serves the counters it keeps of its own."""
    scenario = session.scenarios[cell.scenario]
    cache_before = _cache_counters(session, scenario.needs_cache)
    threads_before = _thread_times(session, cell, counters_port)
    probes = session.services.probes if scenario.needs_database else {}
    # From the load tool's exit until its row is stored, Ctrl-C and SIGTERM wait:
    # a finished trial is never lost to them.
    with contextlib.ExitStack() as finished:
        clock = session.executor.observe.monotonic
        with session.executor.measure.monitors(
            server, session.hosts.steal_cores(), probes
        ) as monitors:
            started_at, began = now(), clock()
            monitors.count_until(began + request.duration_s)
            generated = generate(session, request, workdir, _live(session, cell))
            result = generated.result
            finished.enter_context(signals_deferred())
            if result.requests == 0 and request.rate is None:
                kinds = ", ".join(
                    f"{kind} {count:,}" for kind, count in vars(result.errors).items() if count
                )
                raise LoadToolError(
                    f"{request.tool} completed no request in {result.duration_s:.1f} s "
                    f"({kinds or 'and counted no error: it waited the whole trial'}); "
                    "a trial without a request is no measurement"
                )
            session.costs.record(f"overhead:{request.tool}", clock() - began - request.duration_s)
        check_alive(session, server, cell)
        for name, error in monitors.errors().items():
            session.reporter.status(
                f"{name} sampling stopped during {cell.stack} {cell.scenario}: {error}"
            )
        cache_after = _cache_counters(session, scenario.needs_cache)
        hits = misses = None  # both counted or neither: the same cache, asked the same way
        if cache_before is not None and cache_after is not None:
            hits, misses = cache_after[0] - cache_before[0], cache_after[1] - cache_before[1]
        threads = _threads_since(threads_before, _thread_times(session, cell, counters_port))
        extras = TrialExtras(
            db_sessions_peak=monitors.peaks().get("db"),
            pool_active_peak=monitors.peaks().get("pool"),
            cache_hits=hits,
            cache_misses=misses,
            gil_wait_us=threads.gil_wait_us if threads else None,
            threads_busy_us=threads.busy_us if threads else None,
        )
        record = trial_record(
            round_index, started_at, result, monitors.usage(), monitors.steal(), extras, probe
        )
        session.store.add_trial(
            session.cells.ids[cell], record, [share_record(s) for s in generated.shares]
        )
        session.cells.measured.add(cell)
    return record


def _live(session: Session, cell: Cell) -> Follow:
    def follow(figure: LiveFigure) -> None:
        session.reporter.live(cell, figure)

    return follow


def at_rate(request: LoadRequest, rate: float | None) -> LoadRequest:
    return dataclasses.replace(request, rate=rate)
