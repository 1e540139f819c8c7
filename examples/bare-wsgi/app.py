"""A bare WSGI callable, no framework: `/orders/<n>` waits 20 ms on I/O (a remote call),
every other path answers 404 without a Content-Length, as hand-written WSGI apps often do
(uWSGI's HTTP socket then keeps the connection open: a reader that waits for the body's end
waits forever)."""

import json
import time


def app(environ, start_response):
    path = environ.get("PATH_INFO", "/")
    if path.startswith("/orders/"):
        time.sleep(0.02)
        body = json.dumps({"order": path.rsplit("/", 1)[-1], "status": "shipped"}).encode()
        start_response(
            "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        )
        return [body]
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b"not found\n"]
