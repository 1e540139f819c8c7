"""Tornado reference app, N processes: python tornado_app.py HOST PORT PROCESSES."""

import asyncio
import json
import os
import sys

import tornado.httpserver
import tornado.netutil
import tornado.process
import tornado.web


class Plaintext(tornado.web.RequestHandler):
    def get(self) -> None:
        self.set_header("Content-Type", "text/plain")
        self.write(b"Hello, World!")


class Json(tornado.web.RequestHandler):
    def get(self) -> None:
        # Tornado's own dict encoding adds spaces; the contract's body is compact.
        self.set_header("Content-Type", "application/json")
        self.write(json.dumps({"code": 0, "message": "ok", "data": {}}, separators=(",", ":")))


async def serve(sockets) -> None:
    app = tornado.web.Application([(r"/plaintext", Plaintext), (r"/json", Json)])
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
