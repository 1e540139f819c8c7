"""A stack that gets each API scenario wrong on purpose: python wrong_api.py HOST PORT.

/fortunes: the right rows, sorted, but the markup row not escaped.
/updates?n=N: N rows as the database holds them, answered without writing them.
/queries?n=N: right (so a read-back alone does not fail an honest answer).
/upload: the right byte count, a checksum of something else.
/gzip/json: the right document, never compressed.
/static/NAME: the file with its last byte changed.
/json: right.
Framing is right everywhere (Content-Type, Content-Length, Date): only the answers are wrong.
"""

import hashlib
import html
import http.server
import json
import os
import random
import sys
import urllib.parse
from email.utils import formatdate
from pathlib import Path

import psycopg

host, port = sys.argv[1], int(sys.argv[2])
CONNINFO = (
    f"host={os.environ['BENCHLAB_PG_HOST']} port={os.environ['BENCHLAB_PG_PORT']} "
    f"user=benchlab password={os.environ['BENCHLAB_PG_PASSWORD']} dbname=benchlab"
)
ROLES = ("member", "editor", "viewer", "admin")
DOCUMENT = json.dumps(
    {
        "code": 0,
        "message": "ok",
        "data": [
            {"id": i, "username": f"user{i:05d}", "role": ROLES[i % 4]} for i in range(1, 101)
        ],
    },
    separators=(",", ":"),
).encode()


def fortunes_page(conn: psycopg.Connection) -> bytes:
    rows = conn.execute("SELECT id, message FROM fortune").fetchall()
    rows.append((0, "Additional fortune added at request time."))
    rows.sort(key=lambda row: row[1])
    cells = "".join(
        # The mistake: the markup row goes out as it is; the others are escaped.
        f"<tr><td>{i}</td><td>{m if m.startswith('<script>') else html.escape(m)}</td></tr>"
        for i, m in rows
    )
    return (
        "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>"
        f"<tr><th>id</th><th>message</th></tr>{cells}</table></body></html>"
    ).encode()


def worlds(conn: psycopg.Connection, n: int) -> bytes:
    ids = random.sample(range(1, 10_001), n)
    found = [
        conn.execute("SELECT id, randomnumber FROM world WHERE id = %s", (i,)).fetchone()
        for i in ids
    ]
    return json.dumps([{"id": i, "randomNumber": r} for i, r in found]).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def answer(self, content_type: str, body: bytes) -> None:
        self.send_response_only(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Date", formatdate(usegmt=True))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        n = int(urllib.parse.parse_qs(url.query).get("n", ["1"])[0])
        if url.path == "/fortunes":
            with psycopg.connect(CONNINFO) as conn:
                self.answer("text/html; charset=utf-8", fortunes_page(conn))
        elif url.path in ("/queries", "/updates"):
            with psycopg.connect(CONNINFO) as conn:
                self.answer("application/json", worlds(conn, n))
        elif url.path == "/json":
            self.answer("application/json", b'{"code":0,"message":"ok","data":{}}')
        elif url.path == "/gzip/json":
            self.answer("application/json", DOCUMENT)
        elif url.path.startswith("/static/"):
            data = bytearray((Path(os.environ["BENCHLAB_STATIC_DIR"]) / url.path[8:]).read_bytes())
            data[-1] ^= 0xFF
            self.answer("application/octet-stream", bytes(data))
        else:
            self.answer("text/plain", b"ready")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        wrong = hashlib.sha256(body + b"!").hexdigest()
        self.answer("application/json", f'{{"bytes":{len(body)},"sha256":"{wrong}"}}'.encode())

    def log_message(self, *args: object) -> None:
        pass


http.server.ThreadingHTTPServer((host, port), Handler).serve_forever()
