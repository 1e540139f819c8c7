"""tune's command-line values read: the services of --with, lists of counts (--workers,
--threads, --greenlets), the requests to send."""

from __future__ import annotations

from pathlib import Path

from benchlab.core.errors import UserError
from benchlab.core.service_kinds import APP_SERVICES, DATABASES, Provides
from benchlab.http.scenarios import Expectation
from benchlab.tune.requests import EchoEndpoint, load_requests, parse_request

# Greenlets are cheap (a few KiB each): ten times the threads a worker may have.
MAX_GREENLETS = 100_000


def with_services(text: str | None) -> dict[str, str]:
    """Each service of --with (as a recipe names it) and the variable its address goes in."""
    offered = {service.recipe_name: service for service in APP_SERVICES}
    found: dict[str, str] = {}
    for part in filter(None, (text or "").split(",")):
        name, _, variable = part.strip().partition("=")
        if name not in offered:
            raise UserError(
                f"--with '{name}': benchlab starts {', '.join(offered)}; e.g. "
                "--with postgres=DATABASE_URL,redis=REDIS_URL"
            )
        found[name] = variable or offered[name].traits.url_variable or ""
    if sum(offered[name].provides is Provides.DATABASE for name in found) > 1:
        databases = " or ".join(service.recipe_name for service in DATABASES)
        raise UserError(f"--with: give {databases}, not both")
    return found


def int_list(text: str | None, option: str, most: int) -> list[int] | None:
    if text is None:
        return None
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UserError(f"{option} {text!r}: give whole numbers, e.g. {option} 1,2,4") from None
    if not values or min(values) < 1:
        raise UserError(f"{option} {text!r}: give numbers of 1 or more, e.g. {option} 1,2,4")
    if max(values) > most or len(values) > 32:
        raise UserError(
            f"{option} {text!r}: at most 32 values, each at most {most:,} (each value is a "
            "candidate of its own, and each thread or process costs memory)"
        )
    return values


def tune_requests(
    given: list[str], requests_file: Path | None, status: int, body: str | None
) -> tuple[list[Expectation], EchoEndpoint | None]:
    """The HTTP requests to send, or the WebSocket echo endpoint to load (alone: a tune
    answers for one kind of load)."""
    parsed = [parse_request(r, status, body) for r in given]
    echoes = [p for p in parsed if isinstance(p, EchoEndpoint)]
    requests = [p for p in parsed if isinstance(p, Expectation)]
    if echoes:
        if len(parsed) > 1 or requests_file is not None:
            raise UserError(
                f"--request '{echoes[0].describe()}': a WebSocket echo is tuned alone; drop "
                "the other --request and --requests-file (tune the HTTP requests separately)"
            )
        if body is not None or status != 200:
            raise UserError(
                f"--request '{echoes[0].describe()}': --check-body and --check-status are "
                "HTTP's; an echo is checked by what comes back (each message, unchanged)"
            )
        return [], echoes[0]
    if requests_file is not None:
        requests += load_requests(requests_file)
    if not requests:
        default = parse_request("GET /", status, body)
        assert isinstance(default, Expectation)
        requests = [default]
    return requests, None
