"""The CSV report: one row per cell, its record's shown fields under their shown names (as
JSON has them: store/records.py, CELL_SHOWN), the summary's own fields where the JSON has
them (analysis/cell_fields.py: their columns declared there), every figure of the
registry flattened (`throughput_rps_median`, `throughput_rps_low`, …, `latency_ms_p99`, and
its interval over the trials' own p99: `latency_ms_p99_low`, `latency_ms_p99_high`), and each
threshold's outcome in the cell."""

from __future__ import annotations

import csv
import io

from benchlab.analysis.cell_fields import AFTER_FIGURES, BEFORE_FIGURES
from benchlab.analysis.stats import Estimate, Ratio
from benchlab.analysis.summary import CellSummary, RunSummary
from benchlab.core import figures as F
from benchlab.report.thresholds import cell_outcomes
from benchlab.store import CELL_SHOWN


def _csv_name(figure: F.Figure) -> str:
    return f"{figure.group}_{figure.key}" if figure.group else figure.key


def _figure_columns(figure: F.Figure) -> list[str]:
    name = _csv_name(figure)
    if figure.kind is F.Kind.ESTIMATE:
        return [f"{name}_median", f"{name}_low", f"{name}_high", f"{name}_confidence"]
    if figure.kind is F.Kind.RATIO or figure in F.PERCENTILES:
        # a percentile: of the merged histogram, with its interval over the trials
        return [name, f"{name}_low", f"{name}_high"]
    return [name]


def csv_fields() -> list[str]:
    return [
        *CELL_SHOWN.values(),
        *(column for field in BEFORE_FIGURES for column in field.columns),
        *(column for figure in F.FIGURES.values() for column in _figure_columns(figure)),
        *(column for field in AFTER_FIGURES for column in field.columns),
        "thresholds",
    ]


def _figure_values(cell: CellSummary, figure: F.Figure) -> dict[str, object]:
    """An estimate's median, bounds and confidence (no interval from one trial), a ratio's
    value and bounds, a percentile with its interval over the trials, a value."""
    name, value = _csv_name(figure), cell.figures.get(figure.key)
    if isinstance(value, Estimate):
        interval = value.n > 1
        return {
            f"{name}_median": value.median,
            f"{name}_low": value.low if interval else None,
            f"{name}_high": value.high if interval else None,
            f"{name}_confidence": value.confidence if interval else None,
        }
    if isinstance(value, Ratio):
        return {name: value.value, f"{name}_low": value.low, f"{name}_high": value.high}
    if figure in F.PERCENTILES:
        over = cell.interval(figure)
        over = over if over is not None and over.n > 1 else None
        return {
            name: value,
            f"{name}_low": over.low if over else None,
            f"{name}_high": over.high if over else None,
        }
    if figure.kind is F.Kind.VALUE:
        return {name: value}
    return {}


def _csv_values(cell: CellSummary, summary: RunSummary) -> dict[str, object]:
    row: dict[str, object] = cell.shown()
    for field in BEFORE_FIGURES:
        row |= field.csv_values(cell)
    for figure in F.FIGURES.values():
        row |= _figure_values(cell, figure)
    for field in AFTER_FIGURES:
        row |= field.csv_values(cell)
    # each threshold's outcome here: "p99<200 ms failed · errors<0.1% kept"
    row["thresholds"] = cell_outcomes(summary, cell)
    return row


# What a spreadsheet reads as the start of a formula (OWASP's list): a text cell starting
# with one is written after a quote, as text. Numbers are written as numbers.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def inert(value: object) -> object:
    """A text cell a spreadsheet shows as text, never runs as a formula (a stored reason,
    a stack's or a server's name: text from outside benchlab)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def render_csv(summary: RunSummary) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=csv_fields())
    writer.writeheader()
    for cell in summary.cells:
        writer.writerow({k: inert(v) for k, v in _csv_values(cell, summary).items()})
    return buffer.getvalue()
