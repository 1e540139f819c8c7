"""Sanic reference app on Sanic's own server: python sanic_app.py HOST PORT WORKERS."""

import os
import sys
import time
from email.utils import formatdate

from sanic import Sanic
from sanic.response import json, text

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
