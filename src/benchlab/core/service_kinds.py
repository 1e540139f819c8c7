"""The real services benchlab runs beside the stacks, declared once: PostgreSQL, pgbouncer,
MariaDB, Redis and the nginx proxy. A `Service` is the name it runs under, is timed by and
is stored by (a run's `services`); its traits are what the code decides by."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Literal


class Provides(StrEnum):
    """What a service gives the stacks."""

    DATABASE = "database"
    POOL = "pool"  # a connection pool in front of a database
    CACHE = "cache"
    PROXY = "proxy"  # a reverse proxy in front of the stack


class Service(StrEnum):
    POSTGRESQL = "postgresql"
    PGBOUNCER = "pgbouncer"
    MARIADB = "mariadb"
    REDIS = "redis"
    NGINX = "nginx"

    @property
    def traits(self) -> ServiceTraits:
        return SERVICES[self]

    @property
    def provides(self) -> Provides:
        return self.traits.provides

    @property
    def recipe_name(self) -> str:
        """How a recipe's [services], a stack's BENCHLAB_DB and tune's --with name it."""
        return self.traits.recipe_name

    @property
    def start_cost_key(self) -> str:
        """What its start is timed as in benchlab's learnt costs (estimates.py)."""
        return f"service:{self.value}"


@dataclass(frozen=True)
class ServiceTraits:
    provides: Provides
    recipe_name: str
    # Sessions a database keeps from the stacks' pools: PostgreSQL's
    # superuser_reserved_connections (3) and benchlab's own session probe; MariaDB's extra
    # one for SUPER and the probe.
    reserved_sessions: int = 0
    in_front_of: Service | None = None  # a pool: the only database it fronts
    # The variable an app reads the service's address from by convention (tune's --with).
    url_variable: str | None = None


SERVICES: dict[Service, ServiceTraits] = {
    Service.POSTGRESQL: ServiceTraits(
        Provides.DATABASE, "postgres", reserved_sessions=4, url_variable="DATABASE_URL"
    ),
    Service.PGBOUNCER: ServiceTraits(Provides.POOL, "pgbouncer", in_front_of=Service.POSTGRESQL),
    Service.MARIADB: ServiceTraits(
        Provides.DATABASE, "mariadb", reserved_sessions=2, url_variable="DATABASE_URL"
    ),
    Service.REDIS: ServiceTraits(Provides.CACHE, "redis", url_variable="REDIS_URL"),
    Service.NGINX: ServiceTraits(Provides.PROXY, "nginx"),
}

# The names a recipe may give: `[services] database` and `proxy` ("none": the stack alone).
# tests/test_service_kinds.py checks they are the declared ones.
DatabaseName = Literal["postgres", "mariadb"]
ProxyName = Literal["none", "nginx"]
NO_PROXY: Final = "none"

DATABASES = tuple(s for s in Service if s.provides is Provides.DATABASE)
# What tune's --with starts for the app: the services an app reads an address of.
APP_SERVICES = tuple(s for s in Service if s.traits.url_variable is not None)


def named(recipe_name: str) -> Service:
    """The service a recipe (or a stored database kind, or tune's --with) names."""
    return next(s for s in Service if s.recipe_name == recipe_name)
