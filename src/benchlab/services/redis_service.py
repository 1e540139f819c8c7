"""Redis with persistence off, behind a password of the run."""

from __future__ import annotations

from pathlib import Path

import redis

from benchlab.process import ProcessRegistry
from benchlab.services.base import (
    HERE,
    RunningService,
    ServicePlace,
    find_program,
    owned_dir,
    service_user,
    wait_until,
)
from benchlab.services.credentials import new_password, record_password
from benchlab.services.ports import free_port


def start_redis(
    registry: ProcessRegistry, workdir: Path, cores: tuple[int, ...], place: ServicePlace = HERE
) -> RunningService:
    host = place.host
    user = service_user("redis", host)
    base = owned_dir(workdir / "redis", user, host)
    port = free_port()
    password = new_password()
    record_password(workdir, "redis", "default", password)
    # In a file, not on the command line, where every local user could read it. Redis has
    # no list of client addresses: off loopback, the password is what keeps others out.
    config = base / "redis.conf"
    host.write_file(config, f"requirepass {password}\n", owner=user)
    argv = [
        find_program("redis-server", host), str(config), "--port", str(port),
        "--bind", *place.listen,
        "--save", "", "--appendonly", "no", "--dir", str(base), "--daemonize", "no",
        "--loglevel", "warning",
    ]  # fmt: skip
    process = registry.start(argv, host=host, cores=cores, log_path=base / "redis.log", user=user)
    url = f"redis://:{password}@{place.address}:{port}/0"
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
