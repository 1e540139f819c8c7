"""The Markdown report, ready to paste into a post or a pull request: the answer first (a
takeaway per grid point and how to read it), then every cell with the articles' columns,
verdicts, article 002's relative table, rankings and flips."""

from __future__ import annotations

from benchlab.report.columns import cell_columns, footnote_lines, footnotes, note_text
from benchlab.report.summary import RunSummary
from benchlab.report.takeaways import reading_guide, takeaways
from benchlab.report.tune_report import tune_markdown
from benchlab.report.wording import (
    flip_lines,
    interval_note,
    load_host_lines,
    method_notes,
    mix_lines,
    ranking_lines,
    relative_rows,
    run_lines,
    verdict_lines,
)
from benchlab.text import one_line


def _row(values: list[str]) -> str:
    return "| " + " | ".join(v.replace("|", "\\|") for v in values) + " |"


def table_lines(header: list[str], rows: list[list[str]]) -> list[str]:
    return [_row(header), "|" + "|".join("---" for _ in header) + "|", *map(_row, rows)]


def cell_table(summary: RunSummary) -> list[str]:
    numbers = {cell.key: n for n, cell in footnotes(summary)}
    columns = cell_columns(summary.cells, article=True, baseline=summary.baseline)
    header = [c.title for c in columns] + ["note"]
    rows = [
        [column.text(cell) or "–" for column in columns] + [note_text(cell, numbers.get(cell.key))]
        for cell in summary.cells
    ]
    return table_lines(header, rows)


def relative_markdown(summary: RunSummary) -> list[str]:
    out = []
    for title, figure, header, rows in relative_rows(summary):
        out += ["", f"{figure.label} relative to {summary.baseline} · {title}:", ""]
        out += table_lines(header, rows)
    return out


def answer_lines(summary: RunSummary) -> list[str]:
    """The takeaways, each with its settings, and how to read the figures."""
    out = ["## In short", ""]
    for takeaway in takeaways(summary):
        out.append(f"- **{takeaway.label}** ({takeaway.settings}): {takeaway.sentence}")
        out += [f"  {note}" for note in takeaway.notes]
    out += ["", "## How to read this", ""]
    out += [f"- {line}" for line in reading_guide(summary)]
    return [*out, ""]


def render_markdown(summary: RunSummary) -> str:
    out = [f"# benchlab run {summary.run.id}", ""]
    if summary.run.question:
        # On one line: a line break in it would end the quote (and start Markdown of its own).
        out += [f"> {one_line(summary.run.question)}", ""]
    if summary.options.tune is not None:
        out += [f"- {line}" for line in run_lines(summary)]
        out += ["", *tune_markdown(summary), "## Every cell measured"]
    else:
        out += answer_lines(summary)
        out += ["## Every cell", "", *[f"- {line}" for line in run_lines(summary)]]
    out += ["", *cell_table(summary)]
    notes = footnote_lines(summary)
    if notes:
        out += ["", *notes]
    sentences = verdict_lines(summary)
    if sentences:
        out += ["", "Verdicts:", ""] + [f"- {line}" for line in sentences]
    if summary.protocol_costs:
        out += ["", "What TLS and HTTP/2 cost (throughput ÷ plain HTTP/1.1's):", ""]
        out += [f"- {cost.text()}" for cost in summary.protocol_costs]
    mixed = mix_lines(summary)
    if mixed:
        out += ["", "Mixes, each part on its own (share of requests, p99):", ""]
        out += [f"- {line}" for line in mixed]
    shares = load_host_lines(summary)
    if shares:
        out += ["", "Load hosts (each one's share of the merged figures):", ""]
        out += [f"- {line}" for line in shares]
    if summary.tool_agreement:
        out += ["", "Load tools compared (the same cell under each):", ""]
        out += [f"- {line}" for line in summary.tool_agreement]
    out += relative_markdown(summary)
    rankings = ranking_lines(summary)
    if len(rankings) > 1:
        out += ["", f"Rankings by grid point ({summary.ranked_by.title}):", ""]
        out += [f"- {x}" for x in rankings]
    flips = flip_lines(summary)
    if flips:
        out += ["", "Rank flips (each win by the evidence rule below):", ""]
        out += [f"- {x}" for x in flips]
    method = method_notes(summary)
    out += ["", interval_note(summary), *(["", *method] if method else []), ""]
    return "\n".join(out)
