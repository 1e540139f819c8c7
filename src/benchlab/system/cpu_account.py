"""Exact CPU time of a server's whole process tree: a control group per launch.

Sampling percentages misses the CPU of processes that start and end between samples and
the last moments of those that exit. A control group counts every nanosecond any of its
processes ran, children included, whenever they exit; the trial's CPU time is the counter
after minus the counter before. cgroup v2 (`cpu.stat` usage_usec, which every v2 group has
whether or not the cpu controller is enabled) is preferred; the v1 `cpuacct` hierarchy is
the fallback. Where neither can be written (not root, a read-only /sys/fs/cgroup), the
process tree's own CPU times are summed instead, with what exited children left to their
parents (`children_user`/`children_system`): exact for children that were waited for.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import time
import uuid
from pathlib import Path

import psutil

CGROUP_V2_MOUNTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
CGROUP_V1_CPUACCT = Path("/sys/fs/cgroup/cpuacct")
GROUP_PREFIX = "benchlab-"
PROCESS_TREE = "process tree"  # how CPU is counted where no control group can be made


def _v2_root() -> Path | None:
    for mount in CGROUP_V2_MOUNTS:
        if (mount / "cgroup.procs").exists() and (mount / "cgroup.controllers").exists():
            return mount
    return None


class CpuGroup:
    """A control group the server is started in; `seconds()` is its CPU time so far."""

    def __init__(self, path: Path, version: int) -> None:
        self.path = path
        self.version = version

    @property
    def source(self) -> str:
        return f"cgroup v{self.version}"

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` run inside the group: the shell joins it, then becomes the command, so
        every process the command forks is counted from its first instruction."""
        procs = shlex.quote(str(self.path / "cgroup.procs"))
        return ["/bin/sh", "-c", f'echo $$ > {procs} && exec "$@"', "sh", *argv]

    def _read(self, name: str) -> str:
        return (self.path / name).read_text()

    def seconds(self) -> float:
        if self.version == 2:
            for line in self._read("cpu.stat").splitlines():
                name, _, value = line.partition(" ")
                if name == "usage_usec":
                    return int(value) / 1e6
            raise OSError(f"{self.path}/cpu.stat has no usage_usec")
        return int(self._read("cpuacct.usage")) / 1e9

    def pids(self) -> list[int]:
        try:
            text = (self.path / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(pid) for pid in text.split()]

    def remove(self) -> None:
        """Remove the group once its processes are gone (waits a moment for them)."""
        deadline = time.monotonic() + 2.0
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.05)


def create_group(run_tag: str | None = None) -> CpuGroup | None:
    """A fresh group, or None where control groups cannot be made here."""
    name = f"{GROUP_PREFIX}{run_tag or os.getpid()}-{uuid.uuid4().hex[:8]}"
    root = _v2_root()
    candidates = [(root, 2)] if root is not None else []
    if (CGROUP_V1_CPUACCT / "cpuacct.usage").exists():
        candidates.append((CGROUP_V1_CPUACCT, 1))
    for parent, version in candidates:
        path = parent / name
        try:
            path.mkdir()
        except OSError:
            continue
        group = CpuGroup(path, version)
        try:
            group.seconds()
        except (OSError, ValueError):
            group.remove()
            continue
        return group
    return None


def stale_groups() -> list[Path]:
    """Groups benchlab made and did not remove (a run killed with SIGKILL)."""
    found = []
    for parent in (*CGROUP_V2_MOUNTS, CGROUP_V1_CPUACCT):
        with contextlib.suppress(OSError):
            found += [p for p in parent.iterdir() if p.name.startswith(GROUP_PREFIX)]
    return found


def tree_cpu_seconds(processes: list[psutil.Process]) -> float:
    """CPU time of a process tree, the times of its waited-for exited children included."""
    total = 0.0
    for proc in processes:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total
