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
from dataclasses import dataclass
from pathlib import Path

import psutil

CGROUP_V2_MOUNTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
CGROUP_V1_CPUACCT = Path("/sys/fs/cgroup/cpuacct")
CGROUP_V1_CPU = Path("/sys/fs/cgroup/cpu")
CGROUP_V1_MEMORY = Path("/sys/fs/cgroup/memory")
PERIOD_US = 100_000  # the CFS period a quota is a share of (Docker's and Kubernetes' own)
GROUP_PREFIX = "benchlab-"
PROCESS_TREE = "process tree"  # how CPU is counted where no control group can be made


def _v2_root() -> Path | None:
    for mount in CGROUP_V2_MOUNTS:
        if (mount / "cgroup.procs").exists() and (mount / "cgroup.controllers").exists():
            return mount
    return None


@dataclass(frozen=True)
class Limits:
    """What a container gives its app, as the kernel enforces it on a control group: a CPU
    quota (`cpus` of CPU time each period, fractional as Docker's --cpus) and a memory limit
    (no swap beyond it)."""

    cpus: float | None = None
    memory_bytes: int | None = None

    @property
    def quota_us(self) -> int | None:
        return None if self.cpus is None else max(1000, round(self.cpus * PERIOD_US))


class LimitsUnavailable(Exception):
    """The kernel's CPU or memory controller cannot be used here (not root, not mounted)."""


class CpuGroup:
    """A control group the server is started in; `seconds()` is its CPU time so far. With
    limits, the groups that enforce them too (cgroup v1 keeps each controller in a hierarchy
    of its own): the server joins every one."""

    def __init__(self, path: Path, version: int, limited: tuple[Path, ...] = ()) -> None:
        self.path = path
        self.version = version
        self.limited = limited  # v1: the cpu and memory groups; v2: the group itself

    @property
    def source(self) -> str:
        return f"cgroup v{self.version}"

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` run inside the group(s): the shell joins them, then becomes the command, so
        every process the command forks is counted (and limited) from its first instruction."""
        groups = dict.fromkeys((self.path, *self.limited))
        joins = " && ".join(f"echo $$ > {shlex.quote(str(g / 'cgroup.procs'))}" for g in groups)
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh", *argv]

    def oom_kills(self) -> int:
        """Processes the kernel killed at the group's memory limit so far."""
        for group in (self.path, *self.limited):
            for name in ("memory.events", "memory.oom_control"):
                with contextlib.suppress(OSError):
                    for line in (group / name).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "oom_kill" and value.strip().isdigit():
                            return int(value)
        return 0

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
        """Remove the group(s) once their processes are gone (waits a moment for them)."""
        for group in dict.fromkeys((self.path, *self.limited)):
            _remove(group)


def _remove(group: Path) -> None:
    deadline = time.monotonic() + 2.0
    while True:
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)


def create_group(run_tag: str | None = None, limits: Limits | None = None) -> CpuGroup | None:
    """A fresh group, or None where control groups cannot be made here; with `limits`, they
    are enforced too, or LimitsUnavailable says why not."""
    name = f"{GROUP_PREFIX}{run_tag or os.getpid()}-{uuid.uuid4().hex[:8]}"
    group = _accounting_group(name)
    if limits is None or (limits.cpus is None and limits.memory_bytes is None):
        return group
    if group is None:
        raise LimitsUnavailable("no control group can be made here (benchlab is not root?)")
    try:
        limited = _limit(group, name, limits)
    except OSError as exc:
        group.remove()
        raise LimitsUnavailable(f"the kernel refused the limits ({exc.strerror})") from None
    return CpuGroup(group.path, group.version, limited)


def _limit(group: CpuGroup, name: str, limits: Limits) -> tuple[Path, ...]:
    """The limits written: in the group itself where cgroup v2 has the controllers, else in
    groups of the v1 cpu and memory hierarchies."""
    if group.version == 2 and _v2_controls(group.path.parent):
        if limits.quota_us is not None:
            (group.path / "cpu.max").write_text(f"{limits.quota_us} {PERIOD_US}")
        if limits.memory_bytes is not None:
            (group.path / "memory.max").write_text(str(limits.memory_bytes))
            with contextlib.suppress(OSError):
                (group.path / "memory.swap.max").write_text("0")
        return (group.path,)
    made: list[Path] = []
    try:
        if limits.quota_us is not None:
            cpu = _v1_group(CGROUP_V1_CPU, name, made)
            (cpu / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (cpu / "cpu.cfs_quota_us").write_text(str(limits.quota_us))
        if limits.memory_bytes is not None:
            memory = _v1_group(CGROUP_V1_MEMORY, name, made)
            (memory / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
            with contextlib.suppress(OSError):  # where swap is accounted: none beyond it
                (memory / "memory.memsw.limit_in_bytes").write_text(str(limits.memory_bytes))
    except OSError:
        for path in made:
            _remove(path)
        raise
    return tuple(made)


def _v2_controls(parent: Path) -> bool:
    """Whether children of `parent` have the cpu and memory controllers (enabled if not)."""
    control = parent / "cgroup.subtree_control"
    with contextlib.suppress(OSError):
        if {"cpu", "memory"} <= set(control.read_text().split()):
            return True
        control.write_text("+cpu +memory")
        return {"cpu", "memory"} <= set(control.read_text().split())
    return False


def _v1_group(hierarchy: Path, name: str, made: list[Path]) -> Path:
    if not hierarchy.is_dir():
        raise OSError(2, f"no {hierarchy}")
    path = hierarchy / name
    path.mkdir()
    made.append(path)
    return path


def _accounting_group(name: str) -> CpuGroup | None:
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
    for parent in (*CGROUP_V2_MOUNTS, CGROUP_V1_CPUACCT, CGROUP_V1_CPU, CGROUP_V1_MEMORY):
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
