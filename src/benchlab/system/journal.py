"""Every run's journal: what it starts, recorded on disk as it starts, so that what a killed
run leaves can be found and cleaned by the next one (recovery.py).

Every run keeps a journal on disk: its own pid and start time, its temp directories, the
process group and control group of every child, the network namespaces and links it makes
and its directory on each SSH host, as each starts. A clean end removes it.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from benchlab.system.build_cache import state_dir
from benchlab.system.state_files import (
    read_state,
    remove_state,
    state_directory,
    state_names,
    write_state,
)
from benchlab.system.trusted_path import Untrusted


def journal_dir() -> Path:
    return state_dir() / "journal"


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


def leads_its_group(pid: int) -> bool:
    """Whether `pid` leads a process group of its own, as every child benchlab starts does
    (a session of its own): only such a group is signalled as a whole."""
    try:
        return os.getpgid(pid) == pid
    except OSError:
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
        state_directory(self.path.parent, private=True)
        write_state(self.path, json.dumps(self.data))  # never half a journal, even if killed

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
        remove_state(self.path)


def journals() -> list[tuple[Path, dict[str, Any]]]:
    """Every journal this user's benchlab wrote (a file of anyone else's, or a link, is not
    read: recovery kills process groups, removes directories and reads SSH settings from
    what is in it)."""
    directory = journal_dir()
    found = []
    for name in state_names(directory, ".json"):
        path = directory / name
        try:
            text = read_state(path)
        except Untrusted:
            continue
        try:
            data = json.loads(text or b"")
        except ValueError:
            remove_state(path)  # unreadable: nothing to act on
            continue
        if isinstance(data, dict):
            found.append((path, data))
    return found
