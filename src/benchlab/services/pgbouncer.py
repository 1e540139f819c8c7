"""pgbouncer in front of PostgreSQL, pool mode and size from the recipe."""

from __future__ import annotations

from pathlib import Path

import psycopg

from benchlab.core.service_kinds import Service
from benchlab.services.base import (
    HERE,
    HOST,
    RunningService,
    ServicePlace,
    find_program,
    group_of,
    service_dirs,
    service_user,
    start_listening,
)
from benchlab.services.credentials import new_password, record_password
from benchlab.services.postgres import DATABASE, USER, dsn
from benchlab.system.process import ProcessRegistry

STATS_USER = "benchlab_stats"  # benchlab's own pool probe: SHOW commands only, no admin


def start_pgbouncer(
    registry: ProcessRegistry,
    workdir: Path,
    cores: tuple[int, ...],
    postgres: RunningService,
    pool_mode: str,
    pool_size: int,
    place: ServicePlace = HERE,
) -> RunningService:
    host, address = place.host, place.address
    user = service_user("postgres", host)  # pgbouncer refuses to run as root too
    # Its files are root's, readable by it: it writes nothing (no pid file, no socket).
    dirs = service_dirs(workdir, Service.PGBOUNCER, user, host)
    stats_password = new_password()
    record_password(workdir, Service.PGBOUNCER, STATS_USER, stats_password)
    # Plain passwords: the app user's also logs pgbouncer in to PostgreSQL (SCRAM there too).
    # Root's, readable by pgbouncer's group only.
    users = dirs.config / "users.txt"
    host.write_file(
        users, f'"{USER}" "{postgres.password}"\n"{STATS_USER}" "{stats_password}"\n',
        mode=0o640 if user else 0o600, group=group_of(user, host),
    )  # fmt: skip
    program = find_program("pgbouncer", host)

    def argv(port: int) -> list[str]:
        # Its port is in its configuration: one file per port tried.
        config = dirs.config / f"pgbouncer-{port}.ini"
        host.write_file(config, _config(port, postgres, users, pool_mode, pool_size, place), 0o644)
        return [program, str(config)]

    def conninfo_at(port: int) -> str:
        return dsn(port, postgres.password, address=address)

    process, port = start_listening(
        Service.PGBOUNCER, registry, host, argv, lambda port, _: _answers(conninfo_at(port)),
        cores=cores, log_path=dirs.log("pgbouncer"), user=user,
    )  # fmt: skip
    conninfo = conninfo_at(port)
    return RunningService(
        name=Service.PGBOUNCER,
        port=port,
        dsn=conninfo,
        process=process,
        env={
            "BENCHLAB_PG_HOST": address,
            "BENCHLAB_PG_PORT": str(port),
            "BENCHLAB_PG_PASSWORD": postgres.password,
            "BENCHLAB_PGBOUNCER": "1",
        },
        password=postgres.password,
        monitor_dsn=dsn(port, stats_password, "pgbouncer", STATS_USER, address),
    )


def _config(
    port: int, postgres: RunningService, users: Path, pool_mode: str, pool_size: int,
    place: ServicePlace,
) -> str:  # fmt: skip
    # PostgreSQL through its host's own loopback: pgbouncer sits beside it.
    return f"""[databases]
{DATABASE} = host={HOST} port={postgres.port} dbname={DATABASE} user={USER}

[pgbouncer]
listen_addr = {",".join(place.listen)}
listen_port = {port}
unix_socket_dir =
auth_type = scram-sha-256
auth_file = {users}
stats_users = {STATS_USER}
pool_mode = {pool_mode}
default_pool_size = {pool_size}
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 20000
ignore_startup_parameters = extra_float_digits
"""


def _answers(conninfo: str) -> bool:
    # No server-side prepared statements through a transaction-mode pool.
    with psycopg.connect(conninfo, connect_timeout=2, prepare_threshold=None) as conn:
        conn.execute("SELECT 1")
    return True


def active_server_connections(admin: psycopg.Connection) -> int:
    """Server connections linked to a client right now (SHOW POOLS' sv_active)."""
    cursor = admin.execute("SHOW POOLS")
    columns = [c.name for c in cursor.description or []]
    total = 0
    for row in cursor.fetchall():
        record = dict(zip(columns, row, strict=True))
        if record.get("database") == DATABASE:
            total += int(record.get("sv_active", 0))
    return total


def admin_connection(service: RunningService) -> psycopg.Connection:
    """pgbouncer's console, as its stats user (SHOW only)."""
    return psycopg.connect(
        service.monitor_dsn, autocommit=True, prepare_threshold=None, connect_timeout=5
    )
