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
from enum import Enum

import h11

from benchlab.conformance.shapes import CATALOGUE_SHAPES, Answer, Shape, ShapeSet
from benchlab.http.verify import check_response

# Between the two parts of a split request: the server's read returns the first part alone
# (the client sends with TCP_NODELAY, so each part is its own segment).
GAP_S = 0.005
TIMEOUT_S = 5.0  # an answer slower than this on loopback, one request at a time, is a hang
CLOSE_WAIT_S = 2.0  # a server that must close has this long to do it after its answer
CHUNK_BYTES = 64 * 1024  # a large request goes out in these, watching for an early answer


class Fault(Enum):
    """What a server did wrong, in words a user can check with a raw socket (`printf
    'HEAD / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' | nc HOST PORT`) or curl -v."""

    WRONG_ANSWER = "answers the request wrong"
    HEAD_BODY = "answers HEAD with a body"
    OUT_OF_STEP = "misreads where the request ends (the next on the connection is answered wrong)"
    NO_ANSWER = "does not answer the request"
    MALFORMED = "sends an answer a client cannot parse"
    # The server closed (or reset) the connection before any byte of the answer: a refusal
    # to answer on that connection, not a wrong answer.
    CLOSED = "closes the connection without an answer"
    NOT_CLOSED = "does not close the connection after an answer that must end it"
    UNREACHABLE = "does not take the connection"


@dataclass(frozen=True)
class Wrong:
    """One thing the server did wrong, and what showed it."""

    fault: Fault
    detail: str

    def __str__(self) -> str:
        return f"{self.fault.value}: {self.detail}"


@dataclass(frozen=True)
class Probed:
    wrong: Wrong | None = None  # what went wrong; None: right
    note: str | None = None  # right, but worth saying (it closes without saying so)
    statuses: tuple[int, ...] = ()  # the status of each answer read, in order


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
            return _exchange(sock, shape, offset, asked)
    except OSError as exc:
        return Probed(Wrong(Fault.UNREACHABLE, f"connection failed: {exc.strerror or exc}"))


def _exchange(sock: socket.socket, shape: Shape, offset: int | None, asked: ShapeSet) -> Probed:
    sent = _send(sock, shape.raw, offset)
    reader = _Reader(sock)
    for index, answer in enumerate(shape.answers):
        if index and reader.closing:
            # It said it would close after an answer (gunicorn's sync workers always do): a
            # client asks the rest again on a new connection, as RFC 9112 says.
            return reader.probed(reader.closed_after_answer())
        wrong = reader.read(answer)
        if wrong is not None and wrong.fault is Fault.CLOSED and index:
            return reader.probed(note=CLOSES_UNANNOUNCED)
        if wrong is not None and wrong.fault is Fault.CLOSED and shape.close_refuses:
            return reader.probed(note=f"refuses {shape.name} by closing the connection, no status")
        if wrong is not None:
            unread = f"{wrong.detail} (it stopped reading the request)"
            return reader.probed(wrong if sent else Wrong(wrong.fault, unread))
    if shape.closes:
        return reader.probed(reader.closed_after_answer())
    if shape.follow_up and reader.reusable:
        if not _send(sock, asked.follow_up, None):
            return reader.probed(note=CLOSES_UNANNOUNCED)
        wrong = reader.read(asked.answer)
        if wrong is not None and wrong.fault is Fault.CLOSED:
            return reader.probed(note=CLOSES_UNANNOUNCED)
        if wrong is not None:
            return reader.probed(reader.next_answer_wrong(wrong))
    return reader.probed()


def still_answers(host: str, port: int, asked: ShapeSet = CATALOGUE_SHAPES) -> str | None:
    """A fresh connection's plain GET is answered right: the server is up."""
    try:
        with socket.create_connection((host, port), timeout=TIMEOUT_S) as sock:
            sock.sendall(asked.follow_up)
            wrong = _Reader(sock).read(asked.answer)
            return None if wrong is None else str(wrong)
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


STATUS_LINE = b"HTTP/1."


class _Reader:
    """The client side of one connection: answers read in order, by h11."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.connection = h11.Connection(h11.CLIENT)
        self.received = b""  # the bytes of the answer being read
        self.statuses: list[int] = []  # of each answer read
        self.asked: str | None = None  # the method of the answer being read
        self.asked_before: str | None = None  # ... and of the one before it

    def probed(self, wrong: Wrong | None = None, note: str | None = None) -> Probed:
        return Probed(wrong, note, tuple(self.statuses))

    @property
    def closing(self) -> bool:
        """The server said it closes after its answer (Connection: close, HTTP/1.0)."""
        return self.connection.their_state in (h11.MUST_CLOSE, h11.CLOSED)

    @property
    def reusable(self) -> bool:
        return self.connection.our_state is h11.DONE and self.connection.their_state is h11.DONE

    def read(self, answer: Answer) -> Wrong | None:
        if self.reusable:
            self.connection.start_next_cycle()
        # What was asked, told to h11 only (the bytes on the wire are the shape's own). h11
        # sends only HTTP/1.1: an HTTP/1.0 request is told as one that asks to close, which
        # frames its answer the same way (its body may end with the connection).
        headers = [("Host", "127.0.0.1")] + ([("Connection", "close")] if answer.http10 else [])
        self.connection.send(h11.Request(method=answer.method, target="/", headers=headers))
        self.connection.send(h11.EndOfMessage())
        self.received = b""
        self.asked_before, self.asked = self.asked, answer.method
        try:
            got = self._response()
        except h11.RemoteProtocolError as exc:
            if not self.received:
                return Wrong(Fault.CLOSED, "before any byte of its answer")
            return Wrong(Fault.MALFORMED, f"{exc} (its first bytes {self.received[:60]!r})")
        if isinstance(got, Wrong):
            return got
        status, fields, body = got
        self.statuses.append(status)
        unasked, _ = self.connection.trailing_data
        if answer.method == "HEAD" and unasked:
            return Wrong(Fault.HEAD_BODY, f"{len(unasked)} bytes after the answer's headers")
        if answer.expect is not None:
            problem = check_response(
                answer.expect, status=status, headers=fields, body=body, framed=answer.http10
            )
            return None if problem is None else Wrong(Fault.WRONG_ANSWER, problem)
        if status not in answer.statuses:
            expected = _statuses(answer.statuses)
            return Wrong(
                Fault.WRONG_ANSWER, f"status {status}, expected {expected} (body {body[:80]!r})"
            )
        return None

    def next_answer_wrong(self, wrong: Wrong) -> Wrong:
        """What a wrong answer to the plain GET after a shape says of the shape: bytes of an
        answer to HEAD read as the start of the next (a body to HEAD), or the shape's end
        misread."""
        if self.asked_before == "HEAD" and wrong.fault is Fault.MALFORMED:
            extra = self.received.find(STATUS_LINE)
            size = f"{extra} bytes" if extra > 0 else "bytes"
            return Wrong(
                Fault.HEAD_BODY, f"{size} after the answer's headers, read as the next answer's"
            )
        return Wrong(Fault.OUT_OF_STEP, f"the next request on the connection: {wrong}")

    def _response(self) -> tuple[int, dict[str, str], bytes] | Wrong:
        status, fields, body = 0, {}, b""
        while True:
            event = self.connection.next_event()
            if event is h11.NEED_DATA:
                wrong = self._receive()
                if wrong is not None:
                    return wrong
            elif isinstance(event, h11.Response):
                status = event.status_code
                fields = {k.decode().lower(): v.decode("latin-1") for k, v in event.headers}
            elif isinstance(event, h11.Data):
                body += bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return status, fields, body
            elif isinstance(event, h11.ConnectionClosed):
                return Wrong(Fault.CLOSED, "before any byte of its answer")

    def _receive(self) -> Wrong | None:
        try:
            data = self.sock.recv(65536)
        except TimeoutError:
            return Wrong(Fault.NO_ANSWER, f"no answer within {TIMEOUT_S:g} s")
        except ConnectionResetError:
            if not self.received:
                return Wrong(Fault.CLOSED, "reset before any byte of its answer")
            return Wrong(Fault.MALFORMED, "the server reset the connection mid-answer")
        self.received += data
        self.connection.receive_data(data)
        return None

    def closed_after_answer(self) -> Wrong | None:
        if self.connection.their_state is h11.CLOSED:
            return None
        self.sock.settimeout(CLOSE_WAIT_S)
        try:
            while data := self.sock.recv(65536):
                return Wrong(
                    Fault.NOT_CLOSED, f"sent {len(data)} more bytes after its answer instead"
                )
        except TimeoutError:
            return Wrong(
                Fault.NOT_CLOSED, f"kept the connection open {CLOSE_WAIT_S:g} s after its answer"
            )
        except ConnectionResetError:
            return None
        return None


def _statuses(statuses: tuple[int, ...]) -> str:
    if len(statuses) > 5 and statuses == tuple(range(statuses[0], statuses[-1] + 1)):
        return f"{statuses[0]}–{statuses[-1]}"
    return " or ".join(str(s) for s in statuses)
