"""benchlab conform: does each stack parse every request shape right, whole and split at
every byte offset."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchlab.cli.stack_names import (
    CheckFormatOption,
    CheckOutputOption,
    CheckQuietOption,
    StackNamesArgument,
    finish,
    start_checking,
)
from benchlab.recipe import default_cores

if TYPE_CHECKING:
    from rich.console import Console

    from benchlab.checks.catalogue import StackConformance


def conform(
    stack_names: StackNamesArgument = None,
    fmt: CheckFormatOption = None,
    output: CheckOutputOption = None,
    quiet: CheckQuietOption = False,
) -> None:
    """Check that each stack parses every request shape right: GET (with a body too), POST
    with Content-Length and chunked, pipelined, HEAD, Connection: close, HTTP/1.0, a bad
    request line, a long and an oversized header; each sent whole and split at every byte."""
    from benchlab.checks.catalogue import conform_stacks

    names, say, where = start_checking(stack_names, fmt, output, quiet)
    checked = conform_stacks(names, default_cores().server, say)
    finish(checked, where, _json, _table, lambda result: not result.conformant)


def _json(checked: list[StackConformance]) -> str:
    from benchlab.report.json_formats import CONFORM

    entries = []
    for c in checked:
        body = c.result.to_json() if c.result else {
            "conformant": None, "requests": 0, "down_after": None, "notes": [], "shapes": []
        }  # fmt: skip
        entries.append({"stack": c.stack, **body, "problem": c.problem})
    return CONFORM.dumps({"stacks": entries})


def _table(checked: list[StackConformance], out: Console) -> None:
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
    out.print(table)
