"""What every service shares: a running process, its address, and a clear error on failure."""

from __future__ import annotations

import os
import pwd
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchlab.errors import ServiceError
from benchlab.hosts.base import THIS_MACHINE, Host
from benchlab.process import ManagedProcess

HOST = "127.0.0.1"


@dataclass(frozen=True)
class ServicePlace:
    """Where the services run and who may reach them: the database host, the address the
    stacks and benchlab reach them at, and the addresses (besides the host's own loopback)
    allowed to connect — the server host's, and the controller's for seeding and probes."""

    host: Host = THIS_MACHINE
    address: str = HOST
    clients: tuple[str, ...] = ()

    @property
    def listen(self) -> tuple[str, ...]:
        return (HOST,) if self.address == HOST else (HOST, self.address)

    @property
    def admitted(self) -> tuple[str, ...]:
        """Every address a client may come from: loopback, then the others."""
        return tuple(dict.fromkeys((HOST, *self.clients)))


HERE = ServicePlace()


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


def service_user(name: str, host: Host = THIS_MACHINE) -> str | None:
    """The system user a daemon must run as when benchlab is root there (PostgreSQL
    refuses root)."""
    if host.same_machine:
        root = os.geteuid() == 0
        try:
            pwd.getpwnam(name)
            exists = True
        except KeyError:
            exists = False
    else:
        root = host.user_name() == "root"
        exists = host.run(["id", "-u", name]).returncode == 0
    if not root:
        return None
    if not exists:
        raise ServiceError(
            f"benchlab runs as root on {host.where}, and the '{name}' system user to run the "
            "service as is missing there; install the Debian package that creates it"
        )
    return name


def owned_dir(path: Path, user: str | None, host: Host = THIS_MACHINE, mode: int = 0o755) -> Path:
    """A service's directory on its host; on another machine, the controller keeps one at
    the same path too, for the service's log (its output comes back over the connection)."""
    host.make_dir(path, mode, owner=user)
    if not host.same_machine:
        path.mkdir(parents=True, exist_ok=True)
    return path


def find_program(name: str, host: Host = THIS_MACHINE) -> str:
    found = host.which(name)
    if found is None:
        raise ServiceError(f"'{name}' is not installed on {host.where}; run ./lab setup there")
    return found
