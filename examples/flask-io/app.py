"""A Flask service whose endpoint waits 50 ms on I/O (a call to another service, say),
as the inherited service of article 003 did: is gunicorn with threads or gevent worth it?

    benchlab tune examples/flask-io/app.py:app --request 'GET /orders/7' --check-body order
"""

import json
import time

from flask import Flask, Response

app = Flask(__name__)


@app.get("/orders/<int:order_id>")
def order(order_id: int) -> Response:
    time.sleep(0.050)  # waiting on I/O: a socket read, patched by gevent where it runs
    body = json.dumps({"order": order_id, "status": "shipped"})
    return Response(body, mimetype="application/json")
