"""Each service is declared once (service_kinds.py), and what the code reads is that
declaration: the names a recipe may give, what tune's --with starts, the pool in front of a
database, the sessions a database keeps back, the services a plan starts (logic tests: no
service is started)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import get_args

import pytest
from pydantic import ValidationError

from benchlab.core.errors import UserError
from benchlab.core.service_kinds import (
    APP_SERVICES,
    DATABASES,
    NO_PROXY,
    SERVICES,
    DatabaseName,
    Provides,
    ProxyName,
    Service,
    named,
)
from benchlab.recipe import Cell
from benchlab.recipe.schema import LoadProfile, Recipe, Services
from benchlab.runner.estimates import services_needed
from benchlab.tune.arguments import with_services
from benchlab.tune.driver import service_env
from benchlab.tune.plan import TuneRequest


def test_every_service_is_declared_once_and_found_by_its_recipe_name() -> None:
    assert set(SERVICES) == set(Service)
    assert len({s.recipe_name for s in Service}) == len(Service)
    for service in Service:
        assert named(service.recipe_name) is service
    # What runs is stored by its name: the stored values stay the same strings.
    assert [str(s) for s in Service] == ["postgresql", "pgbouncer", "mariadb", "redis", "nginx"]


def test_a_recipe_accepts_exactly_the_declared_databases_and_proxies() -> None:
    assert get_args(DatabaseName) == tuple(s.recipe_name for s in DATABASES)
    proxies = tuple(s.recipe_name for s in Service if s.provides is Provides.PROXY)
    assert get_args(ProxyName) == (NO_PROXY, *proxies)
    for database in DATABASES:
        assert Services(database=database.recipe_name).database_service is database
    for refused in ("postgresql", "redis", "sqlite"):
        with pytest.raises(ValidationError):
            Services(database=refused)
    assert Services().proxy_service is None
    assert Services(proxy="nginx").proxy_service is Service.NGINX


def test_pgbouncer_fronts_only_the_database_it_is_declared_in_front_of() -> None:
    assert Service.PGBOUNCER.traits.in_front_of is Service.POSTGRESQL
    assert Services(database="postgres", pgbouncer=True).pool_fronts_database
    assert not Services(database="postgres").pool_fronts_database
    assert not Services(database="mariadb", pgbouncer=True).pool_fronts_database


def test_tune_with_accepts_exactly_the_services_an_app_reads_an_address_of() -> None:
    assert [s.recipe_name for s in APP_SERVICES] == ["postgres", "mariadb", "redis"]
    for service in APP_SERVICES:
        variable = service.traits.url_variable
        assert with_services(service.recipe_name) == {service.recipe_name: variable}
    assert with_services("postgres=PG,redis") == {"postgres": "PG", "redis": "REDIS_URL"}
    for refused in ("pgbouncer", "nginx", "postgresql"):
        with pytest.raises(UserError, match="benchlab starts postgres, mariadb, redis"):
            with_services(refused)
    with pytest.raises(UserError, match="give postgres or mariadb, not both"):
        with_services("postgres,mariadb")


def test_tune_reads_the_with_services_addresses_by_their_declaration() -> None:
    request = TuneRequest(
        app="app:app", python="python3", interface=None, requests=(), slo_p99_ms=100,
        budget_min=10, cwd=Path("."), with_services={"mariadb": "DB", "redis": "CACHE"},
    )  # fmt: skip
    assert request.services(Provides.DATABASE) == [Service.MARIADB]
    assert request.services(Provides.CACHE) == [Service.REDIS]
    dsns = {Service.MARIADB: "mysql://x"}
    session = SimpleNamespace(services=SimpleNamespace(dsn=dsns.get))
    assert service_env(request, session) == {"DB": "mysql://x"}  # type: ignore[arg-type]


def _recipe(**services: object) -> Recipe:
    return Recipe(
        name="t", stacks=["fastapi-uvicorn"], scenarios=["db", "cache"],
        load=[LoadProfile(tool="wrk", connections=8, duration=1)],
        services=Services(**services),  # type: ignore[arg-type]
    )  # fmt: skip


def test_a_plan_starts_the_declared_services_its_scenarios_need() -> None:
    cells = [
        Cell("fastapi-uvicorn", scenario, "wrk", 8, 1, 1, 2, 1) for scenario in ("db", "cache")
    ]
    assert services_needed(cells, _recipe(pgbouncer=True)) == [
        Service.POSTGRESQL, Service.PGBOUNCER, Service.REDIS,
    ]  # fmt: skip
    assert services_needed(cells[:1], _recipe(database="mariadb")) == [Service.MARIADB]
    assert [s.traits.reserved_sessions for s in DATABASES] == [4, 2]
