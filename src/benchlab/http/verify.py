"""Verification before measuring: a stack that answers wrong is not measured."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Mapping

from benchlab.http.answers import NOT_WRITTEN, READBACK_MISS, ReadWorlds, judge_body
from benchlab.http.protocols import PLAIN
from benchlab.http.scenarios import Expectation
from benchlab.http.wire import ExchangeError, Wire, exchange, negotiation_problem, read_body


def verify(
    host: str,
    port: int,
    expectations: list[Expectation],
    timeout: float = 10.0,
    read_worlds: ReadWorlds | None = None,
    wire: Wire | None = None,
) -> str | None:
    """Return None when every response honours the contract, else the first reason it does
    not. `read_worlds`: the world rows as the database holds them (queries and updates are
    judged against it, just after their answer). `wire`: the protocol to ask over (plain
    HTTP/1.1 by default); each answer must come over it."""
    wire = wire or Wire()
    for expected in expectations:
        problem = _verify_one(host, port, expected, timeout, read_worlds, wire)
        # Requests a warm-up left queued may still write rows between an answer and its
        # read-back, and a new number may equal the old: asked again before it counts.
        for _ in range(READBACK_RETRIES if expected.answer == "worlds" else 0):
            if problem is None or not any(m in problem for m in (READBACK_MISS, NOT_WRITTEN)):
                break
            time.sleep(0.5)
            problem = _verify_one(host, port, expected, timeout, read_worlds, wire)
        if problem:
            return problem
    return None


READBACK_RETRIES = 2


def _verify_one(
    host: str,
    port: int,
    expected: Expectation,
    timeout: float,
    read_worlds: ReadWorlds | None,
    wire: Wire,
) -> str | None:
    before = read_worlds(None) if expected.writes and read_worlds is not None else None
    try:
        reply = exchange(
            host, port, expected.method, expected.path, headers=expected.headers,
            body=expected.request_body, timeout=timeout, wire=wire,
        )  # fmt: skip
    except ExchangeError as exc:
        return f"{expected.describe()} failed: {exc}"
    wrong_wire = negotiation_problem(reply, wire.protocol)
    if wrong_wire:
        return f"{expected.describe()}: {wrong_wire}"
    return check_response(
        expected,
        status=reply.status,
        headers=reply.headers,
        body=reply.body,
        read_worlds=read_worlds,
        before=before,
        framed=reply.http_version == "HTTP/2",
    )


def check_response(
    expected: Expectation,
    *,
    status: int,
    headers: dict[str, str],
    body: bytes,
    read_worlds: ReadWorlds | None = None,
    before: Mapping[int, int] | None = None,
    framed: bool = False,
) -> str | None:
    """`framed`: the protocol frames the body itself (HTTP/2), so no length is required."""
    where = expected.describe()
    if status != expected.status:
        return f"{where}: status {status}, expected {expected.status} (body {body[:200]!r})"
    if not expected.contract:
        return _check_users(expected, where, body)
    media_type = headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != expected.content_type:
        got = headers.get("content-type", "none")
        return f"{where}: Content-Type {got!r}, expected {expected.content_type!r}"
    chunked = "chunked" in headers.get("transfer-encoding", "").lower()
    if "content-length" not in headers and not chunked and not framed:
        return f"{where}: neither Content-Length nor chunked Transfer-Encoding"
    if "content-length" in headers and int(headers["content-length"]) != len(body):
        return f"{where}: Content-Length {headers['content-length']} but {len(body)} body bytes"
    if "date" not in headers:
        return f"{where}: no Date header"
    problem = judge_body(expected, headers, body, read_worlds, before)
    return f"{where}: {problem}" if problem else None


def _check_users(expected: Expectation, where: str, body: bytes) -> str | None:
    """A user's own check: a substring of the body, a key of its JSON."""
    if expected.body_contains is not None and expected.body_contains not in body:
        return f"{where}: body {body[:200]!r} does not contain {expected.body_contains!r}"
    if expected.json_key is not None:
        try:
            value = json.loads(body)
        except ValueError:
            return f"{where}: body {body[:200]!r} is not JSON (expected key {expected.json_key!r})"
        for part in expected.json_key.split("."):
            if not isinstance(value, dict) or part not in value:
                return f"{where}: JSON body {body[:200]!r} has no key {expected.json_key!r}"
            value = value[part]
    return None


PORT_TAKEN = "is held by another process"


# A server whose workers die as they start and are started again (gunicorn's master
# restarts a worker that exits with anything but its boot-error code, 18 times a second
# here) would be waited for to the end of the timeout; no healthy one loses this many
# processes before its first answer.
RESTARTS_BEFORE_ANSWER = 10


def wait_until_answering(
    host: str, port: int, alive, timeout: float, owns_port=None, wire: Wire | None = None,
    lost=None,
) -> str | None:  # fmt: skip
    """Poll until an HTTP request gets any response; None when ready, else the reason.
    `owns_port()`: whether the socket listening on the port is the server's own (another
    process that took the port between its choice and the server's bind would otherwise be
    verified and measured in its place). `wire`: the protocol it answers over. `lost()`: how
    many of its processes have exited so far while it runs (its workers restarting)."""
    began = time.monotonic()
    deadline = began + timeout
    while time.monotonic() < deadline:
        if not alive():
            return "exited while starting"
        if not _answers(host, port, wire):
            exited = lost() if lost is not None else 0
            if exited >= RESTARTS_BEFORE_ANSWER:
                return (
                    f"keeps restarting its workers: {exited} of its processes exited in "
                    f"{time.monotonic() - began:.1f} s without an answer on port {port}"
                )
            time.sleep(0.02)  # a refused connection costs microseconds; a launch, this wait
            continue
        if owns_port is not None and not owns_port():
            return f"port {port} {PORT_TAKEN}"
        return None
    return f"did not answer on port {port} within {timeout:.0f} s"


def _answers(host: str, port: int, wire: Wire | None) -> bool:
    if wire is not None and wire.protocol is not PLAIN:
        try:
            exchange(host, port, "GET", "/", timeout=2.0, wire=wire)
        except ExchangeError:
            return False
        return True
    try:
        conn = http.client.HTTPConnection(host, port, timeout=2.0)
        try:
            conn.request("GET", "/")
            # Its status line is the answer: a body need not end (uWSGI's 404 has no
            # Content-Length and keeps the connection open), and it is not read.
            conn.getresponse()
        finally:
            conn.close()
    except (OSError, http.client.HTTPException):
        return False
    return True


def keeps_alive(host: str, port: int, path: str, timeout: float = 10.0) -> bool:
    """Whether the server keeps a connection open after an answer: HTTP/1.1 without
    `Connection: close`, or HTTP/1.0 with `Connection: keep-alive` asked and answered."""
    try:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            # A body with neither a length nor chunks ends only when the server closes.
            unframed = response.length is None and not response.chunked
            if not unframed:
                read_body(response, timeout)
        finally:
            conn.close()
    except (OSError, http.client.HTTPException, ExchangeError):
        return True  # verification reports the failure; assume the common case here
    if unframed and response.status not in (204, 304) and response.status >= 200:
        return False
    connection = (response.getheader("Connection") or "").lower()
    if response.version >= 11:
        return "close" not in connection
    return "keep-alive" in connection
