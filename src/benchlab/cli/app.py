"""The typer application every command is registered on, and the console they print to."""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from benchlab import __version__
from benchlab.core import environment
from benchlab.core.text import SafeConsole, printable

HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}


class Commands(typer.core.TyperGroup):
    """The command table: every command also takes --no-color after its name, as benchlab
    takes it before (`benchlab report --no-color` as `benchlab --no-color report`), and
    -q/--quiet: a command with progress of its own declares it; any other is given the root's,
    which silences what it says on stderr beside its answer (or nothing, where it says
    nothing). The root gives each command, its sub-groups' too, a copy of its own options."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        mine = {p.name: p for p in self.params}
        if "no_color" not in mine:
            return  # a sub-group (services): the root adds them to its commands
        for command in _leaves(self):
            command.params.append(_copied(mine["no_color"], _no_colour))
            if not any("-q" in getattr(p, "opts", ()) for p in command.params):
                command.params.append(_copied(mine["quiet"], _quiet))


def _copied(option: Any, act: Callable[[bool], None]) -> Any:
    """The root's option for a command: it acts as it is read, and passes no value."""
    copied = copy.copy(option)
    copied.expose_value = False
    copied.callback = lambda _ctx, _param, value: act(value)
    return copied


def _leaves(group: Any) -> Iterator[Any]:
    for command in group.commands.values():
        if hasattr(command, "commands"):
            yield from _leaves(command)
        else:
            yield command


# Plain help (click's layout): every option with its own placeholder (N, FILE, table|md),
# flags with none, paragraphs joined, no box to wrap.
app = typer.Typer(
    cls=Commands,
    help="Benchmark web stacks fairly: real services, verified responses, honest statistics.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings=HELP_OPTIONS,
    rich_markup_mode=None,
)
services_app = typer.Typer(
    cls=Commands,
    help="Real services for exploration by hand.",
    no_args_is_help=True,
    context_settings=HELP_OPTIONS,
    rich_markup_mode=None,
)
# typer writes a Python type after an argument's name (RUN <str>) and braces around a required
# one in the usage line ({RUN_A}); the help line says what each is, and [RUN] marks optional.
typer.core.TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]
typer.core.TyperArgument._usage_display_name = (  # type: ignore[method-assign]
    lambda self: self.display_name_raw if self.required else f"[{self.display_name_raw}]"
)
# Piped or logged output (CI, `| cat`) is 100 columns wide unless COLUMNS says otherwise,
# not rich's 80 (its tables would wrap into unreadable columns). NO_COLOR is rich's own.
PIPED_WIDTH = 100
console = (
    SafeConsole()
    if sys.stdout.isatty() or environment.COLUMNS in os.environ
    else SafeConsole(width=PIPED_WIDTH)
)
# The plan, progress and what is being built go to stderr: stdout holds only the results, so
# `benchlab run > results.txt` or a CI step's output is the answer alone. --quiet silences it.
progress = (
    SafeConsole(stderr=True)
    if sys.stderr.isatty() or environment.COLUMNS in os.environ
    else SafeConsole(stderr=True, width=PIPED_WIDTH)
)


def emit(document: str) -> None:
    """A document (md, csv, json, …) on stdout, the one way a command prints one: on a
    terminal without control characters (a stored failure reason is a server's log tail,
    which could hold an escape sequence that sets the clipboard or rewrites the screen);
    piped or redirected, as it is."""
    sys.stdout.write(printable(document) if sys.stdout.isatty() else document)


def wrote(path: Path, fmt: str) -> None:
    """The one confirmation of a file a command wrote for its user, on stderr as progress
    is (stdout holds only the answer; --quiet silences it)."""
    progress.print(f"wrote {path} ({fmt})", markup=False, highlight=False, soft_wrap=True)


def _quiet(value: bool) -> None:
    if value:
        progress.quiet = True


def _no_colour(value: bool) -> None:
    if value:
        console.no_color = True
        progress.no_color = True


def _print_version(value: bool) -> None:
    if value:
        print(f"benchlab {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    no_color: Annotated[
        bool, typer.Option("--no-color", help="No colours (as NO_COLOR=1 in the environment).")
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="Nothing on stderr but errors and warnings (no progress, no 'wrote FILE' line).",
        ),
    ] = False,
) -> None:
    """Benchmark web stacks fairly: real services, verified responses, honest statistics.

    Start with `benchlab run` (the quick recipe), then `benchlab report` to see a stored run
    again, `benchlab runs` to list them, `benchlab compare` to compare two."""
    _no_colour(no_color)
    _quiet(quiet)
