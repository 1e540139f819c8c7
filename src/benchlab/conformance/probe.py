"""One shape sent to a server over a raw socket — whole, or split at one byte offset into two
TCP segments — and its answers read and judged. Raw sockets place every byte boundary
exactly, which no client library does; the answers are parsed by h11 (the HTTP/1.1 state
machine httpx is built on), told what was asked so that it frames each answer as a client
must (HEAD has no body; an HTTP/1.0 body may end with the connection)."""

from __future__ import annotations

import select
import socket
import time
from dataclasses import dataclass

import h11

from benchlab.conformance.shapes import CATALOGUE_SHAPES, Answer, Shape, ShapeSet
from benchlab.http.verify import check_response

# Between the two parts of a split request: the server's read returns the first part alone
# (the client sends with TCP_NODELAY, so each part is its own segment).
GAP_S = 0.005
TIMEOUT_S = 5.0  # an answer slower than this on loopback, one request at a time, is a hang
CLOSE_WAIT_S = 2.0  # a server that must close has this long to do it after its answer
CHUNK_BYTES = 64 * 1024  # a large request goes out in these, watching for an early answer
# What `read` returns when the server closed (or reset) the connection before any byte of
# the answer: a refusal to answer on that connection, not a wrong answer.
CLOSED = "the server closed the connection without an answer"


@dataclass(frozen=True)
class Probed:
    problem: str | None = None  # what went wrong; None: right
    note: str | None = None  # right, but worth saying (it closes without saying so)


CLOSES_UNANNOUNCED = (
    "closes the connection after an answer without saying so (no Connection: close): a "
    "client must open a new one and ask again"
)


def probe(
    host: str, port: int, shape: Shape, offset: int | None, asked: ShapeSet = CATALOGUE_SHAPES
) -> Probed:
    """`shape` sent whole (`offset` None) or split after `offset` bytes: every answer right,
    and the connection in step or closed as it must be (`asked`'s plain GET answered after
    it)."""
    try:
        with socket.create_connection((host, port), timeout=TIMEOUT_S) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sent = _send(sock, shape.raw, offset)
            reader = _Reader(sock)
            for index, answer in enumerate(shape.answers):
                if index and reader.closing:
                    # It said it would close after an answer (gunicorn's sync workers always
                    # do): a client asks the rest again on a new connection, as RFC 9112 says.
                    return Probed(reader.closed_after_answer())
                problem = reader.read(answer)
                if problem is CLOSED and index:
                    return Probed(note=CLOSES_UNANNOUNCED)
                if problem is CLOSED and shape.close_refuses:
                    return Probed(note=f"refuses {shape.name} by closing the connection, no status")
                if problem is not None:
                    return Probed(
                        problem if sent else f"{problem} (it stopped reading the request)"
                    )
            if shape.closes:
                return Probed(reader.closed_after_answer())
            if shape.follow_up and reader.reusable:
                if not _send(sock, asked.follow_up, None):
                    return Probed(note=CLOSES_UNANNOUNCED)
                problem = reader.read(asked.answer)
                if problem is CLOSED:
                    return Probed(note=CLOSES_UNANNOUNCED)
                if problem is not None:
                    return Probed(f"the next request on the connection: {problem}")
            return Probed()
    except OSError as exc:
        return Probed(f"connection failed: {exc.strerror or exc}")


def still_answers(host: str, port: int, asked: ShapeSet = CATALOGUE_SHAPES) -> str | None:
    """A fresh connection's plain GET is answered right: the server is up."""
    try:
        with socket.create_connection((host, port), timeout=TIMEOUT_S) as sock:
            sock.sendall(asked.follow_up)
            return _Reader(sock).read(asked.answer)
    except OSError as exc:
        return f"connection failed: {exc.strerror or exc}"


def _send(sock: socket.socket, raw: bytes, offset: int | None) -> bool:
    """Whether every byte went out: a server may answer (a refusal) and close before the
    last, and then its answer is read rather than lost under a reset."""
    parts = [raw] if offset is None else [raw[:offset], raw[offset:]]
    for number, part in enumerate(parts):
        if number:
            time.sleep(GAP_S)
        for start in range(0, len(part), CHUNK_BYTES):
            # Within a large part only: between a split's parts an answer is expected (to
            # the first of two pipelined requests).
            if start and select.select([sock], [], [], 0)[0]:
                return False  # it answered (or closed) before the request ended
            try:
                sock.sendall(part[start : start + CHUNK_BYTES])
            except (BrokenPipeError, ConnectionResetError):
                return False
    return True


class _Reader:
    """The client side of one connection: answers read in order, by h11."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.connection = h11.Connection(h11.CLIENT)
        self.received = 0  # bytes of the answer being read

    @property
    def closing(self) -> bool:
        """The server said it closes after its answer (Connection: close, HTTP/1.0)."""
        return self.connection.their_state in (h11.MUST_CLOSE, h11.CLOSED)

    @property
    def reusable(self) -> bool:
        return self.connection.our_state is h11.DONE and self.connection.their_state is h11.DONE

    def read(self, answer: Answer) -> str | None:
        if self.reusable:
            self.connection.start_next_cycle()
        # What was asked, told to h11 only (the bytes on the wire are the shape's own). h11
        # sends only HTTP/1.1: an HTTP/1.0 request is told as one that asks to close, which
        # frames its answer the same way (its body may end with the connection).
        headers = [("Host", "127.0.0.1")] + ([("Connection", "close")] if answer.http10 else [])
        self.connection.send(h11.Request(method=answer.method, target="/", headers=headers))
        self.connection.send(h11.EndOfMessage())
        self.received = 0
        try:
            got = self._response()
        except h11.RemoteProtocolError as exc:
            return CLOSED if self.received == 0 else f"a malformed answer: {exc}"
        if isinstance(got, str):
            return got
        status, fields, body = got
        if answer.expect is not None:
            return check_response(
                answer.expect, status=status, headers=fields, body=body, framed=answer.http10
            )
        if status not in answer.statuses:
            return f"status {status}, expected {_statuses(answer.statuses)} (body {body[:80]!r})"
        return None

    def _response(self) -> tuple[int, dict[str, str], bytes] | str:
        status, fields, body = 0, {}, b""
        while True:
            event = self.connection.next_event()
            if event is h11.NEED_DATA:
                problem = self._receive()
                if problem is not None:
                    return problem
            elif isinstance(event, h11.Response):
                status = event.status_code
                fields = {k.decode().lower(): v.decode("latin-1") for k, v in event.headers}
            elif isinstance(event, h11.Data):
                body += bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return status, fields, body
            elif isinstance(event, h11.ConnectionClosed):
                return CLOSED

    def _receive(self) -> str | None:
        try:
            data = self.sock.recv(65536)
        except TimeoutError:
            return f"no answer within {TIMEOUT_S:g} s"
        except ConnectionResetError:
            return CLOSED if self.received == 0 else "the server reset the connection mid-answer"
        self.received += len(data)
        self.connection.receive_data(data)
        return None

    def closed_after_answer(self) -> str | None:
        if self.connection.their_state is h11.CLOSED:
            return None
        self.sock.settimeout(CLOSE_WAIT_S)
        try:
            while data := self.sock.recv(65536):
                return f"sent {len(data)} more bytes after its answer instead of closing"
        except TimeoutError:
            return f"kept the connection open {CLOSE_WAIT_S:g} s after its answer"
        except ConnectionResetError:
            return None
        return None


def _statuses(statuses: tuple[int, ...]) -> str:
    if len(statuses) > 5 and statuses == tuple(range(statuses[0], statuses[-1] + 1)):
        return f"{statuses[0]}–{statuses[-1]}"
    return " or ".join(str(s) for s in statuses)
