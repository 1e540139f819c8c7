"""What a run leaves if it is killed (SIGKILL, the OOM killer, a CI timeout), and how the
next one cleans it, from the journal every run keeps (journal.py).

A journal whose owner is gone is stale: the next `benchlab run`, `tune` or `doctor` stops
every process it lists (process groups, then control groups, which also hold the orphans
that left their group), removes its directories and marks its run `abandoned` in its
store. A journal whose owner is alive means another run is using this machine: a second
run refuses to start (or, with --allow-concurrent, warns and says so in its results).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from benchlab.core import environment
from benchlab.core.errors import UserError
from benchlab.hosts.netns import existing_namespaces, remove_link, remove_namespace
from benchlab.hosts.ssh import cleanup_script, run_over_ssh
from benchlab.recipe.host_spec import parse_spec
from benchlab.system.cpu_account import GROUP_PREFIX, stale_groups
from benchlab.system.journal import alive, journal_dir, journals, leads_its_group
from benchlab.system.outputs import check_store_place
from benchlab.system.safe_files import made_here
from benchlab.system.state_files import open_lock, remove_state, state_directory, write_state
from benchlab.system.trusted_path import NEUTRAL_DIR

GRACE_S = 5.0


@dataclass(frozen=True)
class Stale:
    """What a cleanup found and did."""

    pid: int
    run_id: str | None
    processes: int
    dirs: int
    namespaces: int = 0
    remote: tuple[str, ...] = ()  # SSH hosts cleaned (or that could not be reached)

    def describe(self) -> str:
        run = f" (run {self.run_id}, now marked abandoned)" if self.run_id else ""
        extra = f", removed {self.namespaces} network namespace(s)" if self.namespaces else ""
        extra += "".join(f", {line}" for line in self.remote)
        return (
            f"a benchlab killed while running (pid {self.pid}){run}: stopped {self.processes} "
            f"process(es), removed {self.dirs} director(ies){extra}"
        )


def live_runs() -> list[dict[str, Any]]:
    """Journals of runs whose benchlab is still running (not this process)."""
    return [
        data for _, data in journals()
        if data["pid"] != os.getpid() and alive(data["pid"], data.get("create_time"))
    ]  # fmt: skip


def _stop(entries: list[dict[str, Any]]) -> int:
    """Stop signal to each process group, one deadline for all, then SIGKILL."""
    living = [
        e for e in entries if alive(e["pid"], e.get("create_time")) and leads_its_group(e["pid"])
    ]
    for entry in living:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(entry["pid"], signal.Signals(entry.get("stop_signal", signal.SIGTERM)))
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline and any(
        alive(e["pid"], e.get("create_time")) for e in living
    ):
        time.sleep(0.1)
    for entry in living:
        if alive(entry["pid"], entry.get("create_time")):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(entry["pid"], signal.SIGKILL)
    return len(living)


def _empty_group(path: Path) -> int:
    """Kill whatever is left in a control group (the orphans too), then remove it."""
    killed = 0
    procs = path / "cgroup.procs"
    with contextlib.suppress(OSError):
        pids = [int(p) for p in procs.read_text().split()]
        killed = len(pids)
        if (path / "cgroup.kill").exists():
            (path / "cgroup.kill").write_text("1")
        else:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            path.rmdir()
            break
        except FileNotFoundError:
            break
        except OSError:
            time.sleep(0.05)
    return killed


def _abandon(store: str | None, run_id: str | None, pid: int) -> None:
    if not store or not run_id or not Path(store).exists():
        return
    with contextlib.suppress(sqlite3.Error, UserError):
        check_store_place(Path(store))  # as root, never through another user's link
        db = sqlite3.connect(store, timeout=5)
        db.execute(
            "UPDATE runs SET status = 'abandoned', status_reason = ?, ended_at = ?"
            " WHERE id = ? AND status = 'running'",
            (
                f"benchlab (pid {pid}) was killed; cleaned up by the next benchlab",
                datetime.now(UTC).isoformat(timespec="seconds"),
                run_id,
            ),
        )
        db.commit()
        db.close()


def _clean_network(namespaces: list[str], links: list[str]) -> int:
    present = existing_namespaces() & set(namespaces)
    for name in present:
        remove_namespace(name)
    for link in links:
        remove_link(link)
    return len(present)


def _clean_remote(entry: dict[str, Any]) -> tuple[bool, str]:
    """Stop what a killed run left on an SSH host and remove its directory there."""
    spec = parse_spec(entry["target"])
    previous = os.environ.get(environment.SSH_CONFIG)
    if entry.get("ssh_config"):
        os.environ[environment.SSH_CONFIG] = entry["ssh_config"]
    try:
        done = run_over_ssh(
            spec, None, cleanup_script(entry["dir"], entry["group_tag"]), timeout=60
        )
        reached = done.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        reached = False
    finally:
        if entry.get("ssh_config"):
            if previous is None:
                os.environ.pop(environment.SSH_CONFIG, None)
            else:
                os.environ[environment.SSH_CONFIG] = previous
    control = Path(entry.get("control_path") or "/nonexistent")
    if control.exists():
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(
                ["ssh", "-o", f"ControlPath={control}", "-O", "exit", "--", spec.addr],
                capture_output=True, timeout=10, check=False, cwd=NEUTRAL_DIR,
            )  # fmt: skip
    if reached:
        return True, f"cleaned {entry['dir']} on {spec.text}"
    return False, (
        f"could NOT reach {spec.text} to clean {entry['dir']}: when it answers, run "
        "'benchlab doctor' again"
    )


def clean_stale() -> list[Stale]:
    """Clean every journal whose owner is gone, and control groups no journal owns."""
    cleaned = []
    for path, data in journals():
        if alive(data["pid"], data.get("create_time")):
            continue
        stopped = _stop(data.get("processes", []))
        for group in data.get("cgroups", []):
            stopped += _empty_group(Path(group))
        remote_done = [(entry, *_clean_remote(entry)) for entry in data.get("remote", [])]
        remote = tuple(message for _, _, message in remote_done)
        namespaces = _clean_network(data.get("namespaces", []), data.get("links", []))
        dirs = 0
        for directory in data.get("dirs", []):
            if made_here(Path(directory)):
                shutil.rmtree(directory, ignore_errors=True)
                dirs += 1
        _abandon(data.get("store"), data.get("run_id"), data["pid"])
        unreached = [entry for entry, reached, _ in remote_done if not reached]
        if unreached:  # kept, so that a later doctor tries those hosts again
            empty: dict[str, list[object]] = {
                "processes": [],
                "cgroups": [],
                "dirs": [],
                "namespaces": [],
                "links": [],
            }
            write_state(path, json.dumps({**data, **empty, "remote": unreached}))
        else:
            remove_state(path)
        cleaned.append(Stale(data["pid"], data.get("run_id"), stopped, dirs, namespaces, remote))
    for group in stale_groups():
        owner = group.name.removeprefix(GROUP_PREFIX).split("-")[0]
        if owner.isdigit() and not psutil.pid_exists(int(owner)):
            killed = _empty_group(group)
            if killed:
                cleaned.append(Stale(int(owner), None, killed, 0))
    return cleaned


# The machine's lock, held by this process from its claim to its exit (the kernel lets go
# of it however the process ends, SIGKILL included), in the journal directory.
RUN_LOCK_FILE = "machine.lock"
_HELD: list[int] = []


def _lock() -> bool:
    """Take the run lock (flock on the journal directory's `machine.lock`); False when
    another benchlab holds it."""
    if _HELD:
        return True
    descriptor = open_lock(state_directory(journal_dir(), private=True) / RUN_LOCK_FILE)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return False
    _HELD.append(descriptor)
    return True


def claim_machine(allow_concurrent: bool, say) -> bool:
    """Take the machine for this run: a lock held until this process ends, taken before
    anything else (two runs started together cannot both pass); clean what killed runs left;
    refuse to share the machine with a live run unless allowed. True when it is shared."""
    if not allow_concurrent and not _lock():
        others = live_runs()  # the lock's holder, once its journal is written
        raise UserError(
            _busy(others[0])
            if others
            else "another benchlab is starting a run on this machine (it holds the run lock): "
            "two at once make both sets of figures false; wait for it, or pass "
            "--allow-concurrent to share the machine (its results will say so)"
        )
    for stale in clean_stale():
        say(f"cleaned up after {stale.describe()}")
    others = live_runs()
    if not others:
        return False
    if not allow_concurrent:  # a run of a benchlab that took no lock
        raise UserError(_busy(others[0]))
    say(
        f"WARNING: sharing this machine with benchlab pid {others[0]['pid']}: the figures of "
        "both runs measure that too"
    )
    return True


def _busy(other: dict[str, Any]) -> str:
    run = f", run {other['run_id']}" if other.get("run_id") else ""
    return (
        f"another benchlab {other['kind']} is using this machine (pid {other['pid']}, since "
        f"{other['started_at']}{run}): two at once make both sets of figures false; wait for "
        "it, or pass --allow-concurrent to share the machine (its results will say so)"
    )
