"""benchlab slow-clients: what slow clients cost a server's other requests (issue 40).

Known answer, from gunicorn's own docs: a sync worker serves one request at a time and reads
it whole first, so one slow client holds it, and with more slow clients than workers the
others wait or fail ("a buffering proxy in front" is what its docs prescribe); uvicorn reads
every connection on one event loop and is not held by any. Each is measured against itself
without the slow clients, in the same rounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchlab.core.errors import ExitCode
from benchlab.resilience.slow_clients import SlowClients, SlowResult, Trial
from tests.conftest import benchlab, error_line


@pytest.mark.alone
@pytest.mark.slow
def test_gunicorns_sync_worker_is_held_by_slow_clients_and_uvicorn_is_not(
    isolated_tmp: Path,
) -> None:
    done = benchlab(
        "slow-clients", "flask+gunicorn", "starlette+uvicorn", "--mode", "headers",
        "--rounds", "2", "-f", "json", "-q", env={"TMPDIR": str(isolated_tmp)},
    )  # fmt: skip
    assert done.returncode == ExitCode.CHECK_FAILED, done.stdout + done.stderr  # one needs a proxy
    stacks = {s["stack"]: s["slow_clients"] for s in json.loads(done.stdout)["stacks"]}
    (sync,) = stacks["flask+gunicorn"]["modes"]
    (uvicorn,) = stacks["starlette+uvicorn"]["modes"]
    assert stacks["flask+gunicorn"]["needs_proxy"] is True, sync
    assert stacks["starlette+uvicorn"]["needs_proxy"] is False, uvicorn
    # Without slow clients both answer the whole rate; with them the sync worker, held by
    # one, answers almost none (its requests wait past the 2-s timeout), uvicorn all.
    for mode in (sync, uvicorn):
        for one in mode["rounds"]:
            assert one["without"]["failed_share"] < 0.01, mode
    assert sync["throughput_ratio"]["high"] < 0.5, sync
    assert sync["failed_added"]["low"] > 0.5, sync
    assert uvicorn["throughput_ratio"]["low"] > 0.9, uvicorn
    assert uvicorn["failed_added"]["high"] < 0.01, uvicorn
    assert list(isolated_tmp.iterdir()) == []


def _trial(p99: float | None, rps: float, failed: float) -> Trial:
    return Trial(p99, rps, failed)


def test_harm_is_judged_in_every_round() -> None:
    calm = (_trial(2.0, 100, 0.0), _trial(2.5, 100, 0.0))
    # Failures up in every round: harmed, whatever the p99 of the few answered.
    failing = SlowResult("headers", calm, (_trial(3.0, 10, 0.9), _trial(2.0, 12, 0.8)))
    assert failing.harmed and failing.failed_added.low > 0.7
    # A p99 4x higher in one round only: not harmed (a round's noise, not the clients).
    once = SlowResult("headers", calm, (_trial(40.0, 100, 0.0), _trial(2.4, 100, 0.0)))
    assert not once.harmed
    # 3x in every round but under 20 ms: 2 ms to 6 ms harms nobody.
    small = SlowResult("headers", calm, (_trial(6.0, 100, 0.0), _trial(7.5, 100, 0.0)))
    assert not small.harmed
    slow = SlowResult("body", calm, (_trial(60.0, 100, 0.0), _trial(75.0, 100, 0.0)))
    assert slow.harmed and slow.p99_ratio is not None and slow.p99_ratio.low == 30.0
    assert "harmed by 32 slow clients (a body sent slowly (R-U-Dead-Yet), to /plaintext)" in (
        slow.sentence()
    )


@pytest.mark.slow
def test_a_wrong_mode_is_one_line() -> None:
    done = benchlab("slow-clients", "starlette+uvicorn", "--mode", "trickle")
    assert done.returncode == 2
    assert (
        "--mode trickle: not a kind of slow client; choose from headers, body, read"
        in error_line(done.stderr)
    )


def test_slow_readers_go_only_to_a_stack_that_serves_their_file(tmp_path: Path) -> None:
    """A slow reader holds a server only with an answer larger than the socket buffers:
    the mode asks for benchlab's 1 MiB static file, and a stack that does not serve it is
    said to be unchecked in that mode (nothing is sent)."""
    from benchlab.resilience.slow_clients import MODES, READ_PATH, with_and_without
    from benchlab.resilience.target import CheckTarget
    from benchlab.stacks import CATALOGUE
    from benchlab.system.process import ProcessRegistry

    def target(stack: str, serves: bool) -> CheckTarget:
        return CheckTarget(
            CATALOGUE[stack], None, "127.0.0.1", 9, ProcessRegistry(), tmp_path, (1,),  # type: ignore[arg-type]
            serves_read_file=serves,
        )  # fmt: skip

    assert MODES["read"].path(target("gin", True)) == READ_PATH
    assert MODES["read"].path(target("gin", False)) is None  # the file was not written
    assert MODES["read"].path(target("sanic", True)) is None  # its app serves no files
    assert MODES["body"].path(target("gin", True)) == "/upload"  # it reads a body there
    assert MODES["headers"].path(target("gin", True)) == "/plaintext"
    found = with_and_without(target("sanic", False), ["read"], 2)
    assert found.results == () and not found.needs_proxy
    assert (
        found.sentence() == "read: not checked (needs a stack that serves static files "
        f"({READ_PATH}))"
    )
    assert SlowClients.from_json(found.to_json()) == found


def test_the_recipe_key_names_every_kind_of_slow_client_and_no_other() -> None:
    from typing import get_args

    from benchlab.recipe.schema import SlowClientMode
    from benchlab.resilience.slow_clients import MODES

    assert list(MODES) == list(get_args(SlowClientMode))
