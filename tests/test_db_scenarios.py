"""Every stack serves db, db-delay, cache, sleep and the 404 by the contract, on every
database, in every driver flavour; and no SQL injection gets through any of them."""

from __future__ import annotations

import http.client
import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis

from benchlab.http.scenarios import NOT_FOUND_BODY, SCENARIOS
from benchlab.http.verify import verify
from benchlab.services.mariadb import start_mariadb
from benchlab.services.pgbouncer import start_pgbouncer
from benchlab.services.postgres import start_postgres
from benchlab.services.redis_service import hit_counters, start_redis
from benchlab.system.process import ProcessRegistry
from tests.conftest import short_tmp
from tests.servers import running_stack

VARIANTS = [
    ("fastapi+uvicorn", "async"),
    ("fastapi+uvicorn", "sync"),
    ("flask+gunicorn", "sync"),
    ("sanic", "async"),
    ("tornado", "async"),
    ("gin", None),
]
INJECTIONS = [
    "hui' OR '1'='1",
    "hui'--",
    "' OR 1=1 --",
    "hui'; DROP TABLE user_basic; --",
    "' UNION SELECT 1, 'hui', 'admin' --",
    "hui\\' OR 1=1 #",
    "%",
    "hui%",
]


@pytest.fixture(scope="module")
def backends() -> Iterator[dict[str, dict[str, str]]]:
    """PostgreSQL (direct and through pgbouncer), MariaDB and Redis, shared by the module."""
    workroot = short_tmp()
    workroot.chmod(0o711)
    registry = ProcessRegistry()
    try:
        postgres = start_postgres(registry, workroot, (0,), max_connections=100)
        bouncer = start_pgbouncer(registry, workroot, (0,), postgres, "transaction", 10)
        mariadb = start_mariadb(registry, workroot, (0,), max_connections=100)
        cache = start_redis(registry, workroot, (0,))
        yield {
            "postgres": {**postgres.env, **cache.env, "BENCHLAB_DB": "postgres"},
            "pgbouncer": {**bouncer.env, **cache.env, "BENCHLAB_DB": "postgres"},
            "mariadb": {**mariadb.env, **cache.env, "BENCHLAB_DB": "mariadb"},
            "postgres_dsn": {"dsn": postgres.dsn},
            "redis_url": {"url": cache.dsn},
        }
    finally:
        registry.stop_all()
        shutil.rmtree(workroot, ignore_errors=True)


@pytest.fixture
def workdir() -> Iterator[Path]:
    directory = short_tmp()
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def _env(backends, database: str, flavour: str | None) -> dict[str, str]:
    env = {**backends[database], "BENCHLAB_POOL_SIZE": "3"}
    if flavour:
        env["BENCHLAB_FLAVOUR"] = flavour
    return env


def _get(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.mark.parametrize(("stack", "flavour"), VARIANTS)
@pytest.mark.parametrize("database", ["postgres", "pgbouncer", "mariadb"])
@pytest.mark.slow
def test_every_scenario_by_the_contract_and_no_injection(
    backends, workdir: Path, stack: str, flavour: str | None, database: str
) -> None:
    cache = redis.Redis.from_url(backends["redis_url"]["url"])
    cache.flushall()  # each case meets its own cold cache: the miss path runs every time
    with running_stack(stack, workdir, env=_env(backends, database, flavour)) as (_, port):
        for name, ms in (("db", None), ("db-delay", 5), ("cache", None), ("sleep", 5)):
            hits_before = hit_counters(cache)[0]
            if name == "cache":
                assert not cache.exists("user:hui"), "db and db-delay should not fill the cache"
            problem = verify("127.0.0.1", port, SCENARIOS[name].expectations(ms))
            assert problem is None, f"{stack}[{flavour}] on {database}, {name}: {problem}"
            if name == "cache":  # the miss filled the cache, and the second request hit it
                assert cache.exists("user:hui") and hit_counters(cache)[0] > hits_before
        for payload in INJECTIONS:
            quoted = urllib.parse.quote(payload, safe="")
            for path in (f"/db?username={quoted}", f"/db-delay?username={quoted}&ms=1",
                         f"/cache/{quoted}"):  # fmt: skip
                status, body = _get(port, path)
                assert (status, body) == (404, NOT_FOUND_BODY), (stack, database, path, body[:200])
    with psycopg.connect(backends["postgres_dsn"]["dsn"]) as conn:
        assert conn.execute("SELECT count(*) FROM user_basic").fetchone() == (10_000,)
