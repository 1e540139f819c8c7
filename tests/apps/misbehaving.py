"""A stack that goes wrong on purpose: python misbehaving.py MODE HOST PORT.

wrong-body: /plaintext answers 'Hello, World' (no '!'); /json is right.
crash: prints a reason and exits 3 before listening.
"""

import http.server
import sys
from email.utils import formatdate

mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "crash":
    print("boom: cannot start (deliberately)", flush=True)
    sys.exit(3)

BODIES = {
    "/plaintext": ("text/plain", b"Hello, World"),
    "/json": ("application/json", b'{"code":0,"message":"ok","data":{}}'),
}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        content_type, body = BODIES.get(self.path, ("text/plain", b"not found"))
        self.send_response_only(200 if self.path in BODIES else 404)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Date", formatdate(usegmt=True))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


http.server.ThreadingHTTPServer((host, port), Handler).serve_forever()
