"""Falcon reference app (WSGI, sync): psycopg 3 / PyMySQL / redis-py."""

import json
from time import sleep as blocking_sleep

import benchlab_backend as backend
import falcon

_backend: list = []


def db() -> backend.SyncBackend:
    if not _backend:
        _backend.append(backend.SyncBackend())
    return _backend[0]


def user_response(resp: falcon.Response, body: bytes | None) -> None:
    resp.content_type = "application/json"
    if body is None:
        resp.status = 404
        body = backend.NOT_FOUND
    resp.data = body


def bad_request(resp: falcon.Response) -> None:
    resp.status = 400
    resp.content_type = "application/json"
    resp.data = backend.BAD_REQUEST


class Plaintext:
    def on_get(self, req, resp) -> None:
        resp.content_type = "text/plain"
        resp.data = b"Hello, World!"


class Json:
    def on_get(self, req, resp) -> None:
        resp.content_type = "application/json"
        resp.data = json.dumps(
            {"code": 0, "message": "ok", "data": {}}, separators=(",", ":")
        ).encode()


class Db:
    def on_get(self, req, resp) -> None:
        user_response(resp, db().user_body(req.get_param("username", default="")))


class DbDelay:
    def on_get(self, req, resp) -> None:
        delay = backend.parse_ms(req.get_param("ms"))
        if delay is None:
            return bad_request(resp)
        user_response(resp, db().user_body(req.get_param("username", default=""), delay))


class Cache:
    def on_get(self, req, resp, username: str) -> None:
        user_response(resp, db().cached_user_body(username))


class Sleep:
    def on_get(self, req, resp) -> None:
        delay = backend.parse_ms(req.get_param("ms"))
        if delay is None:
            return bad_request(resp)
        blocking_sleep(delay)
        resp.content_type = "text/plain"
        resp.data = b"ok"


app = falcon.App()
app.req_options.keep_blank_qs_values = True
app.add_route("/plaintext", Plaintext())
app.add_route("/json", Json())
app.add_route("/db", Db())
app.add_route("/db-delay", DbDelay())
app.add_route("/cache/{username}", Cache())
app.add_route("/sleep", Sleep())
