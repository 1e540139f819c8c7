"""Every run's journal: what it starts, recorded on disk as it starts, so that what a killed
run leaves can be found and cleaned by the next one (recovery.py).

Every run keeps a journal on disk: its own pid and start time, its temp directories, the
process group and control group of every child, the network namespaces and links it makes
and its directory on each SSH host, as each starts. A clean end removes it.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from benchlab.core.errors import UserError
from benchlab.system.build_cache import state_dir
from benchlab.system.safe_files import new_file


def journal_dir() -> Path:
    return state_dir() / "journal"


def own_private_dir(path: Path) -> Path:
    """The journal directory, made 0700; one another user owns or may write is refused:
    recovery kills process groups, removes directories and reads SSH settings from what is
    in it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and info.st_mode & 0o077:
        os.chmod(path, 0o700)  # made by an earlier benchlab with the umask's mode
        info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise UserError(
            f"{path}: benchlab's journal directory is not its own (another owner, a link, or "
            "writable by others); remove it, or set BENCHLAB_CACHE to a directory of yours"
        )
    return path


def trusted(path: Path) -> bool:
    """A journal file this user wrote: owned by it, written by nobody else, not a link."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022


def create_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def alive(pid: int, create_time: float | None) -> bool:
    try:
        proc = psutil.Process(pid)
        return (create_time is None or proc.create_time() == create_time) and (
            proc.status() != psutil.STATUS_ZOMBIE
        )
    except psutil.Error:
        return False


class Journal:
    """The on-disk record of one run's children and directories, kept as they start."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.pid = os.getpid()
        self.path = journal_dir() / f"{kind}-{self.pid}.json"
        self.data: dict[str, Any] = {
            "kind": kind,
            "pid": self.pid,
            "create_time": create_time(self.pid),
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "run_id": None,
            "store": None,
            "dirs": [],
            "processes": [],
            "cgroups": [],
            "namespaces": [],
            "links": [],
            "remote": [],
            "shared": False,
        }

    def _write(self) -> None:
        own_private_dir(self.path.parent)
        partial = self.path.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        new_file(partial, json.dumps(self.data))
        partial.replace(self.path)  # never half a journal, even if killed while writing

    def open(self) -> Journal:
        self._write()
        return self

    def set_run(self, run_id: str, store: Path) -> None:
        self.data.update(run_id=run_id, store=str(store.resolve()))
        self._write()

    def add_dir(self, path: Path) -> None:
        self.data["dirs"].append(str(path))
        self._write()

    def add_process(self, pid: int, stop_signal: int, cgroup: str | None) -> None:
        self.data["processes"].append(
            {"pid": pid, "create_time": create_time(pid), "stop_signal": stop_signal}
        )
        if cgroup:
            self.data["cgroups"].append(cgroup)
        self._write()

    def add_network(self, namespaces: list[str], links: list[str]) -> None:
        """Recorded before they are made: a kill in between leaves nothing unnamed."""
        self.data["namespaces"] += namespaces
        self.data["links"] += links
        self._write()

    def add_remote(
        self, target: str, rundir: str, group_tag: str, control_path: str, ssh_config: str | None
    ) -> None:
        self.data["remote"].append(
            {"target": target, "dir": rundir, "group_tag": group_tag,
             "control_path": control_path, "ssh_config": ssh_config}
        )  # fmt: skip
        self._write()

    def owned_namespaces(self) -> set[str]:
        return set(self.data["namespaces"])

    def close(self) -> None:
        self.path.unlink(missing_ok=True)


def journals() -> list[tuple[Path, dict[str, Any]]]:
    """Every journal this user's benchlab wrote (a file of anyone else's is not read)."""
    directory = journal_dir()
    if not directory.exists():
        return []
    own_private_dir(directory)
    found = []
    for path in sorted(directory.glob("*.json")):
        if not trusted(path):
            continue
        try:
            found.append((path, json.loads(path.read_text())))
        except (OSError, ValueError):
            path.unlink(missing_ok=True)  # unreadable: nothing to act on
    return found
