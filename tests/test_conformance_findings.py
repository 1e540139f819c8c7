"""A conformance finding names what the server did wrong in words a user can check, and an
answer a user's app gives to a request sent whole is the app's, not the server's framing
(issue 66): real servers (waitress, gunicorn) serving small apps whose answers are known."""

from __future__ import annotations

import contextlib
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlab.conformance.check import check_server
from benchlab.conformance.findings import PARSING_PROXY, parsing_text
from benchlab.conformance.probe import Fault
from benchlab.conformance.shapes import shapes_for
from benchlab.http.scenarios import Expectation
from benchlab.http.verify import wait_until_answering
from benchlab.runner import HOST, free_port
from benchlab.system.process import ProcessRegistry
from tests.quirky_server import Quirk, quirky_server
from tests.servers import VENV_BIN

# The five lines of issue 66's reproduction: an answer with its Content-Length.
HELLO = """
def app(environ, start_response):
    body = b"Hello, World!"
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]
"""
# As Django's host check does: a request without Host is refused by the app itself.
CHECKS_HOST = """
def app(environ, start_response):
    if not environ.get("HTTP_HOST"):
        start_response("400 Bad Request", [("Content-Type", "text/plain"),
                                           ("Content-Length", "8")])
        return [b"bad host"]
    body = b"Hello, World!"
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]
"""
USERS_GET = Expectation("/", None, None, body_contains=b"Hello", contract=False)


@contextlib.contextmanager
def _serving(server: str, app: str, where: Path) -> Iterator[int]:
    """`app` (module text) served by `server` on a free port, as a user would start it."""
    (where / "app.py").write_text(textwrap.dedent(app).lstrip())
    port = free_port()
    argv = {
        "waitress": [f"{VENV_BIN}/waitress-serve", f"--listen={HOST}:{port}", "app:app"],
        "gunicorn": [f"{VENV_BIN}/gunicorn", "-w", "1", "-b", f"{HOST}:{port}", "app:app"],
    }[server]
    registry = ProcessRegistry()
    process = registry.start(
        argv, cores=(0,), log_path=where / f"{server}.log", cwd=where,
        env={"XDG_RUNTIME_DIR": str(where)},  # gunicorn's control socket: not in ~
    )  # fmt: skip
    try:
        problem = wait_until_answering(HOST, port, process.alive, 30)
        assert problem is None, f"{server}: {problem}: {process.log_tail()}"
        yield port
    finally:
        registry.stop_all()


@pytest.mark.slow
def test_waitress_answering_head_with_a_body_is_said_so_and_gunicorn_is_not(
    tmp_path: Path,
) -> None:
    """waitress 3.0.2 sends the body of the app's answer to HEAD too: a client reads it as
    the start of its next answer on the connection. The same app under gunicorn answers HEAD
    without it: the fault is the server's, and named as such."""
    (tmp_path / "w").mkdir()
    (tmp_path / "g").mkdir()
    with _serving("waitress", HELLO, tmp_path / "w") as port:
        waitress = check_server(HOST, port, shapes_for(USERS_GET))
    with _serving("gunicorn", HELLO, tmp_path / "g") as port:
        gunicorn = check_server(HOST, port, shapes_for(USERS_GET))
    assert gunicorn.conformant, gunicorn.first_failure()
    assert waitress.failed_shapes == ("head",), waitress.first_failure()
    (head,) = [r for r in waitress.results if r.failures]
    assert {f.wrong.fault for f in head.failures} == {Fault.HEAD_BODY}, head.failures
    assert "13 bytes after the answer's headers" in head.failures[0].wrong.detail
    said = parsing_text(waitress.facts())
    assert said.startswith("answers HEAD with a body (head, sent whole: 13 bytes"), said
    assert "nginx in front answers HEAD without it" in said
    assert PARSING_PROXY not in said and "frames" not in said, said


@pytest.mark.slow
def test_an_apps_own_answer_to_a_request_sent_whole_is_not_a_framing_fault(
    tmp_path: Path,
) -> None:
    """HTTP/1.0 without Host, sent whole, answered 400 by the app (its host check): that is
    the app's answer; each split of it must get the same, and then nothing failed."""
    with _serving("gunicorn", CHECKS_HOST, tmp_path) as port:
        found = check_server(HOST, port, shapes_for(USERS_GET))
    assert found.conformant, found.first_failure()
    (own,) = [r for r in found.results if r.apps_own]
    assert own.shape.name == "http-1.0" and own.apps_own == (400,)
    said = parsing_text(found.facts())
    assert said.startswith("every request shape right"), said
    assert "the app's own answers to requests sent whole, not the server's framing: " in said
    assert "http-1.0 answered 400" in said and "proxy" not in said, said


@pytest.mark.slow
def test_a_split_answered_otherwise_than_the_whole_request_is_still_a_framing_fault() -> None:
    """A user's request set: the whole request answered right, the same split after byte 7
    misparsed (the tests' server with one bug): the app's own answer rule does not excuse
    it."""
    users = Expectation("/plaintext", None, None, body_contains=b"Hello", contract=False)
    with quirky_server(Quirk(misparses_first_read_of=7)) as port:
        found = check_server(HOST, port, shapes_for(users))
    assert not found.conformant
    assert not any(r.apps_own for r in found.results), found.results
    first = found.first_failure() or ""
    assert first.startswith("answers the request wrong (get, split after byte 7:"), first
    assert PARSING_PROXY in parsing_text(found.facts())
