"""The CSV report: one row per cell, its record's shown fields under their shown names (as
JSON has them: store/records.py, CELL_SHOWN), the summary's own fields where the JSON has
them (analysis/summary.py, CELL_FIELDS: their columns declared there), and every figure of
the registry flattened (`throughput_rps_median`, `throughput_rps_low`, …, `latency_ms_p99`)."""

from __future__ import annotations

import csv
import io

from benchlab.analysis.combine import FigureValue
from benchlab.analysis.stats import Estimate, Ratio
from benchlab.analysis.summary import AFTER_FIGURES, BEFORE_FIGURES, CellSummary, RunSummary
from benchlab.core import figures as F
from benchlab.store import CELL_SHOWN


def _csv_name(figure: F.Figure) -> str:
    return f"{figure.group}_{figure.key}" if figure.group else figure.key


def _figure_columns(figure: F.Figure) -> list[str]:
    name = _csv_name(figure)
    if figure.kind is F.Kind.ESTIMATE:
        return [f"{name}_median", f"{name}_low", f"{name}_high", f"{name}_confidence"]
    if figure.kind is F.Kind.RATIO:
        return [name, f"{name}_low", f"{name}_high"]
    return [name]


def csv_fields() -> list[str]:
    return [
        *CELL_SHOWN.values(),
        *(column for field in BEFORE_FIGURES for column in field.columns),
        *(column for figure in F.FIGURES.values() for column in _figure_columns(figure)),
        *(column for field in AFTER_FIGURES for column in field.columns),
    ]


def _figure_values(figure: F.Figure, value: FigureValue) -> dict[str, object]:
    """An estimate's median, bounds and confidence (no interval from one trial), a ratio's
    value and bounds, a value."""
    name = _csv_name(figure)
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
    if figure.kind is F.Kind.VALUE:
        return {name: value}
    return {}


def _csv_values(cell: CellSummary) -> dict[str, object]:
    row: dict[str, object] = cell.shown()
    for field in BEFORE_FIGURES:
        row |= field.csv_values(cell)
    for figure in F.FIGURES.values():
        row |= _figure_values(figure, cell.figures.get(figure.key))
    for field in AFTER_FIGURES:
        row |= field.csv_values(cell)
    return row


def render_csv(summary: RunSummary) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=csv_fields())
    writer.writeheader()
    for cell in summary.cells:
        writer.writerow(_csv_values(cell))
    return buffer.getvalue()
