"""Flask on gevent's WSGIServer, patched the way gevent documents: before anything else.

python gevent_server.py HOST PORT GREENLETS
"""

from gevent import monkey

monkey.patch_all()  # first: before Flask, the drivers and `from time import sleep` load

import os  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402

from flask_app import app  # noqa: E402
from gevent.pool import Pool  # noqa: E402
from gevent.pywsgi import WSGIServer  # noqa: E402

if __name__ == "__main__":
    host, port, greenlets = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    backlog = int(os.environ.get("BENCHLAB_BACKLOG", "2048"))
    # gevent's WSGIServer writes headers and body apart and sets no TCP_NODELAY: on a
    # keep-alive connection Nagle's algorithm then waits for the client's delayed ACK, about
    # 40 ms a response. Accepted sockets inherit the option from the listener.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    listener.bind((host, port))
    listener.listen(backlog)
    WSGIServer(listener, app, spawn=Pool(greenlets), log=None).serve_forever()
