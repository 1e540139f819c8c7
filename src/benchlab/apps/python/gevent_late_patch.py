"""A deliberate mistake, kept as a labelled demonstration (article 003): Flask on gevent's
WSGIServer, patched only after Flask, the drivers and `from time import sleep` were imported.
The sleep the app bound at import stays blocking, so one request blocks the whole server.

python gevent_late_patch.py HOST PORT GREENLETS
"""

import os
import socket
import sys

from flask_app import app
from gevent.pool import Pool
from gevent.pywsgi import WSGIServer

from gevent import monkey  # isort: skip

monkey.patch_all()  # too late: what was imported above keeps the blocking functions

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
