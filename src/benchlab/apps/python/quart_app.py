"""Quart reference app (Flask's API on asyncio): asyncpg / aiomysql / redis.asyncio."""

import asyncio
import json

import benchlab_backend as backend
from quart import Quart, Response, request

app = Quart(__name__)
state: dict = {}


@app.before_serving
async def open_pools() -> None:
    state["db"] = await backend.AsyncBackend().start()


def user_response(body: bytes | None) -> Response:
    if body is None:
        return Response(backend.NOT_FOUND, status=404, content_type="application/json")
    return Response(body, content_type="application/json")


@app.get("/plaintext")
async def plaintext() -> Response:
    return Response("Hello, World!", content_type="text/plain")


@app.get("/json")
async def json_endpoint() -> Response:
    body = json.dumps({"code": 0, "message": "ok", "data": {}}, separators=(",", ":"))
    return Response(body, content_type="application/json")


@app.get("/db")
async def db() -> Response:
    return user_response(await state["db"].user_body(request.args.get("username", "")))


@app.get("/db-delay")
async def db_delay() -> Response:
    delay = backend.parse_ms(request.args.get("ms"))
    if delay is None:
        return Response(backend.BAD_REQUEST, status=400, content_type="application/json")
    return user_response(await state["db"].user_body(request.args.get("username", ""), delay))


@app.get("/cache/<username>")
async def cache(username: str) -> Response:
    return user_response(await state["db"].cached_user_body(username))


@app.get("/sleep")
async def sleep() -> Response:
    delay = backend.parse_ms(request.args.get("ms"))
    if delay is None:
        return Response(backend.BAD_REQUEST, status=400, content_type="application/json")
    await asyncio.sleep(delay)
    return Response("ok", content_type="text/plain")
