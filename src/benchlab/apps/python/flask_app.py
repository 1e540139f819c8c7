"""Flask reference app (DESIGN.md endpoint contract)."""

import json

from flask import Flask, Response

app = Flask(__name__)


@app.get("/plaintext")
def plaintext() -> Response:
    return Response("Hello, World!", mimetype="text/plain")


@app.get("/json")
def json_endpoint() -> Response:
    # jsonify() sorts keys and appends a newline; the contract's body is compact, in order.
    body = json.dumps({"code": 0, "message": "ok", "data": {}}, separators=(",", ":"))
    return Response(body, mimetype="application/json")
