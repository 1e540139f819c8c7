"""Runs written through the store's own API, for tests of what reports make of them: the
figures are chosen (a 4k–220k req/s spread, a client-bound ceiling), so a test can say what
the page must show without running load."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path

from benchlab.analysis.run_options import RunOptions
from benchlab.recipe import Cell
from benchlab.runner.records import cell_record
from benchlab.stacks import CATALOGUE
from benchlab.store import RunInfo, Store, TrialRecord

# Median req/s per stack and scenario, as recipes/quick.toml measures them on 2 cores.
QUICK_LIKE: dict[str, dict[str, float]] = {
    "nginx-static": {"plaintext": 221_000, "json": 205_000},
    "gin": {"plaintext": 94_000, "json": 88_000},
    "fastapi+uvicorn": {"plaintext": 18_200, "json": 16_100},
    "sanic": {"plaintext": 15_300, "json": 13_900},
    "tornado": {"plaintext": 8_100, "json": 7_600},
    "flask+gunicorn": {"plaintext": 4_150, "json": 4_020},
}
MACHINE = {
    "cpu": "AMD EPYC",
    "cores": 2,
    "kernel": "6.18.44",
    "python": "3.11.7",
    "packages": {"fastapi": "0.165.0", "flask": "3.1.3"},
    "tools": {"wrk": "4.1.0"},
    "debian": {},
    "governor": None,
}
SPREAD = (0.97, 1.0, 1.03)  # each cell's trials around its median


def _trial(
    round_index: int, rps: float, connections: int, load_cpu: float, duration_s: float = 2.0
) -> TrialRecord:
    p50 = 1000 * connections / rps  # a closed loop: Little's law
    percentiles = {"50": p50, "75": 1.3 * p50, "90": 1.7 * p50, "99": 3 * p50, "99.9": 6 * p50}
    requests = int(rps * duration_s)
    return TrialRecord(
        round=round_index, started_at="2026-11-23T20:00:00+00:00", requests=requests,
        duration_s=duration_s, throughput_rps=rps, bytes=requests * 150, latency_min_ms=p50 / 4,
        latency_mean_ms=1.1 * p50, latency_stdev_ms=p50 / 2, latency_p50_ms=p50,
        latency_p90_ms=1.7 * p50, latency_p99_ms=3 * p50, latency_p999_ms=6 * p50,
        latency_max_ms=9 * p50, latency_percentiles=json.dumps(percentiles), errors_connect=0,
        errors_read=0, errors_write=0, errors_timeout=0, errors_non_2xx=0, errors_other=0,
        server_cpu_pct=97.0, server_rss_mb=40.0, server_processes=2, load_cpu_pct=load_cpu,
        server_steal_pct=0.0, load_steal_pct=0.0, server_cpu_s=1.94 * requests / rps / 2,
        cpu_source="cgroup v2",
    )  # fmt: skip


def write_run(
    path: Path,
    medians: Mapping[str, Mapping[str, float]] = QUICK_LIKE,
    *,
    trials: int = 3,
    machine: Mapping[str, object] = MACHINE,
    ceiling_load_cpu: float = 99.0,
    spread: tuple[float, ...] = SPREAD,
    options: RunOptions | None = None,
    own_spread: Mapping[str, tuple[float, ...]] | None = None,
    aa_spread: tuple[float, ...] | None = None,
    duration: int = 2,
    plan: Mapping[str, object] | None = None,
) -> str:
    """A complete run of `medians` (stack -> scenario -> req/s) in the store at `path`, wrk at
    64 connections for `duration` s, `trials` trials a cell; the ceiling's load tool at
    `ceiling_load_cpu` % of its one core (99: client-bound); `own_spread`: a stack's own
    factors on top of the round's (`spread`, which every stack shares); `aa_spread`: the
    options' sentinel again, as its A/A copy, with these factors on top of its own; `plan`:
    what the run stores for `run --resume` (`plan_of`; none by default, as a store older than
    plans). Returns the run id."""
    store = Store(path)
    options_json = (options or RunOptions(baseline="flask+gunicorn")).to_json()
    recipe = 'name = "quick"\nbaseline = "flask+gunicorn"\n'
    run_id = store.create_run(
        RunInfo(
            "recipes/quick.toml",
            "quick",
            recipe,
            "How do the core stacks compare on plaintext and JSON?",
            "benchlab run recipes/quick.toml",
            "0123456789abcdef",
            (0,),
            (1,),
            dict(machine),
            options_json,
            dict(plan) if plan is not None else None,
        )
    )
    position = 0
    sentinel = options.sentinel if options is not None else None
    copies = [(s, 1) for s in medians] + ([(sentinel, 2)] if aa_spread and sentinel else [])
    for stack, copy in copies:
        by_scenario = medians[stack]
        entry = CATALOGUE[stack]
        for scenario, median in by_scenario.items():
            cell = Cell(stack, scenario, "wrk", 64, 1, duration, 5, 1, copy=copy)
            label = entry.label(1) + {1: "", 2: " (sentinel's A/A copy)"}[copy]
            cell_id = store.add_cell(
                cell_record(run_id, position, cell, label, facts=entry.facts(1, None))
            )
            position += 1
            load_cpu = ceiling_load_cpu if stack == "nginx-static" else 55.0
            own = (own_spread or {}).get(stack, (1.0,))
            if copy == 2:
                own = tuple(a * b for a, b in zip(own * len(aa_spread), aa_spread, strict=False))
            factors = [spread[i % len(spread)] * own[i % len(own)] for i in range(trials)]
            for index, factor in enumerate(factors):
                trial = _trial(index, median * factor, 64, load_cpu, float(duration))
                store.add_trial(cell_id, trial)
            store.mark_cell(cell_id, "ok")
    store.finish_run(run_id, "complete")
    store.close()
    return run_id


def plan_of(trials: int = 3, budget_min: float | None = None) -> dict[str, object]:
    """The plan a run stores: its recipe's settings as it ran, its budget (--budget)."""
    return {
        "recipe": {"name": "quick", "trials": trials, "max_trials": None, "warmup": 1},
        "deadline_s": None if budget_min is None else budget_min * 60,
    }


def held_trial(round_index: int, rate: float, probe: str | None = None) -> TrialRecord:
    """A fixed-rate trial that delivered `rate` with a p99 far under any target."""
    trial = _trial(round_index, rate, 64, 40.0)
    return dataclasses.replace(
        trial, probe=probe, target_rate=rate, sent_rate=rate, achieved_rps=rate,
        latency_p99_ms=5.0,
    )  # fmt: skip


def with_machine(**changes: object) -> dict[str, object]:
    """MACHINE with some facts or versions changed."""
    machine = dict(MACHINE)
    for key, value in changes.items():
        if isinstance(value, dict):
            machine[key] = {**machine.get(key, {}), **value}  # type: ignore[dict-item]
        else:
            machine[key] = value
    return machine


__all__ = ["MACHINE", "QUICK_LIKE", "held_trial", "plan_of", "with_machine", "write_run"]
