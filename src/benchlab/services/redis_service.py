"""Redis with persistence off."""

from __future__ import annotations

from pathlib import Path

import redis

from benchlab.process import ProcessRegistry
from benchlab.services.base import HOST, RunningService, find_program, wait_until
from benchlab.services.ports import free_port


def start_redis(registry: ProcessRegistry, workdir: Path, cores: tuple[int, ...]) -> RunningService:
    base = workdir / "redis"
    base.mkdir(parents=True)
    port = free_port()
    argv = [
        find_program("redis-server"), "--port", str(port), "--bind", HOST,
        "--save", "", "--appendonly", "no", "--dir", str(base), "--daemonize", "no",
        "--protected-mode", "no", "--loglevel", "warning",
    ]  # fmt: skip
    process = registry.start(argv, cores=cores, log_path=base / "redis.log")
    url = f"redis://{HOST}:{port}/0"
    wait_until("redis", process, lambda: redis.Redis.from_url(url, socket_timeout=2).ping())
    return RunningService(
        name="redis", port=port, dsn=url, process=process, env={"BENCHLAB_REDIS_URL": url}
    )


def hit_counters(client: redis.Redis) -> tuple[int, int]:
    stats = client.info("stats")
    return int(stats["keyspace_hits"]), int(stats["keyspace_misses"])
