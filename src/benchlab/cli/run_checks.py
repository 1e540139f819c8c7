"""What `benchlab run` checks before it starts: a long plan confirmed, the tools and the
stacks' user ready, the HTML page's place writable."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from benchlab.cli.app import progress
from benchlab.core.errors import UserError
from benchlab.load import TOOLS, make_ready
from benchlab.system.users import SETPRIV

if TYPE_CHECKING:
    from benchlab.recipe import Plan

# A plan longer than this is run only when confirmed: a list where a value was meant can
# turn a recipe into days of load on a shared machine.
CONFIRM_ABOVE_S = 3600


def confirm_long(seconds: float, yes: bool) -> None:
    """A plan over an hour runs on --yes, or on a 'y' typed at a terminal."""
    from benchlab.core.text import minutes

    if seconds <= CONFIRM_ABOVE_S or yes:
        return
    question = f"the plan takes about {minutes(seconds)}, over an hour"
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UserError(f"{question}; pass --yes to run it (in CI too), or trim the recipe")
    if not typer.confirm(f"{question}: run it?", default=False):
        raise UserError(f"{question}: not started (--yes runs it without asking)")


def check_ready(plan: Plan) -> None:
    """What the run needs on this machine, checked (or built) before anything starts."""
    if shutil.which("taskset") is None:
        raise UserError("'taskset' is not installed: apt-get install util-linux")
    if os.geteuid() == 0 and shutil.which(SETPRIV) is None:
        raise UserError(
            "'setpriv' is not installed (benchlab, as root, runs services and stacks as "
            "unprivileged users through it): apt-get install util-linux"
        )
    if not plan.recipe.hosts:
        _check_stack_user()
    recipe = plan.recipe
    resilience_tools = {"vegeta"} if recipe.drain or recipe.slow_clients else set()
    for name in sorted({c.tool for c in plan.cells} | resilience_tools):
        make_ready(TOOLS[name], progress.print)
    if recipe.slow_clients:
        from benchlab.resilience.slow_clients import missing

        if (problem := missing()) is not None:
            raise UserError(problem)
    if not plan.recipe.hosts and set(plan.cores.server) & set(plan.cores.load):
        progress.print(
            "WARNING: server and load tool share a core on this machine: the figures will "
            "measure their fight for it, not the server",
            style="yellow",
        )


def _check_stack_user() -> None:
    """As root, the stacks run as benchlab's own account: its Python must be one that
    account can run (a Python under /root, or benchlab installed there, it cannot): else
    the stacks' environment is built now, before anything starts (python_env.py)."""
    from benchlab.stacks import python_env
    from benchlab.system.users import stack_user

    python_env.for_user(stack_user())


def html_page(html: Path | None, results: Path, plan: Plan) -> Path:
    """Where the report goes, checked before the run, not after it: it is its last step."""
    page = html or results.parent / (re.sub(r"[^\w.-]+", "-", plan.recipe.name) + ".html")
    from benchlab.system.outputs import check_output_place

    check_output_place(page, "--html", stores=[results], make_directory=html is None)
    return page
