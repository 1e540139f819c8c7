"""Each real service starts, answers, holds the same data, and is gone after stop."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pymysql
import pytest
import redis

from benchlab.core.errors import ServiceError
from benchlab.http.dataset import HUI_ID, USER_COUNT, users
from benchlab.services.mariadb import start_mariadb
from benchlab.services.nginx_proxy import start_proxy
from benchlab.services.pgbouncer import start_pgbouncer
from benchlab.services.postgres import start_postgres
from benchlab.services.redis_service import start_redis
from benchlab.system.process import ProcessRegistry
from tests.conftest import benchlab, living, short_tmp
from tests.servers import running_stack

CORES = (0,)


@pytest.fixture
def workdir() -> Iterator[Path]:
    directory = short_tmp()
    directory.chmod(0o711)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def _own(directory: Path) -> Path:
    """A run's services directory: made by the run, traversable by the daemons' users."""
    directory.mkdir(mode=0o711)
    directory.chmod(0o711)
    return directory


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _assert_gone(registry: ProcessRegistry, service) -> None:
    tree = service.process.tree()
    registry.stop_all()
    assert not service.process.alive()
    assert living(tree) == []
    assert not _port_open(service.port)


@pytest.mark.slow
def test_postgres_and_pgbouncer_answer_with_the_seeded_table_and_stop(workdir: Path) -> None:
    registry = ProcessRegistry()
    postgres = start_postgres(registry, workdir, CORES, max_connections=50)
    bouncer = start_pgbouncer(registry, workdir, CORES, postgres, "transaction", 5)
    with psycopg.connect(bouncer.dsn, prepare_threshold=None) as conn:
        rows = conn.execute("SELECT id, username, role FROM user_basic ORDER BY id").fetchall()
        assert rows == users()
        assert conn.execute("SHOW max_connections").fetchone() == ("50",)
    with psycopg.connect(postgres.dsn) as conn:
        owner = conn.execute("SELECT usename FROM pg_stat_activity WHERE pid = pg_backend_pid()")
        assert owner.fetchone() == ("benchlab",)
    _assert_gone(registry, postgres)
    assert not bouncer.process.alive()


@pytest.mark.slow
def test_mariadb_holds_the_same_rows_as_postgres(workdir: Path) -> None:
    registry = ProcessRegistry()
    mariadb = start_mariadb(registry, workdir, CORES, max_connections=50)
    conn = pymysql.connect(host="127.0.0.1", port=mariadb.port, user="benchlab",
                           password=mariadb.password, database="benchlab")  # fmt: skip
    with conn.cursor() as cursor:
        cursor.execute("SELECT id, username, role FROM user_basic ORDER BY id")
        rows = [tuple(r) for r in cursor.fetchall()]
        cursor.execute("SELECT @@max_connections")
        assert cursor.fetchone() == (50,)
    conn.close()
    assert len(rows) == USER_COUNT and rows[HUI_ID - 1] == (HUI_ID, "hui", "admin")
    assert rows == users()
    _assert_gone(registry, mariadb)


@pytest.mark.slow
def test_redis_answers_without_persistence_and_stops(workdir: Path) -> None:
    registry = ProcessRegistry()
    first = start_redis(registry, _own(workdir / "a"), CORES)
    second = start_redis(registry, _own(workdir / "b"), CORES)
    assert first.port != second.port
    client = redis.Redis.from_url(first.dsn)
    assert client.set("k", "v") and client.get("k") == b"v"
    assert client.config_get("save") == {"save": ""}
    assert client.config_get("appendonly") == {"appendonly": "no"}
    client.close()
    _assert_gone(registry, first)
    assert not second.process.alive()


@pytest.mark.slow
def test_starting_postgres_twice_in_one_process_uses_different_ports(workdir: Path) -> None:
    registry = ProcessRegistry()
    one = start_postgres(registry, _own(workdir / "one"), CORES, max_connections=20)
    two = start_postgres(registry, _own(workdir / "two"), CORES, max_connections=20)
    try:
        assert one.port != two.port
        for service in (one, two):
            with psycopg.connect(service.dsn) as conn:
                assert conn.execute("SELECT count(*) FROM user_basic").fetchone() == (USER_COUNT,)
    finally:
        registry.stop_all()
    assert not one.process.alive() and not two.process.alive()


@pytest.mark.slow
def test_a_service_that_cannot_start_names_itself_its_command_and_its_log(workdir: Path) -> None:
    registry = ProcessRegistry()
    with pytest.raises(ServiceError) as caught:
        # PostgreSQL itself refuses: superuser_reserved_connections (3) must be fewer.
        start_postgres(registry, workdir, CORES, max_connections=2)
    message = str(caught.value)
    assert message.startswith("postgresql failed to start: exited with code")
    assert (
        "command: " in message and "/bin/postgres -D" in message and "max_connections=2" in message
    )
    assert "superuser_reserved_connections" in message
    registry.stop_all()


@pytest.mark.slow
def test_nginx_proxy_forwards_to_a_stack(workdir: Path) -> None:
    import http.client

    registry = ProcessRegistry()
    (workdir / "stack").mkdir()
    with running_stack("nginx-static", workdir / "stack") as (_, upstream):
        proxy, port = start_proxy(registry, workdir, CORES, upstream)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/plaintext")
        response = conn.getresponse()
        assert response.status == 200 and response.read() == b"Hello, World!"
        conn.close()
        registry.stop_all()
        assert not proxy.alive() and not _port_open(port)


@pytest.mark.slow
def test_services_up_prints_connection_strings_and_down_stops_them(tmp_path: Path) -> None:
    env = {"BENCHLAB_CACHE": str(tmp_path)}
    up = benchlab("services", "up", "--no-mariadb", env=env)
    try:
        assert up.returncode == 0, up.stderr
        lines = dict(line.split(None, 1) for line in up.stdout.splitlines()[:3])
        assert set(lines) == {"postgresql", "pgbouncer", "redis"}
        # The connection strings carry the run's passwords: so does the state, owner-only.
        assert (tmp_path / "services.json").stat().st_mode & 0o777 == 0o600
        assert all(":" in dsn.split("@")[0].split("//")[1] for dsn in lines.values())
        with psycopg.connect(lines["pgbouncer"].strip(), prepare_threshold=None) as conn:
            assert conn.execute(
                "SELECT role FROM user_basic WHERE username = %s", ("hui",)
            ).fetchone() == ("admin",)
        again = benchlab("services", "up", env=env)
        assert again.returncode == 2 and "already up" in again.stderr
    finally:
        down = benchlab("services", "down", env=env)
    assert down.returncode == 0 and "stopped: postgresql, pgbouncer, redis" in down.stdout
    port = int(lines["redis"].strip().rsplit(":", 1)[1].split("/")[0])
    assert not _port_open(port)
