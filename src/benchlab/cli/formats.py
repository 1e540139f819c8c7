"""The formats each command writes, declared once from the exporters' registry, and where its
answer goes: the names its --format takes, its help's placeholder, the extensions its -o
infers a format from and its refusals read these tuples, in the order its help lists them. A
name that is no exporter's is refused when benchlab starts.

Every command that writes a document takes `-f/--format` and `-o/--output` and decides them
here (`destination`): the format named, else the one -o's extension implies, else the table;
a contradiction, or an extension whose format the command does not write, is one line and
exit 2, before anything runs. The answer then goes to stdout, or to -o's file with one
confirmation on stderr (`wrote PATH (FORMAT)`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from benchlab.cli.app import console, emit, wrote
from benchlab.report.exporters import EXPORTERS, HISTOGRAMS, choose, file_text
from benchlab.system.outputs import check_output_place, write_output

if TYPE_CHECKING:
    from rich.console import Console


def _exporters(*names: str) -> tuple[str, ...]:
    unknown = [name for name in names if name not in EXPORTERS]
    if unknown:
        raise ValueError(f"formats {unknown} have no exporter; known: {', '.join(EXPORTERS)}")
    return names


# A whole run's documents: what `run` writes, and `report`, which also writes one cell's
# histogram (--histogram CELL).
REPORT = tuple(name for name in EXPORTERS if name not in HISTOGRAMS)
REPORT_COMMAND = (*REPORT, *HISTOGRAMS)
TUNE = _exporters("table", "md", "json", "html")
HISTORY = _exporters("table", "md", "json", "html")
COMPARE = _exporters("table", "md", "json", "html")
RUNS = _exporters("table", "json")
STACKS = _exporters("table", "md", "json")
RECIPES = _exporters("table", "json")
CHECKS = _exporters("table", "json")  # conform, drain, slow-clients
DOCTOR = _exporters("table", "json")
SELFCHECK = _exporters("table", "json")
# The formats a finished run's last line offers through `benchlab report`, the page first.
AFTER_RUN = _exporters("html", "md", "csv", "json")


def metavar(formats: tuple[str, ...]) -> str:
    return "|".join(formats)


def extensions(formats: tuple[str, ...]) -> list[str]:
    """The file extensions -o infers one of `formats` from, in their order."""
    return [ext for name in formats for ext in EXPORTERS[name].extensions]


FROM_EXTENSION = "How to write the answer (default: from -o's extension, else the table)."


def option(names: tuple[str, ...], help: str = FROM_EXTENSION) -> Any:
    """The --format/-f option of a command that writes `names`: its placeholder and its
    shell completion read them."""
    return typer.Option(
        "--format", "-f", metavar=metavar(names), help=help,
        autocompletion=lambda incomplete: [n for n in names if n.startswith(incomplete)],
    )  # fmt: skip


def output(names: tuple[str, ...]) -> Any:
    """The -o/--output option of a command that writes `names`: its help names the
    extensions that pick each."""
    picks = ", ".join(
        f"{' '.join(EXPORTERS[n].extensions)} {n}" for n in names if EXPORTERS[n].extensions
    )
    return typer.Option(
        "-o", "--output", metavar="FILE",
        help=f"Write the answer to this file instead of stdout (its extension picks the "
        f"format: {picks}; another: the table).",
    )  # fmt: skip


@dataclass(frozen=True)
class Destination:
    """Where a command's answer goes, and in which format."""

    format: str
    path: Path | None

    @property
    def on_terminal_table(self) -> bool:
        """The table on stdout: drawn with the console's width and colours."""
        return self.format == "table" and self.path is None

    def table(self, draw: Callable[[Console], None]) -> None:
        """The table: drawn on stdout's console, or written to -o as a file holds it."""
        if self.path is None:
            draw(console)
        else:
            self.document(file_text(draw))

    def document(self, text: str) -> None:
        """A rendered document: on stdout, or in -o's file (and one line on stderr)."""
        if self.path is None:
            emit(text)
            return
        write_output(self.path, text, "-o")
        wrote(self.path, self.format)


STDOUT = Path("-")


def destination(
    fmt: str | None, output: Path | None, allowed: tuple[str, ...], reads: Sequence[Path]
) -> Destination:
    """The format and place a command's answer goes to, checked before the command does
    anything (a long run must not end in a refusal): `-o -` is stdout; a file is never the
    results store the command reads (`reads`: none for a command that reads none), nor any
    SQLite database, and its directory must exist (every command alike)."""
    if output == STDOUT:
        output = None
    exporter = choose(fmt, output, allowed)
    if output is not None:
        check_output_place(output, "-o", stores=reads)
    return Destination(exporter.name, output)
