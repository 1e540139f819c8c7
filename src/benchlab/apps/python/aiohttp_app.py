"""aiohttp reference app: python aiohttp_app.py HOST PORT PROCESSES (its own server, one
process per worker sharing the port with SO_REUSEPORT), or `make_app` for gunicorn's worker."""

import asyncio
import json
import os
import signal
import sys

import benchlab_backend as backend
from aiohttp import WSMsgType, web
from ws_rooms import COUNTERS, deliver, join, leave, others

JSON = "application/json"


def user_response(body: bytes | None) -> web.Response:
    if body is None:
        return web.Response(body=backend.NOT_FOUND, status=404, content_type=JSON)
    return web.Response(body=body, content_type=JSON)


async def plaintext(request: web.Request) -> web.Response:
    return web.Response(text="Hello, World!", content_type="text/plain")


async def json_endpoint(request: web.Request) -> web.Response:
    body = json.dumps({"code": 0, "message": "ok", "data": {}}, separators=(",", ":"))
    return web.Response(text=body, content_type=JSON)


async def db(request: web.Request) -> web.Response:
    username = request.query.get("username", "")
    return user_response(await request.app["db"].user_body(username))


async def db_delay(request: web.Request) -> web.Response:
    delay = backend.parse_ms(request.query.get("ms"))
    if delay is None:
        return web.Response(body=backend.BAD_REQUEST, status=400, content_type=JSON)
    username = request.query.get("username", "")
    return user_response(await request.app["db"].user_body(username, delay))


async def cache(request: web.Request) -> web.Response:
    return user_response(await request.app["db"].cached_user_body(request.match_info["username"]))


async def sleep(request: web.Request) -> web.Response:
    delay = backend.parse_ms(request.query.get("ms"))
    if delay is None:
        return web.Response(body=backend.BAD_REQUEST, status=400, content_type=JSON)
    await asyncio.sleep(delay)
    return web.Response(text="ok", content_type="text/plain")


async def ws_echo(request: web.Request) -> web.WebSocketResponse:
    websocket = web.WebSocketResponse()
    await websocket.prepare(request)
    async for message in websocket:
        if message.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
            continue
        COUNTERS.frames_in += 1
        if message.type == WSMsgType.TEXT:
            await websocket.send_str(message.data)
        else:
            await websocket.send_bytes(message.data)
        COUNTERS.frames_out += 1
    return websocket


async def ws_room(request: web.Request) -> web.WebSocketResponse:
    name = request.match_info["name"]
    websocket = web.WebSocketResponse()
    await websocket.prepare(request)
    join(name, websocket)
    try:
        async for message in websocket:
            if message.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                continue
            COUNTERS.frames_in += 1
            text = message.type == WSMsgType.TEXT
            await deliver(
                others(name, websocket),
                lambda peer, m=message, t=text: (
                    peer.send_str(m.data) if t else peer.send_bytes(m.data)
                ),
            )
    finally:
        leave(name, websocket)
    return websocket


async def ws_counters(request: web.Request) -> web.Response:
    return web.Response(body=COUNTERS.body(), content_type=JSON)


async def open_pools(app: web.Application) -> None:
    app["db"] = await backend.AsyncBackend().start()


async def make_app() -> web.Application:
    app = web.Application()
    app.on_startup.append(open_pools)
    app.add_routes(
        [
            web.get("/plaintext", plaintext),
            web.get("/json", json_endpoint),
            web.get("/db", db),
            web.get("/db-delay", db_delay),
            web.get("/cache/{username}", cache),
            web.get("/sleep", sleep),
            web.get("/ws/echo", ws_echo),
            web.get("/ws/room/{name}", ws_room),
            web.get("/ws/counters", ws_counters),
        ]
    )
    return app


def serve(host: str, port: int) -> None:
    import uvloop

    web.run_app(
        make_app(),
        host=host,
        port=port,
        reuse_port=True,
        access_log=None,
        backlog=int(os.environ.get("BENCHLAB_BACKLOG", "2048")),
        print=None,
        loop=uvloop.new_event_loop(),
    )


if __name__ == "__main__":
    host, port, processes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    children = []
    for _ in range(processes):
        pid = os.fork()
        if pid == 0:  # a worker: its own event loop, created after the fork
            serve(host, port)
            os._exit(0)
        children.append(pid)
    signal.signal(signal.SIGTERM, lambda *_: [os.kill(c, signal.SIGTERM) for c in children])
    for child in children:
        os.waitpid(child, 0)
