"""A failure's kind decides, not its words: tune refuses a request whose check failed on every
candidate, and only then (a logic test: the failures are written by the test)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from benchlab.core.errors import UserError
from benchlab.recipe import Cell
from benchlab.runner import Failure, FailureKind
from benchlab.tune.driver import _refuse_if_every_check_failed

CELLS = [Cell(f"candidate-{i}", "json", "wrk", 64, 1, 2, 5, 1) for i in range(3)]
REQUEST = SimpleNamespace(shown_requests=lambda: ["GET /items"], echo=None)


def _session(*kinds: FailureKind) -> SimpleNamespace:
    failed = {
        cell: Failure(kind, "GET /items answered 404, expected 200")
        for cell, kind in zip(CELLS, kinds, strict=False)
    }
    return SimpleNamespace(cells=SimpleNamespace(failure_of=failed.get))


def test_a_check_failed_on_every_candidate_is_the_requests_fault() -> None:
    session = _session(*[FailureKind.VERIFICATION] * 3)
    with pytest.raises(UserError) as refused:
        _refuse_if_every_check_failed(session, CELLS, REQUEST)  # type: ignore[arg-type]
    assert str(refused.value).startswith(
        "--request 'GET /items': the check failed on every candidate (3): "
        "GET /items answered 404, expected 200; fix the request"
    )
    echo = SimpleNamespace(shown_requests=lambda: ["WS /echo"], echo=object())
    with pytest.raises(UserError) as refused:
        _refuse_if_every_check_failed(session, CELLS, echo)  # type: ignore[arg-type]
    assert str(refused.value).endswith("an endpoint that sends each text message back unchanged")


@pytest.mark.parametrize(
    "kinds",
    [
        (FailureKind.VERIFICATION, FailureKind.VERIFICATION),  # one candidate passed
        (FailureKind.VERIFICATION, FailureKind.START, FailureKind.VERIFICATION),
        (FailureKind.VERIFICATION_AFTER_WARMUP,) * 3,  # it answered right before its load
    ],
)
def test_any_other_failure_is_the_candidates(kinds: tuple[FailureKind, ...]) -> None:
    _refuse_if_every_check_failed(_session(*kinds), CELLS, REQUEST)  # type: ignore[arg-type]


def test_the_stored_reason_keeps_its_words() -> None:
    assert Failure(FailureKind.VERIFICATION, "x").reason == "verification failed: x"
    assert Failure(FailureKind.START, "gin exited").reason == "gin exited"
