"""Starlette reference app (async): asyncpg / aiomysql / redis.asyncio."""

import asyncio
import json
from contextlib import asynccontextmanager

import benchlab_backend as backend
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette_ws import ROUTES as WS_ROUTES

state: dict = {}


def user_response(body: bytes | None) -> Response:
    if body is None:
        return Response(backend.NOT_FOUND, status_code=404, media_type="application/json")
    return Response(body, media_type="application/json")


def bad_request() -> Response:
    return Response(backend.BAD_REQUEST, status_code=400, media_type="application/json")


async def plaintext(request) -> Response:
    return PlainTextResponse("Hello, World!")


async def json_endpoint(request) -> Response:
    body = json.dumps({"code": 0, "message": "ok", "data": {}}, separators=(",", ":"))
    return Response(body, media_type="application/json")


async def db(request) -> Response:
    return user_response(await state["db"].user_body(request.query_params.get("username", "")))


async def db_delay(request) -> Response:
    delay = backend.parse_ms(request.query_params.get("ms"))
    if delay is None:
        return bad_request()
    username = request.query_params.get("username", "")
    return user_response(await state["db"].user_body(username, delay))


async def cache(request) -> Response:
    return user_response(await state["db"].cached_user_body(request.path_params["username"]))


async def sleep(request) -> Response:
    delay = backend.parse_ms(request.query_params.get("ms"))
    if delay is None:
        return bad_request()
    await asyncio.sleep(delay)
    return PlainTextResponse("ok")


@asynccontextmanager
async def lifespan(app):
    state["db"] = await backend.AsyncBackend().start()
    yield


app = Starlette(
    routes=[
        Route("/plaintext", plaintext),
        Route("/json", json_endpoint),
        Route("/db", db),
        Route("/db-delay", db_delay),
        Route("/cache/{username}", cache),
        Route("/sleep", sleep),
        *WS_ROUTES,
    ],
    lifespan=lifespan,
)
