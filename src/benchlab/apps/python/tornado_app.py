"""Tornado reference app, N processes: python tornado_app.py HOST PORT PROCESSES."""

import asyncio
import json
import os
import sys

import benchlab_backend as backend
import tornado.httpserver
import tornado.netutil
import tornado.process
import tornado.web
import tornado.websocket
from ws_rooms import COUNTERS, deliver, join, leave, others


class Plaintext(tornado.web.RequestHandler):
    def get(self) -> None:
        self.set_header("Content-Type", "text/plain")
        self.write(b"Hello, World!")


class Json(tornado.web.RequestHandler):
    def get(self) -> None:
        # Tornado's own dict encoding adds spaces; the contract's body is compact.
        self.set_header("Content-Type", "application/json")
        self.write(json.dumps({"code": 0, "message": "ok", "data": {}}, separators=(",", ":")))


class UserHandler(tornado.web.RequestHandler):
    def reply(self, body: bytes | None) -> None:
        self.set_header("Content-Type", "application/json")
        if body is None:
            self.set_status(404)
            body = backend.NOT_FOUND
        self.write(body)

    def bad_request(self) -> None:
        self.set_status(400)
        self.set_header("Content-Type", "application/json")
        self.write(backend.BAD_REQUEST)


class Db(UserHandler):
    async def get(self) -> None:
        db = self.application.settings["db"]
        self.reply(await db.user_body(self.get_query_argument("username", "")))


class DbDelay(UserHandler):
    async def get(self) -> None:
        delay = backend.parse_ms(self.get_query_argument("ms", None))
        if delay is None:
            return self.bad_request()
        db = self.application.settings["db"]
        self.reply(await db.user_body(self.get_query_argument("username", ""), delay))


class Cache(UserHandler):
    async def get(self, username: str) -> None:
        self.reply(await self.application.settings["db"].cached_user_body(username))


class Sleep(tornado.web.RequestHandler):
    async def get(self) -> None:
        delay = backend.parse_ms(self.get_query_argument("ms", None))
        if delay is None:
            self.set_status(400)
            self.write(backend.BAD_REQUEST)
            return
        await asyncio.sleep(delay)
        self.set_header("Content-Type", "text/plain")
        self.write(b"ok")


class WsEcho(tornado.websocket.WebSocketHandler):
    async def on_message(self, message) -> None:
        COUNTERS.frames_in += 1
        await self.write_message(message, binary=isinstance(message, bytes))
        COUNTERS.frames_out += 1


class WsRoom(tornado.websocket.WebSocketHandler):
    def open(self, name: str) -> None:
        self.room = name
        join(name, self)

    async def on_message(self, message) -> None:
        COUNTERS.frames_in += 1
        binary = isinstance(message, bytes)
        await deliver(others(self.room, self), lambda p: p.write_message(message, binary=binary))

    def on_close(self) -> None:
        leave(self.room, self)


class WsCounters(tornado.web.RequestHandler):
    def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.write(COUNTERS.body())


async def serve(sockets) -> None:
    db = await backend.AsyncBackend().start()  # after the fork: one pool per process
    app = tornado.web.Application(
        [
            (r"/plaintext", Plaintext),
            (r"/json", Json),
            (r"/db", Db),
            (r"/db-delay", DbDelay),
            (r"/cache/([^/]+)", Cache),
            (r"/sleep", Sleep),
            (r"/ws/echo", WsEcho),
            (r"/ws/room/([^/]+)", WsRoom),
            (r"/ws/counters", WsCounters),
        ],
        db=db,
    )
    server = tornado.httpserver.HTTPServer(app)
    server.add_sockets(sockets)
    await asyncio.Event().wait()


if __name__ == "__main__":
    host, port, processes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    backlog = int(os.environ.get("BENCHLAB_BACKLOG", "2048"))
    # Bind before forking, and touch no IOLoop before fork (Tornado's multi-process recipe).
    sockets = tornado.netutil.bind_sockets(port, address=host, backlog=backlog)
    tornado.process.fork_processes(processes)
    asyncio.run(serve(sockets))
