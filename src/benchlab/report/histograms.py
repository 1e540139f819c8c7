"""One cell's latency histogram in HdrHistogram's own formats (`report --histogram CELL`): the
percentile distribution (.hgrm) of its trials' histograms merged, and the interval log
(.hlog) with a line per trial. The trials are the ones the cell's figures are made of (its
result's, analysis/cell_result.py: the one builder), so the .hgrm's p99 is the report's. A
cell is named by the words the report shows it by: its stack and its grid point ('gin
plaintext')."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from datetime import datetime

from benchlab.analysis.cell_result import CellResult, stored_results
from benchlab.analysis.run_options import RunOptions
from benchlab.core.errors import UserError
from benchlab.load import histogram
from benchlab.report.exporters import HISTOGRAMS
from benchlab.store import RunRecord, Store, TrialRecord

# The formats, by the names -f takes (report/exporters.py registers them and their extensions).
PERCENTILES, INTERVAL_LOG = HISTOGRAMS
SHOWN_NAMES = 6  # cells an error names before it says how many more


@dataclass(frozen=True)
class Named:
    name: str  # the stack's label and the grid point, as the report shows them
    result: CellResult


def cell_names(store: Store, run: RunRecord) -> list[Named]:
    """Every cell of the run by its name, in the run's order."""
    results = stored_results(store, run, RunOptions.of_run(run))
    return [Named(f"{r.label} {r.point.text()}", r) for r in results]


def _words(name: str) -> set[str]:
    """The words a cell's name answers to: each, and its parts ('fastapi+uvicorn[async]':
    fastapi, uvicorn, async; '(ceiling)': ceiling)."""
    found = set()
    for word in name.split():
        found |= {word, *(part for part in re.split(r"[+\[\]()]", word) if part)}
    return found


def _did_you_mean(words: list[str], cells: list[Named]) -> str:
    """The query with each word no cell's name has replaced by the closest that one has,
    when that names a cell."""
    known = set().union(*(_words(c.name) for c in cells))
    mended = []
    for word in words:
        close = difflib.get_close_matches(word, sorted(known), n=1, cutoff=0.6)
        mended.append(word if word in known or not close else close[0])
    if mended == words or not any(set(mended) <= _words(c.name) for c in cells):
        return ""
    return f" (did you mean '{' '.join(mended)}'?)"


def _listed(cells: list[Named]) -> str:
    shown = ", ".join(f"'{c.name}'" for c in cells[:SHOWN_NAMES])
    more = len(cells) - SHOWN_NAMES
    return shown + (f" and {more} more (benchlab report lists them)" if more > 0 else "")


def find_cell(cells: list[Named], query: str | None, run: RunRecord) -> Named:
    """The one cell whose name holds every word of `query` (_words; its whole name always
    names it); a mistake names the run's cells."""
    if query is None:
        example = cells[0].name.split()[0] if cells else "gin"
        raise UserError(
            f"a histogram is one cell's: name it with --histogram CELL (words of its name, "
            f"e.g. --histogram '{example}'); the cells of run {run.id}: {_listed(cells)}"
        )
    words = query.split()
    exact = [c for c in cells if c.name == query.strip()]
    found = exact or [c for c in cells if set(words) <= _words(c.name)]
    if len(found) == 1:
        return found[0]
    if not found:
        hint = _did_you_mean(words, cells)
        raise UserError(
            f"--histogram {query!r}: no cell of run {run.id} has every one of these words in its "
            f"name{hint}; its cells: {_listed(cells)}"
        )
    raise UserError(
        f"--histogram {query!r}: {len(found)} cells match: {_listed(found)}; add a word that "
        "tells them apart"
    )


def _trials(cell: Named) -> list[TrialRecord]:
    """The trials the cell's figures are made of, each with its histogram."""
    record = cell.result.record
    trials = cell.result.counted.trials
    if not trials:
        raise UserError(f"--histogram: cell '{cell.name}' has no measured trial")
    if not all(t.latency_histogram for t in trials):
        raise UserError(
            f"--histogram: cell '{cell.name}' kept no latency histogram ({record.tool} gives "
            f"none for {record.scenario}, or a benchlab before histograms stored it)"
        )
    return trials


def _epoch_s(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def histogram_document(store: Store, run_id: str | None, query: str | None, fmt: str) -> str:
    """The named cell's histogram as `fmt` (PERCENTILES or INTERVAL_LOG)."""
    run = store.run(run_id)
    cell = find_cell(cell_names(store, run), query, run)
    trials = _trials(cell)
    if fmt == PERCENTILES:
        merged = histogram.merge(t.latency_histogram for t in trials)
        assert merged is not None  # every trial has one (_trials)
        return histogram.percentile_distribution(merged)
    start = _epoch_s(run.started_at)
    return histogram.interval_log(
        (
            histogram.Interval(_epoch_s(t.started_at) - start, t.duration_s, t.latency_histogram)
            for t in trials
            if t.latency_histogram
        ),
        start,
        comments=(
            f"benchlab run {run.id}, recipe {run.recipe_name}: cell '{cell.name}', "
            f"{len(trials)} trial(s), an interval each; values in microseconds (/1000: ms)",
        ),
    )
