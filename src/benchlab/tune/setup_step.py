"""`tune --setup CMD`: a command run once, after benchlab's services start and before the
first candidate launches (`python manage.py migrate`, a fixture load), in the directory
tune was typed in, with the app's environment: its interpreter's directory first on PATH,
--env, --env-file and the addresses of the --with services."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from benchlab.core.errors import UserError
from benchlab.system import users
from benchlab.system.journal import Journal
from benchlab.system.process import signals_deferred
from benchlab.system.safe_files import open_log
from benchlab.tune.app import AppInfo, app_path, user_environment

SETUP_TIMEOUT_S = 600.0
COMMAND_VARIABLE = "BENCHLAB_SETUP_COMMAND"
RUN_COMMAND = f'c=${COMMAND_VARIABLE}; unset {COMMAND_VARIABLE}; eval "$c"'


def run_setup(
    command: str,
    info: AppInfo,
    services: Mapping[str, str],
    log_path: Path,
    say: Callable[[str], None],
    journal: Journal | None = None,
    user: str | None = None,
    option: str = "--setup",
) -> None:
    """Run `command` (as `user`: who the app's servers run as); a failure ends the tune with
    the command's last line of output. It is in the run's `journal` as it starts: a
    benchlab killed meanwhile leaves it to recovery."""
    say(f"setup: running the {option} command")
    given = {
        **info.env_from_file, **info.env, **services,
        "PATH": app_path(info.python),
        # The command through the environment, not argv (`ps` shows argv to every user).
        COMMAND_VARIABLE: command,
    }  # fmt: skip
    argv = ["bash", "-c", RUN_COMMAND]
    with open_log(log_path) as log:
        with signals_deferred():
            if user is not None:
                child = users.start(user, argv, cwd=info.cwd, env=given, stdout=log)
            else:
                child = subprocess.Popen(
                    argv, cwd=info.cwd, env=user_environment(given), stdin=subprocess.DEVNULL,
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                )  # fmt: skip
            if journal is not None:
                journal.add_process(child.pid, int(signal.SIGTERM), None)
        try:
            code = child.wait(timeout=SETUP_TIMEOUT_S)
        except BaseException as exc:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            if isinstance(exc, subprocess.TimeoutExpired):
                raise UserError(
                    f"{option}: still running after {SETUP_TIMEOUT_S:g} s (stopped); give a "
                    "command that ends"
                ) from None
            raise
    if code != 0:
        lines = [line for line in log_path.read_text(errors="replace").splitlines() if line]
        last = lines[-1].strip() if lines else "no output"
        raise UserError(
            f"{option}: exit {code}: {last}; it runs in {info.cwd} with the app's "
            "environment (and the --with services' addresses): fix the command"
        )
