"""pgbouncer in front of PostgreSQL, pool mode and size from the recipe."""

from __future__ import annotations

from pathlib import Path

import psycopg

from benchlab.process import ProcessRegistry
from benchlab.services.base import (
    HOST,
    RunningService,
    find_program,
    owned_dir,
    service_user,
    wait_until,
)
from benchlab.services.ports import free_port
from benchlab.services.postgres import DATABASE, USER


def start_pgbouncer(
    registry: ProcessRegistry,
    workdir: Path,
    cores: tuple[int, ...],
    postgres_port: int,
    pool_mode: str,
    pool_size: int,
) -> RunningService:
    user = service_user("postgres")  # pgbouncer refuses to run as root too
    base = owned_dir(workdir / "pgbouncer", user)
    port = free_port()
    users = base / "users.txt"
    users.write_text(f'"{USER}" ""\n')
    config = base / "pgbouncer.ini"
    config.write_text(
        f"""[databases]
{DATABASE} = host={HOST} port={postgres_port} dbname={DATABASE} user={USER}

[pgbouncer]
listen_addr = {HOST}
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {users}
admin_users = {USER}
pool_mode = {pool_mode}
default_pool_size = {pool_size}
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 20000
ignore_startup_parameters = extra_float_digits
"""
    )
    argv = [find_program("pgbouncer"), str(config)]
    process = registry.start(argv, cores=cores, log_path=base / "pgbouncer.log", user=user)
    conninfo = f"postgresql://{USER}@{HOST}:{port}/{DATABASE}"
    wait_until("pgbouncer", process, lambda: _answers(conninfo))
    return RunningService(
        name="pgbouncer",
        port=port,
        dsn=conninfo,
        process=process,
        env={"BENCHLAB_PG_HOST": HOST, "BENCHLAB_PG_PORT": str(port), "BENCHLAB_PGBOUNCER": "1"},
    )


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


def admin_connection(port: int) -> psycopg.Connection:
    return psycopg.connect(
        f"postgresql://{USER}@{HOST}:{port}/pgbouncer", autocommit=True, prepare_threshold=None
    )
