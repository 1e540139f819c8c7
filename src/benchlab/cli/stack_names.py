"""What the commands that check catalogue stacks one by one (conform, drain, slow-clients)
share: their STACK... argument (each named stack must exist and run here; none named means
all that do), their --quiet, their progress lines and their exit code."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from benchlab.cli import formats
from benchlab.cli.app import progress
from benchlab.cli.completion import stacks as complete_stack_name
from benchlab.cli.measuring import claim
from benchlab.core.errors import ExitCode, UserError
from benchlab.stacks import CATALOGUE

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from benchlab.cli.formats import Destination
    from benchlab.report.json_formats import JsonFormat

StackNamesArgument = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="STACK...",
        help="The stacks to check (default: every stack that can run here).",
        autocompletion=complete_stack_name,
    ),
]
CheckFormatOption = Annotated[str | None, formats.option(formats.CHECKS)]
CheckOutputOption = Annotated[Path | None, formats.output(formats.CHECKS)]
CheckQuietOption = Annotated[
    bool, typer.Option("-q", "--quiet", help="No progress on stderr: only the results.")
]


def checked_stack_names(names: list[str] | None) -> list[str]:
    from benchlab.core.text import did_you_mean

    if not names:
        return [name for name, stack in CATALOGUE.items() if stack.availability().ok]
    for name in names:
        if name not in CATALOGUE:
            raise UserError(
                f"stack '{name}' is not in the catalogue{did_you_mean(name, CATALOGUE)}; "
                "`benchlab stacks` lists them"
            )
        available = CATALOGUE[name].availability()
        if not available.ok:
            raise UserError(f"stack '{name}' cannot run here: {available.reason}; {available.fix}")
    return names


def start_checking(
    stack_names: list[str] | None, fmt: str | None, output: Path | None, quiet: bool
) -> tuple[list[str], Callable[[str], None], Destination]:
    """The stacks to check, where progress goes and where the answer will, once the
    arguments are right and no other benchlab measures here (the checks start servers and
    load on its cores)."""
    where = formats.destination(fmt, output, formats.CHECKS, reads=())
    names = checked_stack_names(stack_names)
    progress.quiet = quiet
    claim(False)
    return names, lambda line: progress.print(line, markup=False), where


def finish(
    checked: Sequence[Any], where: Destination, as_json: Callable[[Any], str],
    as_table: Callable[[Any, Console], None], failed: Callable[[Any], bool],
) -> None:  # fmt: skip
    """The results where they were asked for; exit HARNESS when a stack could not be
    checked, CHECK_FAILED when `failed(result)` for one."""
    if where.format == "json":
        where.document(as_json(checked))
    else:
        where.table(lambda out: as_table(checked, out))
    if any(c.result is None for c in checked):
        raise typer.Exit(ExitCode.HARNESS)
    if any(failed(c.result) for c in checked):
        raise typer.Exit(ExitCode.CHECK_FAILED)


def check_table(columns: Sequence[str]) -> Table:
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def add_not_checked(table: Table, stack: str, problem: str | None) -> None:
    """A stack that could not be checked: why, in the last column."""
    blanks = [""] * (len(table.columns) - 2)
    table.add_row(stack, *blanks, f"not checked: {problem}")


def checks_json(document: JsonFormat, key: str, checked: Sequence[Any]) -> str:
    """Each stack's result under `key` (null when it could not be checked, and why)."""
    entries = [
        {"stack": c.stack, "problem": c.problem, key: c.result.to_json() if c.result else None}
        for c in checked
    ]
    return document.dumps({"stacks": entries})
