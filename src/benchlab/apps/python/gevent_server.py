"""Flask on gevent's WSGIServer, patched the way gevent documents: before anything else.

python gevent_server.py HOST PORT GREENLETS
"""

from gevent import monkey

monkey.patch_all()  # first: before Flask, the drivers and `from time import sleep` load

import os  # noqa: E402
import sys  # noqa: E402

from flask_app import app  # noqa: E402
from gevent.pool import Pool  # noqa: E402
from gevent.pywsgi import WSGIServer  # noqa: E402

if __name__ == "__main__":
    host, port, greenlets = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    backlog = int(os.environ.get("BENCHLAB_BACKLOG", "2048"))
    WSGIServer((host, port), app, spawn=Pool(greenlets), log=None, backlog=backlog).serve_forever()
