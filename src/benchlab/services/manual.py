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
from benchlab.services.credentials import write_private
from benchlab.system.build_cache import state_dir
from benchlab.system.process import ProcessRegistry
from benchlab.system.safe_files import tmp_base

# Each service's module imports its client library (psycopg, pymysql, redis: about 0.4 s
# together), so it is imported where that service is started or probed: a run, or a
# command, that needs none of them does not pay for them.


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
    if path.exists():
        earlier = json.loads(path.read_text())
        if any(_alive(p["pid"], p["create_time"]) for p in earlier["processes"]):
            raise UserError(
                f"services are already up (see {path}); run 'benchlab services down' first"
            )
        _remove(earlier)
    workroot = Path(tempfile.mkdtemp(prefix="bl-services-", dir=tmp_base()))
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
        path.unlink(missing_ok=True)
        raise
    return started


def _write_state(path: Path, state: dict) -> None:
    """The state carries the services' passwords: only its owner may read it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_private(path, json.dumps(state, indent=2))


def services_down() -> list[str]:
    path = state_file()
    if not path.exists():
        return []
    state = json.loads(path.read_text())
    stopped = _remove(state)
    path.unlink()
    return stopped


def _remove(state: dict) -> list[str]:
    stopped = []
    for entry in state["processes"]:
        if not _alive(entry["pid"], entry["create_time"]):
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
    shutil.rmtree(state["workroot"], ignore_errors=True)
    return stopped
