"""A small HTTP/1.1 server of the tests' own, correct by h11 (the framing, pipelining, HEAD,
HTTP/1.0, Connection: close, malformed requests refused) except for one quirk a test
chooses, so the conformance check's answer is known: where it must fail and where not."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from email.utils import formatdate

import h11

ANSWERS = {
    "/plaintext": (b"text/plain", b"Hello, World!"),
    "/json": (b"application/json", b'{"code":0,"message":"ok","data":{}}'),
}


@dataclass(frozen=True)
class Quirk:
    # A request whose first read ends after exactly this many bytes is taken as whole (the
    # bug of a server that parses one recv): answered 400. None: no such bug.
    misparses_first_read_of: int | None = None
    ignores_connection_close: bool = False  # keeps the connection open after "close"


def _serve_connection(sock: socket.socket, quirk: Quirk) -> None:
    connection = h11.Connection(h11.SERVER)
    first_read = True
    sock.settimeout(10)
    with sock:
        while True:
            try:
                event = connection.next_event()
            except h11.RemoteProtocolError as exc:
                _answer(
                    sock, connection, exc.error_status_hint, b"bad request", close=True, raw=True
                )
                return
            if event is h11.NEED_DATA:
                try:
                    data = sock.recv(65536)
                except OSError:
                    return
                if first_read and len(data) == quirk.misparses_first_read_of:
                    _answer(sock, connection, 400, b"misparsed", close=True, raw=True)
                    return
                first_read = False
                connection.receive_data(data)
                continue
            if isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.EndOfMessage):
                path = request.target.decode()
                status, (kind, body) = (
                    (200, ANSWERS[path]) if path in ANSWERS else (404, (b"text/plain", b"no"))
                )
                if request.method == b"POST":
                    status, kind, body = 405, b"text/plain", b"method not allowed"
                head_only = request.method == b"HEAD"
                _answer(sock, connection, status, body, kind=kind, head_only=head_only)
                if connection.our_state not in (h11.DONE, h11.MUST_CLOSE):
                    return  # the client went away mid-answer
                if connection.our_state is h11.MUST_CLOSE:
                    if quirk.ignores_connection_close:
                        threading.Event().wait(5)  # holds it open, as the quirk says
                    return
                connection.start_next_cycle()
            elif isinstance(event, h11.ConnectionClosed):
                return


def _answer(
    sock: socket.socket,
    connection: h11.Connection,
    status: int,
    body: bytes,
    kind: bytes = b"text/plain",
    close: bool = False,
    head_only: bool = False,
    raw: bool = False,
) -> None:
    headers = [
        (b"Content-Type", kind),
        (b"Content-Length", str(len(body)).encode()),
        (b"Date", formatdate(usegmt=True).encode()),
    ] + ([(b"Connection", b"close")] if close else [])
    if raw:  # outside h11's state: the misparsing server answers what it thinks it read
        head = b"HTTP/1.1 %d X\r\n" % status + b"".join(k + b": " + v + b"\r\n" for k, v in headers)
        sock.sendall(head + b"\r\n" + body)
        return
    with contextlib.suppress(h11.LocalProtocolError, OSError):
        sock.sendall(connection.send(h11.Response(status_code=status, headers=headers)))
        if not head_only:
            sock.sendall(connection.send(h11.Data(data=body)))
        sock.sendall(connection.send(h11.EndOfMessage()))


@contextlib.contextmanager
def quirky_server(quirk: Quirk) -> Iterator[int]:
    """Serves on a free loopback port (a thread per connection) until the block ends."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                sock, _ = listener.accept()
            except TimeoutError:
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=_serve_connection, args=(sock, quirk), daemon=True).start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        acceptor.join()
        listener.close()


def serve(host: str, port: int, quirk: Quirk) -> None:
    """Serves on host:port until killed: as a stack of a run (see test_conformance.py)."""
    listener = socket.create_server((host, port))
    while True:
        sock, _ = listener.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_serve_connection, args=(sock, quirk), daemon=True).start()


if __name__ == "__main__":  # quirky_server.py OFFSET|- HOST PORT
    offset, host, port = sys.argv[1:4]
    serve(host, int(port), Quirk(misparses_first_read_of=None if offset == "-" else int(offset)))
