"""Bottle reference app (WSGI, sync): psycopg 3 / PyMySQL / redis-py."""

import json
from time import sleep as blocking_sleep

import benchlab_backend as backend
import bottle

app = bottle.Bottle()
_backend: list = []


def db() -> backend.SyncBackend:
    # Made on first use, in the worker process (after any fork and any gevent patching).
    if not _backend:
        _backend.append(backend.SyncBackend())
    return _backend[0]


def user_response(body: bytes | None):
    bottle.response.content_type = "application/json"
    if body is None:
        bottle.response.status = 404
        return backend.NOT_FOUND
    return body


def bad_request():
    bottle.response.status = 400
    bottle.response.content_type = "application/json"
    return backend.BAD_REQUEST


@app.get("/plaintext")
def plaintext():
    bottle.response.content_type = "text/plain"
    return b"Hello, World!"


@app.get("/json")
def json_endpoint():
    bottle.response.content_type = "application/json"
    return json.dumps({"code": 0, "message": "ok", "data": {}}, separators=(",", ":"))


@app.get("/db")
def db_endpoint():
    return user_response(db().user_body(bottle.request.query.getunicode("username", "")))


@app.get("/db-delay")
def db_delay():
    delay = backend.parse_ms(bottle.request.query.get("ms"))
    if delay is None:
        return bad_request()
    return user_response(db().user_body(bottle.request.query.getunicode("username", ""), delay))


@app.get("/cache/<username>")
def cache(username: str):
    return user_response(db().cached_user_body(username))


@app.get("/sleep")
def sleep():
    delay = backend.parse_ms(bottle.request.query.get("ms"))
    if delay is None:
        return bad_request()
    blocking_sleep(delay)
    bottle.response.content_type = "text/plain"
    return b"ok"
