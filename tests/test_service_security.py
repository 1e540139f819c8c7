"""The services of a run are locked down: passwords of the run, owner-only files, no root
MariaDB, no file writes outside its data, loopback only (issue 16)."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import psycopg
import pymysql
import pytest
import redis

from benchlab.recipe import Services as ServicesConfig
from benchlab.services import Services
from benchlab.services.base import RunningService
from benchlab.services.credentials import passwords_file
from benchlab.system.process import ProcessRegistry
from tests.conftest import short_tmp

CORES = (0,)
HOST = "127.0.0.1"
REFUSED = r"password|authentication failed"  # how libpq and pgbouncer word a refusal


@dataclass
class Run:
    postgres_side: Services  # PostgreSQL, pgbouncer and Redis, as a run starts them
    mariadb_side: Services

    def service(self, name: str) -> RunningService:
        side = self.mariadb_side if name == "mariadb" else self.postgres_side
        return side.running[name]


def _started(registry: ProcessRegistry, workroot: Path, database: str) -> Services:
    workroot.mkdir()
    services = Services(registry, workroot, CORES)
    config = ServicesConfig(database=database, pgbouncer=True, max_connections=20)
    services.start(config, need_database=True, need_cache=database == "postgres")
    return services


@pytest.fixture(scope="module")
def run() -> Iterator[Run]:
    workroot = short_tmp()
    workroot.chmod(0o711)
    registry = ProcessRegistry()
    sides: list[Services] = []
    try:
        sides.append(_started(registry, workroot / "pg", "postgres"))
        sides.append(_started(registry, workroot / "my", "mariadb"))
        yield Run(*sides)
    finally:
        for side in sides:
            side.close_monitors()
        registry.stop_all()
        for side in sides:
            side.remove_data()
        shutil.rmtree(workroot, ignore_errors=True)


def _base(services: Services) -> Path:
    assert services.base is not None
    return services.base


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.slow
def test_mariadbd_does_not_run_as_root(run: Run) -> None:
    process = psutil.Process(run.service("mariadb").process.pid)
    assert process.name() == "mariadbd"
    assert 0 not in process.uids() and 0 not in process.gids()
    if os.geteuid() == 0:
        assert process.username() == "mysql"


@pytest.mark.slow
def test_no_service_process_runs_as_root(run: Run) -> None:
    if os.geteuid() != 0:
        pytest.skip("benchlab is not root here: every service runs as its user anyway")
    for name in ("postgresql", "pgbouncer", "mariadb", "redis"):
        for process in run.service(name).process.tree():
            assert 0 not in process.uids(), (name, process.name())


@pytest.mark.slow
def test_postgres_refuses_a_connection_without_the_password(run: Run) -> None:
    port = run.service("postgresql").port
    for user in ("benchlab", "postgres"):
        for password in ("", "wrong"):
            with pytest.raises(psycopg.OperationalError, match=REFUSED):
                psycopg.connect(
                    host=HOST, port=port, user=user, password=password, dbname="postgres"
                )
    with psycopg.connect(run.service("postgresql").dsn) as conn:
        row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        assert row.fetchone() == (False,)


@pytest.mark.slow
def test_pgbouncer_refuses_a_connection_without_the_password(run: Run) -> None:
    bouncer = run.service("pgbouncer")
    for password in ("", "wrong"):
        with pytest.raises(psycopg.OperationalError, match=REFUSED):
            psycopg.connect(
                host=HOST, port=bouncer.port, user="benchlab", password=password,
                dbname="benchlab",
            )  # fmt: skip
    with psycopg.connect(bouncer.dsn, prepare_threshold=None) as conn:
        assert conn.execute("SELECT count(*) FROM user_basic").fetchone() == (10_000,)


@pytest.mark.slow
def test_the_apps_user_is_no_pgbouncer_admin(run: Run) -> None:
    bouncer = run.service("pgbouncer")
    console = bouncer.dsn.rsplit("/", 1)[0] + "/pgbouncer"
    with pytest.raises(psycopg.OperationalError, match="not allowed"):
        psycopg.connect(console, autocommit=True, prepare_threshold=None)


@pytest.mark.slow
def test_mariadb_refuses_a_connection_without_the_password(run: Run) -> None:
    port = run.service("mariadb").port
    for user in ("benchlab", "root"):
        for password in ("", "wrong"):
            with pytest.raises(pymysql.err.OperationalError) as caught:
                pymysql.connect(host=HOST, port=port, user=user, password=password)
            assert caught.value.args[0] in (1045, 1698)  # access denied (1698: no password)
    from benchlab.services.mariadb import connect

    connect(run.service("mariadb")).close()


@pytest.mark.slow
def test_redis_refuses_a_connection_without_the_password(run: Run) -> None:
    cache = run.service("redis")
    for password in (None, "wrong"):
        client = redis.Redis(host=HOST, port=cache.port, password=password, socket_timeout=5)
        with pytest.raises(redis.exceptions.AuthenticationError):
            client.ping()
        client.close()
    with redis.Redis.from_url(cache.dsn) as client:
        assert client.ping()
        assert client.config_get("save") == {"save": ""}
        assert client.config_get("appendonly") == {"appendonly": "no"}


@pytest.mark.slow
def test_select_into_outfile_outside_the_data_directory_fails(run: Run) -> None:
    from benchlab.services.mariadb import connect

    target = Path(f"/tmp/benchlab-outfile-{os.getpid()}-{time.monotonic_ns()}")
    conn = connect(run.service("mariadb"))
    try:
        with conn.cursor() as cursor:
            with pytest.raises(pymysql.err.MySQLError):
                cursor.execute(f"SELECT 'x' INTO OUTFILE '{target}'")
            cursor.execute("SELECT @@secure_file_priv, @@local_infile")
            priv, local_infile = cursor.fetchone()
    finally:
        conn.close()
    assert not target.exists()
    assert priv and Path(priv).name == "data" and local_infile == 0


@pytest.mark.slow
def test_select_into_outfile_fails_for_the_administrator_too(run: Run) -> None:
    """Even the socket administrator (benchlab's own OS user) cannot write outside the data."""
    import pwd

    mariadb = run.service("mariadb")
    socket = next(Path(arg.split("=", 1)[1]) for arg in mariadb.process.argv
                  if arg.startswith("--socket="))  # fmt: skip
    admin = pymysql.connect(unix_socket=str(socket), user=pwd.getpwuid(os.geteuid()).pw_name)
    target = Path(f"/tmp/benchlab-outfile-{os.getpid()}-{time.monotonic_ns()}")
    try:
        with admin.cursor() as cursor, pytest.raises(pymysql.err.MySQLError) as caught:
            cursor.execute(f"SELECT 'x' INTO OUTFILE '{target}'")
    finally:
        admin.close()
    assert "secure-file-priv" in str(caught.value)
    assert not target.exists()


@pytest.mark.slow
def test_every_socket_of_the_services_is_on_loopback(run: Run) -> None:
    for name in ("postgresql", "pgbouncer", "mariadb", "redis"):
        service = run.service(name)
        connections = [c for p in service.process.tree() for c in p.net_connections("inet")]
        listening = [c for c in connections if c.status == psutil.CONN_LISTEN]
        assert [c.laddr.port for c in listening] == [service.port], (name, listening)
        assert {c.laddr.ip for c in connections} == {HOST}, (name, connections)


@pytest.mark.slow
def test_the_password_file_is_0600_in_a_0700_directory(run: Run) -> None:
    for side, services in (
        (run.postgres_side, ("postgresql", "pgbouncer", "redis")),
        (run.mariadb_side, ("mariadb",)),
    ):
        path = passwords_file(_base(side))
        assert _mode(path) == 0o600 and _mode(path.parent) == 0o700
        assert path.stat().st_uid == os.geteuid() == path.parent.stat().st_uid
        recorded = {tuple(line.split()[:2]) for line in path.read_text().splitlines()}
        assert {service for service, _ in recorded} == set(services)
        for service in services:
            assert run.service(service).password in path.read_text()


@pytest.mark.slow
def test_files_holding_passwords_are_root_s_and_readable_by_the_daemon_only(run: Run) -> None:
    """In root's directory, written by root, readable by the daemon's group (its user reads
    them; nobody else does); as a normal user, by that user only."""
    import grp

    base = _base(run.postgres_side)
    for path, daemon in (
        (base / "pgbouncer" / "users.txt", "postgres"), (base / "redis" / "redis.conf", "redis"),
    ):  # fmt: skip
        info = path.stat()
        assert info.st_uid == os.geteuid() == path.parent.stat().st_uid, path
        if os.geteuid() == 0:
            assert _mode(path) == 0o640, path
            assert (
                grp.getgrgid(info.st_gid).gr_name
                == grp.getgrgid(pwd.getpwnam(daemon).pw_gid).gr_name
            )
        else:
            assert _mode(path) == 0o600, path
        assert _mode(path.parent) == 0o711
    assert not (base / "pg" / "superuser-password").exists()


@pytest.mark.slow
def test_stacks_get_the_passwords_and_the_results_do_not(run: Run) -> None:
    env = run.postgres_side.stack_env()
    pg_password = run.service("postgresql").password
    assert env["BENCHLAB_PG_PASSWORD"] == pg_password
    assert f":{run.service('redis').password}@" in env["BENCHLAB_REDIS_URL"]
    assert run.mariadb_side.stack_env()["BENCHLAB_MY_PASSWORD"] == run.service("mariadb").password
    assert pg_password in run.service("postgresql").dsn  # tune --with hands it to the app
    described = str({**run.postgres_side.describe(), **run.mariadb_side.describe()})
    for name in ("postgresql", "pgbouncer", "mariadb", "redis"):
        assert run.service(name).password not in described


@pytest.mark.slow
def test_the_probes_count_the_stacks_sessions_without_superuser(run: Run) -> None:
    """benchlab's session probe (role benchlab, no superuser) sees every session open on the
    database (a stack's, or pgbouncer's server link: it keeps them), and the pool probe
    (pgbouncer's stats user) sees a server link while a query holds it."""
    sessions = run.postgres_side.session_probe()
    pool = run.postgres_side.pool_probe()
    assert sessions is not None and pool is not None
    before = sessions()
    direct = threading.Thread(target=_sleep_through, args=(run.service("postgresql").dsn,))
    pooled = threading.Thread(target=_sleep_through, args=(run.service("pgbouncer").dsn,))
    direct.start()
    pooled.start()
    try:
        deadline = time.monotonic() + 5
        seen = (0, 0)
        while time.monotonic() < deadline and not (seen[0] > before and seen[1] == 1):
            seen = (sessions(), pool())
            time.sleep(0.05)
        assert seen[0] > before and seen[1] == 1, (before, seen)
    finally:
        direct.join()
        pooled.join()
        run.postgres_side.close_monitors()


def _sleep_through(dsn: str) -> None:
    with psycopg.connect(dsn, prepare_threshold=None) as conn:
        conn.execute("SELECT pg_sleep(1.5)")


@pytest.mark.slow
def test_the_mariadb_probe_counts_sessions(run: Run) -> None:
    from benchlab.services.mariadb import connect

    sessions = run.mariadb_side.session_probe()
    assert sessions is not None
    conn = connect(run.service("mariadb"))
    worker = threading.Thread(target=lambda: conn.cursor().execute("SELECT SLEEP(1.5)"))
    worker.start()
    try:
        deadline = time.monotonic() + 5
        seen = 0
        while time.monotonic() < deadline and seen != 1:
            seen = sessions()
            time.sleep(0.05)
        assert seen == 1
    finally:
        worker.join()
        conn.close()
        run.mariadb_side.close_monitors()
