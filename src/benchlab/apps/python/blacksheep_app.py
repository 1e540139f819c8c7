"""BlackSheep reference app (async): asyncpg / aiomysql / redis.asyncio."""

import asyncio

import benchlab_backend as backend
from blacksheep import Application, Content, Response, get

app = Application()
state: dict = {}


def bytes_response(status: int, content_type: bytes, body: bytes) -> Response:
    return Response(status, None, Content(content_type, body))


def user_response(body: bytes | None) -> Response:
    if body is None:
        return bytes_response(404, b"application/json", backend.NOT_FOUND)
    return bytes_response(200, b"application/json", body)


@app.on_start
async def open_pools(application: Application) -> None:
    state["db"] = await backend.AsyncBackend().start()


@get("/plaintext")
async def plaintext() -> Response:
    return bytes_response(200, b"text/plain", b"Hello, World!")


@get("/json")
async def json_endpoint() -> Response:
    return bytes_response(200, b"application/json", b'{"code":0,"message":"ok","data":{}}')


@get("/db")
async def db(username: str = "") -> Response:
    return user_response(await state["db"].user_body(username))


@get("/db-delay")
async def db_delay(username: str = "", ms: str = "") -> Response:
    delay = backend.parse_ms(ms)
    if delay is None:
        return bytes_response(400, b"application/json", backend.BAD_REQUEST)
    return user_response(await state["db"].user_body(username, delay))


@get("/cache/{username}")
async def cache(username: str) -> Response:
    return user_response(await state["db"].cached_user_body(username))


@get("/sleep")
async def sleep(ms: str = "") -> Response:
    delay = backend.parse_ms(ms)
    if delay is None:
        return bytes_response(400, b"application/json", backend.BAD_REQUEST)
    await asyncio.sleep(delay)
    return bytes_response(200, b"text/plain", b"ok")
