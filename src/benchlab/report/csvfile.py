"""The CSV report: one row per cell, its record's shown fields under their shown names (as
JSON has them: store/records.py, CELL_SHOWN), then every figure of the registry flattened
(`throughput_rps_median`, `throughput_rps_low`, …, `latency_ms_p99`, and its interval over
the trials' own p99: `latency_ms_p99_low`, `latency_ms_p99_high`)."""

from __future__ import annotations

import csv
import io

from benchlab.analysis.stats import Estimate, Ratio
from benchlab.analysis.summary import CellSummary, RunSummary
from benchlab.core import figures as F
from benchlab.report.thresholds import cell_outcomes
from benchlab.store import CELL_SHOWN, ERROR_KINDS


def _csv_name(figure: F.Figure) -> str:
    return f"{figure.group}_{figure.key}" if figure.group else figure.key


def csv_fields() -> list[str]:
    names = [*CELL_SHOWN.values(), "trials"]
    for figure in F.FIGURES.values():
        name = _csv_name(figure)
        if figure.kind is F.Kind.ESTIMATE:
            names += [f"{name}_median", f"{name}_low", f"{name}_high", f"{name}_confidence"]
        elif figure.kind is F.Kind.RATIO or figure in F.PERCENTILES:
            # a percentile: of the merged histogram, with its interval over the trials
            names += [name, f"{name}_low", f"{name}_high"]
        else:
            names.append(name)
    return [
        *names,
        "errors",
        *(f"errors_{k}" for k in ERROR_KINDS),
        "verdicts",
        "status",
        "mix",
        "hold_stop",
        "hold_refused",
        "rate_unit",
        "thresholds",
    ]


def _csv_values(cell: CellSummary, summary: RunSummary) -> dict[str, object]:
    row: dict[str, object] = {**cell.shown(), "trials": cell.trials}
    for figure in F.FIGURES.values():
        name, value = _csv_name(figure), cell.figures.get(figure.key)
        if isinstance(value, Estimate):
            interval = value.n > 1
            row |= {
                f"{name}_median": value.median,
                f"{name}_low": value.low if interval else None,
                f"{name}_high": value.high if interval else None,
                f"{name}_confidence": value.confidence if interval else None,
            }
        elif isinstance(value, Ratio):
            row |= {name: value.value, f"{name}_low": value.low, f"{name}_high": value.high}
        elif figure in F.PERCENTILES:
            over = cell.interval(figure)
            over = over if over is not None and over.n > 1 else None
            row |= {
                name: value,
                f"{name}_low": over.low if over else None,
                f"{name}_high": over.high if over else None,
            }
        elif figure.kind is F.Kind.VALUE:
            row[name] = value
    row |= {"errors": cell.errors["total"], **{f"errors_{k}": v for k, v in cell.errors.items()
            if k != "total"}}  # fmt: skip
    row |= {
        "verdicts": " | ".join(f"{v.name}: {v.sentence}" for v in cell.verdicts),
        "status": cell.status,
        # a mix's parts: "json 60% p99 5.3 ms · db 30% …" (JSON has them as numbers)
        "mix": " · ".join(m.text() for m in cell.mix),
        "hold_stop": cell.hold_stop,  # a WebSocket hold: why its steps ended
        "hold_refused": cell.hold_refused,  # ... the opens refused, when that is why
        "rate_unit": cell.rate_unit,  # what its rates count a second: req/s, msg/s
        # each threshold's outcome here: "p99<200 ms failed · errors<0.1% kept"
        "thresholds": cell_outcomes(summary, cell),
    }
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
