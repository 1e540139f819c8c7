"""Per-cell summaries of a stored run: the single source every report format renders."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import tomllib
from dataclasses import dataclass, field
from typing import Any

from benchlab.analysis.flips import Contender, Flip, flips, rankings
from benchlab.analysis.relative import (
    CEILING_STACK,
    Comparable,
    reference_cells,
    relative_to,
    rps_per_cpu_second,
)
from benchlab.analysis.stats import METHOD, RATIO_METHOD, Estimate, Ratio, median_interval
from benchlab.analysis.verdicts import CellFigures, Verdict, verdicts
from benchlab.store import Store

DEFAULT_TARGET_HALF_WIDTH_PCT = 5.0


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
    point_name: str | None
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
    capacity: int | None = None
    db_pool_limit: int | None = None
    throughputs: tuple[float, ...] = ()
    latency_intervals: dict[str, Estimate | None] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    relative: Ratio | None = None
    ceiling_fraction: Ratio | None = None
    rps_per_cpu_s: float | None = None
    # Latency (ms) at each quantile the tool reports ("50", "99.9", ...): median over trials.
    percentiles: dict[str, float] = field(default_factory=dict)
    grid: tuple = ()  # where stacks are ranked and compared: see _grid_point

    @property
    def point(self) -> tuple:
        """The load the cell faced, whatever the stack: where cells are compared."""
        return (self.point_name, self.scenario, self.tool, self.connections, self.ms)

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
            "point": self.point_name,
            "trials": self.trials,
            "requests": self.requests,
            "throughput_rps": None
            if t is None
            else {"median": t.median, "low": t.low, "high": t.high, "confidence": t.confidence},
            "latency_ms": self.latency_ms,
            "latency_interval_ms": {
                name: None if e is None else {"median": e.median, "low": e.low, "high": e.high}
                for name, e in self.latency_intervals.items()
            },
            "errors": self.errors,
            "server_cpu_pct": self.server_cpu_pct,
            "server_rss_mb": self.server_rss_mb,
            "load_cpu_pct": self.load_cpu_pct,
            "server_steal_pct": self.server_steal_pct,
            "transfer_bytes": self.transfer_bytes,
            "db_sessions_peak": self.db_sessions_peak,
            "pool_active_peak": self.pool_active_peak,
            "cache_hit_ratio": self.cache_hit_ratio,
            "capacity": self.capacity,
            "db_pool_limit": self.db_pool_limit,
            "verdicts": [v.name for v in self.verdicts],
            "verdict_sentences": {v.name: v.sentence for v in self.verdicts},
            "relative": _ratio_json(self.relative),
            "ceiling_fraction": _ratio_json(self.ceiling_fraction),
            "rps_per_cpu_s": self.rps_per_cpu_s,
            "latency_percentiles_ms": self.percentiles,
            "status": self.status,
            "reason": self.reason,
        }


def _ratio_json(ratio: Ratio | None) -> dict[str, float] | None:
    if ratio is None:
        return None
    return {"value": ratio.value, "low": ratio.low, "high": ratio.high}


@dataclass(frozen=True)
class RunSummary:
    run: dict[str, Any]
    cells: list[CellSummary]
    baseline: str | None = None
    target_half_width_pct: float = DEFAULT_TARGET_HALF_WIDTH_PCT
    flips: list[Flip] = field(default_factory=list)
    rankings: dict[tuple, list[tuple[str, float]]] = field(default_factory=dict)
    recipe_text: str = ""

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
        return {
            "run": self.run,
            "method": METHOD,
            "ratio_method": RATIO_METHOD,
            "baseline": self.baseline,
            "target_half_width_pct": self.target_half_width_pct,
            "cells": [c.to_json() for c in self.cells],
            "rankings": [
                {"point": list(point), "ranking": [{"stack": s, "median_rps": v} for s, v in order]}
                for point, order in self.rankings.items()
            ],
            "rank_flips": [
                {
                    "a": f.a,
                    "b": f.b,
                    "a_wins": [{"point": list(w.point), **_ratio_json(w.ratio)} for w in f.a_wins],
                    "b_wins": [{"point": list(w.point), **_ratio_json(w.ratio)} for w in f.b_wins],
                }
                for f in self.flips
            ],
        }


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


def _percentiles(trials: list[sqlite3.Row]) -> dict[str, float]:
    """Quantiles every trial reported, each the median over trials, in quantile order."""
    per_trial = [json.loads(t["latency_percentiles"] or "{}") for t in trials]
    if not per_trial:
        return {}
    common = set.intersection(*(set(p) for p in per_trial))
    medians = {q: _median([p[q] for p in per_trial]) for q in common}
    return {q: v for q, v in sorted(medians.items(), key=lambda kv: float(kv[0])) if v is not None}


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
        point_name=cell["point"],
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
        capacity=cell["capacity"],
        db_pool_limit=cell["db_pool_limit"],
        throughputs=tuple(t["throughput_rps"] for t in trials),
        latency_intervals={
            name: median_interval([t[f"latency_{name}_ms"] for t in trials])
            for name in ("p50", "p90", "p99", "p999")
        },
        db_sessions_peak=_peak([t["db_sessions_peak"] for t in trials]),
        pool_active_peak=_peak([t["pool_active_peak"] for t in trials]),
        cache_hit_ratio=_hit_ratio(trials),
        percentiles=_percentiles(trials),
    )


def _recipe_options(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _analyse(
    cell: CellSummary, run: dict[str, Any], target: float, adaptive: bool
) -> list[Verdict]:
    if cell.throughput is None:
        return []
    figures = CellFigures(
        scenario=cell.scenario,
        connections=cell.connections,
        ms=cell.ms,
        throughput_rps=cell.throughput.median,
        half_width_pct=cell.throughput.half_width_pct if cell.throughput.n > 1 else None,
        confidence=cell.throughput.confidence,
        requests=cell.requests,
        errors=cell.errors,
        server_cpu_pct=cell.server_cpu_pct,
        load_cpu_pct=cell.load_cpu_pct,
        server_cores=len(run["server_cores"]),
        # A tool can keep busy no more cores than it has threads (ab: one, whatever it has).
        load_cores=min(len(run["load_cores"]), cell.threads),
        capacity=cell.capacity,
        db_sessions_peak=cell.db_sessions_peak,
        db_pool_limit=cell.db_pool_limit,
    )
    return verdicts(figures, target, adaptive)


def summarise(store: Store, run_id: str | None) -> RunSummary:
    row = store.run(run_id)
    options = _recipe_options(row["recipe_text"])
    run = {key: row[key] for key in row.keys() if key != "recipe_text"}  # noqa: SIM118 (sqlite3.Row iterates values)
    for key in ("machine", "server_cores", "load_cores", "services"):
        run[key] = json.loads(run[key]) if run.get(key) else None
    target = float(options.get("target_half_width_pct", DEFAULT_TARGET_HALF_WIDTH_PCT))
    baseline = options.get("baseline")
    cells = [_summarise_cell(c, store.trials(c["id"])) for c in store.cells(row["id"])]
    cells = [dataclasses.replace(c, grid=_grid_point(c, options)) for c in cells]
    comparable = [Comparable(c.stack, c.grid, c.throughputs) for c in cells]
    baselines = reference_cells(comparable, baseline)
    ceilings = reference_cells(comparable, CEILING_STACK)
    cells = [
        dataclasses.replace(
            cell,
            verdicts=_analyse(cell, run, target, options.get("max_trials") is not None),
            relative=relative_to(view, baselines),
            ceiling_fraction=relative_to(view, ceilings) if cell.stack != CEILING_STACK else None,
            rps_per_cpu_s=rps_per_cpu_second(
                cell.throughput.median if cell.throughput else None, cell.server_cpu_pct
            ),
        )
        for cell, view in zip(cells, comparable, strict=True)
    ]
    contenders = [Contender(c.stack_label, c.grid, c.throughputs) for c in cells]
    return RunSummary(
        run=run,
        cells=cells,
        baseline=baseline,
        target_half_width_pct=target,
        flips=flips(contenders),
        rankings=rankings(contenders),
        recipe_text=row["recipe_text"],
    )


def _grid_point(cell: CellSummary, options: dict[str, Any]) -> tuple:
    """Where stacks are ranked and divided by the baseline: the load, plus the pool size
    when the recipe sweeps it (then no stack has a pool of its own: the recipe checks)."""
    swept_pool = isinstance(options.get("params", {}).get("pool_size"), list)
    return (*cell.point, cell.pool_size) if swept_pool else cell.point
