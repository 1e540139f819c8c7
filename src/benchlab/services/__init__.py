"""The real services of a run: started once, shared by every cell, stopped on any exit."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from benchlab.core.errors import ServiceError
from benchlab.core.service_kinds import Service
from benchlab.http.answers import ReadWorlds
from benchlab.recipe import Services as ServicesConfig
from benchlab.services.base import HERE, HOST, Reserved, RunningService, ServicePlace
from benchlab.system.process import ProcessRegistry
from benchlab.system.safe_files import traversable_by_others

# Each service's module imports its client library (psycopg, pymysql, redis: about 0.4 s
# together), so it is imported where that service is started or probed: a run, or a
# command, that needs none of them does not pay for them.
SessionProbe = Callable[[], int]


class Services:
    def __init__(
        self,
        registry: ProcessRegistry,
        workroot: Path,
        cores: tuple[int, ...],
        place: ServicePlace = HERE,
        reserved: Mapping[Service, Reserved] | None = None,
    ) -> None:
        self.registry = registry
        self.reserved = dict(reserved or {})
        self.workroot = workroot
        self.cores = cores
        self.place = place
        self.running: dict[Service, RunningService] = {}
        self.database_kind: str | None = None
        self._closers: list[Callable[[], None]] = []
        self._own_dir: Path | None = None
        self.base: Path | None = None  # where the services' data and the run's secrets/ are

    def _base_dir(self) -> Path:
        """Where service data goes: under the run's directory, unless the daemons' own
        users (postgres, mysql, redis) could not reach it there; then in a private directory
        of /tmp. The run's passwords go in its `secrets/` (0700), which only benchlab reads.
        On another machine, under the run's directory there (made traversable, 0711)."""
        if not self.place.host.same_machine:
            closed = self._closed_ancestor()
            if closed:
                raise ServiceError(
                    f"{self.place.host.where}: the services' users (postgres, mysql, redis) "
                    f"cannot reach the run's directory {self.workroot} there: {closed} is "
                    "closed to others; run benchlab with TMPDIR set to a directory every user "
                    "can traverse on both machines, such as /tmp"
                )
            base = self.workroot / "services"
            self.place.host.make_dir(base, 0o711)
            base.mkdir(exist_ok=True)
            return base
        if os.geteuid() != 0 or traversable_by_others(self.workroot.parent):
            base = self.workroot / "services"
            base.mkdir(exist_ok=True)
            for directory in (self.workroot, base):
                directory.chmod(0o711)  # the postgres user must reach its own directory below
            return base
        self._own_dir = Path(tempfile.mkdtemp(prefix="bl-svc-", dir="/tmp"))
        self._own_dir.chmod(0o711)
        if self.registry.journal is not None:
            self.registry.journal.add_dir(self._own_dir)
        return self._own_dir

    def _closed_ancestor(self) -> str:
        """The first directory above the run's one, on its host, that others cannot
        traverse ('' when there is none)."""
        script = (
            'd=$1; while [ "$d" != / ]; do d=$(dirname "$d"); '
            'case $(stat -c %A "$d") in *x|*t) ;; *) echo "$d"; exit 0;; esac; done'
        )
        done = self.place.host.run(["sh", "-c", script, "sh", str(self.workroot)])
        return done.stdout.decode(errors="replace").strip()

    def remove_data(self) -> None:
        """Remove service data kept outside the run's directory (after the services stop)."""
        if self._own_dir is not None:
            shutil.rmtree(self._own_dir, ignore_errors=True)

    def start(
        self,
        config: ServicesConfig,
        *,
        need_database: bool,
        need_cache: bool,
        status: Callable[[str], None] = lambda _: None,
        timed: Callable[[str], contextlib.AbstractContextManager] = lambda _: (
            contextlib.nullcontext()
        ),
    ) -> None:
        """Start what the cells need; `timed(name)` wraps each start (its cost is learnt)."""
        from benchlab.services.mariadb import start_mariadb  # client libraries: see the top
        from benchlab.services.pgbouncer import start_pgbouncer
        from benchlab.services.postgres import start_postgres
        from benchlab.services.redis_service import start_redis

        if not (need_database or need_cache):
            return
        base = self.base = self._base_dir()
        if need_database and config.database_service is Service.POSTGRESQL:
            status("starting PostgreSQL")
            with timed(Service.POSTGRESQL.start_cost_key):
                postgres = start_postgres(
                    self.registry, base, self.cores, config.max_connections, self.place,
                    self.reserved.get(Service.POSTGRESQL),
                )  # fmt: skip
            self.running[Service.POSTGRESQL] = postgres
            if config.pgbouncer:
                status("starting pgbouncer")
                with timed(Service.PGBOUNCER.start_cost_key):
                    self.running[Service.PGBOUNCER] = start_pgbouncer(
                        self.registry, base, self.cores, postgres, config.pool_mode,
                        config.pgbouncer_pool_size, self.place,
                    )  # fmt: skip
            self.database_kind = Service.POSTGRESQL.recipe_name
        elif need_database:
            status("starting MariaDB")
            with timed(Service.MARIADB.start_cost_key):
                self.running[Service.MARIADB] = start_mariadb(
                    self.registry, base, self.cores, config.max_connections, self.place,
                    self.reserved.get(Service.MARIADB),
                )  # fmt: skip
            self.database_kind = Service.MARIADB.recipe_name
        if need_cache:
            status("starting Redis")
            with timed(Service.REDIS.start_cost_key):
                cache = start_redis(
                    self.registry, base, self.cores, self.place, self.reserved.get(Service.REDIS)
                )
            self.running[Service.REDIS] = cache

    def stack_env(self) -> dict[str, str]:
        """What a stack needs to reach the services (pgbouncer, when there, stands in front)."""
        env: dict[str, str] = {}
        for service in Service:
            if service in self.running:
                env.update(self.running[service].env)
        if self.database_kind:
            env["BENCHLAB_DB"] = self.database_kind
        return env

    def dead(self) -> RunningService | None:
        return next((s for s in self.running.values() if not s.process.alive()), None)

    def describe(self) -> dict[str, dict[str, object]]:
        """What the results keep: addresses without their passwords, and the host."""
        return {
            name: {"port": s.port, "dsn": s.public_dsn, "host": self.place.host.name}
            for name, s in self.running.items()
        }

    # --- monitoring ---------------------------------------------------------------------------

    def session_probe(self) -> SessionProbe | None:
        """Counts the sessions open on the benchmark database (its own view, behind any pool)."""
        if Service.POSTGRESQL in self.running:
            import psycopg

            from benchlab.services.postgres import open_sessions

            # Bounded: a stalled database must not hang a sample (nor Ctrl-C behind it).
            conn = psycopg.connect(
                self.running[Service.POSTGRESQL].dsn, autocommit=True, connect_timeout=5,
                options="-c statement_timeout=2000",
            )  # fmt: skip
            self._closers.append(conn.close)
            return lambda: open_sessions(conn)
        if Service.MARIADB in self.running:
            from benchlab.services.mariadb import connect
            from benchlab.services.mariadb import open_sessions as mariadb_sessions

            my = connect(self.running[Service.MARIADB])
            self._closers.append(my.close)
            return lambda: mariadb_sessions(my)
        return None

    def world_reader(self) -> ReadWorlds | None:
        """The world rows as PostgreSQL holds them (queries and updates are judged by it)."""
        if Service.POSTGRESQL not in self.running:
            return None
        import psycopg

        from benchlab.services.postgres import READBACK_APPLICATION, read_worlds

        conn = psycopg.connect(
            self.running[Service.POSTGRESQL].dsn, autocommit=True, connect_timeout=5,
            options="-c statement_timeout=5000", application_name=READBACK_APPLICATION,
        )  # fmt: skip
        self._closers.append(conn.close)

        return functools.partial(read_worlds, conn)

    def pool_probe(self) -> SessionProbe | None:
        """Server connections pgbouncer has handed to clients right now."""
        if Service.PGBOUNCER not in self.running:
            return None
        from benchlab.services.pgbouncer import active_server_connections, admin_connection

        admin = admin_connection(self.running[Service.PGBOUNCER])
        self._closers.append(admin.close)
        return lambda: active_server_connections(admin)

    def cache_client(self):
        if Service.REDIS not in self.running:
            return None
        import redis

        client = redis.Redis.from_url(self.running[Service.REDIS].dsn, socket_timeout=5)
        self._closers.append(client.close)
        return client

    def close_monitors(self) -> None:
        while self._closers:
            with contextlib.suppress(Exception):
                self._closers.pop()()


def reserve(services: list[Service], free_port: Callable[[], int]) -> dict[Service, Reserved]:
    """Addresses for these services, decided now, before any starts (see Reserved)."""
    from benchlab.services.credentials import new_password

    return {service: Reserved(free_port(), new_password()) for service in services}


def planned_address(service: Service, reserved: Reserved, address: str = HOST) -> str:
    """The app's address of a service that will start at `reserved` (as it will say it)."""
    from benchlab.services import mariadb, postgres, redis_service

    if service is Service.POSTGRESQL:
        return postgres.dsn(reserved.port, reserved.password, address=address)
    if service is Service.MARIADB:
        return mariadb.dsn(reserved.port, reserved.password, address)
    if service is Service.REDIS:
        return redis_service.url(reserved.port, reserved.password, address)
    raise ValueError(f"{service.recipe_name} has no address an app is given")
