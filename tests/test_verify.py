"""Verification against real servers: the contract's every clause can fail a stack."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.runner import HOST
from benchlab.scenarios import SCENARIOS
from benchlab.verify import verify
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


def test_nginx_static_honours_the_contract(tmp_path: Path) -> None:
    with running_stack("nginx-static", tmp_path) as (_, port):
        assert verify(HOST, port, [PLAINTEXT, JSON]) is None
