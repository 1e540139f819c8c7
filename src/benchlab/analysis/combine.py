"""A cell's figures from its trials, each made as its `Source` in `benchlab.core.figures` declares.

Which trials are given depends on the cell's mode (the summary chooses them): a closed-loop
or fixed-rate cell's own trials; a capacity search's trial of each replicate at the capacity
it found, with the search's replicates for the capacity itself.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchlab.analysis.samples import Samples
from benchlab.analysis.stats import Estimate, Ratio, median_interval
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.load import histogram
from benchlab.store import CapacityRecord, CellRecord, TrialRecord

FigureValue = Estimate | Ratio | float | int | None
MERGED = "merged histogram"
MEDIANS = "median of the trials' percentiles"


@dataclass(frozen=True)
class Latency:
    """A cell's latency: from the merge of its trials' histograms when every trial has one;
    otherwise (tools that give no histogram) from the trials' own figures."""

    merged: dict[str, float | None] | None  # by latency figure key; None: no histograms
    percentiles: dict[str, float]  # the latency curve: quantile -> ms
    source: str  # MERGED or MEDIANS


@dataclass(frozen=True)
class Combined:
    figures: dict[str, FigureValue]
    # Per trial (or replicate) values of every figure a cell can be ranked by.
    samples: dict[str, Samples]
    latency_intervals: dict[str, Estimate | None]  # of each percentile, over the trials
    latency: Latency


def _estimate(values: Sequence[float | None]) -> Estimate | None:
    return median_interval([v for v in values if v is not None])


def _peak(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _percentile_medians(trials: Sequence[TrialRecord]) -> dict[str, float]:
    """Quantiles every trial reported, each the median over trials, in quantile order."""
    per_trial = [json.loads(t.latency_percentiles or "{}") for t in trials]
    if not per_trial:
        return {}
    common = set.intersection(*(set(p) for p in per_trial))
    medians = {q: statistics.median(p[q] for p in per_trial) for q in common}
    return dict(sorted(medians.items(), key=lambda kv: float(kv[0])))


def latency(trials: Sequence[TrialRecord]) -> Latency:
    if trials and all(t.latency_histogram for t in trials):
        merged = histogram.merge(t.latency_histogram for t in trials)
        return Latency(histogram.summary_ms(merged), histogram.curve_ms(merged), MERGED)
    return Latency(None, _percentile_medians(trials), MEDIANS)


def _from_trials(how: F.Combine, values: Sequence[Any]) -> FigureValue:
    if how is F.Combine.MEDIAN:
        return _estimate(values)
    if how is F.Combine.PEAK:
        return _peak(values)
    raise ValueError(f"trials do not combine by {how}")


def figure_value(
    figure: F.Figure,
    trials: Sequence[TrialRecord],
    capacities: Sequence[CapacityRecord],
    cell: CellRecord,
    made: Mapping[str, FigureValue],
    lat: Latency,
) -> FigureValue:
    """One figure of a cell, by its source; `made`: the figures declared before it."""
    source = figure.source
    assert source is not None
    how, attr = source.combine, source.attr or ""
    if how is F.Combine.HISTOGRAM:
        if lat.merged is not None:
            return lat.merged.get(figure.key)
        fallback = _from_trials(source.fallback or F.Combine.MEDIAN, _values(trials, attr))
        return fallback.median if isinstance(fallback, Estimate) else fallback
    if how is F.Combine.SUM:
        total: float = sum(_values(trials, attr))
        return total / source.per if source.per else total
    if how is F.Combine.REPLICATES:
        return _estimate(_values(capacities, attr))
    if how is F.Combine.CELL:
        stored: FigureValue = getattr(cell, attr)
        return stored
    if how is F.Combine.DERIVED:
        assert source.derive is not None
        return source.derive(trials, made)
    return _from_trials(how, _values(trials, attr))


def _values(records: Sequence[Any], attr: str) -> list[Any]:
    return [getattr(r, attr) for r in records]


def samples(
    figure: F.Figure, trials: Sequence[TrialRecord], capacities: Sequence[CapacityRecord]
) -> Samples:
    """The figure's value in each trial (a capacity: in each replicate), where it has one,
    with the round of each."""
    assert figure.source is not None and figure.source.attr is not None
    replicates = figure.source.combine is F.Combine.REPLICATES
    records: Sequence[TrialRecord | CapacityRecord] = capacities if replicates else trials
    found = [(getattr(r, figure.source.attr), r.round) for r in records]
    kept = [(v, r) for v, r in found if v is not None]
    return Samples(tuple(v for v, _ in kept), tuple(r for _, r in kept))


def combine(
    trials: Sequence[TrialRecord],
    capacities: Sequence[CapacityRecord],
    cell: CellRecord,
    mode: Mode,
    fixed_rate: Sequence[TrialRecord] = (),
) -> Combined:
    """Every figure of the registry the cell's mode has, in the registry's order; a figure
    of the fixed-rate trials from `fixed_rate` (the cell's trials that are no probe)."""
    lat = latency(trials)
    figures: dict[str, FigureValue] = {}
    for figure in F.FIGURES.values():
        if figure.source is not None and figure.source.applies(mode):
            own = fixed_rate if figure.source.fixed_rate else trials
            figures[figure.key] = figure_value(figure, own, capacities, cell, figures, lat)
    return Combined(
        figures=figures,
        samples={f.key: samples(f, trials, capacities) for f in F.RANKED},
        latency_intervals={
            f.key: _estimate(_values(trials, f.source.attr or "")) if f.source else None
            for f in F.PERCENTILES
        },
        latency=lat,
    )
