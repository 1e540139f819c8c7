"""What `benchlab run` checks before it starts: a long plan confirmed, the tools and the
stacks' user ready, the HTML page's place writable."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from benchlab.cli.app import progress
from benchlab.core.errors import UserError
from benchlab.load import TOOLS, make_ready

if TYPE_CHECKING:
    from benchlab.recipe import Plan

# A plan longer than this is run only when confirmed: a list where a value was meant can
# turn a recipe into days of load on a shared machine.
CONFIRM_ABOVE_S = 3600


def confirm_long(seconds: float, yes: bool) -> None:
    """A plan over an hour runs on --yes, or on a 'y' typed at a terminal."""
    from benchlab.runner.estimates import minutes

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
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
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
    """As root, the stacks run as an unprivileged user: it must be able to run benchlab's
    Python and import its apps (a Python under /root, or an install there, it cannot)."""
    from benchlab.system.process import STACK_USER_VARIABLE, as_user, stack_user

    user = stack_user()
    if user is None:
        return
    # Through another program, as the stacks are started (taskset): its exec is the check.
    env = shutil.which("env") or "/usr/bin/env"
    argv = [*as_user(user), env, sys.executable, "-I", "-c", "import benchlab.apps"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode == 0:
        return
    chain = reversed(Path(sys.executable).resolve().parents)
    closed = next((str(d) for d in chain if not d.stat().st_mode & 0o001), None)
    where = f" ({closed} is closed to others)" if closed else ""
    raise UserError(
        f"benchlab is root and runs its stacks as {user}, which cannot run {sys.executable}"
        f"{where}: install benchlab with a Python every user can run (./lab does, when it is "
        f"root), run benchlab as a normal user, or set {STACK_USER_VARIABLE}=root to keep the "
        "stacks root"
    )


def html_page(html: Path | None, results: Path, plan: Plan) -> Path:
    """Where the report goes, checked before the run, not after it: it is its last step."""
    page = html or results.parent / (re.sub(r"[^\w.-]+", "-", plan.recipe.name) + ".html")
    try:
        page.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--html {page}: cannot create its directory ({exc.strerror})") from None
    if page.is_dir():
        raise UserError(
            f"--html {page}: is a directory; give a file name such as {page}/report.html"
        )
    return page
