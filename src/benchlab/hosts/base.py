"""A host: where a role (server, database, load) runs, behind one interface.

As httpx puts a local and a remote transport behind one client, every host offers the same
operations — run a command, start a managed process (its own session, pinned, stopped on
any exit), write, read and copy files, make and remove a directory, describe the machine —
whether it is this machine (`local`), a network namespace of it (`netns:NAME`), or another
machine reached over SSH (`ssh://user@addr`). The rest of benchlab never asks which.

Paths are the same on every host: a run's temp directory has one path, made on each host
that needs it, so a command line written here (a config file's path, an output file) means
the same file there. For hosts of this machine the files are the same files; an SSH host
gets the directory's contents copied over before a process needs them (`push`) and back
after (`pull`).
"""

from __future__ import annotations

import glob as globbing
import os
import shutil
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlab.hosts import machine
from benchlab.recipe.host_spec import HostSpec
from benchlab.system import users
from benchlab.system.cpu_account import CpuGroup, Limits, create_group
from benchlab.system.process import (
    ManagedProcess,
    free_port,
    local_listener_pids,
)
from benchlab.system.safe_files import new_dir, new_file
from benchlab.system.trusted_path import NEUTRAL_DIR

COMMAND_TIMEOUT_S = 60.0


class HostError(Exception):
    """A host that cannot be reached or cannot do what a role needs; says which and why."""


class Host(ABC):
    """One place roles run. `address` is where the other hosts reach the servers it runs."""

    def __init__(self, name: str, spec: HostSpec, address: str) -> None:
        self.name = name
        self.spec = spec
        self.address = address

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.spec.text!r})"

    @property
    def same_machine(self) -> bool:
        return self.spec.same_machine

    # --- processes ----------------------------------------------------------------------------

    @abstractmethod
    def start(self, argv: Sequence[str], **kwargs: Any) -> ManagedProcess:
        """A managed process on this host (the arguments of ManagedProcess)."""

    @abstractmethod
    def create_cpu_group(self, limits: Limits | None = None) -> CpuGroup | None:
        """A control group on this host counting a launch's CPU time (and enforcing its
        `limits`), or None where none can be made."""

    @abstractmethod
    def run(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float = COMMAND_TIMEOUT_S,
        user: str | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run a command to its end on this host; its output captured."""

    def check(self, argv: Sequence[str], **kwargs: Any) -> bytes:
        """`run`, raising HostError with the command's own words when it fails."""
        try:
            done = self.run(argv, **kwargs)
        except subprocess.TimeoutExpired:
            raise HostError(f"{self.where}: '{' '.join(argv)}' did not finish in time") from None
        if done.returncode != 0:
            said = (done.stderr or done.stdout).decode(errors="replace").strip()[-300:]
            raise HostError(
                f"{self.where}: '{' '.join(argv)}' failed (exit {done.returncode}): {said}"
            )
        return done.stdout

    # --- files --------------------------------------------------------------------------------

    @abstractmethod
    def make_dir(self, path: Path, mode: int = 0o700, owner: str | None = None) -> None:
        """A new directory (refused, PathTaken, if anything is at `path`), handed to `owner`
        (with its group): root makes what it writes in first, then hands it over."""

    @abstractmethod
    def write_file(
        self,
        path: Path,
        data: str | bytes,
        mode: int = 0o600,
        owner: str | None = None,
        group: str | None = None,
    ) -> None:
        """A new file (refused if anything, a link included, is at `path`) with `mode` from
        its creation, owned by `owner` and/or `group`."""

    @abstractmethod
    def read_file(self, path: Path) -> bytes: ...

    @abstractmethod
    def remove_dir(self, path: Path) -> None: ...

    @abstractmethod
    def push(self, directory: Path) -> None:
        """Make the controller's `directory` (its files) present at the same path here."""

    @abstractmethod
    def pull(self, directory: Path) -> None:
        """Bring what processes here wrote in `directory` back to the controller's copy."""

    @abstractmethod
    def which(self, program: str) -> str | None: ...

    def free_port(self) -> int:
        """A TCP port nothing listens on at this host's addresses now (it may be taken
        before it is bound: starts retry)."""
        return free_port()

    @abstractmethod
    def glob(self, pattern: str) -> list[str]: ...

    # --- the machine --------------------------------------------------------------------------

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """CPU, cores, kernel, versions: what `machine.describe()` says of this machine."""

    @abstractmethod
    def user_name(self) -> str:
        """The user commands run as on this host."""

    @abstractmethod
    def stack_user(self, preferred: str | None = None) -> str | None:
        """The unprivileged user stacks run as here when commands run as root (None: as
        the host's own user); see users.stack_user."""

    def open(self) -> None:  # noqa: B027 - most hosts have no connection to open
        """Connect (an SSH host); raises HostError when it cannot."""

    def close(self) -> None:  # noqa: B027
        """Let go of the connection (an SSH host)."""

    @property
    def where(self) -> str:
        return f"host '{self.name}' ({self.spec.text})"


class ThisMachine(Host):
    """A host that is this machine: its files are ours; processes start as local children,
    through `prefix` (nothing here; `ip netns exec NAME` in a namespace)."""

    prefix: tuple[str, ...] = ()

    def start(self, argv: Sequence[str], **kwargs: Any) -> ManagedProcess:
        return ManagedProcess(argv, prefix=self.prefix, listeners=self.listener_pids, **kwargs)

    def listener_pids(self, port: int) -> set[int] | None:
        return local_listener_pids(port, self.prefix)

    def create_cpu_group(self, limits: Limits | None = None) -> CpuGroup | None:
        return create_group(limits=limits)

    def run(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float = COMMAND_TIMEOUT_S,
        user: str | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        if user is not None:
            return users.run(user, argv, outer=self.prefix, input=input, timeout=timeout)
        return subprocess.run(
            [*self.prefix, *argv],
            input=input, capture_output=True, timeout=timeout, check=False,
            stdin=None if input is not None else subprocess.DEVNULL, cwd=NEUTRAL_DIR,
        )  # fmt: skip

    def make_dir(self, path: Path, mode: int = 0o700, owner: str | None = None) -> None:
        new_dir(path, mode, owner)

    def write_file(
        self,
        path: Path,
        data: str | bytes,
        mode: int = 0o600,
        owner: str | None = None,
        group: str | None = None,
    ) -> None:
        new_file(path, data, mode, owner, group)

    def read_file(self, path: Path) -> bytes:
        return path.read_bytes()

    def remove_dir(self, path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def push(self, directory: Path) -> None:
        pass  # the same files

    def pull(self, directory: Path) -> None:
        pass

    def which(self, program: str) -> str | None:
        return shutil.which(program) or shutil.which(program, path="/usr/sbin:/sbin")

    def glob(self, pattern: str) -> list[str]:
        return sorted(globbing.glob(pattern))

    def describe(self) -> dict[str, Any]:
        return machine.describe()

    def user_name(self) -> str:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name

    def stack_user(self, preferred: str | None = None) -> str | None:
        return users.stack_user(preferred)


class LocalHost(ThisMachine):
    """This machine, in benchlab's own network namespace: its servers on loopback, or on
    the controller's address of the benchmark network when namespaces need to reach it."""

    def __init__(self, name: str = "local", address: str = "127.0.0.1") -> None:
        super().__init__(name, HostSpec("local"), address)


THIS_MACHINE = LocalHost()


@dataclass(frozen=True)
class Placement:
    """A role on a host: where it runs and on which of that host's cores."""

    host: Host
    cores: tuple[int, ...]

    @property
    def machine(self) -> str:
        """Which machine's cores these are: hosts of this machine share them."""
        return "this machine" if self.host.same_machine else self.host.spec.text
