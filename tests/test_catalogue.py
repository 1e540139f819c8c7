"""Every available stack of the catalogue starts, answers every scenario it declares by the
contract (against real PostgreSQL and Redis), and stops leaving nothing behind."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Iterator

import psycopg
import pytest

from benchlab.http.dataset import file_bytes
from benchlab.http.scenarios import SCENARIOS
from benchlab.http.verify import verify
from benchlab.http.ws_verify import verify_websocket
from benchlab.services.postgres import read_worlds, start_postgres
from benchlab.services.redis_service import start_redis
from benchlab.stacks import CATALOGUE
from benchlab.system.process import ProcessRegistry
from tests.conftest import living, short_tmp
from tests.servers import running_stack

MS = {"db-delay": 5, "sleep": 5, "cpu": 100, "queries": 5, "updates": 3, "static": 4, "upload": 8}
RUNNABLE = [name for name, stack in CATALOGUE.items() if not stack.unavailable]


@pytest.fixture(scope="module")
def services_env() -> Iterator[dict[str, str]]:
    workroot = short_tmp()
    workroot.chmod(0o711)
    static = workroot / "static"
    static.mkdir()
    (static / "4k.bin").write_bytes(file_bytes(4))
    registry = ProcessRegistry()
    try:
        postgres = start_postgres(registry, workroot, (0,), max_connections=200)
        cache = start_redis(registry, workroot, (0,))
        yield {
            **postgres.env, **cache.env, "BENCHLAB_DB": "postgres", "BENCHLAB_POOL_SIZE": "2",
            "BENCHLAB_STATIC_DIR": str(static), "dsn": postgres.dsn,
        }  # fmt: skip
    finally:
        registry.stop_all()
        shutil.rmtree(workroot, ignore_errors=True)


@pytest.mark.parametrize("name", RUNNABLE)
@pytest.mark.slow
def test_stack_serves_every_declared_scenario_and_stops(name: str, services_env) -> None:
    stack = CATALOGUE[name]
    assert stack.availability().ok, stack.availability()
    workdir = short_tmp()
    dsn = services_env["dsn"]
    conn = None
    try:
        conn = psycopg.connect(dsn, autocommit=True)
        read = functools.partial(read_worlds, conn)
        for flavour in stack.flavours or (None,):
            env = {k: v for k, v in services_env.items() if k != "dsn"}
            env.update({"BENCHLAB_FLAVOUR": flavour} if flavour else {})
            threads = stack.default_concurrency if stack.concurrency else None
            with running_stack(name, workdir / (flavour or "x"), env=env, threads=threads) as (
                process,
                port,
            ):
                for scenario in stack.scenarios:
                    expectations = SCENARIOS[scenario].expectations(MS.get(scenario))
                    problem = (
                        verify_websocket("127.0.0.1", port)
                        if SCENARIOS[scenario].websocket
                        else verify("127.0.0.1", port, expectations, read_worlds=read)
                    )
                    assert problem is None, (
                        f"{name}[{flavour}] {scenario}: {problem}\n{process.log_tail(15)}"
                    )
                tree = process.tree()
            assert living(tree) == [], f"{name} left processes behind"
    finally:
        if conn is not None:
            conn.close()
        shutil.rmtree(workdir, ignore_errors=True)


def test_unavailable_stacks_say_why() -> None:
    unavailable = {name: s.availability() for name, s in CATALOGUE.items() if s.unavailable}
    assert {"flask+meinheld", "bottle+meinheld", "falcon+meinheld", "aioflask+uvicorn"} <= set(
        unavailable
    )
    for availability in unavailable.values():
        assert not availability.ok and "unmaintained" in availability.reason
