"""Flask with `async def` views (flask[async]): each request runs its view to completion in a
fresh event loop on the WSGI thread, so there is no concurrency to gain (Flask's own docs).
No pool can outlive one request's loop, so this stack serves no database scenario."""

import asyncio
import json

import benchlab_backend as backend
from flask import Flask, Response, request

app = Flask(__name__)


@app.get("/plaintext")
async def plaintext() -> Response:
    return Response("Hello, World!", mimetype="text/plain")


@app.get("/json")
async def json_endpoint() -> Response:
    body = json.dumps({"code": 0, "message": "ok", "data": {}}, separators=(",", ":"))
    return Response(body, mimetype="application/json")


@app.get("/sleep")
async def sleep() -> Response:
    delay = backend.parse_ms(request.args.get("ms"))
    if delay is None:
        return Response(backend.BAD_REQUEST, status=400, mimetype="application/json")
    await asyncio.sleep(delay)
    return Response("ok", mimetype="text/plain")
