"""The benchlab command line: the commands, registered in the order --help lists them, and
the entry point that turns benchlab's errors into one line and an exit code."""

from __future__ import annotations

import sys
import traceback

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


def main() -> None:
    try:
        app()
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
