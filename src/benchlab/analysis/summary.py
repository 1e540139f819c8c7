"""The summary of a stored run, the single source every report format renders: the run, each
cell's result (built once: `analysis/cell_result.py`), the Ranking that holds references to
them, and what is judged of each cell against the run's others — its relative figures, then its
verdicts, judged once with every figure they can read and the ranking known.

`summarise` walks a cell from its trials to what a report shows of it:
`stored_results` → `cell_result` (its records, figures, samples, grid point, ranked figure) →
`rank` (the Ranking) → `_judged` (relative figures, then verdicts) → `CellSummary`, read by
every report (the JSON and CSV fields it adds declared once: `analysis/cell_fields.py`).
"""

from __future__ import annotations

import dataclasses
import functools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from benchlab.analysis.cell_fields import AFTER_FIGURES, BEFORE_FIGURES, figure_json
from benchlab.analysis.cell_parts import HostShare
from benchlab.analysis.cell_result import CellResult, stored_results
from benchlab.analysis.combine import FigureValue
from benchlab.analysis.evidence import RatioMethod, effect_pct
from benchlab.analysis.flips import Flip, flips
from benchlab.analysis.grid import GridPoint
from benchlab.analysis.ranking import Ranking, rank
from benchlab.analysis.relative import (
    Ceiling,
    Comparable,
    Relative,
    reference_cells,
    relative_to,
    to_sentinel,
    tool_limited,
)
from benchlab.analysis.run_options import RunOptions
from benchlab.analysis.samples import Samples
from benchlab.analysis.side_by_side import ProtocolCost, protocol_costs, tool_agreement
from benchlab.analysis.stats import METHOD, Estimate, Ratio, median_interval
from benchlab.analysis.verdicts import Bound, Setting, Verdict, verdicts
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.load import TOOLS
from benchlab.stacks.base import Stack
from benchlab.store import CELL_SHOWN, CellRecord, HostRecord, RunRecord, Store
from benchlab.store.records import plain

if TYPE_CHECKING:
    from benchlab.analysis.thresholds import ThresholdResult


@dataclass(frozen=True, eq=False)
class CellFigures:
    """A cell as the verdicts read it: its result, and its figures against the run's other
    cells (a cell's whole set of figures, by the registry)."""

    result: CellResult
    relative: Relative

    @property
    def record(self) -> CellRecord:
        return self.result.record

    @functools.cached_property
    def figures(self) -> Mapping[str, FigureValue]:
        return {**self.result.figures, **self.relative.figures}

    @functools.cached_property
    def samples(self) -> Mapping[str, Sequence[float]]:
        """Per trial (or replicate) values of every figure a cell can be ranked by, and its
        per-round ratios to the sentinel."""
        rounds = self.relative.sentinel_rounds
        return {**self.result.samples, **({F.TO_SENTINEL.key: rounds} if rounds else {})}

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
        over = self.result.latency_intervals.get(figure.key)
        if isinstance(found, int | float) and over is not None:
            return dataclasses.replace(over, median=float(found))
        return None

    def unit(self, figure: F.Figure) -> str:
        return self.result.unit(figure)


@dataclass(frozen=True, eq=False)
class CellSummary(CellFigures):
    """What every report shows of a cell: its result, its figures against the run's other
    cells, and its verdicts."""

    verdicts: tuple[Verdict, ...] = ()

    def shown(self) -> dict[str, Any]:
        """The record's shown fields under their shown names (JSON's and CSV's)."""
        return {shown: plain(getattr(self.record, name)) for name, shown in CELL_SHOWN.items()}

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = self.shown()
        data.update({f.name: f.json(self) for f in BEFORE_FIGURES})
        for figure in F.FIGURES.values():
            value = figure_json(self.figures.get(figure.key))
            if isinstance(value, dict) and figure is F.CAPACITY:
                value["bracketed"] = figure.key not in self.result.lower_bounds
            if figure.group:
                data.setdefault(figure.group, {})[figure.key] = value
            else:
                data[figure.key] = value
        data.update({f.name: f.json(self) for f in AFTER_FIGURES if f.written(self)})
        return data


# --- the run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class StackNote:
    """What the catalogue given to the summary notes of a stack (its label carries the note)
    and what the note means for its figures."""

    stack: str
    note: str
    meaning: str


@dataclass(frozen=True)
class RunSummary:
    """The run, its cells (each its result, its relative figures and its verdicts), and the
    Ranking that holds references to their results."""

    run: RunRecord
    cells: tuple[CellSummary, ...]
    ranking: Ranking
    options: RunOptions = field(default_factory=RunOptions)
    flips: list[Flip] = field(default_factory=list)
    hosts: list[HostRecord] = field(default_factory=list)  # what ran where ([hosts])
    stack_notes: tuple[StackNote, ...] = ()  # the catalogue's, given as data to `summarise`
    # The thresholds judged on it (analysis/thresholds.py, `judged`): the recipe's and the
    # command line's.
    thresholds: tuple[ThresholdResult, ...] = ()

    @property
    def results(self) -> tuple[CellResult, ...]:
        return tuple(cell.result for cell in self.cells)

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
        return [self.cell(e.key) for e in found.entrants] if found is not None else []

    @functools.cached_property
    def _by_key(self) -> dict[str, CellSummary]:
        return {c.record.key: c for c in self.cells}

    @functools.cached_property
    def tool_agreement(self) -> list[str]:
        """Cells measured by several tools (article 001): whether the tools agree, or which
        is off."""
        return tool_agreement(self.cells)

    @functools.cached_property
    def protocol_costs(self) -> list[ProtocolCost]:
        """What TLS and HTTP/2 cost each stack: its throughput over each ÷ over HTTP/1.1."""
        return protocol_costs(self.cells)

    @property
    def baseline(self) -> str | None:
        return self.options.baseline

    @property
    def target_half_width_pct(self) -> float:
        return self.options.target_half_width_pct

    def sentinel_at(self, point: GridPoint | None) -> CellSummary | None:
        """The sentinel's cell (its first launch) at a grid point, if the run measured one."""
        return next(
            (
                c for c in self.cells
                if c.result.is_sentinel and not c.result.is_aa_copy and c.result.point == point
            ),
            None,
        )  # fmt: skip

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
            if cell.result.is_aa_copy
            and (ratio := cell.relative.to_sentinel) is not None
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
            "rankings": [
                dataclasses.asdict(p.as_json()) for p in self.ranking.points.values() if p.order
            ],
            "rank_flips": [
                {
                    "a": f.a,
                    "b": f.b,
                    "a_wins": [
                        {"point": w.point.as_json(), **figure_json(w.ratio)} for w in f.a_wins
                    ],
                    "b_wins": [
                        {"point": w.point.as_json(), **figure_json(w.ratio)} for w in f.b_wins
                    ],
                }
                for f in self.flips
            ],
        }


def summarise(
    store: Store,
    run_id: str | None,
    with_trials: bool = False,
    catalogue: Mapping[str, Stack] | None = None,
) -> RunSummary:
    """A stored run's summary; `with_trials`: each cell keeps its trials as stored too;
    `catalogue`: what the caller's catalogue says of the run's stacks (their notes, and the
    facts of cells stored before cells kept them), given as data — a report reads no
    catalogue of its own."""
    record = store.run(run_id)
    options = RunOptions.of_run(record)
    results = stored_results(store, record, options, with_trials, catalogue)
    ranking = rank(results, options)
    return RunSummary(
        run=record,
        cells=_judged(results, ranking, record, options),
        ranking=ranking,
        options=options,
        flips=flips(ranking),
        hosts=store.hosts(record.id),
        stack_notes=_stack_notes(results, catalogue or {}),
    )


def _stack_notes(
    results: Sequence[CellResult], catalogue: Mapping[str, Stack]
) -> tuple[StackNote, ...]:
    notes = []
    for stack in dict.fromkeys(r.record.stack for r in results):
        entry = catalogue.get(stack)
        if entry is not None and entry.note:
            notes.append(StackNote(stack, entry.note, entry.note_meaning))
    return tuple(notes)


# --- what is judged of each cell against the run's others -------------------------------------


def _judged(
    results: Sequence[CellResult], ranking: Ranking, run: RunRecord, options: RunOptions
) -> tuple[CellSummary, ...]:
    """Each cell's figures against the run's other cells, then its verdicts, judged once with
    every figure it can read and the ranking known. The ceilings are judged first: the share
    of the machine's ceiling the other cells show is made of its verdicts (a ceiling whose
    figure is its load tool's limit is none), and a WebSocket cell's verdicts read its
    point's Go ceiling's figures."""
    ratios = _ratios(results, options.baseline, options.sentinel)
    separated = ranking.separated()

    def figures(index: int, ceilings: Mapping[GridPoint, Comparable]) -> CellFigures:
        result = results[index]
        closed = result.ceiling is None and result.record.mode == Mode.CLOSED
        share = relative_to(_throughput(result), ceilings) if closed else None
        to_baseline, to_sentinel, rounds = ratios[index]
        return CellFigures(result, Relative(to_baseline, share, to_sentinel, rounds))

    first = {i: figures(i, {}) for i, r in enumerate(results) if r.ceiling is not None}
    tool_ceilings = {c.result.point: c for c in first.values() if c.result.ceiling is Ceiling.TOOL}

    def judge(cell: CellFigures) -> CellSummary:
        result = cell.result
        if cell.estimate(F.THROUGHPUT) is None:  # nothing measured to judge
            return CellSummary(result, cell.relative)
        ceiling = tool_ceilings.get(result.point)
        setting = _setting(cell, run, options, ceiling, result.key in separated)
        found = _name_bound_hosts(verdicts(cell, setting), result.load_hosts)
        return CellSummary(result, cell.relative, tuple(found))

    judged = {i: judge(cell) for i, cell in first.items()}
    ceilings: dict[GridPoint, Comparable] = {}  # at each point, the first whose figure holds
    for ceiling in judged.values():
        if ceiling.result.ceiling is Ceiling.MACHINE and tool_limited(ceiling.verdicts) is None:
            ceilings.setdefault(ceiling.result.point, _throughput(ceiling.result))
    return tuple(
        judged[i] if i in judged else judge(figures(i, ceilings)) for i in range(len(results))
    )


def _throughput(result: CellResult) -> Comparable:
    return Comparable(result.stack, result.point, result.samples.get(F.THROUGHPUT.key, ()))


def _ratios(
    results: Sequence[CellResult], baseline: str | None, sentinel: str | None
) -> list[tuple[Ratio | None, Ratio | None, Samples | None]]:
    """Each cell's ranked figure ÷ the baseline's at its point; and round by round ÷ the
    sentinel's (its first launch), with their median."""
    ranked = [Comparable(r.stack, r.point, r.samples.get(r.figure.key, ())) for r in results]
    baselines = reference_cells(ranked, baseline)
    references = {
        r.point: r.samples.get(r.figure.key)
        for r in results
        if sentinel is not None and r.stack == sentinel and not r.is_aa_copy
    }
    out = []
    for result, view in zip(results, ranked, strict=True):
        to, rounds = (
            to_sentinel(result.samples.get(result.figure.key), references.get(result.point))
            if sentinel is not None
            else (None, None)
        )
        out.append((relative_to(view, baselines), to, rounds))
    return out


def _setting(
    cell: CellFigures,
    run: RunRecord,
    options: RunOptions,
    ceiling: CellFigures | None,
    separated: bool,
) -> Setting:
    """What the verdicts read of a cell beside its figures: where it ran, how its trials
    agreed (its ranked figure's spread), its point's WebSocket ceiling, its ranking."""
    result = cell.result
    spread = median_interval(result.samples.get(result.figure.key) or ())
    first, last = result.latency_trend
    tool = TOOLS.get(result.record.tool)
    return Setting(
        server_cores=len(run.server_cores),
        # A tool can keep busy no more cores than it has threads (ab: one, whatever it has).
        load_cores=min(len(run.load_cores), result.record.threads),
        half_width_pct=spread.half_width_pct if spread and spread.n > 1 else None,
        confidence=spread.confidence if spread else 0.0,
        target_half_width_pct=options.target_half_width_pct,
        # A run that stopped when its ranking was decided did not run out of rounds: its
        # cells' spread is still shown, but none "never converged".
        adaptive=options.adaptive and options.evidence.method is not RatioMethod.SEQUENTIAL,
        latency_first_ms=first,
        latency_last_ms=last,
        latency_resolution_ms=tool.latency_resolution_ms if tool is not None else 0.0,
        ceiling=ceiling,
        is_ceiling=ceiling is not None and ceiling.result is result,
        separated=separated,
    )


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
        dataclasses.replace(v, sentence=v.sentence + where) if v.bound is Bound.GENERATOR else v
        for v in found
    ]
