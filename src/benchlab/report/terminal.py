"""The terminal report: by default one short table per grid point, ranked best first, with
its settings above and its takeaway below, narrow enough for a 100-column terminal (numbers
never wrap; names and verdicts wrap between words). `--wide`: every column in one table, at
its natural width."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console
from rich.table import Table

from benchlab.analysis.summary import CellSummary, RunSummary
from benchlab.core import figures as F
from benchlab.report.columns import (
    ERRORS,
    Column,
    brief_estimate_text,
    cell_columns,
    footnote_lines,
    footnotes,
    verdict_column,
)
from benchlab.report.sections import BUILDERS, Format, Section, sections
from benchlab.report.sections import Table as SectionTable
from benchlab.report.takeaways import takeaways
from benchlab.report.tune_report import (
    candidate_header,
    candidate_rows,
    is_check_only,
    recommendation_lines,
)
from benchlab.report.wording import interval_note, method_notes, run_lines, verdict_lines


def _say(console: Console, text: str, style: str | None = None) -> None:
    console.print(text, style=style, markup=False, highlight=False)


def _header(title: str) -> str:
    """A figure's unit under its name, so a header is never wider than its numbers need."""
    name, _, unit = title.rpartition(" ")
    return f"{name}\n{unit}" if name and len(title) > 8 else title


def _longest_word(texts: Sequence[str]) -> int:
    return max((len(word) for text in texts for word in text.split()), default=1)


@dataclass(frozen=True)
class Layout:
    """A column of a text table: its header, whether it is set right (numbers), whether it
    may wrap (a number or a name to copy may not), and the narrowest it may get when it
    wraps (its longest word by default)."""

    header: str
    right: bool = False
    wrap: bool = True
    least: int | None = None


def fit_widths(
    layout: Sequence[Layout], rows: Sequence[Sequence[str]], width: int
) -> list[int] | None:
    """Each column's width so that the table fits `width` terminal columns: numbers at their
    full width, the other columns narrowed widest first (never below their least); None when
    even that does not fit."""
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in layout]
    widths, least = [], []
    for spec, values in zip(layout, columns, strict=True):
        texts = [*values, *spec.header.split("\n")]
        full = max(len(t) for t in texts)
        widths.append(full)
        floor = spec.least if spec.least is not None else _longest_word(texts)
        least.append(min(full, max(floor, 1)) if spec.wrap else full)
    room = width - 2 * (len(layout) - 1)  # a blank border and a space after each column
    while sum(widths) > room:
        shrinkable = [i for i, w in enumerate(widths) if w > least[i]]
        if not shrinkable:
            return None
        widest = max(shrinkable, key=lambda i: widths[i])
        widths[widest] -= 1
    return widths


def fitted_table(
    layout: Sequence[Layout],
    rows: Sequence[Sequence[str]],
    width: int,
    expendable: Sequence[str] = (),
    styles: Sequence[str | None] | None = None,
) -> Table:
    """A text table for `width` columns: every column where they fit with no word broken,
    else without the `expendable` ones (by header), dropped in that order until they do; a
    name to copy (an id, a run's name) is never cut, nor a word broken mid-letter."""
    kept = list(range(len(layout)))
    widths = fit_widths(layout, rows, width)
    for header in expendable:
        if widths is not None:
            break
        kept = [i for i in kept if layout[i].header != header]
        widths = fit_widths([layout[i] for i in kept], [[r[i] for i in kept] for r in rows], width)
    return text_table(
        [layout[i] for i in kept], [[r[i] for i in kept] for r in rows], widths, styles
    )


def text_table(
    layout: Sequence[Layout],
    rows: Sequence[Sequence[str]],
    widths: Sequence[int] | None = None,
    styles: Sequence[str | None] | None = None,
) -> Table:
    """A plain table (one rule under the header, no borders) with the widths given."""
    table = Table(
        box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False, show_edge=False,
        header_style="bold",
    )  # fmt: skip
    for index, spec in enumerate(layout):
        table.add_column(
            spec.header, justify="right" if spec.right else "left", no_wrap=not spec.wrap,
            overflow="fold", width=widths[index] if widths else None,
        )  # fmt: skip
    for index, row in enumerate(rows):
        table.add_row(*row, style=styles[index] if styles else None)
    return table


def _cell_rows(
    columns: Sequence[Column], cells: Sequence[CellSummary]
) -> tuple[list[Layout], list[list[str]]]:
    layout = [Layout(_header(c.title), right=c.numeric, wrap=not c.numeric) for c in columns]
    rows = [[column.text(cell) or "–" for column in columns] for cell in cells]
    return layout, rows


def _widths(
    columns: Sequence[Column], cells: Sequence[CellSummary], width: int
) -> list[int] | None:
    return fit_widths(*_cell_rows(columns, cells), width)


def _table(
    columns: Sequence[Column], cells: Sequence[CellSummary], widths: Sequence[int] | None = None
) -> Table:
    styles = [
        "red"
        if cell.result.status == "failed"
        else "yellow"
        if not cell.result.has_figure
        else None
        for cell in cells
    ]
    return text_table(*_cell_rows(columns, cells), widths, styles)


# Dropped in this order when a brief table cannot fit the terminal with every number whole
# and every word unbroken (errors last: a cell with errors is flagged among its verdicts).
EXPENDABLE = (F.CPU_PER_REQUEST.title, F.P50.title, ERRORS.title)


def _fitting_table(cells: Sequence[CellSummary], numbers: dict[str, int], width: int) -> Table:
    """The brief table of `cells` laid out for `width` columns, without the expendable
    columns it cannot fit; numbers never wrap, names wrap between words."""
    columns = [*cell_columns(cells, brief=True), verdict_column(numbers)]
    widths = _widths(columns, cells, width)
    for title in EXPENDABLE:
        if widths is not None:
            break
        columns = [c for c in columns if c.title != title]
        widths = _widths(columns, cells, width)
    return _table(columns, cells, widths)


def _point_tables(summary: RunSummary, console: Console) -> None:
    numbers = {cell.record.key: n for n, cell in footnotes(summary)}
    for takeaway in takeaways(summary):
        cells = summary.cells_at(takeaway.point)  # best first, as the ranking shows them
        console.print()
        _say(console, f"{takeaway.label} · {takeaway.settings}", "bold")
        console.print(_fitting_table(cells, numbers, console.width))
        _say(console, f"→ {takeaway.sentence}")
        for note in takeaway.notes:
            _say(console, f"  {note}", "dim")


def _wide_table(summary: RunSummary, console: Console) -> None:
    numbers = {cell.record.key: n for n, cell in footnotes(summary)}
    columns = [*cell_columns(summary.cells, baseline=summary.baseline), verdict_column(numbers)]
    table = _table(columns, summary.cells)
    table.title, table.title_justify = f"benchlab · {summary.run.recipe_name}", "left"
    needed = Console(width=10_000).measure(table).maximum
    if needed <= console.width:
        console.print(table)
        return
    # rich's color_system property is one of the names its constructor takes, typed as str.
    wide = Console(
        file=console.file, width=needed,
        color_system=console.color_system,  # type: ignore[arg-type]
        force_terminal=console.is_terminal, highlight=False,
    )  # fmt: skip
    wide.print(table)


def grouped_verdicts(section: Section) -> list[str]:
    """Each kind of verdict once (the tables badge every cell it flags), with one of its
    sentences."""
    lines = []
    for group in section.groups:
        example, sentence = group.flagged[0]
        count = f"{len(group.flagged)} cell{'s' if len(group.flagged) > 1 else ''}"
        where = example.result.point.text() if example.result.point else example.record.scenario
        lines.append(
            f"{group.name} ({count}), e.g. {example.record.stack_label} at {where}: {sentence}"
        )
    if lines:
        lines.append("Every cell's verdicts in words: --wide, or benchlab report -f md.")
    return lines


def _interval_key(summary: RunSummary) -> str:
    example = next(
        (e for c in summary.cells if (e := c.estimate(c.result.figure)) and e.n > 1), None
    )
    if example is None:
        return ""
    shown = brief_estimate_text(summary.ranked_by, example)
    return (
        f"{shown.split()[-1]} after a figure: half its interval's width, as a share of the median "
        f"(as the ±{summary.target_half_width_pct:g}% target and unstable measure it); --wide "
        "shows every column and the bounds."
    )


def _cells(summary: RunSummary, section: Section, console: Console, wide: bool) -> None:
    for line in section.lines:
        _say(console, line)
    if wide:
        _wide_table(summary, console)
    else:
        _point_tables(summary, console)
    console.print()
    for line in footnote_lines(summary):
        _say(console, line, "red")


def _section(summary: RunSummary, section: Section, console: Console, wide: bool) -> None:
    if section.id == "cells":
        _cells(summary, section, console, wide)
    elif section.id == "verdicts":
        for line in section.lines if wide else grouped_verdicts(section):
            _say(console, line, "yellow")
    elif section.id == "notes":
        notes = [*section.lines] if wide else [_interval_key(summary), *section.lines]
        for line in filter(None, notes):
            _say(console, line, "dim")
    elif section.id == "in-short":
        console.print(section.heading(), style="bold")
        for takeaway in section.takeaways:
            _say(console, f"  {takeaway.label}: {takeaway.sentence}")
    else:
        console.print(section.heading(), style="bold")
        for line in section.lines:
            _say(console, f"  {line}")
        for table in section.tables:
            console.print(_section_table(table))


def _section_table(shown: SectionTable) -> Table:
    table = Table(
        title=shown.title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1),
        pad_edge=False, header_style="bold",
    )  # fmt: skip
    for name in shown.header:
        table.add_column(name)
    for row in shown.rows:
        table.add_row(*row)
    return table


def render_table(summary: RunSummary, console: Console, wide: bool = False) -> None:
    if summary.options.tune is not None:
        _render_tune(summary, console)
        return
    for section in sections(summary, Format.WIDE if wide else Format.TERMINAL):
        _section(summary, section, console, wide)


def _render_tune(summary: RunSummary, console: Console) -> None:
    for line in run_lines(summary):
        _say(console, line)
    if is_check_only(summary):  # nothing measured: no figures to tabulate
        for line in recommendation_lines(summary):
            _say(console, line, "bold" if not line.startswith(" ") else None)
        return
    table = Table(
        title=f"benchlab · {summary.run.recipe_name}", title_justify="left",
        box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False, header_style="bold",
    )  # fmt: skip
    rows = candidate_rows(summary)
    for index, name in enumerate(candidate_header(summary)):
        left = name in ("candidate", "status", "verdicts")
        words = [row[index] for row in rows]
        table.add_column(
            _header(name), justify="left" if left else "right", no_wrap=not left,
            overflow="fold", min_width=min(_longest_word(words), 34) if left else None,
        )  # fmt: skip
    for row in rows:
        table.add_row(*row)
    console.print(table)
    for line in verdict_lines(summary):
        _say(console, line, "yellow")
    for line in recommendation_lines(summary):
        _say(console, line, "bold" if not line.startswith(" ") else None)
    for line in [interval_note(summary), *method_notes(summary)]:
        _say(console, line, "dim")
    judged = BUILDERS["thresholds"](summary)
    if judged is not None:  # last, as in a run's table: what a CI log shows at its end
        _section(summary, judged, console, False)
