"""Verification before measuring: a stack that answers wrong is not measured."""

from __future__ import annotations

import http.client
import time

from benchlab.scenarios import Expectation


def verify(
    host: str, port: int, expectations: list[Expectation], timeout: float = 10.0
) -> str | None:
    """Return None when every response honours the contract, else the first reason it does not."""
    for expected in expectations:
        problem = _verify_one(host, port, expected, timeout)
        if problem:
            return problem
    return None


def _verify_one(host: str, port: int, expected: Expectation, timeout: float) -> str | None:
    try:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            conn.request("GET", expected.path)
            response = conn.getresponse()
            body = response.read()
        finally:
            conn.close()
    except (OSError, http.client.HTTPException) as exc:
        return f"GET {expected.path} failed: {exc.__class__.__name__}: {exc}"
    return check_response(
        expected,
        status=response.status,
        headers={k.lower(): v for k, v in response.getheaders()},
        body=body,
    )


def check_response(
    expected: Expectation, *, status: int, headers: dict[str, str], body: bytes
) -> str | None:
    where = f"GET {expected.path}"
    if status != expected.status:
        return f"{where}: status {status}, expected {expected.status} (body {body[:200]!r})"
    media_type = headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != expected.content_type:
        got = headers.get("content-type", "none")
        return f"{where}: Content-Type {got!r}, expected {expected.content_type!r}"
    chunked = "chunked" in headers.get("transfer-encoding", "").lower()
    if "content-length" not in headers and not chunked:
        return f"{where}: neither Content-Length nor chunked Transfer-Encoding"
    if "content-length" in headers and int(headers["content-length"]) != len(body):
        return f"{where}: Content-Length {headers['content-length']} but {len(body)} body bytes"
    if "date" not in headers:
        return f"{where}: no Date header"
    if body != expected.body:
        return f"{where}: body {body[:120]!r}, expected {expected.body!r}"
    return None


def wait_until_answering(host: str, port: int, alive, timeout: float) -> str | None:
    """Poll until an HTTP request gets any response; None when ready, else the reason."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            return "exited while starting"
        try:
            conn = http.client.HTTPConnection(host, port, timeout=2.0)
            try:
                conn.request("GET", "/")
                conn.getresponse().read()
                return None
            finally:
                conn.close()
        except (OSError, http.client.HTTPException):
            time.sleep(0.1)
    return f"did not answer on port {port} within {timeout:.0f} s"
