"""PostgreSQL: a throwaway cluster from Debian's binaries, seeded with user_basic."""

from __future__ import annotations

import ipaddress
import signal
from pathlib import Path

import psycopg
from psycopg import sql

from benchlab.core.errors import ServiceError
from benchlab.core.service_kinds import Service
from benchlab.hosts.base import Host
from benchlab.http.dataset import FORTUNES, users, worlds
from benchlab.services.base import (
    HERE,
    HOST,
    Reserved,
    RunningService,
    ServicePlace,
    group_of,
    service_dirs,
    service_error,
    service_user,
    start_listening,
)
from benchlab.services.credentials import new_password, record_password
from benchlab.system.process import ProcessRegistry

DATABASE = "benchlab"
USER = "benchlab"
SUPERUSER = "postgres"


def postgres_bin(host: Host | None = None) -> Path:
    found = (host or HERE.host).glob("/usr/lib/postgresql/*/bin/postgres")
    versions = sorted(
        (Path(p) for p in found if Path(p).parent.parent.name.isdigit()),
        key=lambda p: int(p.parent.parent.name),
    )
    if not versions:
        raise ServiceError(
            "PostgreSQL is not installed; run ./lab setup (apt-get install postgresql-15)"
        )
    return versions[-1].parent


def dsn(
    port: int, password: str, database: str = DATABASE, user: str = USER, address: str = HOST
) -> str:
    return f"postgresql://{user}:{password}@{address}:{port}/{database}"


def hba(admitted: tuple[str, ...]) -> str:
    """Passwords (SCRAM) from the admitted addresses only, each one host (/32); no Unix
    socket is opened. An address is written as ipaddress reads it: nothing else can reach
    the file (a recipe's text that is not one IPv4 address raises ValueError here)."""
    networks = [ipaddress.IPv4Network(f"{ipaddress.IPv4Address(a)}/32") for a in admitted]
    return "".join(f"host all all {network} scram-sha-256\n" for network in networks)


def start_postgres(
    registry: ProcessRegistry,
    workdir: Path,
    cores: tuple[int, ...],
    max_connections: int,
    place: ServicePlace = HERE,
    reserved: Reserved | None = None,
) -> RunningService:
    host, address = place.host, place.address
    user = service_user("postgres", host)
    # pg/ is root's: its pg_hba.conf, which PostgreSQL reads by hba_file; pg/data is
    # postgres's, made by initdb, where root never writes.
    dirs = service_dirs(workdir, "pg", user, host, data="data")
    assert dirs.data is not None
    data = dirs.data
    bindir = postgres_bin(host)
    superuser_password = new_password()
    password = reserved.password if reserved else new_password()
    record_password(workdir, Service.POSTGRESQL, SUPERUSER, superuser_password)
    record_password(workdir, Service.POSTGRESQL, USER, password)
    _initdb(host, bindir, dirs.config, data, user, superuser_password)
    hba_file = dirs.config / "pg_hba.conf"
    host.write_file(hba_file, hba(place.admitted), mode=0o644)

    def argv(port: int) -> list[str]:
        return [
            str(bindir / "postgres"), "-D", str(data), "-c", f"hba_file={hba_file}",
            "-c", f"port={port}", "-c", f"listen_addresses={','.join(place.listen)}",
            "-c", "unix_socket_directories=",
            "-c", f"max_connections={max_connections}",
            # A throwaway cluster: durability costs I/O that no scenario is about.
            "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
            "-c", "shared_buffers=128MB",
        ]  # fmt: skip

    def admin_dsn(port: int) -> str:
        return dsn(port, superuser_password, "postgres", SUPERUSER, address)

    # In the foreground (not pg_ctl's daemon) so benchlab owns it and stops it on any exit;
    # SIGINT is PostgreSQL's fast shutdown.
    process, port = start_listening(
        Service.POSTGRESQL, registry, host, argv, lambda port, _: _answers(admin_dsn(port)),
        first_port=reserved.port if reserved else None, cores=cores,
        log_path=dirs.log("postgres"), user=user, stop_signal=signal.SIGINT,
    )  # fmt: skip
    admin = admin_dsn(port)
    _create_app_user(admin, password)
    with psycopg.connect(dsn(port, password, address=address)) as conn:
        seed(conn)
    return RunningService(
        name=Service.POSTGRESQL,
        port=port,
        dsn=dsn(port, password, address=address),
        process=process,
        env={
            "BENCHLAB_PG_HOST": address,
            "BENCHLAB_PG_PORT": str(port),
            "BENCHLAB_PG_PASSWORD": password,
        },
        password=password,
    )


def _initdb(
    host: Host, bindir: Path, config: Path, data: Path, user: str | None, superuser_password: str
) -> None:
    """A cluster whose every connection needs a password (SCRAM), the superuser's included.
    initdb reads it from a file in root's directory, readable by postgres's group only (a
    pipe cannot be reopened once it runs as postgres), removed once it has."""
    pwfile = config / "superuser-password"
    host.write_file(
        pwfile, superuser_password, 0o640 if user else 0o600, group=group_of(user, host)
    )
    initdb = [str(bindir / "initdb"), "-D", str(data), "-U", SUPERUSER, f"--pwfile={pwfile}",
              "--auth=scram-sha-256", "-E", "UTF8", "--no-sync", "--no-instructions"]  # fmt: skip
    try:
        result = host.run(initdb, user=user, timeout=120)
    finally:
        host.run(["rm", "-f", "--", str(pwfile)])
    if result.returncode != 0:
        raise service_error(
            "postgresql (initdb)", initdb, f"exit {result.returncode}", result.stderr.decode()
        )


def _create_app_user(admin_dsn: str, password: str) -> None:
    """The app's role: no superuser; it owns its database, so it can create the seeded table
    (PostgreSQL 15's public schema belongs to the database owner)."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(USER), sql.Literal(password)
            )
        )
        conn.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(DATABASE), sql.Identifier(USER)
            )
        )


def _answers(conninfo: str) -> bool:
    with psycopg.connect(conninfo, connect_timeout=2) as conn:
        conn.execute("SELECT 1")
    return True


def seed(conn: psycopg.Connection) -> None:
    conn.execute(
        "CREATE TABLE user_basic (id serial PRIMARY KEY, username text UNIQUE NOT NULL,"
        " role text NOT NULL)"
    )
    with (
        conn.cursor() as cursor,
        cursor.copy("COPY user_basic (id, username, role) FROM STDIN") as copy,
    ):
        for row in users():
            copy.write_row(row)
    conn.execute("SELECT setval('user_basic_id_seq', (SELECT max(id) FROM user_basic))")
    # The API scenarios' tables, TechEmpower's: queries and updates read world, fortunes
    # reads fortune.
    conn.execute("CREATE TABLE world (id integer PRIMARY KEY, randomnumber integer NOT NULL)")
    with conn.cursor() as cursor, cursor.copy("COPY world (id, randomnumber) FROM STDIN") as copy:
        for world in worlds():
            copy.write_row(world)
    conn.execute("CREATE TABLE fortune (id integer PRIMARY KEY, message text NOT NULL)")
    with conn.cursor() as cursor:
        cursor.executemany("INSERT INTO fortune (id, message) VALUES (%s, %s)", FORTUNES)
    conn.execute("ANALYZE user_basic")
    conn.execute("ANALYZE world")
    conn.execute("ANALYZE fortune")
    conn.commit()


def read_worlds(conn: psycopg.Connection, ids: list[int] | None) -> dict[int, int]:
    """The world rows' numbers by id (None: every row), as the database holds them now."""
    if ids is None:
        found = conn.execute("SELECT id, randomnumber FROM world").fetchall()
    else:
        query = "SELECT id, randomnumber FROM world WHERE id = ANY(%s)"
        found = conn.execute(query, (ids,)).fetchall()
    return {int(i): int(n) for i, n in found}


# benchlab's own session that reads answers back (verification), not the stack's.
READBACK_APPLICATION = "benchlab-readback"


def open_sessions(conn: psycopg.Connection) -> int:
    """Client sessions open on the benchmark database (but this one and benchlab's
    read-back): the stack's pools, which grow only when every session they have is busy.
    Sessions stay open, so a sample every 50 ms sees them all, where counting queries that
    run a millisecond would not."""
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
        " AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
        " AND application_name <> %s",
        (DATABASE, READBACK_APPLICATION),
    ).fetchone()
    return int(row[0]) if row else 0
