"""The columns of every cell table — terminal, Markdown and HTML — defined once.

A column is a title, how a cell is written in it, how it sorts, and a hint. Figure columns
are made from the figure registry; a column is shown only when some cell has a value for it,
so a closed-loop run shows no rate columns and a run without a database no `#DB`. The brief
table (the terminal's default) keeps the figures declared `brief` in `benchlab.core.figures`, the
identity columns that tell its rows apart, the errors and the verdicts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from benchlab.analysis.stats import Estimate, Ratio
from benchlab.analysis.summary import CellSummary, RunSummary
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.core.text import one_line
from benchlab.http.scenarios import SCENARIOS
from benchlab.load import TOOLS, finer_than_timed


@dataclass(frozen=True)
class Column:
    title: str
    text: Callable[[CellSummary], str]
    sort: Callable[[CellSummary], float | str | None]
    numeric: bool = True
    hint: str = ""
    identity: bool = False  # says which cell a row is (shown in the brief table if it varies)


def estimate_text(figure: F.Figure, estimate: Estimate | None) -> str:
    """A median with its interval; one trial has no interval and says so."""
    if estimate is None:
        return ""
    if estimate.n == 1:
        return f"{figure.format(estimate.median)} (1 trial)"
    low, high = figure.format(estimate.low), figure.format(estimate.high)
    return f"{figure.format(estimate.median)} [{low}–{high}]"


def brief_number(figure: F.Figure, value: float) -> str:
    return F.compact_number(value) if figure.is_rate else figure.format(value)


def brief_estimate_text(figure: F.Figure, estimate: Estimate | None) -> str:
    """A median and its interval's half-width as a share of it: `94.1k ±3%` (an interval 6 %
    of the median wide). ± means that everywhere: the recipe's target_half_width_pct and the
    `unstable` verdict measure the same; `--wide` shows the bounds."""
    if estimate is None:
        return ""
    shown = brief_number(figure, estimate.median)
    if estimate.n == 1:
        return f"{shown} (1 trial)"
    if estimate.median == 0:
        return shown
    pct = estimate.half_width_pct
    return f"{shown} ±{pct:.1f}%" if pct < 1 else f"{shown} ±{pct:.0f}%"


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


def figure_text(
    cell: CellSummary, figure: F.Figure, interval: bool = False, brief: bool = False
) -> str:
    value = cell.figures.get(figure.key)
    if value is None:
        return ""
    hidden = _below_resolution(cell, figure, value)
    if hidden:
        return hidden
    if interval:  # a latency percentile too: with its interval over the trials
        value = cell.interval(figure) or value
    if isinstance(value, Estimate):
        at_least = "≥ " if figure.key in cell.result.lower_bounds else ""
        if brief:
            shown = brief_estimate_text(figure, value) if interval else figure.format(value.median)
        else:
            shown = estimate_text(figure, value) if interval else figure.format(value.median)
        return at_least + shown
    if isinstance(value, Ratio):
        return ratio_text(value, percent=figure.unit == "%")
    return figure.format(value)


def _below_resolution(cell: CellSummary, figure: F.Figure, value: object) -> str:
    """A latency finer than the tool can time (siege: hundredths of a second) is shown as
    "<10", not as the 0.00 the tool prints."""
    number = value.median if isinstance(value, Estimate) else value
    if figure.group != F.LATENCY_GROUP or not isinstance(number, int | float):
        return ""
    if not finer_than_timed(cell.record.tool, number):
        return ""
    return f"<{TOOLS[cell.record.tool].latency_resolution_ms:g}"


def figure_column(
    figure: F.Figure,
    cells: Sequence[CellSummary],
    interval: bool = False,
    title: str | None = None,
    brief: bool = False,
) -> Column:
    """A figure's column over `cells`: its unit in the title where the cells that have it
    share one (a rate: their scenario's, req/s or msg/s), else beside each value."""
    units = {c.unit(figure) for c in cells if c.figures.get(figure.key) is not None}
    shared = (units.pop() if units else figure.unit) if len(units) <= 1 else None

    def text(cell: CellSummary) -> str:
        shown = figure_text(cell, figure, interval, brief)
        return shown if shared is not None or not shown else f"{shown} {cell.unit(figure)}"

    heading = f"{figure.label} {shared}".strip() if shared is not None else figure.label
    return Column(title or heading, text, lambda c: c.value(figure), hint=figure.description)


def params_text(cell: CellSummary) -> str:
    parts = [f"[{cell.record.point}]"] if cell.record.point else []
    if cell.record.pool_size is not None:
        parts.append(f"pool={cell.record.pool_size}")
    scenario = SCENARIOS.get(cell.record.scenario)
    if scenario is not None and cell.record.ms is not None:
        parts.append(scenario.param_text(cell.record.ms))
    return " ".join(parts)


def load_text(cell: CellSummary) -> str:
    """How the cell was loaded: a fixed rate, a capacity search, or nothing (closed loop)."""
    if cell.record.mode == Mode.SLO:
        return "capacity search"
    return f"rate {cell.result.rate_text}" if cell.record.mode == Mode.RATE else ""


def note_text(cell: CellSummary, footnote: int | None = None) -> str:
    ref = f" [{footnote}]" if footnote is not None else ""
    if cell.result.status == "failed":
        return f"failed{ref}"
    if cell.result.status == "pending":
        return "not measured: run stopped first"
    if cell.result.status == "incomplete":
        return "incomplete: run stopped early"
    return ""


def footnotes(summary: RunSummary) -> list[tuple[int, CellSummary]]:
    """Failed cells, numbered, so long reasons go under the table instead of inside it;
    cells that failed for the same reason share its number."""
    numbers: dict[str, int] = {}
    found = []
    for cell in summary.cells:
        if cell.result.status == "failed":
            number = numbers.setdefault(cell.record.reason or "", len(numbers) + 1)
            found.append((number, cell))
    return found


def footnote_lines(summary: RunSummary) -> list[str]:
    """One line per reason: the stacks that failed for it (and in how many cells), then why."""
    grouped: dict[int, list[CellSummary]] = {}
    for number, cell in footnotes(summary):
        grouped.setdefault(number, []).append(cell)
    lines = []
    for number, cells in grouped.items():
        stacks = ", ".join(dict.fromkeys(c.record.stack_label for c in cells))
        count = f" ({len(cells)} cells)" if len(cells) > 1 else ""
        lines.append(f"[{number}] {stacks}{count}: {one_line(cells[0].record.reason or '')}")
    return lines


@dataclass(frozen=True)
class Badge:
    name: str
    kind: str  # good, warn, bad
    sentence: str


def badges(cell: CellSummary, footnote: int | None = None) -> list[Badge]:
    """A cell's verdicts as short names; the sentence goes in a tooltip or a line below."""
    if cell.result.status == "failed":
        return [Badge(note_text(cell, footnote), "bad", cell.record.reason or "failed")]
    if not cell.result.has_figure:
        return [Badge("not measured", "warn", note_text(cell) or "not measured")]
    if not cell.verdicts:
        return [Badge("valid", "good", "No verdict against this figure.")]
    return [Badge(v.name, "warn", v.sentence) for v in cell.verdicts]


def verdict_column(numbers: Mapping[str, int] | None = None) -> Column:
    """The verdict badges as words; `numbers`: footnote numbers of failed cells, by key."""

    def text(cell: CellSummary) -> str:
        found = (numbers or {}).get(cell.record.key)
        return ", ".join(b.name for b in badges(cell, found))

    return Column("verdicts", text, text, numeric=False, hint="hover or read below for why")


def _identity(title: str, text: Callable[[CellSummary], str], numeric: bool = False) -> Column:
    return Column(title, text, text, numeric=numeric, identity=True)


STACK = Column(
    "stack", lambda c: c.record.stack_label, lambda c: c.record.stack_label, numeric=False
)
SCENARIO = _identity("scenario", lambda c: c.record.scenario)
TOOL = _identity("tool", lambda c: c.record.tool)
PARAMS = _identity("params", params_text)
LOAD = Column(
    "load", load_text, load_text, numeric=False, hint="fixed rate or capacity search",
    identity=True,
)  # fmt: skip
CONNS = Column(
    "conns", lambda c: str(c.record.connections), lambda c: c.record.connections, identity=True,
    hint="connections the load tool held open (a fixed rate: the most it could open)",
)  # fmt: skip
TRIALS = Column(
    "trials", lambda c: str(c.result.trials), lambda c: c.result.trials,
    hint="trials measured (a capacity search: its replicates)",
)  # fmt: skip
ERRORS = Column(
    "errors", lambda c: f"{c.result.errors['total']:,}", lambda c: c.result.errors["total"],
    hint="connect, read, write, timeout, non-2xx and unclassified, summed (a hold's refused "
    "opens, where refusing ended it, are its finding: the note under its table)",
)  # fmt: skip
ALWAYS = (STACK, SCENARIO, CONNS, TRIALS, ERRORS)


def cell_columns(
    cells: Sequence[CellSummary],
    *,
    article: bool = False,
    baseline: str | None = None,
    brief: bool = False,
) -> list[Column]:
    """The columns of a cell table, those with a value somewhere. `article`: with the
    articles' own (requests, avg and max latency, transfer), for Markdown and HTML. `brief`:
    the terminal's default: the brief figures, short intervals, and only the identity
    columns whose values differ between rows (the settings above the table say the others)."""
    if brief:
        return _brief_columns(cells)
    title = f"vs {baseline}" if baseline else None

    def column(figure: F.Figure, interval: bool = False, title: str | None = None) -> Column:
        return figure_column(figure, cells, interval, title)

    candidates = [
        STACK, SCENARIO, TOOL, PARAMS, LOAD, CONNS, TRIALS,
        *([column(F.REQUESTS)] if article else []),
        column(F.THROUGHPUT, interval=True),
        column(F.TARGET_RATE),
        column(F.RATE_RATIO),
        *([column(F.SCHEDULE_LAG)] if article else []),
        column(F.CAPACITY, interval=True),
        *([column(F.LAT_MEAN)] if article else []),
        column(F.P50, interval=True),
        column(F.P99, interval=True),
        *([column(F.LAT_MAX)] if article else []),
        ERRORS,
        *([column(F.TRANSFER)] if article else []),
        column(F.CPU_PER_REQUEST, interval=True),
        column(F.SERVER_CPU),
        column(F.SERVER_RSS),
        column(F.STEAL),
        column(F.RELATIVE, title=title),
        column(F.CEILING),
        column(F.TO_SENTINEL),
        column(F.DB_SESSIONS),
        column(F.POOL_ACTIVE),
        column(F.CACHE_HITS),
        *(column(f, interval=f.kind is F.Kind.ESTIMATE) for f in F.WEBSOCKET_FIGURES),
    ]  # fmt: skip
    several_tools = len({c.record.tool for c in cells}) > 1
    shown = []
    for candidate in candidates:
        if candidate is TOOL:
            if several_tools:
                shown.append(candidate)
        elif candidate in ALWAYS or any(candidate.text(c) for c in cells):
            shown.append(candidate)
    return shown


POINT = _identity("point", lambda c: c.record.point or "")
PARAM = _identity(
    "param",
    lambda c: (
        SCENARIOS[c.record.scenario].param_text(c.record.ms)
        if c.record.scenario in SCENARIOS
        else ""
    ),
)
POOL = _identity("pool", lambda c: "" if c.record.pool_size is None else str(c.record.pool_size))
# What tells cells apart, part by part: a brief table shows only the parts that vary.
IDENTITY = (SCENARIO, TOOL, POINT, PARAM, POOL, LOAD, CONNS)


def _varies(column: Column, cells: Sequence[CellSummary]) -> bool:
    return len({column.text(c) for c in cells}) > 1


def _brief_columns(cells: Sequence[CellSummary]) -> list[Column]:
    """Figures in registry order: the brief ones and the one the cells are ranked by (a
    WebSocket scenario's own), that one with its short interval; a figure no cell has, or
    that is 0 in every cell (a hold's throughput), is left out."""
    ranked = {c.result.figure.key for c in cells}
    figures = [
        figure_column(f, cells, interval=f.key in ranked or f.spread, brief=True)
        for f in F.FIGURES.values()
        if f.brief or f.key in ranked
    ]
    identity = [c for c in IDENTITY if _varies(c, cells)]
    figures = [c for c in figures if any(c.text(cell) for cell in cells) and not _zeros(c, cells)]
    return [STACK, *identity, *figures, ERRORS]


def _zeros(column: Column, cells: Sequence[CellSummary]) -> bool:
    values = [column.sort(cell) for cell in cells]
    return all(v == 0 for v in values if v is not None)
