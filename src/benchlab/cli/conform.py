"""benchlab conform: does each stack parse every request shape right, whole and split at
every byte offset (issue 40)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from benchlab.cli import formats
from benchlab.cli.app import console, progress
from benchlab.cli.completion import stacks as complete_stack_name
from benchlab.cli.measuring import claim
from benchlab.cli.stack_names import checked_stack_names
from benchlab.errors import ExitCode
from benchlab.recipe import default_cores

if TYPE_CHECKING:
    from benchlab.catalogue_conformance import StackConformance

CONFORM_FORMATS = formats.RUNS  # table or json


def conform(
    stack_names: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="STACK...",
            help="The stacks to check (default: every stack that can run here).",
            autocompletion=complete_stack_name,
        ),
    ] = None,
    fmt: Annotated[str, formats.option(CONFORM_FORMATS, "How to write the results.")] = "table",
    quiet: Annotated[
        bool, typer.Option("-q", "--quiet", help="No progress on stderr: only the results.")
    ] = False,
) -> None:
    """Check that each stack parses every request shape right: GET (with a body too), POST
    with Content-Length and chunked, pipelined, HEAD, Connection: close, HTTP/1.0, a bad
    request line, a long and an oversized header; each sent whole and split at every byte.
    Exit 1 when a stack does not conform, 3 when one could not be started."""
    from benchlab.catalogue_conformance import conform_stacks

    formats.check_either(fmt, CONFORM_FORMATS)
    names = checked_stack_names(stack_names)
    claim(False)  # it starts servers on this machine's cores: one benchlab at a time
    say = (lambda _: None) if quiet else (lambda line: progress.print(line, markup=False))
    checked = conform_stacks(names, default_cores().server, say)
    if fmt == "json":
        sys.stdout.write(_json(checked))
    else:
        _table(checked)
    if any(c.result is None for c in checked):
        raise typer.Exit(ExitCode.HARNESS)
    if any(not c.result.conformant for c in checked if c.result is not None):
        raise typer.Exit(ExitCode.REGRESSION)


def _json(checked: list[StackConformance]) -> str:
    from benchlab.report.json_formats import CONFORM

    entries = []
    for c in checked:
        body = c.result.to_json() if c.result else {
            "conformant": None, "requests": 0, "down_after": None, "notes": [], "shapes": []
        }  # fmt: skip
        entries.append({"stack": c.stack, **body, "problem": c.problem})
    return CONFORM.dumps({"stacks": entries})


def _table(checked: list[StackConformance]) -> None:
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("stack", "verdict", "requests", "first failure"):
        table.add_column(column, overflow="fold")
    for c in checked:
        if c.result is None:
            table.add_row(c.stack, "not checked", "0", c.problem or "")
            continue
        verdict = "conformant" if c.result.conformant else "nonconformant"
        failed = ", ".join(c.result.failed_shapes)
        first = c.result.first_failure() or ""
        table.add_row(
            c.stack, verdict + (f" ({failed})" if failed else ""), f"{c.result.requests:,}", first
        )
    console.print(table)
