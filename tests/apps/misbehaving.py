"""A stack that goes wrong on purpose: python misbehaving.py MODE HOST PORT.

wrong-body: /plaintext answers 'Hello, World' (no '!'); /json is right.
crash: prints a reason and exits 3 before listening.
flaky: right answers at first (readiness, verification), then every second request a 500.
slow: right answers, each after $BENCHLAB_SLOW_MS milliseconds of busy work.
mix: right answers after a known mix of waits, by request number: of every 200, one waits
    200 ms, seven wait 50 ms, the rest 5 ms (so p50 = 5, p99 = 50, max = 200, mean 7.55 ms;
    each group 4× or more apart from the next, so a slow machine's overhead cannot merge them).
ok: right answers at once (a healthy server, a thread per connection).
sleepy: right answers, each after a 1 s wait (slow but well-behaved).
leaky: right answers at once, each keeping 20 KB it never frees (a leak of known size).
pauses: right answers at once, except that every PAUSE_EVERY_S (5 s from its start) it stops
    for PAUSE_S (300 ms), as a stop-the-world collector does: a request that comes in a pause
    is answered when it ends.
stall: the first request of a connection gets a right answer (keep-alive, with its length);
    the next one sent down that connection is read and never answered, and the connection
    closes a second later: a client that reuses connections waits outside the requests it
    times.
"""

import http.server
import itertools
import os
import sys
import time
from email.utils import formatdate

mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "crash":
    print("boom: cannot start (deliberately)", flush=True)
    sys.exit(3)

COUNTER = itertools.count()
STARTED = time.monotonic()
PAUSE_EVERY_S, PAUSE_S = 5.0, 0.3
KEPT: list[bytearray] = []  # leaky: what every request leaves behind
SLOW_S = int(os.environ.get("BENCHLAB_SLOW_MS", "0")) / 1000

BODIES = {
    "/plaintext": ("text/plain", b"Hello, World" if mode == "wrong-body" else b"Hello, World!"),
    "/json": ("application/json", b'{"code":0,"message":"ok","data":{}}'),
}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def handle(self) -> None:
        if mode != "stall":
            super().handle()
            return
        self.handle_one_request()
        if self.close_connection:
            return
        self.connection.settimeout(2.0)
        try:
            self.connection.recv(65536)  # the next request: swallowed
        except OSError:
            return
        time.sleep(1.0)

    # TCP_NODELAY: headers and body go out in separate writes, and without it Nagle's
    # algorithm waits for the client's delayed ACK (about 40 ms a response).
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        content_type, body = BODIES.get(self.path, ("text/plain", b"not found"))
        status = 200 if self.path in BODIES else 404
        if mode == "flaky" and (n := next(COUNTER)) > 5 and n % 2 == 1:
            status, body = 500, b"flaky"
        if mode == "sleepy":
            time.sleep(1.0)
        if mode == "pauses" and (into := (time.monotonic() - STARTED) % PAUSE_EVERY_S) < PAUSE_S:
            time.sleep(PAUSE_S - into)
        if mode == "mix":
            n = next(COUNTER) % 200
            time.sleep(0.200 if n == 0 else 0.050 if n <= 7 else 0.005)
        if mode == "leaky":
            KEPT.append(bytearray(os.urandom(20_000)))  # random: pages really touched
        if mode == "slow":
            deadline = time.perf_counter() + SLOW_S
            while time.perf_counter() < deadline:
                pass
        self.send_response_only(status)
        if self.request_version == "HTTP/1.0" and not self.close_connection:
            self.send_header("Connection", "keep-alive")  # as HTTP/1.0 keep-alive asks (ab -k)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Date", formatdate(usegmt=True))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


http.server.ThreadingHTTPServer((host, port), Handler).serve_forever()
