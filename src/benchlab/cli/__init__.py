"""The benchlab command line: the commands, registered in the order --help lists them, and
the entry point that turns benchlab's errors into one line and an exit code."""

from __future__ import annotations

import difflib
import re
import sys
import traceback

import typer

# typer 0.29 carries click within it (typer._click) and exports its usage errors nowhere else.
from typer._click.exceptions import ClickException, NoArgsIsHelpError, NoSuchOption, UsageError

from benchlab.cli.app import app, services_app
from benchlab.cli.catalogue import build, recipes, stacks
from benchlab.cli.conform import conform
from benchlab.cli.contract import epilog
from benchlab.cli.doctor import doctor
from benchlab.cli.drain import drain
from benchlab.cli.reading import compare, history, report, runs
from benchlab.cli.run import run
from benchlab.cli.selfcheck import selfcheck
from benchlab.cli.services import services_down, services_up
from benchlab.cli.slow_clients import slow_clients
from benchlab.cli.tune import tune
from benchlab.core.errors import BenchlabError, ExitCode
from benchlab.core.text import printable

# Commands import the heavier modules they need inside them: `--help`, `stacks` and `doctor`
# start without the runner, the reports and matplotlib (together about 0.7 s on 2 cores).
COMMANDS = (
    run, tune, report, recipes, runs, stacks, doctor, history, compare, conform, drain,
    slow_clients, selfcheck, build,
)  # fmt: skip
for command in COMMANDS:
    app.command(epilog=epilog(command.__name__.replace("_", "-")))(command)
services_app.command("up", epilog=epilog("services up"))(services_up)
services_app.command("down", epilog=epilog("services down"))(services_down)
app.add_typer(services_app, name="services")


def _typed_command(args: list[str]) -> str:
    """The command a command line names (`benchlab services up`), for an error click raised
    without its context."""
    path, group = ["benchlab"], typer.main.get_command(app)
    for word in args:
        commands = getattr(group, "commands", {})
        if word in commands:
            path.append(word)
            group = commands[word]
        elif not word.startswith("-"):
            break
    return " ".join(path)


def usage_error(exc: UsageError, args: list[str]) -> str:
    """A usage error as benchlab's one line: the command, what was wrong, the closest option
    or command (`did you mean`), and where its usage is."""
    ctx = exc.ctx
    path = ctx.command_path if ctx is not None else _typed_command(args)
    if isinstance(exc, NoSuchOption):
        known = exc.possibilities or [
            name for param in ctx.command.params for name in getattr(param, "opts", ())
        ] if ctx is not None else exc.possibilities or []  # fmt: skip
        close = difflib.get_close_matches(exc.option_name, sorted(set(known)), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return f"{path}: no such option {exc.option_name}{hint}; {path} -h lists its options"
    said = exc.format_message().strip().rstrip(".")
    said = re.sub(r"\. Did you mean (.+)\?$", r" (did you mean \1?)", said)
    said = said[:1].lower() + said[1:]
    if said.startswith("no such command"):
        return f"{path}: {said}; {path} -h lists its commands"
    if ctx is None:
        return f"{path}: {said}; {path} -h shows its usage"
    return f"{path}: {said} (usage: {ctx.command.get_usage(ctx).removeprefix('Usage: ')})"


def main() -> None:
    try:
        code = app(standalone_mode=False)
    except NoArgsIsHelpError as exc:
        # `benchlab` or `benchlab services` alone: asking for help is not a mistake.
        print(exc.ctx.get_help())
        sys.exit(ExitCode.SUCCESS)
    except UsageError as exc:
        print(f"error: {printable(usage_error(exc, sys.argv[1:]))}", file=sys.stderr)
        sys.exit(ExitCode.BAD_INPUT)
    except typer.Abort:  # Ctrl-C at a prompt
        sys.exit(ExitCode.INTERRUPTED)
    except ClickException as exc:
        print(f"error: {printable(exc.format_message())}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except BenchlabError as exc:
        # Plain text, never wrapped: it names the file, the key and the fix. Whatever it
        # quotes (a recipe's value, a server's log) reaches the terminal without controls.
        print(f"error: {printable(str(exc))}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except Exception:
        # A bug of benchlab's own: its traceback (to report it), and the harness's exit code,
        # not Python's 1, which CI reads as "slower".
        traceback.print_exc()
        print("error: benchlab failed (a bug: please report the traceback above)", file=sys.stderr)
        sys.exit(ExitCode.HARNESS)
    # A command's own exit code (typer.Exit), or 0 when it returned.
    sys.exit(code if isinstance(code, int) else ExitCode.SUCCESS)
