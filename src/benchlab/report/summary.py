"""Per-cell summaries of a stored run: the single source every report format renders."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from benchlab.analysis.stats import METHOD, Estimate, median_interval
from benchlab.store import Store


@dataclass(frozen=True)
class CellSummary:
    stack: str
    stack_label: str
    scenario: str
    tool: str
    connections: int
    threads: int
    duration_s: float
    workers: int
    flavour: str | None
    pool_size: int | None
    ms: int | None
    status: str
    reason: str | None
    trials: int
    requests: int
    throughput: Estimate | None
    latency_ms: dict[str, float | None]
    errors: dict[str, int]
    server_cpu_pct: float | None
    server_rss_mb: float | None
    load_cpu_pct: float | None
    server_steal_pct: float | None
    transfer_bytes: int
    db_sessions_peak: int | None
    pool_active_peak: int | None
    cache_hit_ratio: float | None

    def to_json(self) -> dict[str, Any]:
        t = self.throughput
        return {
            "stack": self.stack,
            "stack_label": self.stack_label,
            "scenario": self.scenario,
            "tool": self.tool,
            "connections": self.connections,
            "threads": self.threads,
            "duration_s": self.duration_s,
            "workers": self.workers,
            "flavour": self.flavour,
            "pool_size": self.pool_size,
            "ms": self.ms,
            "trials": self.trials,
            "requests": self.requests,
            "throughput_rps": None
            if t is None
            else {"median": t.median, "low": t.low, "high": t.high, "confidence": t.confidence},
            "latency_ms": self.latency_ms,
            "errors": self.errors,
            "server_cpu_pct": self.server_cpu_pct,
            "server_rss_mb": self.server_rss_mb,
            "load_cpu_pct": self.load_cpu_pct,
            "server_steal_pct": self.server_steal_pct,
            "transfer_bytes": self.transfer_bytes,
            "db_sessions_peak": self.db_sessions_peak,
            "pool_active_peak": self.pool_active_peak,
            "cache_hit_ratio": self.cache_hit_ratio,
            "status": self.status,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class RunSummary:
    run: dict[str, Any]
    cells: list[CellSummary]

    @property
    def partial_note(self) -> str | None:
        status = self.run["status"]
        if status == "running":
            return "this run is still going (or died without a word): the figures are partial"
        if status == "interrupted":
            return "this run was interrupted: the figures are what was stored before"
        if status == "failed":
            return f"this run failed ({self.run.get('status_reason')}): the figures are partial"
        return None

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "method": METHOD, "cells": [c.to_json() for c in self.cells]}


def _median(values: list[float | None]) -> float | None:
    estimate = median_interval([v for v in values if v is not None])
    return None if estimate is None else estimate.median


def _peak(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _hit_ratio(trials: list[sqlite3.Row]) -> float | None:
    hits = sum(t["cache_hits"] or 0 for t in trials)
    misses = sum(t["cache_misses"] or 0 for t in trials)
    if all(t["cache_hits"] is None for t in trials) or hits + misses == 0:
        return None
    return hits / (hits + misses)


def _summarise_cell(cell: sqlite3.Row, trials: list[sqlite3.Row]) -> CellSummary:
    status = cell["status"]
    if status == "pending" and trials:
        status = "incomplete"
    errors = {
        kind: sum(t[f"errors_{kind}"] or 0 for t in trials)
        for kind in ("connect", "read", "write", "timeout", "non_2xx", "other")
    }
    errors = {"total": sum(errors.values()), **errors}
    maxima = [t["latency_max_ms"] for t in trials if t["latency_max_ms"] is not None]
    rss = [t["server_rss_mb"] for t in trials if t["server_rss_mb"] is not None]
    return CellSummary(
        stack=cell["stack"],
        stack_label=cell["stack_label"],
        scenario=cell["scenario"],
        tool=cell["tool"],
        connections=cell["connections"],
        threads=cell["threads"],
        duration_s=cell["duration_s"],
        workers=cell["workers"],
        flavour=cell["flavour"],
        pool_size=cell["pool_size"],
        ms=cell["ms"],
        status=status,
        reason=cell["reason"],
        trials=len(trials),
        requests=sum(t["requests"] for t in trials),
        throughput=median_interval([t["throughput_rps"] for t in trials]),
        latency_ms={
            "mean": _median([t["latency_mean_ms"] for t in trials]),
            "p50": _median([t["latency_p50_ms"] for t in trials]),
            "p90": _median([t["latency_p90_ms"] for t in trials]),
            "p99": _median([t["latency_p99_ms"] for t in trials]),
            "p999": _median([t["latency_p999_ms"] for t in trials]),
            "max": max(maxima) if maxima else None,
        },
        errors=errors,
        server_cpu_pct=_median([t["server_cpu_pct"] for t in trials]),
        server_rss_mb=max(rss) if rss else None,
        load_cpu_pct=_median([t["load_cpu_pct"] for t in trials]),
        server_steal_pct=_median([t["server_steal_pct"] for t in trials]),
        transfer_bytes=sum(t["bytes"] for t in trials),
        db_sessions_peak=_peak([t["db_sessions_peak"] for t in trials]),
        pool_active_peak=_peak([t["pool_active_peak"] for t in trials]),
        cache_hit_ratio=_hit_ratio(trials),
    )


def summarise(store: Store, run_id: str | None) -> RunSummary:
    row = store.run(run_id)
    run = {key: row[key] for key in row.keys() if key != "recipe_text"}  # noqa: SIM118 (sqlite3.Row iterates values)
    for key in ("machine", "server_cores", "load_cores", "services"):
        run[key] = json.loads(run[key]) if run.get(key) else None
    cells = [_summarise_cell(c, store.trials(c["id"])) for c in store.cells(row["id"])]
    return RunSummary(run=run, cells=cells)
