"""The parts of a cell's result beside its figures: each fixed-rate trial's place on the
latency–throughput curve, each load host's share of its load, each part of a mix of
requests. `analysis/cell_result.py` builds a cell's result of them."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from benchlab.analysis.capacity import Objective, sustained_miss
from benchlab.analysis.verdicts import CLIENT_SATURATED
from benchlab.core import figures as F
from benchlab.http.scenarios import SCENARIOS
from benchlab.store import LoadShareRecord, TrialRecord


@dataclass(frozen=True)
class CurvePoint:
    """One fixed-rate trial of a cell: where it sits on the latency–throughput curve."""

    target_rps: float
    achieved_rps: float
    p50_ms: float | None
    p99_ms: float | None
    held: bool | None  # against the SLO, when there is one
    probe: str | None = None  # capacity search: step (the staircase) or search (bisection)


def curve(trials: Sequence[TrialRecord], objective: Objective | None) -> tuple[CurvePoint, ...]:
    """Every fixed-rate trial of a cell (its search's probes too), by the rate it asked."""
    points = [
        CurvePoint(
            target_rps=t.target_rate,
            achieved_rps=t.achieved_rps or 0.0,
            p50_ms=t.latency_p50_ms,
            p99_ms=t.latency_p99_ms,
            held=None if objective is None else sustained_miss(t, objective) is None,
            probe=t.probe,
        )
        for t in trials
        if t.target_rate
    ]
    return tuple(sorted(points, key=lambda p: p.target_rps))


@dataclass(frozen=True)
class HostShare:
    """One load host's part of a cell, medians over its trials (issue 18)."""

    host: str
    machine: str
    cores: tuple[int, ...]
    connections: int
    rate: float | None
    requests_pct: float  # of the merged requests
    throughput_rps: float
    load_cpu_pct: float | None  # its own generator's CPU (100 = one core)
    bound: bool  # its generator (with those sharing its cores) used them up

    def text(self) -> str:
        load = f"{self.rate:,.0f} req/s asked" if self.rate is not None else (
            f"{self.connections} conn"
        )  # fmt: skip
        cpu = "–" if self.load_cpu_pct is None else f"{self.load_cpu_pct:.0f}%"
        return (
            f"{self.host} ({load}, cores {list(self.cores)}): {self.requests_pct:.1f}% of the "
            f"requests, {self.throughput_rps:,.0f} req/s, generator CPU {cpu}"
            + (" — generator-bound" if self.bound else "")
        )


def host_shares(rounds: Mapping[int, Sequence[LoadShareRecord]]) -> tuple[HostShare, ...]:
    """Each load host's share of a cell (medians over the trials), and which were bound:
    the generators that share a machine's cores used at least 90 % of them together."""
    by_host: dict[str, list[tuple[LoadShareRecord, float, float]]] = {}
    for shares in rounds.values():
        total = sum(s.requests for s in shares)
        used: dict[tuple[str, str], float] = {}
        for s in shares:
            key = (s.machine, s.cores)
            used[key] = used.get(key, 0.0) + (s.load_cpu_pct or 0.0)
        for s in shares:
            pct = 100.0 * s.requests / total if total else 0.0
            by_host.setdefault(s.host, []).append((s, pct, used[(s.machine, s.cores)]))
    out = []
    for host, rows in by_host.items():
        first = rows[0][0]
        cores = tuple(json.loads(first.cores))
        cpus = [s.load_cpu_pct for s, _, _ in rows if s.load_cpu_pct is not None]
        together = statistics.median(u for _, _, u in rows)
        out.append(
            HostShare(
                host=host, machine=first.machine, cores=cores, connections=first.connections,
                rate=first.rate, requests_pct=statistics.median(p for _, p, _ in rows),
                throughput_rps=statistics.median(s.throughput_rps for s, _, _ in rows),
                load_cpu_pct=statistics.median(cpus) if cpus else None,
                bound=bool(cpus) and together >= CLIENT_SATURATED * 100 * max(len(cores), 1),
            )
        )  # fmt: skip
    return tuple(out)


@dataclass(frozen=True)
class MixFigures:
    """One part of a mix over a cell's trials: its share of the requests answered, its
    failures, and the median over trials of its own p50 and p99."""

    part: str
    requests: int
    share: float
    errors: int
    p50_ms: float | None
    p99_ms: float | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        p99 = "–" if self.p99_ms is None else F.ms_text(self.p99_ms)
        errors = f", {self.errors:,} errors" if self.errors else ""
        return f"{self.part} {100 * self.share:.0f}% p99 {p99} ms{errors}"


def mix_figures(scenario: str, trials: Sequence[TrialRecord]) -> tuple[MixFigures, ...]:
    """Each part of a mix of requests over the cell's trials; () for a scenario of one."""
    if scenario not in SCENARIOS or not SCENARIOS[scenario].parts:
        return ()
    names = SCENARIOS[scenario].part_of()
    by_part: dict[str, list[dict[str, Any]]] = {}
    for trial in trials:
        for request, figures in json.loads(trial.mix_parts or "{}").items():
            by_part.setdefault(names.get(request, request), []).append(figures)
    total = sum(f["requests"] for found in by_part.values() for f in found)
    out = []
    for part in [*names.values(), *(p for p in by_part if p not in names.values())]:
        found = by_part.get(part, [])
        requests = sum(f["requests"] for f in found)
        out.append(
            MixFigures(
                part=part,
                requests=requests,
                share=requests / total if total else 0.0,
                errors=sum(f["errors"] for f in found),
                p50_ms=_median_of([f["p50_ms"] for f in found]),
                p99_ms=_median_of([f["p99_ms"] for f in found]),
            )
        )
    return tuple(out)


def _median_of(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None
