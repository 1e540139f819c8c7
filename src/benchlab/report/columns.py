"""The columns of every cell table — terminal, Markdown and HTML — defined once.

A column is a title, how a cell is written in it, how it sorts, and a hint. Figure columns
are made from the figure registry; a column is shown only when some cell has a value for it,
so a closed-loop run shows no rate columns and a run without a database no `#DB`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from benchlab import figures as F
from benchlab.analysis.stats import Estimate, Ratio
from benchlab.report.summary import CellSummary
from benchlab.scenarios import SCENARIOS


@dataclass(frozen=True)
class Column:
    title: str
    text: Callable[[CellSummary], str]
    sort: Callable[[CellSummary], float | str | None]
    numeric: bool = True
    hint: str = ""


def estimate_text(figure: F.Figure, estimate: Estimate | None) -> str:
    """A median with its interval; one trial has no interval and says so."""
    if estimate is None:
        return ""
    if estimate.n == 1:
        return f"{figure.format(estimate.median)} (1 trial)"
    low, high = figure.format(estimate.low), figure.format(estimate.high)
    return f"{figure.format(estimate.median)} [{low}–{high}]"


def ratio_text(ratio: Ratio | None, percent: bool = False) -> str:
    if ratio is None:
        return ""
    if ratio.value == ratio.low == ratio.high == 1.0 and ratio.confidence == 1.0:
        return "1.00 (the baseline)" if not percent else "100% (itself)"
    if not ratio.has_interval:
        shown = f"{100 * ratio.value:.0f}%" if percent else f"{ratio.value:.2f}"
        return f"{shown} (1 trial: no interval)"
    if percent:
        return f"{100 * ratio.value:.0f}% [{100 * ratio.low:.0f}–{100 * ratio.high:.0f}]"
    return f"{ratio.value:.2f} [{ratio.low:.2f}–{ratio.high:.2f}]"


def figure_text(cell: CellSummary, figure: F.Figure, interval: bool = False) -> str:
    value = cell.figures.get(figure.key)
    if value is None:
        return ""
    if isinstance(value, Estimate):
        return estimate_text(figure, value) if interval else figure.format(value.median)
    if isinstance(value, Ratio):
        return ratio_text(value, percent=figure.unit == "%")
    return figure.format(value)


def figure_column(figure: F.Figure, interval: bool = False, title: str | None = None) -> Column:
    return Column(
        title or figure.title,
        lambda c: figure_text(c, figure, interval),
        lambda c: c.value(figure),
        hint=figure.description,
    )


def params_text(cell: CellSummary) -> str:
    parts = [f"[{cell.point_name}]"] if cell.point_name else []
    if cell.pool_size is not None:
        parts.append(f"pool={cell.pool_size}")
    scenario = SCENARIOS.get(cell.scenario)
    if scenario is not None and cell.ms is not None:
        parts.append(scenario.param_text(cell.ms))
    return " ".join(parts)


def load_text(cell: CellSummary) -> str:
    """How the cell was loaded: a fixed rate, a capacity search, or nothing (closed loop)."""
    if cell.mode == "slo":
        return "capacity search"
    return f"rate {cell.rate_text}" if cell.mode == "rate" else ""


STACK = Column("stack", lambda c: c.stack_label, lambda c: c.stack_label, numeric=False)
SCENARIO = Column("scenario", lambda c: c.scenario, lambda c: c.scenario, numeric=False)
TOOL = Column("tool", lambda c: c.tool, lambda c: c.tool, numeric=False)
PARAMS = Column("params", params_text, params_text, numeric=False)
LOAD = Column("load", load_text, load_text, numeric=False, hint="fixed rate or capacity search")
CONNS = Column("conns", lambda c: str(c.connections), lambda c: c.connections)
TRIALS = Column(
    "trials", lambda c: str(c.trials), lambda c: c.trials,
    hint="trials measured (a capacity search: its replicates)",
)  # fmt: skip
ERRORS = Column(
    "errors", lambda c: f"{c.errors['total']:,}", lambda c: c.errors["total"],
    hint="connect, read, write, timeout, non-2xx and unclassified, summed",
)  # fmt: skip


def cell_columns(
    cells: Sequence[CellSummary], *, article: bool = False, baseline: str | None = None
) -> list[Column]:
    """The columns of a cell table, those with a value somewhere; `article`: with the
    articles' own (requests, avg and max latency, transfer), for Markdown and HTML."""
    title = f"vs {baseline}" if baseline else None
    candidates = [
        STACK, SCENARIO, TOOL, PARAMS, LOAD, CONNS, TRIALS,
        *([figure_column(F.REQUESTS)] if article else []),
        figure_column(F.THROUGHPUT, interval=True),
        figure_column(F.TARGET_RATE),
        figure_column(F.RATE_RATIO),
        *([figure_column(F.SCHEDULE_LAG)] if article else []),
        figure_column(F.CAPACITY, interval=True),
        *([figure_column(F.LAT_MEAN)] if article else []),
        figure_column(F.P50),
        figure_column(F.P99),
        *([figure_column(F.LAT_MAX)] if article else []),
        ERRORS,
        *([figure_column(F.TRANSFER)] if article else []),
        figure_column(F.CPU_PER_REQUEST),
        figure_column(F.SERVER_CPU),
        figure_column(F.SERVER_RSS),
        figure_column(F.STEAL),
        figure_column(F.RELATIVE, title=title),
        figure_column(F.CEILING),
        figure_column(F.DB_SESSIONS),
        figure_column(F.POOL_ACTIVE),
        figure_column(F.CACHE_HITS),
    ]  # fmt: skip
    several_tools = len({c.tool for c in cells}) > 1
    shown = []
    for column in candidates:
        if column is TOOL:
            if several_tools:
                shown.append(column)
        elif column in (STACK, SCENARIO, CONNS, TRIALS, ERRORS) or any(
            column.text(c) for c in cells
        ):
            shown.append(column)
    return shown
