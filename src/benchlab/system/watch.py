"""A server benchlab did not start, watched on this machine: its CPU time and resident memory
counted as a launch's are (measure/monitor.py), by the process tree of its main pid, or by
its control group (a path under /sys/fs/cgroup, or a systemd unit's).

`benchlab tune URL --pid PID` (or `--cgroup PATH`, `--unit NAME`) reads it around each
trial; without one, an endpoint's CPU per request and memory are not measured, and the
report says why.
"""

from __future__ import annotations

import contextlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psutil

from benchlab.system.cpu_account import CGROUP_V2_MOUNTS, tree_cpu_seconds
from benchlab.system.process import descendant_pids, living, resident
from benchlab.system.trusted_path import NEUTRAL_DIR

SYSTEMCTL_TIMEOUT_S = 10.0


class WatchUnavailable(Exception):
    """The pid, control group or unit named cannot be watched here; says which and why."""


@dataclass(frozen=True)
class PidWatch:
    """A process and everything it forks (the tree of its main pid)."""

    pid: int

    @property
    def source(self) -> str:
        return f"process tree of pid {self.pid}"

    def processes(self) -> list[psutil.Process]:
        pids = descendant_pids(self.pid)
        if pids is None:
            try:
                root = psutil.Process(self.pid)
                return [root, *root.children(recursive=True)]
            except psutil.Error:
                return []
        return living(pids)

    def cpu_seconds(self) -> tuple[float, str]:
        return tree_cpu_seconds(self.processes()), self.source

    def alive(self) -> bool:
        return psutil.pid_exists(self.pid)


@dataclass(frozen=True)
class CgroupWatch:
    """A control group (cgroup v2): its CPU counter, and the processes in it."""

    path: Path
    named: str  # as the user gave it: the path, or the systemd unit

    @property
    def source(self) -> str:
        return f"cgroup v2 ({self.named})"

    def processes(self) -> list[psutil.Process]:
        pids = []
        for procs in self.path.rglob("cgroup.procs"):
            with contextlib.suppress(OSError):
                pids += [int(pid) for pid in procs.read_text().split()]
        return living(pids)

    def cpu_seconds(self) -> tuple[float, str]:
        for line in (self.path / "cpu.stat").read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "usage_usec":
                return int(value) / 1e6, self.source
        raise OSError(f"{self.path}/cpu.stat has no usage_usec")

    def alive(self) -> bool:
        return bool(self.processes())


Watch = PidWatch | CgroupWatch


def memory_sample(watch: Watch) -> tuple[int, set[tuple[int, float]]]:
    """Resident memory of what is watched now, in bytes, and its processes (pid, start)."""
    return resident(watch.processes())


def by_pid(pid: int) -> PidWatch:
    try:
        psutil.Process(pid).cpu_times()
    except psutil.NoSuchProcess:
        raise WatchUnavailable(f"no process {pid} runs here") from None
    except psutil.AccessDenied:
        raise WatchUnavailable(f"process {pid} is another user's: run benchlab as root") from None
    return PidWatch(pid)


def by_cgroup(given: str) -> CgroupWatch:
    """A control group by its path (absolute, or under the cgroup v2 mount)."""
    path = Path(given)
    candidates = [path] if path.is_absolute() else []
    candidates += [mount / given.lstrip("/") for mount in CGROUP_V2_MOUNTS]
    for where in candidates:
        if (where / "cpu.stat").is_file() and (where / "cgroup.procs").is_file():
            return CgroupWatch(where, given)
    raise WatchUnavailable(
        f"no cgroup v2 group {given} (looked for its cpu.stat under "
        f"{', '.join(str(m) for m in CGROUP_V2_MOUNTS)})"
    )


def by_unit(unit: str) -> CgroupWatch:
    """A systemd unit's control group, as systemd reports it."""
    try:
        done = subprocess.run(
            ["systemctl", "show", "--property", "ControlGroup", "--value", unit],
            capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT_S, check=False,
            cwd=NEUTRAL_DIR,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WatchUnavailable(f"systemctl could not be asked about {unit} ({exc})") from None
    group = done.stdout.strip()
    if done.returncode != 0 or not group:
        said = (done.stderr.strip() or "no control group: is it running?").splitlines()[-1]
        raise WatchUnavailable(f"systemd unit {unit}: {said}")
    found = by_cgroup(group)
    return CgroupWatch(found.path, f"unit {unit}")
