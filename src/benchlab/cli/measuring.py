"""What every command that puts load on this machine shares: the claim on it, the progress
shown, and the command line stored with its run."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from benchlab.cli.app import progress

if TYPE_CHECKING:
    from benchlab.runner import Reporter


def claim(allow_concurrent: bool) -> bool:
    """This machine for one run (stale runs cleaned first); whether another run shares it."""
    from benchlab.runner.recovery import claim_machine

    return claim_machine(allow_concurrent, progress.print)


def reporter() -> Reporter:
    from benchlab.report.progress import BarReporter, LineReporter

    return BarReporter(progress) if progress.is_terminal else LineReporter(progress)


def command_line() -> str:
    """The command as the user typed it, stored with the run to reproduce it: what it was
    given as secrets (tune's --env values, --setup) hidden."""
    from benchlab.tune.user_env import masked_command

    return "benchlab " + masked_command(sys.argv[1:])
