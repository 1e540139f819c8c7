"""benchlab drain: does each stack, stopped under load, answer what it had taken and exit
(issue 40, graceful shutdown)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchlab.cli.app import console
from benchlab.cli.stack_names import (
    CheckFormatOption,
    CheckQuietOption,
    StackNamesArgument,
    add_not_checked,
    check_table,
    checks_json,
    finish,
    start_checking,
)
from benchlab.recipe import default_cores

if TYPE_CHECKING:
    from benchlab.checks.one_stack import StackCheck
    from benchlab.resilience.drain import Drain


def drain(
    stack_names: StackNamesArgument = None,
    fmt: CheckFormatOption = "table",
    quiet: CheckQuietOption = False,
) -> None:
    """Stop each stack under load and see what it drops: one worker serves a fixed rate of
    short requests and one long request, then gets its documented stop signal (SIGTERM;
    nginx SIGQUIT) at its main process. The request in flight and those sent before the
    signal must be answered, later ones refused, and the server must exit within 10 s.
    Exit 1 when a stack drops a request or does not exit (hangs), 3 when one could not be
    started."""
    from benchlab.checks.one_stack import drain_stacks
    from benchlab.load import TOOLS, make_ready

    names, say = start_checking(stack_names, fmt, quiet)
    make_ready(TOOLS["vegeta"], say)
    cores = default_cores()
    checked = drain_stacks(names, cores.server, cores.load, say)
    finish(checked, fmt, _json, _table, lambda result: not result.drains)


def _json(checked: list[StackCheck[Drain]]) -> str:
    from benchlab.report.json_formats import DRAIN

    return checks_json(DRAIN, "drain", checked)


def _table(checked: list[StackCheck[Drain]]) -> None:
    table = check_table(("stack", "signal", "in flight", "before: failed",
                         "after: refused/failed", "exit", "verdict"))  # fmt: skip
    for c in checked:
        d = c.result
        if d is None:
            add_not_checked(table, c.stack, c.problem)
            continue
        table.add_row(
            c.stack, d.signal,
            ("answered" if d.in_flight is None else "dropped") if d.long_sent else "none sent",
            f"{d.failed_before}/{d.sent_before}",
            f"{d.refused_after}/{d.failed_after} of {d.sent_after}",
            "killed" if d.exit_s is None else f"{d.exit_s:.2f} s",
            d.verdict,
        )  # fmt: skip
    console.print(table)
