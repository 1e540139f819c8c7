"""benchlab slow-clients: what a few slow clients cost everyone else, server by server
(issue 40)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from benchlab.cli import formats
from benchlab.cli.app import console, progress
from benchlab.cli.completion import stacks as complete_stack_name
from benchlab.cli.measuring import claim
from benchlab.cli.stack_names import checked_stack_names
from benchlab.errors import ExitCode, UserError
from benchlab.recipe import default_cores

if TYPE_CHECKING:
    from benchlab.slow_clients import StackSlowClients

SLOW_FORMATS = formats.RUNS  # table or json


def slow_clients(
    stack_names: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="STACK...",
            help="The stacks to check (default: every stack that can run here).",
            autocompletion=complete_stack_name,
        ),
    ] = None,
    modes: Annotated[
        list[str] | None,
        typer.Option(
            "--mode",
            metavar="headers|body",
            help="The slow clients: headers trickled, or a body sent slowly (repeatable; "
            "default both).",
        ),
    ] = None,
    rounds: Annotated[
        int,
        typer.Option(min=2, max=20, metavar="N", help="Rounds, each a trial without and one with."),
    ] = 3,
    fmt: Annotated[str, formats.option(SLOW_FORMATS, "How to write the results.")] = "table",
    quiet: Annotated[
        bool, typer.Option("-q", "--quiet", help="No progress on stderr: only the results.")
    ] = False,
) -> None:
    """Measure what slow clients cost everyone else: one worker serves 100 req/s of
    GET /plaintext for 3 s, without and then with 32 slow clients held open beside it
    (slowhttptest), in interleaved rounds; the p99 and the answered rate with them ÷
    without, with their range over the rounds, and the failures they add. A server harmed
    in every round needs a buffering proxy (nginx) in front. Exit 1 when one is harmed,
    3 when one could not be started."""
    from benchlab.load import TOOLS, make_ready
    from benchlab.slow_clients import MODES, SLOWHTTPTEST, slow_clients_of_stacks

    formats.check_either(fmt, SLOW_FORMATS)
    chosen = modes or list(MODES)
    for mode in chosen:
        if mode not in MODES:
            raise UserError(
                f"--mode {mode}: not a kind of slow client; choose from {', '.join(MODES)}"
            )
    names = checked_stack_names(stack_names)
    if not os.access(SLOWHTTPTEST, os.X_OK):
        raise UserError(f"{SLOWHTTPTEST} is missing: apt-get install slowhttptest (or ./lab setup)")
    claim(False)  # it starts servers and load on this machine's cores: one benchlab at a time
    say = (lambda _: None) if quiet else (lambda line: progress.print(line, markup=False))
    make_ready(TOOLS["vegeta"], say)
    cores = default_cores()
    checked = slow_clients_of_stacks(names, cores.server, cores.load, chosen, rounds, say)
    if fmt == "json":
        sys.stdout.write(_json(checked))
    else:
        _table(checked)
    if any(c.result is None for c in checked):
        raise typer.Exit(ExitCode.HARNESS)
    if any(c.result.needs_proxy for c in checked if c.result is not None):
        raise typer.Exit(ExitCode.REGRESSION)


def _json(checked: list[StackSlowClients]) -> str:
    from benchlab.report.json_formats import SLOW_CLIENTS

    entries = [
        {
            "stack": c.stack,
            "problem": c.problem,
            "slow_clients": c.result.to_json() if c.result else None,
        }
        for c in checked
    ]
    return SLOW_CLIENTS.dumps({"stacks": entries})


def _table(checked: list[StackSlowClients]) -> None:
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("stack", "slow clients", "p99 ms", "p99 with ÷ without", "answered ÷",
                   "failed added", "verdict"):  # fmt: skip
        table.add_column(column, overflow="fold")
    for c in checked:
        if c.result is None:
            table.add_row(c.stack, "", "", "", "", f"not checked: {c.problem}")
            continue
        for r in c.result.results:
            ratio, thr, failed = r.p99_ratio, r.throughput_ratio, r.failed_added
            table.add_row(
                c.stack, r.mode, f"{_ms(r.p99_ms(False))} → {_ms(r.p99_ms(True))}",
                "no answer" if ratio is None else ratio.text(),
                f"{thr.median:.2f}", f"{failed.median:+.1%}",
                "needs a proxy" if r.harmed else "unaffected",
            )  # fmt: skip
    console.print(table)


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"
