"""One cell's result, built once from its stored rows (`cell_result`, the one builder): its
record, the trials and replicates it counts, its figures by the registry, its samples of every
figure it can be ranked by, its grid point and the figure it is ranked by — in the manner of
hyperfine's `BenchmarkResult`. The run's `Ranking` holds references to these results; the run's
summary adds what is judged against its other cells (relative figures, then verdicts); the
runner asks the ranking of a stored run's results what to measure next.

A cell's figures are named by the registry in `benchlab.core.figures`: estimates (median over
trials with the interval), values and ratios. Which trials a figure comes from depends on the
cell's mode (`cell_records.counted`): a closed-loop or fixed-rate cell's own trials; for a
capacity search, the trial of each replicate at the capacity it found (the latency and cost
at that rate), while every probe of the search draws the latency–throughput curve.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchlab.analysis.cell_parts import (
    CurvePoint,
    HostShare,
    MixFigures,
    curve,
    host_shares,
    mix_figures,
)
from benchlab.analysis.cell_records import (
    CellRecords,
    counted,
    own_trials,
    refused_opens,
    reported_errors,
)
from benchlab.analysis.combine import FigureValue, combine
from benchlab.analysis.grid import GridPoint, point_of, rate_text
from benchlab.analysis.ranking import Ranking, rank
from benchlab.analysis.relative import Ceiling, ceiling_of
from benchlab.analysis.run_options import RunOptions, websocket_settings
from benchlab.analysis.samples import Samples
from benchlab.analysis.stats import Estimate, Ratio, median_interval
from benchlab.analysis.timelines import TrialTimeline, trial_timelines
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.core.request_errors import ERROR_KINDS
from benchlab.http.scenarios import WEBSOCKET_SCENARIOS
from benchlab.load.ws_requests import AT_LAST_STEP
from benchlab.recipe import WebSocket
from benchlab.resilience.drain import Drain
from benchlab.resilience.facts import NotChecked, slow_client_check, stop_check
from benchlab.resilience.slow_clients import SlowClients
from benchlab.stacks.base import Stack
from benchlab.store import (
    CapacityRecord,
    CellRecord,
    LoadShareRecord,
    RunRecord,
    Store,
    TrialRecord,
)


@dataclass(frozen=True, eq=False)
class CellResult:
    """A stored cell (its identity and settings: `record`, read from the store, never copied)
    and what its trials make of it. One object per cell: compared by identity."""

    record: CellRecord
    counted: CellRecords  # the trials and replicates its figures are made of
    point: GridPoint  # where it is ranked
    figure: F.Figure  # what it is ranked by
    # Per trial (or replicate), with its round, of every figure a cell can be ranked by.
    samples: Mapping[str, Samples]
    figures: Mapping[str, FigureValue]  # its own, by the registry (relative ones: the summary)
    ranks: bool  # competes in its point's ranking (not the sentinel, a ceiling, nonconformant)
    ceiling: Ceiling | None  # the ceiling it stands for at its point, if any
    is_sentinel: bool  # the run's sentinel (either launch): measured every round, not ranked
    status: str  # the stored status; "incomplete": pending with some trials kept
    trials: int  # trials measured (for a capacity search: replicates)
    errors: Mapping[str, int]  # by kind, with their total
    latency_intervals: Mapping[str, Estimate | None]  # of each percentile, over the trials
    percentiles: Mapping[str, float]  # the latency curve: quantile -> ms
    curve: tuple[CurvePoint, ...]  # each fixed-rate trial, its search's probes too
    latency_source: str  # "merged histogram" or "median of the trials' percentiles"
    cpu_source: str | None
    facts: Mapping[str, Any]  # framework, server, worker model (and a tune's command)
    alone_ms: float | None  # median latency at one connection (benchlab tune)
    # Median latency of the first and of the last quarter of its own trials (medians over
    # them): a queue that grows through a trial shows as last >> first.
    latency_trend: tuple[float | None, float | None]
    mix: tuple[MixFigures, ...]  # a mix: each part's share of the requests, errors, latency
    # Each capacity-search replicate: what it found, its bracket, its probes, why it stopped.
    replicates: tuple[CapacityRecord, ...]
    # A WebSocket hold: why its steps ended in most of its trials (refused, stalled, dropped,
    # memory, steps: its last step reached); and, where its server refused an upgrade, the
    # opens it refused by then (median over the trials that stopped so: the hold's finding).
    hold_stop: str | None
    hold_refused: int | None
    rate_unit: str  # what its rates count a second (RunOptions.rate_unit_of)
    websocket: WebSocket | None  # the run's [websocket] settings, for a WebSocket cell
    load_hosts: tuple[HostShare, ...]  # each load host's share, when there were several
    # Its fixed-rate trials (those its figures come from) second by second.
    timelines: tuple[TrialTimeline, ...]
    trial_records: tuple[TrialRecord, ...]  # its trials as stored, when the reader asked

    # --- as the Ranking reads an entrant ---

    @property
    def key(self) -> str:
        return self.record.key

    @property
    def label(self) -> str:
        return self.record.stack_label

    @property
    def stack(self) -> str:
        return self.record.stack

    # --- what its record and facts say ---

    @property
    def is_aa_copy(self) -> bool:
        """The sentinel's second launch: its figure measures the run's noise, not a stack."""
        return self.record.copy != 1

    @property
    def rate_text(self) -> str:
        return rate_text(self.record)

    @property
    def conformance(self) -> Mapping[str, list[str]] | None:
        found: Mapping[str, list[str]] | None = self.facts.get("conformance")
        return found

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

    @property
    def has_figure(self) -> bool:
        """It has a value of the figure it is ranked by."""
        return _number(self.figures.get(self.figure.key)) is not None

    def unit(self, figure: F.Figure) -> str:
        """The figure's unit in this cell (a rate: its scenario's)."""
        return figure.unit_in(self.rate_unit)


def _number(found: FigureValue) -> float | None:
    """A figure as one number: an estimate's median, a ratio's value."""
    if isinstance(found, Estimate):
        return found.median
    if isinstance(found, Ratio):
        return found.value
    return found


def is_ranked(
    ceiling: Ceiling | None, stack: str, facts: Mapping[str, Any], sentinel: str | None
) -> bool:
    """Who is ranked: every stack but the run's sentinel (a reference measured in every round,
    and its A/A copy: the noise), a ceiling (the load tool's limit at its point, not a
    contender: nginx-static, or a WebSocket scenario's Go server) and a stack found
    nonconformant (measured and shown, not ranked: a server that gets a client's requests
    wrong can look fast by doing less)."""
    unranking = (facts.get("conformance") or {}).get("unranking")
    return stack != sentinel and ceiling is None and not unranking


def cell_result(
    record: CellRecord,
    stored_trials: Sequence[TrialRecord],
    capacities: Sequence[CapacityRecord],
    options: RunOptions,
    *,
    shares: Mapping[int, Sequence[LoadShareRecord]] | None = None,
    websocket: WebSocket | None = None,
    with_trials: bool = False,
    catalogue: Mapping[str, Stack] | None = None,
) -> CellResult:
    """The cell's result, made once from its stored rows: the records it counts, its figures,
    its samples, its grid point and ranked figure, and the rest a report shows of it.
    `shares`: its load hosts' shares by round (a run loaded from several); `catalogue`: what
    to read the facts of a cell stored before cells kept them from (the caller's, as data)."""
    mode = record.mode
    records = counted(mode, stored_trials, capacities)
    trials = records.trials
    figure = options.figure_for(mode, record.scenario)
    combined = combine(trials, records.capacities, record, mode, own_trials(stored_trials))
    reported = [reported_errors(t) for t in trials]
    errors = {kind: sum(getattr(e, kind) for e in reported) for kind in ERROR_KINDS}
    refused = [n for t in trials if (n := refused_opens(t)) is not None]
    facts = _facts(record, catalogue or {})
    ceiling = ceiling_of(record.stack, record.scenario, facts)
    hosts = host_shares(shares or {})
    return CellResult(
        record=record,
        counted=records,
        point=point_of(record, options.pool_swept),
        figure=figure,
        samples=combined.samples,
        figures=combined.figures,
        ranks=is_ranked(ceiling, record.stack, facts, options.sentinel),
        ceiling=ceiling,
        is_sentinel=record.stack == options.sentinel,
        status=_status(record, records),
        trials=len(records.capacities) if mode == Mode.SLO else len(trials),
        errors={"total": sum(errors.values()), **errors},
        latency_intervals=combined.latency_intervals,
        percentiles=combined.latency.percentiles,
        curve=curve(stored_trials, options.slo),
        latency_source=combined.latency.source if trials else "",
        cpu_source=next((t.cpu_source for t in trials if t.cpu_source), None),
        facts=facts,
        alone_ms=_alone_ms(stored_trials),
        latency_trend=_trend(own_trials(stored_trials)),
        mix=mix_figures(record.scenario, trials),
        replicates=tuple(records.capacities),
        hold_stop=_most_often([t.ws_hold_stop for t in trials if t.ws_hold_stop]),
        hold_refused=round(statistics.median(refused)) if refused else None,
        rate_unit=options.rate_unit_of(record.scenario),
        websocket=websocket if record.scenario in WEBSOCKET_SCENARIOS else None,
        load_hosts=hosts if len(hosts) > 1 else (),
        timelines=trial_timelines(trials),
        trial_records=tuple(stored_trials) if with_trials else (),
    )


def stored_results(
    store: Store,
    run: RunRecord,
    options: RunOptions,
    with_trials: bool = False,
    catalogue: Mapping[str, Stack] | None = None,
) -> tuple[CellResult, ...]:
    """Every cell of a stored run, its result built once, in the run's order."""
    websocket = websocket_settings(run)
    return tuple(
        cell_result(
            cell,
            store.trials(cell.id),
            store.capacities(cell.id),
            options,
            shares=store.load_shares(cell.id),
            websocket=websocket,
            with_trials=with_trials,
            catalogue=catalogue,
        )
        for cell in store.cells(run.id)
    )


def stored_ranking(store: Store, run_id: str, options: RunOptions) -> Ranking:
    """The ranking of a stored run as it stands (the runner asks it between rounds)."""
    return rank(stored_results(store, store.run(run_id), options), options)


def _status(record: CellRecord, records: CellRecords) -> str:
    if record.status == "pending" and (records.trials or records.capacities):
        return "incomplete"
    return record.status


def _most_often(values: list[str]) -> str | None:
    return max(dict.fromkeys(values), key=values.count) if values else None


def _alone_ms(trials: Sequence[TrialRecord]) -> float | None:
    alone = median_interval([t.latency_p50_ms for t in trials if t.probe == "alone"])
    return alone.median if alone else None


def _trend(trials: Sequence[TrialRecord]) -> tuple[float | None, float | None]:
    first = median_interval([t.latency_first_ms for t in trials])
    last = median_interval([t.latency_last_ms for t in trials])
    return (first.median if first else None, last.median if last else None)


def _facts(record: CellRecord, catalogue: Mapping[str, Stack]) -> Mapping[str, Any]:
    """Framework, server and worker model as stored; a cell stored before cells kept them:
    what the catalogue given says of its stack."""
    if record.facts is not None:
        return record.facts
    entry = catalogue.get(record.stack)
    if entry is None:
        return {}
    return {
        "framework": entry.framework,
        "server": entry.server,
        "worker_model": entry.worker_model,
    }
