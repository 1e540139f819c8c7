"""Flask reference app (DESIGN.md endpoint contract): sync views, psycopg 3 / PyMySQL / redis-py."""

import json
from time import sleep as blocking_sleep  # bound at import: a late gevent patch misses it

import benchlab_backend as backend
from flask import Flask, Response, request

app = Flask(__name__)
_backend: list = []


def db() -> backend.SyncBackend:
    # Made on first use, in the worker process (gunicorn forks workers without --preload).
    if not _backend:
        _backend.append(backend.SyncBackend())
    return _backend[0]


def user_response(body: bytes | None) -> Response:
    if body is None:
        return Response(backend.NOT_FOUND, status=404, mimetype="application/json")
    return Response(body, mimetype="application/json")


def bad_request() -> Response:
    return Response(backend.BAD_REQUEST, status=400, mimetype="application/json")


@app.get("/plaintext")
def plaintext() -> Response:
    return Response("Hello, World!", mimetype="text/plain")


@app.get("/json")
def json_endpoint() -> Response:
    # jsonify() sorts keys and appends a newline; the contract's body is compact, in order.
    body = json.dumps({"code": 0, "message": "ok", "data": {}}, separators=(",", ":"))
    return Response(body, mimetype="application/json")


@app.get("/db")
def db_endpoint() -> Response:
    return user_response(db().user_body(request.args.get("username", "")))


@app.get("/db-delay")
def db_delay() -> Response:
    delay = backend.parse_ms(request.args.get("ms"))
    if delay is None:
        return bad_request()
    return user_response(db().user_body(request.args.get("username", ""), delay))


@app.get("/cache/<username>")
def cache(username: str) -> Response:
    return user_response(db().cached_user_body(username))


@app.get("/sleep")
def sleep() -> Response:
    delay = backend.parse_ms(request.args.get("ms"))
    if delay is None:
        return bad_request()
    blocking_sleep(delay)
    return Response("ok", mimetype="text/plain")


@app.get("/cpu")
def cpu() -> Response:
    us = backend.parse_us(request.args.get("us"))
    if us is None:
        return bad_request()
    backend.burn_cpu(us)
    return Response("ok", mimetype="text/plain")
