"""What every service shares: a running process, its address, and a clear error on failure."""

from __future__ import annotations

import contextlib
import os
import pwd
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab.core.errors import ServiceError
from benchlab.core.service_kinds import Service
from benchlab.hosts.base import THIS_MACHINE, Host
from benchlab.system.process import ManagedProcess, ProcessRegistry

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


@dataclass(frozen=True)
class Reserved:
    """A service's address decided before it starts: tune imports the user's app with it
    (an app that reads REDIS_URL at import), then the service starts there — on that port
    unless another program took it meanwhile."""

    port: int
    password: str


@dataclass
class RunningService:
    name: Service
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


PORT_ATTEMPTS = 3
BIND_FAILED = ("address already in use", "could not bind", "bind on tcp/ip port")


def start_listening(
    name: str,
    registry: ProcessRegistry,
    host: Host,
    argv_for: Callable[[int], list[str]],
    ready: Callable[[int, ManagedProcess], bool],
    first_port: int | None = None,
    **start: Any,
) -> tuple[ManagedProcess, int]:
    """Start a daemon on a port free on its own host, and wait until `ready(port, process)`.
    A port taken in between (ports are chosen, released, then bound: another program may
    take it) is given up for a fresh one, twice at most, as a stack's is."""
    for attempt in range(PORT_ATTEMPTS):
        port = first_port if attempt == 0 and first_port else host.free_port()
        process = registry.start(argv_for(port), host=host, **start)
        try:
            wait_until(name, process, lambda: ready(port, process))  # noqa: B023 - used now
            return process, port
        except ServiceError:
            taken = any(m in process.log_tail(30).lower() for m in BIND_FAILED)
            registry.stop(process)
            if not taken or attempt == PORT_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


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


def group_of(user: str | None, host: Host = THIS_MACHINE) -> str | None:
    """The group of a daemon's user on its host (None: no user to run as)."""
    if user is None:
        return None
    if host.same_machine:
        import grp

        return grp.getgrgid(pwd.getpwnam(user).pw_gid).gr_name
    return host.check(["id", "-gn", user]).decode().strip()


@dataclass(frozen=True)
class ServiceDirs:
    """Where a service keeps what: `config`, root's own directory (made by benchlab, written
    by it only, traversable by the daemon), with the configuration it writes before the
    daemon starts; `logs`, the controller's, where the daemon's output is written (owner
    only); and the daemon's own `data` directory, when it has one, which root never writes
    in. A daemon's user can then plant no link where root writes (safe_files.py)."""

    config: Path
    logs: Path
    data: Path | None = None

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"


def service_dirs(
    base: Path, name: str, user: str | None, host: Host = THIS_MACHINE, data: str | None = None,
    data_mode: int = 0o700,
) -> ServiceDirs:  # fmt: skip
    """`base/name` (root's, 0711), with `data` inside it handed to the daemon's `user`, and
    the run's log directory (`base/logs`, 0700, on the controller)."""
    config = base / name
    host.make_dir(config, 0o711)
    data_dir = None
    if data is not None:
        data_dir = config / data
        host.make_dir(data_dir, data_mode, owner=user)
    return ServiceDirs(config, log_dir(base), data_dir)


def log_dir(base: Path) -> Path:
    """The services' logs on the controller: root's, owner only (made once a run)."""
    logs = base / "logs"
    with contextlib.suppress(FileExistsError):
        os.mkdir(logs, 0o700)
    if logs.is_symlink() or not logs.is_dir() or logs.stat().st_uid != os.geteuid():
        raise ServiceError(f"{logs} is not benchlab's own directory; refusing to write there")
    return logs


def find_program(name: str, host: Host = THIS_MACHINE) -> str:
    found = host.which(name)
    if found is None:
        raise ServiceError(f"'{name}' is not installed on {host.where}; run ./lab setup there")
    return found
