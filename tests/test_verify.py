"""Verification against real servers: the contract's every clause can fail a stack."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.http.scenarios import SCENARIOS
from benchlab.http.verify import keeps_alive, verify, wait_until_answering
from benchlab.runner import HOST
from tests.servers import running_stack, scripted_server

JSON = SCENARIOS["json"].expectations()[0]
PLAINTEXT = SCENARIOS["plaintext"].expectations()[0]
DATE = {"Date": "Sat, 21 Nov 2026 10:00:00 GMT"}
GOOD_JSON = JSON.body


def _json(headers: dict[str, str], body: bytes = GOOD_JSON, status: int = 200):
    return {JSON.path: (status, headers, body)}


@pytest.mark.parametrize(
    ("responses", "reason"),
    [
        (_json({**DATE, "Content-Type": "application/json", "Content-Length": "35"}), None),
        (
            _json({**DATE, "Content-Type": "application/json", "Content-Length": "35"}, status=500),
            "status 500",
        ),
        (
            _json({**DATE, "Content-Type": "text/html", "Content-Length": "35"}),
            "Content-Type 'text/html'",
        ),
        (_json({"Content-Type": "application/json", "Content-Length": "35"}), "no Date header"),
        (
            _json(
                {**DATE, "Content-Type": "application/json", "Content-Length": "41"},
                b'{"code": 0, "message": "ok", "data": {}}\n',
            ),
            "body",
        ),
        (
            _json({**DATE, "Content-Type": "application/json", "Connection": "close"}),
            "neither Content-Length nor chunked",
        ),
    ],
)
def test_each_clause_of_the_contract(responses, reason) -> None:
    with scripted_server(responses) as port:
        problem = verify(HOST, port, [JSON])
    if reason is None:
        assert problem is None
    else:
        assert problem is not None and reason in problem


def test_nothing_listening_is_a_reason_not_a_crash() -> None:
    with scripted_server({}) as port:
        pass
    problem = verify(HOST, port, [PLAINTEXT], timeout=2)
    assert problem is not None and "failed" in problem


@pytest.mark.slow
def test_nginx_static_honours_the_contract(tmp_path: Path) -> None:
    with running_stack("nginx-static", tmp_path) as (_, port):
        assert verify(HOST, port, [PLAINTEXT, JSON]) is None


def test_a_server_is_ready_at_its_first_status_line_even_if_the_body_never_ends() -> None:
    # uWSGI's http11 socket answers a path it does not serve with a 404 that has no
    # Content-Length and keeps the connection open: its body ends only when the server closes.
    unframed = (404, {}, b"not here")
    with scripted_server({"/": unframed, "/x": unframed}) as port:
        assert wait_until_answering(HOST, port, lambda: True, timeout=10) is None
        # Such an answer cannot share its connection with the next request.
        assert keeps_alive(HOST, port, "/x") is False
    framed = (200, {"Content-Length": "2"}, b"ok")
    with scripted_server({"/x": framed}) as port:
        assert keeps_alive(HOST, port, "/x") is True
