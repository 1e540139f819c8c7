"""benchlab slow-clients: what a few slow clients cost everyone else, server by server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

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
from benchlab.core.errors import UserError
from benchlab.recipe import default_cores

if TYPE_CHECKING:
    from rich.console import Console

    from benchlab.checks.one_stack import StackCheck
    from benchlab.resilience.slow_clients import SlowClients


def slow_clients(
    stack_names: StackNamesArgument = None,
    modes: Annotated[
        list[str] | None,
        typer.Option(
            "--mode",
            metavar="headers|body|read",
            help="The slow clients: headers trickled, a body sent slowly, or a 1 MiB answer "
            "read slowly (repeatable; default all three).",
        ),
    ] = None,
    rounds: Annotated[
        int,
        typer.Option(min=2, max=20, metavar="N", help="Rounds, each a trial without and one with."),
    ] = 3,
    fmt: CheckFormatOption = None,
    output: CheckOutputOption = None,
    quiet: CheckQuietOption = False,
) -> None:
    """Measure what slow clients cost everyone else: one worker serves 100 req/s of
    GET /plaintext for 3 s, without and then with 32 slow clients held open beside it
    (slowhttptest), in interleaved rounds; the p99 and the answered rate with them ÷
    without, with their range over the rounds, and the failures they add. A server harmed
    in every round needs a buffering proxy (nginx) in front."""
    from benchlab.checks.one_stack import slow_clients_of_stacks
    from benchlab.load import TOOLS, make_ready
    from benchlab.resilience.slow_clients import MODES, missing

    chosen = list(dict.fromkeys(modes or MODES))
    for mode in chosen:
        if mode not in MODES:
            raise UserError(
                f"--mode {mode}: not a kind of slow client; choose from {', '.join(MODES)}"
            )
    names, say, where = start_checking(stack_names, fmt, output, quiet)
    if (problem := missing()) is not None:
        raise UserError(problem)
    make_ready(TOOLS["vegeta"], say)
    cores = default_cores()
    checked = slow_clients_of_stacks(names, cores.server, cores.load, chosen, rounds, say)
    finish(checked, where, _json, _table, lambda result: result.needs_proxy)


def _json(checked: list[StackCheck[SlowClients]]) -> str:
    from benchlab.report.json_formats import SLOW_CLIENTS

    return checks_json(SLOW_CLIENTS, "slow_clients", checked)


def _table(checked: list[StackCheck[SlowClients]], out: Console) -> None:
    table = check_table(("stack", "slow clients", "p99 ms", "p99 with ÷ without",
                         "answered ÷", "failed added", "verdict"))  # fmt: skip
    for c in checked:
        if c.result is None:
            add_not_checked(table, c.stack, c.problem)
            continue
        for r in c.result.results:
            ratio, thr, failed = r.p99_ratio, r.throughput_ratio, r.failed_added
            table.add_row(
                c.stack, r.mode, f"{_ms(r.p99_ms(False))} → {_ms(r.p99_ms(True))}",
                "no answer" if ratio is None else ratio.text(),
                f"{thr.median:.2f}", f"{failed.median:+.1%}",
                "needs a proxy" if r.harmed else "unaffected",
            )  # fmt: skip
        for mode, why in c.result.skipped:
            table.add_row(c.stack, mode, "–", "–", "–", "–", f"not checked: {why}")
    out.print(table)


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"
