"""Sanic reference app on Sanic's own server: python sanic_app.py HOST PORT WORKERS."""

import asyncio
import os
import sys
import time
from email.utils import formatdate

import benchlab_backend as backend
from sanic import Sanic
from sanic.response import HTTPResponse, json, text
from ws_rooms import COUNTERS, deliver, join, leave, others

app = Sanic("benchlab")
app.config.ACCESS_LOG = False
app.config.MOTD = False


_date = {"second": 0, "value": ""}


@app.on_response
async def add_date_header(request, response):
    # Sanic sends no Date header, which HTTP/1.1 requires of an origin server (and the
    # contract checks); the value is formatted at most once a second, as servers do.
    second = int(time.time())
    if second != _date["second"]:
        _date["second"], _date["value"] = second, formatdate(second, usegmt=True)
    response.headers["date"] = _date["value"]


@app.get("/plaintext")
async def plaintext(request):
    return text("Hello, World!")


@app.get("/json")
async def json_endpoint(request):
    return json({"code": 0, "message": "ok", "data": {}})


@app.before_server_start
async def open_pools(app, _loop):
    # In each worker process, on its own event loop.
    app.ctx.db = await backend.AsyncBackend().start()


def user_response(body):
    if body is None:
        return HTTPResponse(backend.NOT_FOUND, status=404, content_type="application/json")
    return HTTPResponse(body, content_type="application/json")


def bad_request():
    return HTTPResponse(backend.BAD_REQUEST, status=400, content_type="application/json")


@app.get("/db")
async def db(request):
    return user_response(await app.ctx.db.user_body(request.args.get("username", "")))


@app.get("/db-delay")
async def db_delay(request):
    delay = backend.parse_ms(request.args.get("ms"))
    if delay is None:
        return bad_request()
    return user_response(await app.ctx.db.user_body(request.args.get("username", ""), delay))


@app.get("/cache/<username:str>")
async def cache(request, username):
    return user_response(await app.ctx.db.cached_user_body(username))


@app.get("/sleep")
async def sleep(request):
    delay = backend.parse_ms(request.args.get("ms"))
    if delay is None:
        return bad_request()
    await asyncio.sleep(delay)
    return text("ok")


@app.websocket("/ws/echo")
async def ws_echo(request, websocket):
    async for message in websocket:
        COUNTERS.frames_in += 1
        await websocket.send(message)
        COUNTERS.frames_out += 1


@app.websocket("/ws/room/<name:str>")
async def ws_room(request, websocket, name):
    join(name, websocket)
    try:
        async for message in websocket:
            COUNTERS.frames_in += 1
            await deliver(others(name, websocket), lambda peer, m=message: peer.send(m))
    finally:
        leave(name, websocket)


@app.get("/ws/counters")
async def ws_counters(request):
    return HTTPResponse(COUNTERS.body(), content_type="application/json")


if __name__ == "__main__":
    host, port, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    app.run(
        host=host,
        port=port,
        workers=workers,
        access_log=False,
        backlog=int(os.environ.get("BENCHLAB_BACKLOG", "2048")),
        motd=False,
        single_process=False,
    )
