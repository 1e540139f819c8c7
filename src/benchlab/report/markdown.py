"""The Markdown report, ready to paste into a post or a pull request: the answer first (a
takeaway per grid point and how to read it), then every cell with the articles' columns,
verdicts, article 002's relative table, rankings and flips."""

from __future__ import annotations

from collections.abc import Iterable

from benchlab.analysis.summary import RunSummary
from benchlab.core.text import one_line
from benchlab.report.columns import cell_columns, footnote_lines, footnotes, note_text
from benchlab.report.sections import Format, Section, by_id, sections
from benchlab.report.tune_report import tune_markdown


def _row(values: list[str]) -> str:
    """A table row: each cell on one line (a stored reason's newline would start a line of
    Markdown of its own), its pipes escaped."""
    return "| " + " | ".join(one_line(v).replace("|", "\\|") for v in values) + " |"


def table_lines(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    return [_row(header), "|" + "|".join("---" for _ in header) + "|", *map(_row, rows)]


def cell_table(summary: RunSummary) -> list[str]:
    numbers = {cell.record.key: n for n, cell in footnotes(summary)}
    columns = cell_columns(summary.cells, article=True, baseline=summary.baseline)
    header = [c.title for c in columns] + ["note"]
    rows = [
        [column.text(cell) or "–" for column in columns]
        + [note_text(cell, numbers.get(cell.record.key))]
        for cell in summary.cells
    ]
    return table_lines(header, rows)


def _takeaway_lines(section: Section) -> list[str]:
    out = []
    for takeaway in section.takeaways:
        out.append(f"- **{takeaway.label}** ({takeaway.settings}): {takeaway.sentence}")
        out += [f"  {note}" for note in takeaway.notes]
    return out


def _chapter(section: Section, body: list[str]) -> list[str]:
    """A section with a heading of its own (the answer, the guide, the cells)."""
    return [f"## {section.title}", "", *body, ""]


def _paragraph(section: Section) -> list[str]:
    """A section under a title of its paragraph: its lines listed, its tables captioned."""
    out = []
    if section.lines:
        out += ["", section.heading(), "", *[f"- {line}" for line in section.lines]]
    for table in section.tables:
        out += [
            "",
            f"{table.caption}:",
            "",
            *table_lines(list(table.header), map(list, table.rows)),
        ]
    return out


def _notes(section: Section) -> list[str]:
    first, *method = section.lines
    return ["", first, *(["", *method] if method else []), ""]


def _cells(summary: RunSummary, section: Section) -> list[str]:
    out = [f"## {section.title}", "", *[f"- {line}" for line in section.lines]]
    return [*out, "", *cell_table(summary), *_footnotes(summary)]


def _footnotes(summary: RunSummary) -> list[str]:
    notes = footnote_lines(summary)
    return ["", *notes] if notes else []


def _section(summary: RunSummary, section: Section) -> list[str]:
    if section.id == "in-short":
        return _chapter(section, _takeaway_lines(section))
    if section.id == "how-to-read":
        return _chapter(section, [f"- {line}" for line in section.lines])
    if section.id == "cells":
        return _cells(summary, section)
    if section.id == "notes":
        return _notes(section)
    return _paragraph(section)


def render_markdown(summary: RunSummary) -> str:
    out = [f"# benchlab run {summary.run.id}", ""]
    if summary.run.question:
        # On one line: a line break in it would end the quote (and start Markdown of its own).
        out += [f"> {one_line(summary.run.question)}", ""]
    found = sections(summary, Format.MARKDOWN)
    if summary.options.tune is not None:
        # A tune run's answer is its recommendation: the candidates' cells follow it.
        cells = by_id(found)["cells"]
        out += [f"- {line}" for line in cells.lines]
        out += ["", *tune_markdown(summary), f"## {cells.title} measured"]
        out += ["", *cell_table(summary), *_footnotes(summary)]
        found = [s for s in found if s.id not in ("in-short", "how-to-read", "cells")]
    for section in found:
        out += _section(summary, section)
    return "\n".join(out)
