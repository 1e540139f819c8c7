"""The store's records as a run makes them: a planned cell, a measured trial, a load host's
share of it. The store keeps records and knows nothing of recipes, load tools or monitors;
the runner, which holds all three, turns what they give into rows."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from benchlab.core.request_errors import ERROR_KINDS
from benchlab.load.result import LoadResult, LoadShare
from benchlab.measure.monitor import CoreSteal, TreeUsage
from benchlab.recipe import Cell
from benchlab.store import LATENCY_KEYS, CellRecord, LoadShareRecord, TrialRecord


def cell_record(
    run_id: str,
    position: int,
    cell: Cell,
    label: str,
    concurrency_limit: int | None = None,
    db_pool_limit: int | None = None,
    facts: dict[str, Any] | None = None,
) -> CellRecord:
    """A planned cell as it is first stored: pending."""
    return CellRecord(
        run_id=run_id, position=position, key=cell.key, stack=cell.stack,
        stack_label=label, scenario=cell.scenario, tool=cell.tool,
        connections=cell.connections, threads=cell.threads,
        duration_s=float(cell.duration), workers=cell.workers, status="pending",
        flavour=cell.flavour, server_threads=cell.server_threads,
        pool_size=cell.pool_size, ms=cell.ms, point=cell.point,
        concurrency_limit=concurrency_limit, db_pool_limit=db_pool_limit, mode=cell.mode,
        target_rate=cell.rate, rate_share=cell.rate_share, timeout_s=cell.timeout,
        facts=facts or {}, keepalive=cell.keepalive, protocol=cell.protocol,
        copy=cell.copy,
    )  # fmt: skip


@dataclass(frozen=True)
class TrialExtras:
    """What some scenarios add to a trial: database sessions in use, cache hits."""

    db_sessions_peak: int | None = None
    pool_active_peak: int | None = None
    cache_hits: int | None = None
    cache_misses: int | None = None
    gil_wait_us: int | None = None  # the server's own count: its threads' wait for the GIL
    threads_busy_us: int | None = None  # ... and their time with a request (the wait included)


def trial_record(
    round_index: int,
    started_at: str,
    load: LoadResult,
    server: TreeUsage | None,  # None: not counted (a running server nothing watched)
    steal: CoreSteal,
    extras: TrialExtras | None = None,
    probe: str | None = None,
) -> TrialRecord:
    lat = load.latency
    return TrialRecord(
        round=round_index,
        started_at=started_at,
        requests=load.requests,
        duration_s=load.duration_s,
        throughput_rps=load.throughput_rps,
        bytes=load.bytes,
        **{f"latency_{key}_ms": getattr(lat, key) for key in LATENCY_KEYS},
        latency_percentiles=json.dumps(lat.percentiles),
        **{f"errors_{kind}": getattr(load.errors, kind) for kind in ERROR_KINDS},
        server_cpu_pct=server.cpu_pct if server else None,
        server_rss_mb=server.peak_rss_mb if server else None,
        server_processes=server.processes if server else None,
        load_cpu_pct=load.load_cpu_pct,
        server_steal_pct=steal.server_pct,
        load_steal_pct=steal.load_pct,
        **dataclasses.asdict(extras or TrialExtras()),
        probe=probe,
        target_rate=load.target_rate,
        sent_rate=load.sent_rate,
        achieved_rps=load.achieved_rps,
        schedule_lag_ms=load.schedule_lag_ms,
        latency_first_ms=load.latency_first_ms,
        latency_last_ms=load.latency_last_ms,
        server_cpu_s=server.cpu_s if server else None,
        cpu_source=server.cpu_source if server else None,
        latency_histogram=load.histogram,
        window_p99_ms=json.dumps(list(load.window_p99_ms)) if load.window_p99_ms else None,
        mix_parts=json.dumps(load.parts) if load.parts else None,
        latency_timeline=load.timeline.stored() if load.timeline else None,
        rss_growth_mb=server.memory.growth_mb if server and server.memory else None,
        rss_slope_mb_min=server.memory.slope_mb_min if server and server.memory else None,
        rss_slope_low_mb_min=server.memory.slope_low_mb_min if server and server.memory else None,
    )


def share_record(share: LoadShare) -> LoadShareRecord:
    """One load host's part of a trial, as `trial_loads` keeps it."""
    result = share.result
    return LoadShareRecord(
        host=share.host,
        machine=share.machine,
        cores=json.dumps(list(share.cores)),
        connections=share.connections,
        rate=share.rate,
        requests=result.requests,
        duration_s=result.duration_s,
        throughput_rps=result.throughput_rps,
        load_cpu_pct=result.load_cpu_pct,
        latency_p99_ms=result.latency.p99,
    )
