"""FastAPI reference app (DESIGN.md endpoint contract).

BENCHLAB_FLAVOUR=async: `async def` endpoints, asyncpg / aiomysql / redis.asyncio.
BENCHLAB_FLAVOUR=sync: plain `def` endpoints, which FastAPI runs in anyio's thread pool of
BENCHLAB_THREADPOOL threads (set explicitly; anyio's default is 40), with psycopg 3 / PyMySQL /
redis-py: the threadpool case of article 003.

The API scenarios: /fortunes through Jinja2 (autoescaped), /static through Starlette's
StaticFiles, /gzip/json through GZipMiddleware on a sub-application mounted for that route
alone, so that no other endpoint pays for the middleware.
"""

import asyncio
import os
import time
from contextlib import asynccontextmanager

import anyio.to_thread
import benchlab_backend as backend
import jinja2
from fastapi import Body, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.middleware.gzip import GZipMiddleware
from starlette_ws import ROUTES as WS_ROUTES

FLAVOUR = os.environ.get("BENCHLAB_FLAVOUR", "async")
state: dict = {}


@asynccontextmanager
async def lifespan(app: FastAPI):
    # Pools are made here, in each worker process, after uvicorn has started it.
    if FLAVOUR == "async":
        state["db"] = await backend.AsyncBackend().start()
    else:
        limiter = anyio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = int(os.environ.get("BENCHLAB_THREADPOOL", "40"))
        state["db"] = backend.SyncBackend()
    yield


app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None, lifespan=lifespan)
gzip_app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
app.router.routes.extend(WS_ROUTES)  # the WebSocket contract, on Starlette's API
fortunes_template = jinja2.Environment(autoescape=True).from_string(backend.FORTUNES_TEMPLATE)


def user_response(body: bytes | None) -> Response:
    if body is None:
        return Response(backend.NOT_FOUND, status_code=404, media_type="application/json")
    return Response(body, media_type="application/json")


def bad_request() -> Response:
    return Response(backend.BAD_REQUEST, status_code=400, media_type="application/json")


def fortunes_response(rows: list[tuple[int, str]]) -> HTMLResponse:
    return HTMLResponse(fortunes_template.render(fortunes=backend.sorted_fortunes(rows)))


def upload_response(body: bytes) -> Response:
    return Response(backend.upload_answer(body), media_type="application/json")


if FLAVOUR == "async":

    @app.get("/plaintext")
    async def plaintext() -> PlainTextResponse:
        return PlainTextResponse("Hello, World!")

    @app.get("/json")
    async def json_endpoint() -> JSONResponse:
        return JSONResponse({"code": 0, "message": "ok", "data": {}})

    @app.get("/db")
    async def db(username: str = "") -> Response:
        return user_response(await state["db"].user_body(username))

    @app.get("/db-delay")
    async def db_delay(username: str = "", ms: str | None = None) -> Response:
        delay = backend.parse_ms(ms)
        if delay is None:
            return bad_request()
        return user_response(await state["db"].user_body(username, delay))

    @app.get("/cache/{username}")
    async def cache(username: str) -> Response:
        return user_response(await state["db"].cached_user_body(username))

    @app.get("/sleep")
    async def sleep(ms: str | None = None) -> Response:
        delay = backend.parse_ms(ms)
        if delay is None:
            return bad_request()
        await asyncio.sleep(delay)
        return PlainTextResponse("ok")

    @app.get("/cpu")
    async def cpu(us: str | None = None) -> Response:
        burn = backend.parse_us(us)
        if burn is None:
            return bad_request()
        backend.burn_cpu(burn)  # on the event loop, as CPU work in an async endpoint is
        return PlainTextResponse("ok")

    @app.get("/fortunes")
    async def fortunes() -> HTMLResponse:
        return fortunes_response(await state["db"].fortunes())

    @app.get("/queries")
    async def queries(n: str | None = None) -> JSONResponse:
        return JSONResponse(await state["db"].random_worlds(backend.parse_queries(n)))

    @app.get("/updates")
    async def updates(n: str | None = None) -> JSONResponse:
        return JSONResponse(await state["db"].update_worlds(backend.parse_queries(n)))

    @app.post("/upload")
    async def upload(request: Request) -> Response:
        return upload_response(await request.body())

    @gzip_app.get("/json")
    async def gzip_json() -> JSONResponse:
        return JSONResponse(backend.GZIP_DOCUMENT)

else:

    @app.get("/plaintext")
    def plaintext() -> PlainTextResponse:
        return PlainTextResponse("Hello, World!")

    @app.get("/json")
    def json_endpoint() -> JSONResponse:
        return JSONResponse({"code": 0, "message": "ok", "data": {}})

    @app.get("/db")
    def db(username: str = "") -> Response:
        return user_response(state["db"].user_body(username))

    @app.get("/db-delay")
    def db_delay(username: str = "", ms: str | None = None) -> Response:
        delay = backend.parse_ms(ms)
        if delay is None:
            return bad_request()
        return user_response(state["db"].user_body(username, delay))

    @app.get("/cache/{username}")
    def cache(username: str) -> Response:
        return user_response(state["db"].cached_user_body(username))

    @app.get("/sleep")
    def sleep(ms: str | None = None) -> Response:
        delay = backend.parse_ms(ms)
        if delay is None:
            return bad_request()
        time.sleep(delay)
        return PlainTextResponse("ok")

    @app.get("/cpu")
    def cpu(us: str | None = None) -> Response:
        burn = backend.parse_us(us)
        if burn is None:
            return bad_request()
        backend.burn_cpu(burn)
        return PlainTextResponse("ok")

    @app.get("/fortunes")
    def fortunes() -> HTMLResponse:
        return fortunes_response(state["db"].fortunes())

    @app.get("/queries")
    def queries(n: str | None = None) -> JSONResponse:
        return JSONResponse(state["db"].random_worlds(backend.parse_queries(n)))

    @app.get("/updates")
    def updates(n: str | None = None) -> JSONResponse:
        return JSONResponse(state["db"].update_worlds(backend.parse_queries(n)))

    @app.post("/upload")
    def upload(body: bytes = Body(b"", media_type="application/octet-stream")) -> Response:
        # A `def` cannot await request.body(): FastAPI reads the body on the event loop
        # (bytes as sent, since it is not JSON) and hashes it in the thread pool.
        return upload_response(body)

    @gzip_app.get("/json")
    def gzip_json() -> JSONResponse:
        return JSONResponse(backend.GZIP_DOCUMENT)


app.mount("/gzip", GZipMiddleware(gzip_app, minimum_size=500, compresslevel=6))
if backend.STATIC_DIR:
    app.mount("/static", StaticFiles(directory=backend.STATIC_DIR, check_dir=False))
