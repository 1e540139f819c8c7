"""benchlab services up | down: the real services, for exploration by hand."""

from __future__ import annotations

from typing import Annotated

import typer

from benchlab.cli.app import console
from benchlab.recipe import default_cores


def services_up(
    postgres: Annotated[
        bool, typer.Option("--postgres/--no-postgres", metavar="", help="PostgreSQL.")
    ] = True,
    pgbouncer: Annotated[
        bool,
        typer.Option(
            "--pgbouncer/--no-pgbouncer", metavar="", help="pgbouncer in front of PostgreSQL."
        ),
    ] = True,
    mariadb: Annotated[
        bool, typer.Option("--mariadb/--no-mariadb", metavar="", help="MariaDB.")
    ] = True,
    redis: Annotated[bool, typer.Option("--redis/--no-redis", metavar="", help="Redis.")] = True,
) -> None:
    """Start the services (seeded, on loopback) and print their connection strings."""
    from benchlab.services.manual import services_up as start

    started = start(
        default_cores().server,
        postgres=postgres, pgbouncer=pgbouncer, mariadb=mariadb, redis=redis,
    )  # fmt: skip
    for service in started:
        console.print(f"{service.name:<11} {service.dsn}", markup=False, highlight=False)
    console.print("stop them with: benchlab services down")


def services_down() -> None:
    """Stop the services started by 'benchlab services up' and remove their data."""
    from benchlab.services.manual import services_down as stop

    stopped = stop()
    console.print(f"stopped: {', '.join(stopped)}" if stopped else "no services were up")
