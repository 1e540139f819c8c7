"""One request as a verifying client makes it, over the protocol a cell asks for: plain
HTTP/1.1 with the standard library (its body exactly as sent), TLS and HTTP/2 with httpx
(h2), saying what was negotiated so that a silent downgrade is caught, not measured."""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from benchlab.core.bounded import TooLate, Unbounded, chunks_of, read_bounded
from benchlab.http.protocols import PLAIN, Protocol


class ExchangeError(Exception):
    """No answer: the connection, the handshake or the framing failed, or the answer did
    not end within its time or its size."""


class ExchangeTimeout(ExchangeError):
    """No answer within the exchange's time, headers and body together."""


# The most an answer may hold: the static scenario's largest file (64 MiB) and its headers.
# A user's endpoint that streams without end (server-sent events) is cut there, or at the
# exchange's deadline, whichever comes first: verification never hangs nor fills memory.
MAX_BODY_BYTES = 65 * 2**20
CHUNK_BYTES = 2**16


def _bounded(chunks: Iterator[bytes], deadline: float, most: int = MAX_BODY_BYTES) -> bytes:
    """The body from its chunks, within the deadline and `most` bytes."""
    try:
        return read_bounded(chunks, deadline, most)
    except TooLate:
        raise ExchangeTimeout("the answer did not end within the verification's time") from None
    except Unbounded as exc:
        raise ExchangeError(str(exc)) from None


def _read_chunks(response: http.client.HTTPResponse) -> Iterator[bytes]:
    # read1: what one receive gives (read(n) would wait for n bytes, or the end).
    return chunks_of(response.read1, CHUNK_BYTES)


@contextlib.contextmanager
def _cut_at(deadline: float, cut: Callable[[], None]) -> Iterator[None]:
    """A deadline for a whole exchange, headers included: at `deadline`, `cut` (the
    connection shut) ends whatever read is waiting. A socket's timeout bounds each read
    only: a server that sends a byte every 0.2 s would hold the check for ever."""
    fired = threading.Event()

    def expire() -> None:
        fired.set()
        with contextlib.suppress(Exception):
            cut()

    timer = threading.Timer(max(0.0, deadline - time.monotonic()), expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    except Exception as exc:
        if fired.is_set():
            raise ExchangeTimeout("the answer did not end within the verification's time") from exc
        raise
    finally:
        timer.cancel()
    if fired.is_set():
        raise ExchangeTimeout("the answer did not end within the verification's time")


def read_body(
    response: http.client.HTTPResponse, timeout: float, most: int = MAX_BODY_BYTES
) -> bytes:
    """A standard-library response's body, within `timeout` in all and `most` bytes."""
    return _bounded(_read_chunks(response), time.monotonic() + timeout, most)


@dataclass(frozen=True)
class Wire:
    protocol: Protocol = PLAIN
    ca: Path | None = None  # the run's certificate authority, for a protocol over TLS


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]  # names in lower case
    body: bytes  # as sent: not decompressed
    http_version: str  # "HTTP/1.1", "HTTP/2"
    tls_version: str | None  # "TLSv1.3"; None without TLS

    @property
    def negotiated(self) -> str:
        return self.http_version + (f" over {self.tls_version}" if self.tls_version else "")


def exchange(
    host: str,
    port: int,
    method: str,
    path: str,
    *,
    headers: tuple[tuple[str, str], ...] = (),
    body: bytes | None = None,
    timeout: float = 10.0,
    wire: Wire | None = None,
    most: int = MAX_BODY_BYTES,
) -> Reply:
    """One request and its whole answer, within `timeout` in all (headers included) and
    `most` bytes of body."""
    wire = wire or Wire()
    if wire.protocol is PLAIN:
        return _plain(host, port, method, path, headers, body, timeout, most)
    return _negotiated(host, port, method, path, headers, body, timeout, wire, most)


def _plain(
    host: str,
    port: int,
    method: str,
    path: str,
    headers: tuple[tuple[str, str], ...],
    body: bytes | None,
    timeout: float,
    most: int = MAX_BODY_BYTES,
) -> Reply:
    deadline = time.monotonic() + timeout  # for the whole exchange, not each read
    try:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            conn.connect()
            sock = conn.sock
            with _cut_at(deadline, lambda: sock.shutdown(socket.SHUT_RDWR)):
                conn.request(method, path, body=body, headers=dict(headers))
                response = conn.getresponse()
                content = _bounded(_read_chunks(response), deadline, most)
        finally:
            conn.close()
    except (OSError, http.client.HTTPException) as exc:
        raise ExchangeError(f"{exc.__class__.__name__}: {exc}") from exc
    return Reply(
        status=response.status,
        headers={k.lower(): v for k, v in response.getheaders()},
        body=content,
        http_version="HTTP/1.1" if response.version == 11 else "HTTP/1.0",
        tls_version=None,
    )


def client_context(ca: Path) -> ssl.SSLContext:
    """Trusts the run's authority only, and offers TLS 1.3 only (protocols.TLS_VERSION)."""
    context = ssl.create_default_context(cafile=str(ca))
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    return context


def _negotiated(
    host: str,
    port: int,
    method: str,
    path: str,
    headers: tuple[tuple[str, str], ...],
    body: bytes | None,
    timeout: float,
    wire: Wire,
    most: int = MAX_BODY_BYTES,
) -> Reply:
    import httpx

    protocol = wire.protocol
    if protocol.tls and wire.ca is None:
        raise ExchangeError(f"{protocol.name} needs the run's certificate authority")
    verify: ssl.SSLContext | bool = client_context(wire.ca) if wire.ca else False
    # Over TLS both are offered and the server's choice is checked (a downgrade is caught);
    # without TLS, HTTP/2 is prior knowledge.
    http1 = protocol.tls or not protocol.http2
    sent = {"Accept-Encoding": "identity", **dict(headers)}  # httpx would ask for gzip
    url = f"{protocol.scheme}://{host}:{port}{path}"
    deadline = time.monotonic() + timeout
    try:
        with (
            httpx.Client(http1=http1, http2=protocol.http2, verify=verify, timeout=timeout) as c,
            _cut_at(deadline, c.close),
            c.stream(method, url, headers=sent, content=body) as response,
        ):
            # Asked before the body is read: a server that closes the connection after
            # its answer (gunicorn's sync workers) takes the TLS session with it.
            stream = response.extensions.get("network_stream")
            ssl_object = stream.get_extra_info("ssl_object") if stream is not None else None
            tls_version = ssl_object.version() if ssl_object is not None else None
            content = _bounded(response.iter_raw(CHUNK_BYTES), deadline, most)
    except httpx.HTTPError as exc:
        raise ExchangeError(f"{exc.__class__.__name__}: {exc}") from exc
    return Reply(
        status=response.status_code,
        headers={k.lower(): v for k, v in response.headers.items()},
        body=content,
        http_version=response.http_version,
        tls_version=tls_version,
    )


def negotiation_problem(reply: Reply, protocol: Protocol) -> str | None:
    """None when the reply came over what the protocol asks for, else what came instead."""
    if reply.http_version != protocol.http_version:
        return (
            f"negotiated {reply.http_version}, not {protocol.http_version} ({protocol.name}): "
            "the server does not speak it as launched"
        )
    if protocol.tls and reply.tls_version is None:
        return f"no TLS on a {protocol.name} connection"
    return None
