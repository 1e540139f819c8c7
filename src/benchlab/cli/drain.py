"""benchlab drain: does each stack, stopped under load, answer what it had taken and exit
(graceful shutdown)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchlab.cli.stack_names import (
    CheckFormatOption,
    CheckOutputOption,
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
    from rich.console import Console

    from benchlab.checks.one_stack import StackCheck
    from benchlab.resilience.drain import Drain


def drain(
    stack_names: StackNamesArgument = None,
    fmt: CheckFormatOption = None,
    output: CheckOutputOption = None,
    quiet: CheckQuietOption = False,
) -> None:
    """Stop each stack under load and see what it drops: one worker serves a fixed rate of
    short requests and one long request, then gets its documented stop signal (SIGTERM;
    nginx SIGQUIT) at its main process. The request in flight and those sent before the
    signal must be answered, later ones refused, and the server must exit within 10 s."""
    from benchlab.checks.one_stack import drain_stacks
    from benchlab.load import TOOLS, make_ready

    names, say, where = start_checking(stack_names, fmt, output, quiet)
    make_ready(TOOLS["vegeta"], say)
    cores = default_cores()
    checked = drain_stacks(names, cores.server, cores.load, say)
    finish(checked, where, _json, _table, lambda result: not result.drains)


def _json(checked: list[StackCheck[Drain]]) -> str:
    from benchlab.report.json_formats import DRAIN

    return checks_json(DRAIN, "drain", checked)


def _table(checked: list[StackCheck[Drain]], out: Console) -> None:
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
    out.print(table)
