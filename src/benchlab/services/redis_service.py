"""Redis with persistence off, behind a password of the run."""

from __future__ import annotations

from pathlib import Path

import redis

from benchlab.process import ProcessRegistry
from benchlab.services.base import (
    HOST,
    RunningService,
    find_program,
    owned_dir,
    service_user,
    wait_until,
)
from benchlab.services.credentials import new_password, record_password, write_private
from benchlab.services.ports import free_port


def start_redis(registry: ProcessRegistry, workdir: Path, cores: tuple[int, ...]) -> RunningService:
    user = service_user("redis")
    base = owned_dir(workdir / "redis", user)
    port = free_port()
    password = new_password()
    record_password(workdir, "redis", "default", password)
    # In a file, not on the command line, where every local user could read it.
    config = write_private(base / "redis.conf", f"requirepass {password}\n", owner=user)
    argv = [
        find_program("redis-server"), str(config), "--port", str(port), "--bind", HOST,
        "--save", "", "--appendonly", "no", "--dir", str(base), "--daemonize", "no",
        "--loglevel", "warning",
    ]  # fmt: skip
    process = registry.start(argv, cores=cores, log_path=base / "redis.log", user=user)
    url = f"redis://:{password}@{HOST}:{port}/0"
    wait_until("redis", process, lambda: _answers(url))
    return RunningService(
        name="redis",
        port=port,
        dsn=url,
        process=process,
        env={"BENCHLAB_REDIS_URL": url},
        password=password,
    )


def _answers(url: str) -> bool:
    with redis.Redis.from_url(url, socket_timeout=2) as client:
        return bool(client.ping())


def hit_counters(client: redis.Redis) -> tuple[int, int]:
    stats = client.info("stats")
    return int(stats["keyspace_hits"]), int(stats["keyspace_misses"])
