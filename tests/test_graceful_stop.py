"""benchlab drain: each stack stopped under load by its documented signal, as a deploy
stops it; what it answered, dropped and refused, and how long it took to exit (issue 40).

Known answers, from the servers' own documentation: uvicorn on SIGTERM stops accepting,
finishes the requests it has and exits; the Go reference app calls no http.Server.Shutdown,
so SIGTERM ends it at once, with a request in flight. nginx's graceful stop is SIGQUIT."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchlab.core.errors import ExitCode
from benchlab.resilience.drain import EXIT_LIMIT_S, Drain
from tests.conftest import benchlab, error_line


@pytest.mark.alone
@pytest.mark.slow
def test_uvicorn_drains_and_the_go_app_drops_its_request_in_flight(isolated_tmp: Path) -> None:
    done = benchlab(
        "drain", "starlette+uvicorn", "gin", "-f", "json", "-q", env={"TMPDIR": str(isolated_tmp)}
    )
    assert done.returncode == ExitCode.CHECK_FAILED, done.stdout + done.stderr  # one drops
    stacks = {s["stack"]: s["drain"] for s in json.loads(done.stdout)["stacks"]}
    uvicorn, gin = stacks["starlette+uvicorn"], stacks["gin"]
    # Both saw load on both sides of the signal (20 req/s for 5 s, the signal at 2 s).
    for drain in (uvicorn, gin):
        assert drain["signal"] == "SIGTERM" and drain["sent_before"] >= 20, drain
        assert drain["sent_after"] >= 40, drain
        assert drain["exit_s"] is not None and drain["exit_s"] < EXIT_LIMIT_S, drain
    assert uvicorn["verdict"] == "drains" and uvicorn["in_flight"] is None, uvicorn
    assert uvicorn["failed_before"] == 0, uvicorn
    # After the signal, a closed listener: new connections refused, none answered by a
    # server half gone.
    assert uvicorn["refused_after"] + uvicorn["answered_after"] == uvicorn["sent_after"], uvicorn
    assert gin["verdict"] == "drops" and gin["in_flight"] is not None, gin
    # It dropped the long request it was serving: it exited before that one could end.
    assert gin["exit_s"] < 0.5, gin
    assert list(isolated_tmp.iterdir()) == []


def test_the_sentence_names_what_was_dropped_and_the_exit() -> None:
    dropped = Drain("SIGTERM", 20, "connection reset", 40, 3, 60, 0, 57, 3, None)
    assert not dropped.drains
    assert dropped.sentence() == (
        "drops the request in flight (connection reset) and 3 of 40 sent before SIGTERM; "
        f"still running {EXIT_LIMIT_S:g} s after SIGTERM (killed)"
    )
    assert dropped.verdict == "drops"
    clean = Drain("SIGQUIT", 20, None, 40, 0, 60, 0, 60, 0, 0.25)
    assert clean.drains and clean.sentence().startswith("drains: the request in flight")
    # Tornado's fork_processes: the parent ends, its child serves on.
    stays = Drain("SIGTERM", 20, None, 40, 0, 60, 60, 0, 0, None)
    assert stays.verdict == "hangs" and stays.sentence().startswith(
        "answers every request it took but does not exit"
    )


@pytest.mark.slow
def test_an_unknown_stack_is_one_line_naming_the_closest() -> None:
    done = benchlab("drain", "starlete+uvicorn")
    assert done.returncode == 2
    assert "did you mean 'starlette+uvicorn'" in error_line(done.stderr)
