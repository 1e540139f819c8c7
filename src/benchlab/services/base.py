"""What every service shares: a running process, its address, and a clear error on failure."""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchlab.errors import ServiceError
from benchlab.process import ManagedProcess

HOST = "127.0.0.1"


@dataclass
class RunningService:
    name: str
    port: int
    dsn: str  # the app user's address, its password included
    process: ManagedProcess
    env: dict[str, str] = field(default_factory=dict)  # what stacks need to reach it
    password: str = ""  # the app user's, of this run only
    monitor_dsn: str = ""  # what benchlab's own probes connect with, when not `dsn`

    def log_tail(self, lines: int = 8) -> str:
        return self.process.log_tail(lines)

    @property
    def public_dsn(self) -> str:
        """The DSN without its password: what results and reports may keep."""
        if not self.password:
            return self.dsn
        return self.dsn.replace(f":{self.password}@", ":***@")


def service_error(name: str, argv: list[str], problem: str, log_tail: str) -> ServiceError:
    tail = "\n".join(f"    {line}" for line in log_tail.splitlines()) or "    (empty log)"
    return ServiceError(
        f"{name} failed to start: {problem}\n"
        f"  command: {shlex.join(argv)}\n"
        f"  last log lines:\n{tail}"
    )


def wait_until(
    name: str,
    process: ManagedProcess,
    ready: Callable[[], bool],
    timeout: float = 30.0,
) -> None:
    """Poll `ready` until it is true; a dead process or a timeout is a ServiceError."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.alive():
            raise service_error(
                name, process.argv, f"exited with code {process.returncode}", process.log_tail()
            )
        try:
            if ready():
                return
        except Exception:
            pass
        time.sleep(0.1)
    raise service_error(name, process.argv, f"not ready after {timeout:.0f} s", process.log_tail())


def service_user(name: str) -> str | None:
    """The system user a daemon must run as when benchlab is root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(name)
    except KeyError:
        raise ServiceError(
            f"benchlab runs as root, and the '{name}' system user to run the service as is "
            f"missing; install the Debian package that creates it"
        ) from None
    return name


def owned_dir(path: Path, user: str | None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    if user is not None:
        shutil.chown(path, user, user)
    return path


def find_program(name: str, *extra_dirs: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=":".join((*extra_dirs, "/usr/sbin")))
    if found is None:
        raise ServiceError(f"'{name}' is not installed; run ./lab setup")
    return found
