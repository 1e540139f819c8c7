"""Litestar reference app (async): asyncpg / aiomysql / redis.asyncio."""

import asyncio
from contextlib import asynccontextmanager

import benchlab_backend as backend
from litestar import Litestar, Response, get
from litestar.logging import LoggingConfig

state: dict = {}


def user_response(body: bytes | None) -> Response:
    if body is None:
        return Response(backend.NOT_FOUND, status_code=404, media_type="application/json")
    return Response(body, media_type="application/json")


def bad_request() -> Response:
    return Response(backend.BAD_REQUEST, status_code=400, media_type="application/json")


@get("/plaintext", media_type="text/plain")
async def plaintext() -> str:
    return "Hello, World!"


@get("/json")
async def json_endpoint() -> dict:
    return {"code": 0, "message": "ok", "data": {}}


@get("/db")
async def db(username: str = "") -> Response:
    return user_response(await state["db"].user_body(username))


@get("/db-delay")
async def db_delay(username: str = "", ms: str | None = None) -> Response:
    delay = backend.parse_ms(ms)
    if delay is None:
        return bad_request()
    return user_response(await state["db"].user_body(username, delay))


@get("/cache/{username:str}")
async def cache(username: str) -> Response:
    return user_response(await state["db"].cached_user_body(username))


@get("/sleep", media_type="text/plain")
async def sleep(ms: str | None = None) -> Response:
    delay = backend.parse_ms(ms)
    if delay is None:
        return bad_request()
    await asyncio.sleep(delay)
    return Response("ok", media_type="text/plain")


@asynccontextmanager
async def lifespan(app):
    state["db"] = await backend.AsyncBackend().start()
    yield


app = Litestar(
    route_handlers=[plaintext, json_endpoint, db, db_delay, cache, sleep],
    lifespan=[lifespan],
    logging_config=LoggingConfig(log_exceptions="always", configure_root_logger=False),
)
