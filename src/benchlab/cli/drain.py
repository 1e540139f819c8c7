"""benchlab drain: does each stack, stopped under load, answer what it had taken and exit
(issue 40, graceful shutdown)."""

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
    from benchlab.graceful_stop import StackDrain

DRAIN_FORMATS = formats.RUNS  # table or json


def drain(
    stack_names: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="STACK...",
            help="The stacks to check (default: every stack that can run here).",
            autocompletion=complete_stack_name,
        ),
    ] = None,
    fmt: Annotated[str, formats.option(DRAIN_FORMATS, "How to write the results.")] = "table",
    quiet: Annotated[
        bool, typer.Option("-q", "--quiet", help="No progress on stderr: only the results.")
    ] = False,
) -> None:
    """Stop each stack under load and see what it drops: one worker serves a fixed rate of
    short requests and one long request, then gets its documented stop signal (SIGTERM;
    nginx SIGQUIT) at its main process. The request in flight and those sent before the
    signal must be answered, later ones refused, and the server must exit within 10 s.
    Exit 1 when a stack drops a request or does not exit (hangs), 3 when one could not be
    started."""
    from benchlab.graceful_stop import drain_stacks
    from benchlab.load import TOOLS, make_ready

    formats.check_either(fmt, DRAIN_FORMATS)
    names = checked_stack_names(stack_names)
    claim(False)  # it starts servers and load on this machine's cores: one benchlab at a time
    say = (lambda _: None) if quiet else (lambda line: progress.print(line, markup=False))
    make_ready(TOOLS["vegeta"], say)
    cores = default_cores()
    checked = drain_stacks(names, cores.server, cores.load, say)
    if fmt == "json":
        sys.stdout.write(_json(checked))
    else:
        _table(checked)
    if any(c.result is None for c in checked):
        raise typer.Exit(ExitCode.HARNESS)
    if any(not c.result.drains for c in checked if c.result is not None):
        raise typer.Exit(ExitCode.REGRESSION)


def _json(checked: list[StackDrain]) -> str:
    from benchlab.report.json_formats import DRAIN

    entries = [
        {"stack": c.stack, "problem": c.problem, "drain": c.result.to_json() if c.result else None}
        for c in checked
    ]
    return DRAIN.dumps({"stacks": entries})


def _table(checked: list[StackDrain]) -> None:
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("stack", "signal", "in flight", "before: failed", "after: refused/failed",
                   "exit", "verdict"):  # fmt: skip
        table.add_column(column, overflow="fold")
    for c in checked:
        d = c.result
        if d is None:
            table.add_row(c.stack, "", "", "", "", "", f"not checked: {c.problem}")
            continue
        table.add_row(
            c.stack, d.signal, "answered" if d.in_flight is None else "dropped",
            f"{d.failed_before}/{d.sent_before}",
            f"{d.refused_after}/{d.failed_after} of {d.sent_after}",
            "killed" if d.exit_s is None else f"{d.exit_s:.2f} s",
            d.verdict,
        )  # fmt: skip
    console.print(table)
