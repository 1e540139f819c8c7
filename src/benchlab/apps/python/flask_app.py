"""Flask reference app (DESIGN.md endpoint contract): sync views, psycopg 3 / PyMySQL / redis-py.

The API scenarios: /fortunes through Flask's Jinja2 environment (autoescaped), /static
through Flask's own static view, /gzip/json compressed by Flask-Compress on that view alone.
"""

import json
from time import sleep as blocking_sleep  # bound at import: a late gevent patch misses it

import benchlab_backend as backend
from flask import Flask, Response, render_template, request
from flask_compress import Compress

# Flask's static view (send_from_directory) serves $BENCHLAB_STATIC_DIR; none when unset.
app = Flask(__name__, static_folder=backend.STATIC_DIR or None, static_url_path="/static")
app.config.update(
    COMPRESS_REGISTER=False,  # not an after_request hook on every view: per view, below
    COMPRESS_ALGORITHM="gzip",  # gzip only, even when br or zstd is asked for
    COMPRESS_LEVEL=6,
)
compress = Compress(app)
# Compiled once (render_template_string would compile it on every request), rendered by
# render_template; a template from a string autoescapes in Flask.
fortunes_template = app.jinja_env.from_string(backend.FORTUNES_TEMPLATE)
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


def json_response(value) -> Response:
    return Response(json.dumps(value, separators=(",", ":")), mimetype="application/json")


@app.get("/fortunes")
def fortunes() -> str:
    rows = backend.sorted_fortunes(db().fortunes())
    return render_template(fortunes_template, fortunes=rows)


@app.get("/queries")
def queries() -> Response:
    return json_response(db().random_worlds(backend.parse_queries(request.args.get("n"))))


@app.get("/updates")
def updates() -> Response:
    return json_response(db().update_worlds(backend.parse_queries(request.args.get("n"))))


@app.post("/upload")
def upload() -> Response:
    return Response(backend.upload_answer(request.get_data()), mimetype="application/json")


@app.get("/gzip/json")
@compress.compressed()
def gzip_json() -> Response:
    return json_response(backend.GZIP_DOCUMENT)
