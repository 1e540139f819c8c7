"""Redis with persistence off, behind a password of the run."""

from __future__ import annotations

from pathlib import Path

import redis

from benchlab.core.service_kinds import Service
from benchlab.services.base import (
    HERE,
    Reserved,
    RunningService,
    ServicePlace,
    find_program,
    group_of,
    service_dirs,
    service_user,
    start_listening,
)
from benchlab.services.credentials import new_password, record_password
from benchlab.system.process import ProcessRegistry


def url(port: int, password: str, address: str) -> str:
    return f"redis://:{password}@{address}:{port}/0"


def start_redis(
    registry: ProcessRegistry, workdir: Path, cores: tuple[int, ...], place: ServicePlace = HERE,
    reserved: Reserved | None = None,
) -> RunningService:  # fmt: skip
    host = place.host
    user = service_user("redis", host)
    dirs = service_dirs(workdir, Service.REDIS, user, host, data="data")
    password = reserved.password if reserved else new_password()
    record_password(workdir, Service.REDIS, "default", password)
    # In a file, not on the command line, where every local user could read it. Redis has
    # no list of client addresses: off loopback, the password is what keeps others out.
    # Root's file, readable by redis's group only.
    config = dirs.config / "redis.conf"
    host.write_file(
        config, f"requirepass {password}\n", mode=0o640 if user else 0o600,
        group=group_of(user, host),
    )  # fmt: skip
    program = find_program("redis-server", host)

    def argv(port: int) -> list[str]:
        return [
            program, str(config), "--port", str(port), "--bind", *place.listen,
            "--save", "", "--appendonly", "no", "--dir", str(dirs.data), "--daemonize", "no",
            "--loglevel", "warning",
        ]  # fmt: skip

    def url_at(port: int) -> str:
        return url(port, password, place.address)

    process, port = start_listening(
        Service.REDIS, registry, host, argv, lambda port, _: _answers(url_at(port)),
        first_port=reserved.port if reserved else None, cores=cores,
        log_path=dirs.log("redis"), user=user,
    )  # fmt: skip
    address = url_at(port)
    return RunningService(
        name=Service.REDIS,
        port=port,
        dsn=address,
        process=process,
        env={"BENCHLAB_REDIS_URL": address},
        password=password,
    )


def _answers(url: str) -> bool:
    with redis.Redis.from_url(url, socket_timeout=2) as client:
        return bool(client.ping())


def hit_counters(client: redis.Redis) -> tuple[int, int]:
    stats = client.info("stats")
    return int(stats["keyspace_hits"]), int(stats["keyspace_misses"])
