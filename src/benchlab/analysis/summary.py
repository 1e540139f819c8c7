"""Per-cell summaries of a stored run: the single source every report format renders.

A cell's figures are named by the registry in `benchlab.core.figures`: estimates (median over
trials with the interval), values and ratios, all in `CellSummary.figures`. Which trials a
figure comes from depends on the cell's mode: a closed-loop or fixed-rate cell's own trials;
for a capacity search, the trial of each replicate at the capacity it found (the latency and
cost at that rate), while every probe of the search draws the latency–throughput curve.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from benchlab.analysis.capacity import Target, sustained_miss
from benchlab.analysis.cell_records import measured, own_trials, refused_opens, reported_errors
from benchlab.analysis.combine import FigureValue, combine
from benchlab.analysis.evidence import RatioMethod, effect_pct
from benchlab.analysis.flips import Flip, flips
from benchlab.analysis.grid import GridPoint, point_of, rate_text
from benchlab.analysis.ranking import Call, Ranking, build, entrant
from benchlab.analysis.relative import (
    CEILING_STACK,
    Comparable,
    is_ceiling,
    is_ceiling_cell,
    reference_cells,
    relative_to,
)
from benchlab.analysis.run_options import RunOptions, websocket_settings
from benchlab.analysis.samples import per_round_ratios
from benchlab.analysis.stats import METHOD, Estimate, Ratio, median_interval, ratio_interval
from benchlab.analysis.timelines import TrialTimeline, trial_timelines
from benchlab.analysis.verdicts import (
    CLIENT_SATURATED,
    UNSTABLE,
    Setting,
    Side,
    Verdict,
    verdicts,
)
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.http.scenarios import SCENARIOS, WEBSOCKET_SCENARIOS
from benchlab.load import TOOLS
from benchlab.load.ws_requests import AT_LAST_STEP
from benchlab.recipe import WebSocket
from benchlab.resilience.drain import Drain
from benchlab.resilience.facts import NotChecked, slow_client_check, stop_check
from benchlab.resilience.slow_clients import SlowClients
from benchlab.stacks import CATALOGUE
from benchlab.store import (
    CELL_SHOWN,
    ERROR_KINDS,
    CapacityRecord,
    CellRecord,
    HostRecord,
    LoadShareRecord,
    RunRecord,
    Store,
    TrialRecord,
)
from benchlab.store.records import plain

if TYPE_CHECKING:
    from benchlab.analysis.thresholds import ThresholdResult


@dataclass(frozen=True)
class CurvePoint:
    """One fixed-rate trial of a cell: where it sits on the latency–throughput curve."""

    target_rps: float
    achieved_rps: float
    p50_ms: float | None
    p99_ms: float | None
    held: bool | None  # against the SLO, when there is one
    probe: str | None = None  # capacity search: step (the staircase) or search (bisection)


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


def host_shares(rounds: dict[int, list[LoadShareRecord]]) -> tuple[HostShare, ...]:
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


def _name_bound_hosts(found: list[Verdict], shares: tuple[HostShare, ...]) -> list[Verdict]:
    """A generator-bound verdict of a cell loaded from several hosts names the host(s)."""
    bound = [s for s in shares if s.bound]
    if len(shares) < 2 or not bound:
        return found
    named = ", ".join(
        f"'{s.host}' ({s.load_cpu_pct:.0f}% CPU of cores {list(s.cores)})" for s in bound
    )
    shared = len({(s.machine, s.cores) for s in bound}) < len(bound)
    hosts = "load host" if len(bound) == 1 else "load hosts"
    verb = "was" if len(bound) == 1 else "were"
    where = f"; {hosts} {named}{', sharing their cores,' if shared else ''} {verb} the limit"
    return [
        dataclasses.replace(v, sentence=v.sentence + where) if v.bound is Side.GENERATOR else v
        for v in found
    ]


@dataclass(frozen=True)
class CellSummary:
    """A stored cell (its identity and settings, read from `stored`, never copied) and what
    its trials make of it."""

    stored: CellRecord
    status: str  # the stored status; "incomplete": pending with some trials kept
    trials: int  # trials measured (for a capacity search: replicates)
    errors: dict[str, int]
    figures: dict[str, FigureValue]
    # A mix: each part's share of the requests, its errors and latency (MixPart figures).
    mix: tuple[MixFigures, ...] = ()
    # Per trial (or replicate) samples of every figure a cell can be ranked by.
    samples: Mapping[str, Sequence[float]] = field(default_factory=dict)
    latency_intervals: dict[str, Estimate | None] = field(default_factory=dict)
    percentiles: dict[str, float] = field(default_factory=dict)  # the latency curve
    curve: tuple[CurvePoint, ...] = ()
    latency_source: str = ""  # "merged histogram" or "median of the trials' percentiles"
    cpu_source: str | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    grid: GridPoint | None = None
    ranked_by: F.Figure = F.THROUGHPUT
    facts: dict[str, Any] = field(default_factory=dict)  # framework, server, worker model
    alone_ms: float | None = None  # median latency at one connection (benchlab tune)
    load_hosts: tuple[HostShare, ...] = ()  # each load host's share, when there were several
    # Its trials as stored, when the reader asked for them (`report -f json --trials`).
    trial_records: tuple[TrialRecord, ...] = ()
    # Each capacity-search replicate: what it found, its bracket, its probes, why it stopped.
    replicates: tuple[CapacityRecord, ...] = ()
    # The run's sentinel (either launch): a reference measured in every round, not ranked.
    is_sentinel: bool = False
    # A WebSocket hold: why its steps ended in most of its trials (refused, stalled,
    # dropped, memory, steps: its last step reached).
    hold_stop: str | None = None
    # A hold whose server refused an upgrade: the opens it refused by then, median over the
    # trials that stopped so (the hold's finding, not errors: cell_records.reported_errors).
    hold_refused: int | None = None
    # What its rates count a second (RunOptions.rate_unit_of): requests, a WebSocket's messages.
    rate_unit: str = F.REQ_S
    # The run's [websocket] settings, for a WebSocket cell (what its load was).
    websocket: WebSocket | None = None
    # Its fixed-rate trials (those its figures come from) second by second.
    timelines: tuple[TrialTimeline, ...] = ()

    # --- the stored cell's identity and settings: its record's shown fields, by the names
    # every report shows them by (store/records.py, CELL_SHOWN: cell.stack, cell.point,
    # cell.rate_share_pct, ...) ---

    def __getattr__(self, name: str) -> Any:
        field = _SHOWN_FIELD.get(name)
        if field is None:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        return getattr(self.stored, field)

    def shown(self) -> dict[str, Any]:
        """The record's shown fields under their shown names (JSON's and CSV's)."""
        return {name: plain(getattr(self.stored, field)) for field, name in CELL_SHOWN.items()}

    @property
    def is_aa_copy(self) -> bool:
        """The sentinel's second launch: its figure measures the run's noise, not a stack."""
        return self.stored.copy != 1

    @property
    def conformance(self) -> dict[str, list[str]] | None:
        return self.facts.get("conformance")

    @property
    def drain(self) -> Drain | NotChecked | None:
        return stop_check(self.facts)

    @property
    def slow_clients(self) -> SlowClients | NotChecked | None:
        return slow_client_check(self.facts)

    @property
    def unbracketed(self) -> int:
        """Replicates that held every rate they tried: no bracket above, so the capacity is
        a lower bound ("≥ X")."""
        return sum(1 for c in self.replicates if c.capacity_rps > 0 and c.bracket_high_rps is None)

    @property
    def lower_bounds(self) -> frozenset[str]:
        """The figures whose value is only a lower bound: a capacity no rate bracketed, the
        connections a hold held at its last step (the server still holding)."""
        found = {F.CAPACITY.key} if self.unbracketed else set()
        if self.hold_stop == AT_LAST_STEP:
            found.add(F.CONNECTIONS_HELD.key)
        return frozenset(found)

    def value(self, figure: F.Figure) -> float | None:
        """The figure as one number: an estimate's median, a ratio's value."""
        found = self.figures.get(figure.key)
        if isinstance(found, Estimate):
            return found.median
        if isinstance(found, Ratio):
            return found.value
        return found

    def estimate(self, figure: F.Figure) -> Estimate | None:
        found = self.figures.get(figure.key)
        return found if isinstance(found, Estimate) else None

    def ratio(self, figure: F.Figure) -> Ratio | None:
        found = self.figures.get(figure.key)
        return found if isinstance(found, Ratio) else None

    def interval(self, figure: F.Figure) -> Estimate | None:
        """The figure as every table shows it, with its interval over the trials: an
        estimate's own; a latency percentile (of the merged histogram of every trial) with
        the interval of the median of the trials' own percentile; None where the figure is
        no median (a peak such as RSS, a sum, a count) or the cell has none."""
        found = self.figures.get(figure.key)
        if isinstance(found, Estimate):
            return found
        over = self.latency_intervals.get(figure.key)
        if isinstance(found, int | float) and over is not None:
            return dataclasses.replace(over, median=float(found))
        return None

    @property
    def throughput(self) -> Estimate | None:
        return self.estimate(F.THROUGHPUT)

    @property
    def measured(self) -> bool:
        return self.value(self.ranked_by) is not None

    @property
    def rate_text(self) -> str:
        return rate_text(self.stored)

    def unit(self, figure: F.Figure) -> str:
        """The figure's unit in this cell (a rate: its scenario's)."""
        return figure.unit_in(self.rate_unit)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            **self.shown(),
            "sentinel": self.is_sentinel,
            "aa_copy": self.is_aa_copy,
            "mix": [m.to_json() for m in self.mix] or None,
            "trials": self.trials,
            "ranked_by": self.ranked_by.key,
        }
        for figure in F.FIGURES.values():
            value = _figure_json(self.figures.get(figure.key))
            if isinstance(value, dict) and figure is F.CAPACITY:
                value["bracketed"] = figure.key not in self.lower_bounds
            if figure.group:
                data.setdefault(figure.group, {})[figure.key] = value
            else:
                data[figure.key] = value
        data["errors"] = self.errors
        data.update(
            {
                "latency_source": self.latency_source,
                "latency_interval_ms": {
                    name: _figure_json(e) for name, e in self.latency_intervals.items()
                },
                "latency_percentiles_ms": self.percentiles,
                "curve": [dataclasses.asdict(p) for p in self.curve],
                "cpu_source": self.cpu_source,
                "facts": self.facts,
                "verdicts": [v.name for v in self.verdicts],
                "verdict_sentences": {v.name: v.sentence for v in self.verdicts},
                "status": self.status,
                "load_hosts": [dataclasses.asdict(h) for h in self.load_hosts],
                "replicates": [dataclasses.asdict(r) for r in self.replicates],
                "hold_stop": self.hold_stop,
                "hold_refused": self.hold_refused,
                "rate_unit": self.rate_unit,
                "timeline": [t.to_json() for t in self.timelines],
            }
        )
        if self.trial_records:
            data["trial_values"] = [trial.to_json() for trial in self.trial_records]
        return data


# A shown name -> the record's field it reads (CellSummary.__getattr__).
_SHOWN_FIELD = {name: field for field, name in CELL_SHOWN.items()}


def _figure_json(value: FigureValue) -> Any:
    if isinstance(value, Estimate):
        return {
            "median": value.median,
            "low": value.low if value.n > 1 else None,
            "high": value.high if value.n > 1 else None,
            "confidence": value.confidence if value.n > 1 else None,
            "n": value.n,
        }
    if isinstance(value, Ratio):
        return {"value": value.value, "low": value.low, "high": value.high}
    return value


@dataclass(frozen=True)
class RunSummary:
    run: RunRecord
    cells: list[CellSummary]
    ranking: Ranking
    options: RunOptions = field(default_factory=RunOptions)
    flips: list[Flip] = field(default_factory=list)
    recipe_text: str = ""
    # Cells measured by several tools (article 001): whether the tools agree, or which is off.
    tool_agreement: list[str] = field(default_factory=list)
    # What TLS and HTTP/2 cost each stack: its throughput over each, ÷ over plain HTTP/1.1.
    protocol_costs: list[ProtocolCost] = field(default_factory=list)
    hosts: list[HostRecord] = field(default_factory=list)  # what ran where ([hosts])
    # The thresholds judged on it (analysis/thresholds.py, `judged`): the recipe's and the
    # command line's.
    thresholds: tuple[ThresholdResult, ...] = ()

    @property
    def ranked_by(self) -> F.Figure:
        """What the run's cells are ranked by, in one figure (the ranking's)."""
        return self.ranking.figure

    def cell(self, key: str) -> CellSummary:
        """The run's cell of this key."""
        return self._by_key[key]

    def cells_at(self, point: GridPoint) -> list[CellSummary]:
        """Every cell at a grid point, best first as the ranking shows them (the unmeasured
        last)."""
        found = self.ranking.at(point)
        return [self.cell(key) for key in found.cells] if found is not None else []

    @functools.cached_property
    def _by_key(self) -> dict[str, CellSummary]:
        return {c.key: c for c in self.cells}

    @property
    def baseline(self) -> str | None:
        return self.options.baseline

    @property
    def target_half_width_pct(self) -> float:
        return self.options.target_half_width_pct

    def sentinel_at(self, grid: GridPoint | None) -> CellSummary | None:
        """The sentinel's cell (its first launch) at a grid point, if the run measured one."""
        return next(
            (c for c in self.cells if c.is_sentinel and not c.is_aa_copy and c.grid == grid),
            None,
        )

    @property
    def steal_pct(self) -> float | None:
        """The run's steal: the median over its cells of their median server-core steal."""
        values = [
            estimate.median
            for cell in self.cells
            if (estimate := cell.estimate(F.FIGURES["server_steal_pct"])) is not None
        ]
        return round(statistics.median(values), 1) if values else None

    @property
    def fingerprint(self) -> dict[str, Any]:
        """What the run was measured with: its machine record and its steal."""
        return {**self.run.machine, "steal_pct": self.steal_pct}

    @property
    def aa_noise_pct(self) -> float | None:
        """How far apart the sentinel's two launches (A/A) came out, in %: the effect of the
        median of their per-round ratios, as the evidence rule measures an effect, at the grid
        point where it is largest; None: no A/A."""
        found = [
            effect_pct(ratio.value)
            for cell in self.cells
            if cell.is_aa_copy
            and isinstance(ratio := cell.figures.get(F.TO_SENTINEL.key), Ratio)
            and ratio.value > 0
        ]
        return max(found) if found else None

    @property
    def partial_note(self) -> str | None:
        status = self.run.status
        if status == "running":
            return "this run is still going (or died without a word): the figures are partial"
        if status == "interrupted":
            return "this run was interrupted: the figures are what was stored before"
        if status == "failed":
            return f"this run failed ({self.run.status_reason}): the figures are partial"
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run.to_json(),
            "method": METHOD,
            "ratio_method": self.options.evidence.method.detail,
            "baseline": self.baseline,
            "target_half_width_pct": self.target_half_width_pct,
            "evidence": self.options.evidence.describe(),
            "sentinel": self.options.sentinel,
            "aa_noise_pct": self.aa_noise_pct,
            "tool_agreement": self.tool_agreement,
            "protocol_costs": [c.to_json() for c in self.protocol_costs],
            "hosts": [h.to_json() for h in self.hosts],
            "slo": dataclasses.asdict(self.options.slo) if self.options.slo else None,
            "ranked_by": self.ranked_by.key,
            "thresholds": [t.to_json() for t in self.thresholds],
            "cells": [c.to_json() for c in self.cells],
            "rankings": [p.as_json() for p in self.ranking.points.values() if p.order],
            "rank_flips": [
                {
                    "a": f.a,
                    "b": f.b,
                    "a_wins": [
                        {"point": w.point.as_json(), **_figure_json(w.ratio)} for w in f.a_wins
                    ],
                    "b_wins": [
                        {"point": w.point.as_json(), **_figure_json(w.ratio)} for w in f.b_wins
                    ],
                }
                for f in self.flips
            ],
        }


# --- one cell ----------------------------------------------------------------------------------


def _curve(trials: list[TrialRecord], target: Target | None) -> tuple[CurvePoint, ...]:
    points = [
        CurvePoint(
            target_rps=t.target_rate,
            achieved_rps=t.achieved_rps or 0.0,
            p50_ms=t.latency_p50_ms,
            p99_ms=t.latency_p99_ms,
            held=None if target is None else sustained_miss(t, target) is None,
            probe=t.probe,
        )
        for t in trials
        if t.target_rate
    ]
    return tuple(sorted(points, key=lambda p: p.target_rps))


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
        return dataclasses.asdict(self)

    def text(self) -> str:
        p99 = "–" if self.p99_ms is None else F.ms_text(self.p99_ms)
        errors = f", {self.errors:,} errors" if self.errors else ""
        return f"{self.part} {100 * self.share:.0f}% p99 {p99} ms{errors}"


def _mix_figures(scenario: str, trials: list[TrialRecord]) -> tuple[MixFigures, ...]:
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


def _summarise_cell(
    cell: CellRecord,
    all_trials: list[TrialRecord],
    capacities: list[CapacityRecord],
    options: RunOptions,
) -> CellSummary:
    mode = cell.mode
    records = measured(mode, all_trials, capacities)
    trials, capacities = records.trials, records.capacities
    replicates = len(capacities) if mode == Mode.SLO else len(trials)
    status = cell.status
    if status == "pending" and (trials or capacities):
        status = "incomplete"
    counted = [reported_errors(t) for t in trials]
    errors = {kind: sum(getattr(e, kind) for e in counted) for kind in ERROR_KINDS}
    refused = [n for t in trials if (n := refused_opens(t)) is not None]
    combined = combine(trials, capacities, cell, mode, own_trials(all_trials))
    return CellSummary(
        stored=cell,
        status=status,
        trials=replicates,
        errors={"total": sum(errors.values()), **errors},
        figures=combined.figures,
        samples=combined.samples,
        latency_intervals=combined.latency_intervals,
        percentiles=combined.latency.percentiles,
        curve=_curve(all_trials, options.slo),
        latency_source=combined.latency.source if trials else "",
        cpu_source=next((t.cpu_source for t in trials if t.cpu_source), None),
        ranked_by=options.figure_for(mode, cell.scenario),
        facts=_facts(cell),
        alone_ms=_alone_ms(all_trials),
        mix=_mix_figures(cell.scenario, trials),
        replicates=tuple(capacities),
        hold_stop=_most_often([t.ws_hold_stop for t in trials if t.ws_hold_stop]),
        hold_refused=round(statistics.median(refused)) if refused else None,
        rate_unit=options.rate_unit_of(cell.scenario),
        timelines=trial_timelines(trials),
    )


def _most_often(values: list[str]) -> str | None:
    return max(dict.fromkeys(values), key=values.count) if values else None


def _alone_ms(trials: list[TrialRecord]) -> float | None:
    alone = median_interval([t.latency_p50_ms for t in trials if t.probe == "alone"])
    return alone.median if alone else None


def _facts(cell: CellRecord) -> dict[str, Any]:
    """Framework, server and worker model as stored; runs stored before they were read
    them from the catalogue."""
    if cell.facts is not None:
        return cell.facts
    entry = CATALOGUE.get(cell.stack)
    if entry is None:
        return {}
    return {
        "framework": entry.framework,
        "server": entry.server,
        "worker_model": entry.worker_model,
    }


def _analyse(
    cell: CellSummary,
    run: RunRecord,
    options: RunOptions,
    trend: tuple[float | None, float | None] = (None, None),
    ceiling: CellSummary | None = None,
) -> list[Verdict]:
    if cell.throughput is None:
        return []
    spread = median_interval(cell.samples.get(cell.ranked_by.key) or ())
    setting = Setting(
        server_cores=len(run.server_cores),
        # A tool can keep busy no more cores than it has threads (ab: one, whatever it has).
        load_cores=min(len(run.load_cores), cell.threads),
        half_width_pct=spread.half_width_pct if spread and spread.n > 1 else None,
        confidence=spread.confidence if spread else 0.0,
        target_half_width_pct=options.target_half_width_pct,
        # A run that stopped when its ranking was decided did not run out of rounds: its
        # cells' spread is still shown, but none "never converged".
        adaptive=options.adaptive and options.ratio_method != RatioMethod.SEQUENTIAL,
        latency_first_ms=trend[0],
        latency_last_ms=trend[1],
        latency_resolution_ms=TOOLS[cell.tool].latency_resolution_ms if cell.tool in TOOLS else 0.0,
        ceiling=ceiling,
        is_ceiling=ceiling is cell,
    )
    return verdicts(cell, setting)


def websocket_ceilings(cells: list[CellSummary]) -> dict[GridPoint | None, CellSummary]:
    """The Go ceiling's cell at each WebSocket point (its figures are JMeter's limit)."""
    return {
        cell.grid: cell
        for cell in cells
        if cell.grid is not None and cell.scenario in WEBSOCKET_SCENARIOS
        and is_ceiling_cell(cell.stack, cell.scenario, cell.facts)
    }  # fmt: skip


def summarise(store: Store, run_id: str | None, with_trials: bool = False) -> RunSummary:
    """A stored run's summary; `with_trials`: each cell keeps its trials as stored too."""
    record = store.run(run_id)
    options = RunOptions.of_run(record)
    websocket = websocket_settings(record)
    cells, entrants, trends, all_shares = [], [], [], []
    for cell in store.cells(record.id):
        trials, capacities = store.trials(cell.id), store.capacities(cell.id)
        summary = _summarise_cell(cell, trials, capacities, options)
        shares = host_shares(store.load_shares(cell.id))
        cells.append(dataclasses.replace(
            summary, grid=point_of(cell, options.pool_swept),
            load_hosts=shares if len(shares) > 1 else (),
            trial_records=tuple(trials) if with_trials else (),
            websocket=websocket if cell.scenario in WEBSOCKET_SCENARIOS else None,
        ))  # fmt: skip
        trends.append(_trend(trials))
        all_shares.append(shares)
        entrants.append(entrant(cell, trials, capacities, options))
    # Verdicts once every cell is made: a WebSocket cell's read its point's Go ceiling's.
    ceilings = websocket_ceilings(cells)
    for index, (trend, shares) in enumerate(zip(trends, all_shares, strict=True)):
        found = _analyse(cells[index], record, options, trend, ceilings.get(cells[index].grid))
        cells[index] = dataclasses.replace(cells[index], verdicts=_name_bound_hosts(found, shares))
    ranking = build(entrants, options)
    cells = _relative(cells, options.baseline)
    cells = _to_sentinel(cells, options.sentinel)
    return RunSummary(
        run=record,
        cells=_unflag_decided(cells, ranking),
        ranking=ranking,
        options=options,
        flips=flips(ranking),
        recipe_text=record.recipe_text,
        tool_agreement=tool_agreement(cells),
        protocol_costs=protocol_costs(cells),
        hosts=store.hosts(record.id),
    )


def _unflag_decided(cells: list[CellSummary], ranking: Ranking) -> list[CellSummary]:
    """`unstable` only where it changes what a reader may conclude: a cell ahead of the one
    after it and behind the one before it in its ranking (an interval wider than the target,
    yet clear of theirs) is not flagged; its interval is still shown (docs/verdicts.md)."""
    decided: set[str] = set()
    for point in ranking.points.values():
        calls = [Call.AHEAD, *(step.call for step in point.steps), Call.AHEAD]
        if len(point.order) > 1:
            decided |= {
                place.key
                for i, place in enumerate(point.order)
                if calls[i] is Call.AHEAD and calls[i + 1] is Call.AHEAD
            }
    return [
        dataclasses.replace(c, verdicts=[v for v in c.verdicts if v.name != UNSTABLE.name])
        if c.key in decided
        else c
        for c in cells
    ]


def _distance(index: int, rates: list[Estimate]) -> float:
    """How far the throughput of a group's `index`th cell is from the median of the others',
    relatively."""
    others = statistics.median(r.median for i, r in enumerate(rates) if i != index)
    return abs(rates[index].median - others) / max(others, 1e-9)


@dataclass(frozen=True)
class ProtocolCost:
    """A stack's throughput over a protocol ÷ the same cell's over plain HTTP/1.1."""

    stack_label: str
    point: str  # the grid point, its protocol left out
    protocol: str
    tool: str  # the protocol's tool, when it is not the plain cell's (h2load beside wrk)
    plain_tool: str
    ratio: Ratio

    def text(self) -> str:
        r = self.ratio
        tools = (
            f" ({self.tool} vs {self.plain_tool}: the tools differ too)"
            if self.tool != self.plain_tool
            else ""
        )
        interval = f"[{r.low:.2f}–{r.high:.2f}]" if r.has_interval else "(1 trial: no interval)"
        return (
            f"{self.stack_label} {self.point}: over {self.protocol} {r.value:.2f}× "
            f"{interval} of its HTTP/1.1 throughput{tools}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "stack_label": self.stack_label, "point": self.point, "protocol": self.protocol,
            "tool": self.tool, "plain_tool": self.plain_tool, "ratio": self.ratio.value,
            "low": self.ratio.low, "high": self.ratio.high,
            "confidence": self.ratio.confidence,
        }  # fmt: skip


def protocol_costs(cells: list[CellSummary]) -> list[ProtocolCost]:
    """Each closed-loop cell over TLS or HTTP/2 beside the same stack's plain HTTP/1.1 cell
    at the same point (tool aside): the ratio of their throughputs, with its interval."""
    plain: dict[tuple[str, GridPoint], list[CellSummary]] = {}
    others: list[tuple[tuple[str, GridPoint], CellSummary]] = []
    for cell in cells:
        if cell.mode != Mode.CLOSED or cell.grid is None or not cell.samples.get(F.THROUGHPUT.key):
            continue
        where = (cell.stack_label, dataclasses.replace(cell.grid, tool="", protocol="h1"))
        if cell.protocol == "h1":
            plain.setdefault(where, []).append(cell)
        else:
            others.append((where, cell))
    found = []
    for where, cell in others:
        bases = plain.get(where, [])
        # the same tool's plain cell when there is one: then only the protocol differs
        base = next((b for b in bases if b.tool == cell.tool), bases[0] if bases else None)
        if base is None:
            continue
        ratio = ratio_interval(cell.samples[F.THROUGHPUT.key], base.samples[F.THROUGHPUT.key])
        if ratio is not None:
            point = dataclasses.replace(where[1], tool=cell.tool)
            found.append(
                ProtocolCost(
                    cell.stack_label, point.text(), cell.protocol, cell.tool, base.tool, ratio
                )
            )
    return found


def tool_agreement(cells: list[CellSummary]) -> list[str]:
    """For each cell measured by several tools: do their throughput intervals overlap? If
    not, the tool farthest from the others is named."""
    # Each cell with its throughput, which every cell kept has.
    groups: dict[tuple[str, GridPoint], list[tuple[CellSummary, Estimate]]] = {}
    for cell in cells:
        rate = cell.throughput
        if cell.mode == Mode.CLOSED and rate is not None and cell.grid is not None:
            where = dataclasses.replace(cell.grid, tool="")
            groups.setdefault((cell.stack_label, where), []).append((cell, rate))
    lines = []
    for (label, where), group in groups.items():
        if len({c.tool for c, _ in group}) < 2:
            continue
        text = f"{label} {where.text()}: " + ", ".join(
            f"{c.tool} {F.THROUGHPUT.format(r.median)}" for c, r in group
        )
        if any(r.n < 2 for _, r in group):
            lines.append(f"{text} req/s (1 trial: no interval to judge agreement)")
            continue
        apart = [
            (a, b) for i, (_, a) in enumerate(group) for _, b in group[i + 1 :]
            if a.low > b.high or b.low > a.high
        ]  # fmt: skip
        if not apart:
            lines.append(f"{text} req/s: the tools agree within their intervals")
            continue

        rates = [r for _, r in group]
        outlier = group[max(range(len(group)), key=lambda i: _distance(i, rates))][0]
        lines.append(
            f"{text} req/s: the tools disagree beyond their intervals; {outlier.tool} is the "
            "outlier" + (f" ({outlier.verdicts[0].name})" if outlier.verdicts else "")
        )
    return lines


def _trend(trials: list[TrialRecord]) -> tuple[float | None, float | None]:
    """Median latency of the first and of the last quarter of the trials (medians over
    trials): a queue that grows through a trial shows as last >> first."""
    plain = [t for t in trials if t.probe is None]
    first = median_interval([t.latency_first_ms for t in plain])
    last = median_interval([t.latency_last_ms for t in plain])
    return (first.median if first else None, last.median if last else None)


def _at(cell: CellSummary) -> GridPoint:
    """Its grid point: summarise() gives every cell one before the figures that read it."""
    assert cell.grid is not None, cell.key
    return cell.grid


def _relative(cells: list[CellSummary], baseline: str | None) -> list[CellSummary]:
    ranked = [Comparable(c.stack, _at(c), c.samples.get(c.ranked_by.key, ())) for c in cells]
    throughput = [Comparable(c.stack, _at(c), c.samples.get(F.THROUGHPUT.key, ())) for c in cells]
    baselines = reference_cells(ranked, baseline)
    usable = [
        view for view, cell in zip(throughput, cells, strict=True)
        if is_ceiling(cell.stack, [v.name for v in cell.verdicts])
    ]  # fmt: skip
    ceilings = reference_cells(usable, CEILING_STACK)
    out = []
    for cell, view, own in zip(cells, ranked, throughput, strict=True):
        figures = dict(cell.figures)
        figures[F.RELATIVE.key] = relative_to(view, baselines)
        if cell.stack != CEILING_STACK and cell.mode == Mode.CLOSED:
            figures[F.CEILING.key] = relative_to(own, ceilings)
        out.append(dataclasses.replace(cell, figures=figures))
    return out


def _to_sentinel(cells: list[CellSummary], sentinel: str | None) -> list[CellSummary]:
    """Each cell's ranking figure ÷ the sentinel's at its grid point, round by round: the
    per-round ratios (samples, what history judges) and their median with its interval."""
    if sentinel is None:
        return cells
    references: dict[GridPoint | None, Sequence[float] | None] = {
        c.grid: c.samples.get(c.ranked_by.key)
        for c in cells
        if c.stack == sentinel and not c.is_aa_copy and c.grid is not None
    }
    out = []
    for cell in cells:
        if cell.stack == sentinel:
            cell = dataclasses.replace(cell, is_sentinel=True)
        ratios = per_round_ratios(cell.samples.get(cell.ranked_by.key), references.get(cell.grid))
        spread = median_interval(list(ratios)) if ratios else None
        if ratios is None or spread is None:
            out.append(cell)
            continue
        ratio = Ratio(spread.median, spread.low, spread.high, spread.confidence, spread.n)
        out.append(
            dataclasses.replace(
                cell,
                figures={**cell.figures, F.TO_SENTINEL.key: ratio},
                samples={**cell.samples, F.TO_SENTINEL.key: ratios},
            )
        )
    return out
