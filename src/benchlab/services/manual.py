"""`benchlab services up` / `down`: the real services, kept running for exploration by hand."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import psutil

from benchlab.core.errors import UserError
from benchlab.services.base import RunningService
from benchlab.system.build_cache import state_dir
from benchlab.system.journal import leads_its_group
from benchlab.system.process import ProcessRegistry
from benchlab.system.safe_files import made_here, tmp_base
from benchlab.system.state_files import read_state, remove_state, write_state

# Each service's module imports its client library (psycopg, pymysql, redis: about 0.4 s
# together), so it is imported where that service is started or probed: a run, or a
# command, that needs none of them does not pay for them.


WORKROOT_PREFIX = "bl-services-"


def state_file() -> Path:
    return state_dir() / "services.json"


def _alive(pid: int, create_time: float) -> bool:
    try:
        proc = psutil.Process(pid)
        return proc.create_time() == create_time and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def services_up(
    cores: tuple[int, ...], *, postgres: bool, pgbouncer: bool, mariadb: bool, redis: bool
) -> list[RunningService]:
    from benchlab.services.mariadb import start_mariadb  # client libraries: see the top
    from benchlab.services.pgbouncer import start_pgbouncer
    from benchlab.services.postgres import start_postgres
    from benchlab.services.redis_service import start_redis

    path = state_file()
    earlier = _read_state(path)
    if earlier is not None:
        if any(_alive(p["pid"], p["create_time"]) for p in earlier["processes"]):
            raise UserError(
                f"services are already up (see {path}); run 'benchlab services down' first"
            )
        _remove(earlier)
    workroot = Path(tempfile.mkdtemp(prefix=WORKROOT_PREFIX, dir=tmp_base()))
    workroot.chmod(0o711)
    registry = ProcessRegistry()
    started: list[RunningService] = []
    state: dict = {"workroot": str(workroot), "processes": [], "services": {}}
    _write_state(path, state)  # from now on `services down` can undo whatever started

    def keep(service: RunningService) -> RunningService:
        """Recorded the moment it runs: an interrupted `up` leaves nothing `down` misses."""
        started.append(service)
        state["processes"].append(
            {
                "name": service.name,
                "pid": service.process.pid,
                "create_time": psutil.Process(service.process.pid).create_time(),
                "stop_signal": int(service.process.stop_signal),
            }
        )
        state["services"][service.name] = service.dsn
        _write_state(path, state)
        return service

    try:
        if postgres or pgbouncer:
            main = keep(start_postgres(registry, workroot, cores, max_connections=200))
            if pgbouncer:
                keep(start_pgbouncer(registry, workroot, cores, main, "transaction", 20))
        if mariadb:
            keep(start_mariadb(registry, workroot, cores, max_connections=200))
        if redis:
            keep(start_redis(registry, workroot, cores))
    except BaseException:
        registry.stop_all()
        shutil.rmtree(workroot, ignore_errors=True)
        remove_state(path)
        raise
    return started


def _write_state(path: Path, state: dict) -> None:
    """The state carries the services' passwords: only its owner may read it (0600)."""
    write_state(path, json.dumps(state, indent=2))


def _read_state(path: Path) -> dict | None:
    """What `services up` recorded: believed only from a state file of this user's (see
    system/state_files.py), since `down` signals the process groups and removes the
    directory it names; one of another shape is refused in one line."""
    data = read_state(path)
    if data is None:
        return None
    try:
        state = json.loads(data)
        for entry in state["processes"]:
            int(entry["pid"]), float(entry["create_time"]), signal.Signals(entry["stop_signal"])
        Path(state["workroot"])
    except (ValueError, KeyError, TypeError):
        raise UserError(
            f"{path}: not what 'benchlab services up' writes; stop what it started by hand, "
            "then remove it"
        ) from None
    return state


def services_down() -> list[str]:
    path = state_file()
    state = _read_state(path)
    if state is None:
        return []
    stopped = _remove(state)
    remove_state(path)
    return stopped


def _workroot(state: dict) -> Path | None:
    """The directory `services up` made, when it is one: named as it names them, directly
    in the temporary directory, a directory of this user's (not a link)."""
    workroot = Path(state["workroot"])
    made = workroot.parent == tmp_base() and workroot.name.startswith(WORKROOT_PREFIX)
    return workroot if made and made_here(workroot) else None


def _remove(state: dict) -> list[str]:
    stopped = []
    for entry in state["processes"]:
        if not _alive(entry["pid"], entry["create_time"]) or not leads_its_group(entry["pid"]):
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(entry["pid"], signal.Signals(entry["stop_signal"]))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _alive(entry["pid"], entry["create_time"]):
            time.sleep(0.1)
        if _alive(entry["pid"], entry["create_time"]):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(entry["pid"], signal.SIGKILL)
        stopped.append(entry["name"])
    workroot = _workroot(state)
    if workroot is not None:
        shutil.rmtree(workroot, ignore_errors=True)
    return stopped
