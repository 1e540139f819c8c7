"""The report's sections, declared once: each one's id, title, whether it applies to a run,
and its content as typed values (lines, tables, takeaways, verdict groups), built from the
run's summary by the shared wording. The terminal, Markdown and HTML renderers take the
sections in their format's declared order and supply only the syntax: a heading, a list,
a table. Where a format shows a section another does not, or elsewhere, this module says so
(`ORDER`, `UNTITLED`), so no renderer holds a title or an order of its own."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from benchlab.analysis.summary import CellSummary, RunSummary
from benchlab.report.resilience import check_tables, stack_sentences
from benchlab.report.takeaways import Takeaway, reading_guide, takeaways
from benchlab.report.thresholds import threshold_lines
from benchlab.report.wording import (
    flip_lines,
    host_lines,
    interval_note,
    load_host_lines,
    method_notes,
    mix_lines,
    relative_rows,
    run_lines,
    verdict_lines,
)


class Format(Enum):
    TERMINAL = "terminal"  # a table per grid point
    WIDE = "wide"  # the terminal's one table of every column
    MARKDOWN = "markdown"
    HTML = "html"


@dataclass(frozen=True)
class Table:
    title: str  # what tells it from the section's other tables (its grid point)
    caption: str  # the title in full, where no heading above it says the rest
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class VerdictGroup:
    """One kind of verdict and every cell it flags, with its sentence there."""

    name: str
    flagged: tuple[tuple[CellSummary, str], ...]


@dataclass(frozen=True)
class Section:
    """A section as a report shows it: its heading (`title`, and in the text formats
    `gloss` in brackets after it; `page_gloss` where the page words it otherwise), the
    page's sentence under it (`lead`), and its content."""

    id: str
    title: str
    gloss: str = ""
    page_gloss: str = ""
    lead: str = ""
    lines: tuple[str, ...] = ()
    tables: tuple[Table, ...] = ()
    takeaways: tuple[Takeaway, ...] = ()
    groups: tuple[VerdictGroup, ...] = ()
    failed: tuple[CellSummary, ...] = ()

    def heading(self) -> str:
        """The title of a text format's paragraph: 'Title (gloss):'."""
        return f"{self.title} ({self.gloss}):" if self.gloss else f"{self.title}:"

    def page_heading(self) -> str:
        gloss = self.page_gloss
        return f"{self.title} ({gloss})" if gloss else self.title


def _verdict_groups(summary: RunSummary) -> tuple[VerdictGroup, ...]:
    grouped: dict[str, list[tuple[CellSummary, str]]] = {}
    for cell in summary.cells:
        for verdict in cell.verdicts:
            grouped.setdefault(verdict.name, []).append((cell, verdict.sentence))
    return tuple(VerdictGroup(name, tuple(flagged)) for name, flagged in grouped.items())


def _verdicts(summary: RunSummary) -> Section | None:
    """Every verdict (one line each, and by kind), and the failed cells, which have none."""
    lines = tuple(verdict_lines(summary))
    failed = tuple(c for c in summary.cells if c.result.status == "failed")
    if not lines and not failed:
        return None
    groups = _verdict_groups(summary)
    return Section("verdicts", "Verdicts", lines=lines, groups=groups, failed=failed)


def _resilience(summary: RunSummary) -> Section | None:
    """What the run's checks found beyond speed, stack by stack."""
    tables = check_tables(summary)
    if not tables:
        return None
    return Section(
        "resilience", "Resilience", gloss="each stack once, beside its speed",
        lines=tuple(stack_sentences(summary)),
        tables=tuple(Table(t.title, t.title, t.header, t.rows) for t in tables),
    )  # fmt: skip


def _relative_tables(summary: RunSummary) -> tuple[Table, ...]:
    return tuple(
        Table(
            title,
            f"{figure.label} relative to {summary.baseline} · {title}",
            tuple(header),
            tuple(map(tuple, rows)),
        )
        for title, figure, header, rows in relative_rows(summary)
    )


# Each section built from a summary, or None where it does not apply to it. The page's own
# sections (charts, the run's machine) have a title here and their content in the page.
BUILDERS: dict[str, Callable[[RunSummary], Section | None]] = {
    "in-short": lambda s: Section("in-short", "In short", takeaways=tuple(takeaways(s))),
    "thresholds": lambda s: (
        Section(
            "thresholds",
            "Thresholds",
            gloss="each cell's interval against the bound",
            lines=tuple(lines),
        )
        if (lines := threshold_lines(s))
        else None
    ),
    "results": lambda s: Section("results", "Results by grid point"),
    "capacity": lambda s: Section(
        "capacity",
        "Latency against load",
        page_gloss=f"SLO: {s.options.slo.describe()}" if s.options.slo else "",
    ),
    "sweep": lambda s: Section("sweep", "Across the grid"),
    "how-to-read": lambda s: Section(
        "how-to-read", "How to read this", lines=tuple(reading_guide(s))
    ),
    "cells": lambda s: Section("cells", "Every cell", lines=tuple(run_lines(s))),
    "verdicts": lambda s: _verdicts(s),
    "resilience": _resilience,
    "hosts": lambda s: (
        Section("hosts", "Hosts", lines=tuple(lines)) if (lines := host_lines(s)) else None
    ),
    "protocols": lambda s: (
        Section(
            "protocols",
            "What TLS and HTTP/2 cost",
            gloss="throughput ÷ plain HTTP/1.1's",
            lines=tuple(cost.text() for cost in s.protocol_costs),
        )
        if s.protocol_costs
        else None
    ),
    "mixes": lambda s: (
        Section(
            "mixes",
            "Mixes, each part on its own",
            gloss="share of requests, p99",
            lines=tuple(lines),
        )
        if (lines := mix_lines(s))
        else None
    ),
    "load-hosts": lambda s: (
        Section(
            "load-hosts",
            "Load hosts",
            gloss="each one's share of the merged figures",
            lines=tuple(lines),
        )
        if (lines := load_host_lines(s))
        else None
    ),
    "tools": lambda s: (
        Section(
            "tools",
            "Load tools compared",
            gloss="the same cell under each",
            lines=tuple(s.tool_agreement),
        )
        if s.tool_agreement
        else None
    ),
    "relative": lambda s: (
        Section("relative", f"Relative to {s.baseline}", tables=tables)
        if (tables := _relative_tables(s))
        else None
    ),
    "flips": lambda s: (
        Section(
            "flips",
            "Rank flips",
            gloss="each win by the evidence rule below",
            page_gloss="each win beyond both intervals",
            lines=tuple(lines),
        )
        if (lines := flip_lines(s))
        else None
    ),
    "notes": lambda s: Section("notes", "Notes", lines=(interval_note(s), *method_notes(s))),
    "about": lambda s: Section("about", "The run: machine, versions, how to reproduce"),
}

# Each format's sections, in its order. The terminal puts the answer last (under the tables
# it sums up), its thresholds' outcome very last (what a CI log shows at its end), and shows
# every cell's rankings only --wide; the page puts its flips under the grid's charts
# (`NESTED`) and its load hosts inside its hosts.
ORDER: dict[Format, tuple[str, ...]] = {
    Format.MARKDOWN: (
        "in-short", "thresholds", "how-to-read", "cells", "verdicts", "resilience", "protocols",
        "mixes", "load-hosts", "tools", "relative", "flips", "notes",
    ),
    # Each takeaway is printed under its table: no "In short" to say it again.
    Format.TERMINAL: (
        "cells", "verdicts", "resilience", "protocols", "mixes", "load-hosts", "tools", "flips",
        "notes", "thresholds",
    ),
    # One table of every cell: the takeaways (each point's order) after it.
    Format.WIDE: (
        "cells", "in-short", "verdicts", "resilience", "protocols", "mixes", "load-hosts",
        "tools", "flips", "notes", "thresholds",
    ),
    Format.HTML: (
        "in-short", "thresholds", "results", "capacity", "sweep", "flips", "how-to-read",
        "cells", "notes", "verdicts", "resilience", "hosts", "load-hosts", "protocols", "mixes",
        "tools", "relative", "about",
    ),
}  # fmt: skip

# Sections a format shows without a heading of their own: the terminal's tables and
# verdicts speak for themselves, and the notes are a footer everywhere.
UNTITLED: dict[Format, frozenset[str]] = {
    Format.MARKDOWN: frozenset({"notes", "relative"}),  # its tables carry their captions
    Format.TERMINAL: frozenset({"cells", "verdicts", "notes"}),
    Format.WIDE: frozenset({"cells", "verdicts", "notes"}),
    Format.HTML: frozenset({"notes", "load-hosts"}),
}

# Where a format shows a section in fewer runs than it applies to: the text formats list
# verdicts, not failed cells (their tables show those); the terminal sums up only a run of
# several grid points (one point's sentence is right above).
SHOWN_WHEN: dict[tuple[Format, str], Callable[[Section], bool]] = {
    (Format.MARKDOWN, "verdicts"): lambda s: bool(s.lines),
    (Format.TERMINAL, "verdicts"): lambda s: bool(s.lines),
    (Format.WIDE, "verdicts"): lambda s: bool(s.lines),
}

# Where the page shows a section inside another's: under its heading, as a sub-heading.
NESTED: dict[str, str] = {"flips": "sweep", "load-hosts": "hosts", "notes": "cells"}


def sections(summary: RunSummary, fmt: Format) -> list[Section]:
    """The sections `fmt` shows for `summary`, in its order (a builder returns None where its
    section does not apply)."""
    found = []
    for id_ in ORDER[fmt]:
        section = BUILDERS[id_](summary)
        if section is not None and SHOWN_WHEN.get((fmt, id_), bool)(section):
            found.append(section)
    return found


def titled(summary: RunSummary, fmt: Format) -> list[tuple[Section, str]]:
    """Every title `fmt` shows, in order, with its section: a section's own, then its
    tables' where the format titles them."""
    out: list[tuple[Section, str]] = []
    for section in sections(summary, fmt):
        if section.id not in UNTITLED[fmt]:
            out.append((section, section.title))
        if section.tables:
            out += [
                (section, t.caption if fmt is Format.MARKDOWN else t.title) for t in section.tables
            ]
    return out


def by_id(found: Sequence[Section]) -> dict[str, Section]:
    return {section.id: section for section in found}
