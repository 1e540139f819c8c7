"""The formats each command writes, declared once from the exporters' registry: the names its
--format takes, its help's placeholder and its refusal read these tuples, in the order its help
lists them. A name that is no exporter's is refused when benchlab starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from benchlab.core.errors import UserError
from benchlab.report.exporters import EXPORTERS, choose


def _exporters(*names: str) -> tuple[str, ...]:
    unknown = [name for name in names if name not in EXPORTERS]
    if unknown:
        raise ValueError(f"formats {unknown} have no exporter; known: {', '.join(EXPORTERS)}")
    return names


REPORT = tuple(EXPORTERS)
TUNE = _exporters("table", "md", "json", "html")
HISTORY = _exporters("table", "md", "json", "html")
COMPARE = _exporters("table", "md", "json")
RUNS = _exporters("table", "json")
STACKS = _exporters("table", "md", "json")
# The formats a finished run's last line offers through `benchlab report`, the page first.
AFTER_RUN = _exporters("html", "md", "csv", "json")


def chosen(fmt: str | None, output: Path | None, allowed: tuple[str, ...]) -> str:
    """The format named, else the one -o's extension implies, else the table (as report
    chooses; a contradiction between the two is refused)."""
    return choose(fmt, output, allowed).name


FROM_EXTENSION = "How to write it (default: from -o's extension, else the table)."


def option(names: tuple[str, ...], help: str = FROM_EXTENSION) -> Any:
    """The --format/-f option of a command that writes `names`: its placeholder and its
    shell completion read them."""
    return typer.Option(
        "--format", "-f", metavar=metavar(names), help=help,
        autocompletion=lambda incomplete: [n for n in names if n.startswith(incomplete)],
    )  # fmt: skip


def metavar(formats: tuple[str, ...]) -> str:
    return "|".join(formats)


def check_one_of(fmt: str, formats: tuple[str, ...]) -> None:
    if fmt not in formats:
        raise UserError(f"--format '{fmt}' is not known; use one of: {', '.join(formats)}")


def check_either(fmt: str, formats: tuple[str, ...]) -> None:
    if fmt not in formats:
        raise UserError(f"--format '{fmt}' is not known; use {' or '.join(formats)}")
