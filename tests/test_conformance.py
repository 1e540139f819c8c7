"""The conformance check (issue 40) against servers whose answer is known: the tests' own
server, correct but for one chosen quirk, and real stacks of the catalogue."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from rich.console import Console

from benchlab.analysis.summary import summarise
from benchlab.conformance import probe
from benchlab.conformance.check import check_server, offsets
from benchlab.conformance.shapes import SHAPES_BY_NAME
from benchlab.core.errors import ExitCode
from benchlab.recipe import build_plan, load_recipe
from benchlab.report.jsonfile import render_json
from benchlab.report.progress import LineReporter
from benchlab.runner import SessionOptions, run_recipe
from benchlab.stacks import CATALOGUE, Stack
from benchlab.stacks.base import Launch, LaunchContext
from benchlab.store import Store
from tests.conftest import benchlab, error_line, write_recipe
from tests.quirky_server import Quirk, quirky_server

HOST = "127.0.0.1"
QUIRKY = Path(__file__).with_name("quirky_server.py")
CONFORM_RECIPE = """
name = "conform-test"
stacks = ["quirky", "correct"]
scenarios = ["json"]
trials = 1
warmup = 0
conform = true
[[load]]
connections = 4
duration = 1
"""


@pytest.mark.slow
def test_a_correct_server_passes_every_shape_at_every_offset() -> None:
    with quirky_server(Quirk()) as port:
        result = check_server(HOST, port)
    assert result.conformant, result.first_failure()
    every = sum(len(offsets(shape)) for shape in SHAPES_BY_NAME.values())
    assert result.requests == every > 500


@pytest.mark.slow
def test_a_server_that_misparses_one_split_is_caught_at_that_offset() -> None:
    with quirky_server(Quirk(misparses_first_read_of=7)) as port:
        result = check_server(HOST, port)
    assert not result.conformant
    # Every shape that is split fails there, and only there ("GET /pl" | "aintext ..."),
    # but the malformed one, whose right answer is the 400 the bug gives.
    for shape_result in result.results:
        shape = shape_result.shape
        if shape.split and shape.name != "bad-request-line":
            assert [f.offset for f in shape_result.failures] == [7], shape_result
        else:
            assert shape_result.passed, shape_result
    assert "split after byte 7" in (result.first_failure() or "")


def test_a_server_that_ignores_connection_close_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe, "CLOSE_WAIT_S", 0.2)  # it holds the connection 5 s
    with quirky_server(Quirk(ignores_connection_close=True)) as port:
        result = check_server(HOST, port, (SHAPES_BY_NAME["connection-close"],))
    (only,) = result.results
    assert not only.passed
    assert "kept the connection open" in only.failures[0].problem


@pytest.mark.alone
@pytest.mark.slow
def test_real_stacks_through_the_command_nginx_conforms_and_uvicorn_takes_any_header() -> None:
    """Through `benchlab conform` as a user runs it (each stack started as a run starts it):
    nginx refuses the oversized header and parses every split; uvicorn (httptools) parses
    every split too but answers a 4 MiB header with 200 (it sets no limit)."""
    done = benchlab("conform", "nginx-static", "fastapi+uvicorn", "-f", "json", "-q")
    assert done.returncode == ExitCode.CHECK_FAILED, done.stderr  # one does not conform
    stacks = {s["stack"]: s for s in json.loads(done.stdout)["stacks"]}
    nginx, uvicorn = stacks["nginx-static"], stacks["fastapi+uvicorn"]
    every = sum(len(offsets(shape)) for shape in SHAPES_BY_NAME.values())
    assert nginx["conformant"] is True and nginx["requests"] == every
    failed = [s for s in uvicorn["shapes"] if not s["passed"]]
    assert [s["shape"] for s in failed] == ["oversized-header"]
    first = failed[0]["failures"][0]
    assert first["fault"] == "wrong_answer" and "status 200, expected 400" in first["problem"]


@pytest.mark.slow
def test_an_unknown_stack_is_one_line_naming_the_closest() -> None:
    done = benchlab("conform", "nginx-stati")
    assert done.returncode == 2
    assert "did you mean 'nginx-static'" in error_line(done.stderr)


def _quirky_stack(name: str, offset: str) -> Stack:
    def launch(ctx: LaunchContext) -> Launch:
        return Launch(argv=[sys.executable, str(QUIRKY), offset, ctx.host, str(ctx.port)])

    return Stack(
        name=name, framework="test", server="h11", worker_model="a thread per connection",
        scenarios=("plaintext", "json"), launch=launch, start_timeout=10,
    )  # fmt: skip


@pytest.mark.alone
@pytest.mark.slow
def test_a_run_with_conform_flags_a_misparsing_stack_and_ranks_it_apart(
    tmp_path: Path, isolated_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real run (real processes, real load): the stack that misparses a request split
    after byte 7 is measured, flagged nonconformant at that offset and left out of the
    ranking; its correct twin is ranked."""
    monkeypatch.setenv("TMPDIR", str(isolated_tmp))
    catalogue = {
        **CATALOGUE, "quirky": _quirky_stack("quirky", "7"),
        "correct": _quirky_stack("correct", "-"),
    }  # fmt: skip
    recipe = write_recipe(tmp_path, CONFORM_RECIPE)
    loaded, text = load_recipe(recipe, catalogue)
    store = Store(tmp_path / "results.db")
    output = io.StringIO()
    reporter = LineReporter(Console(file=output, width=200))
    plan = build_plan(recipe, loaded, text, catalogue)
    outcome = run_recipe(plan, store, reporter, SessionOptions("test"))
    assert outcome.status == "complete", output.getvalue()
    report = json.loads(render_json(summarise(store, None)))
    cells = {c["stack"]: c for c in report["cells"]}
    assert "nonconformant" in cells["quirky"]["verdicts"]
    assert "split after byte 7" in cells["quirky"]["verdict_sentences"]["nonconformant"]
    assert "nonconformant" not in cells["correct"]["verdicts"]
    assert cells["quirky"]["throughput_rps"]["median"] > 0  # measured all the same
    ranked = [r["stack"] for point in report["rankings"] for r in point["ranking"]]
    assert ranked == [cells["correct"]["stack_label"]]
    assert list(isolated_tmp.iterdir()) == []


def test_a_users_request_is_asked_in_every_shape_with_its_own_headers() -> None:
    """tune's answer is sent the same shapes for the app's own GET: its path and headers in
    every shape but the malformed request line; the catalogue's set asks /plaintext."""
    from benchlab.conformance.shapes import CATALOGUE_SHAPES, shapes_for
    from benchlab.http.scenarios import Expectation

    assert CATALOGUE_SHAPES.follow_up == b"GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    get = Expectation("/orders/7", None, None, headers=(("Authorization", "Bearer t"),),
                      contract=False)  # fmt: skip
    asked = shapes_for(get)
    for shape in asked.shapes:
        if shape.name == "bad-request-line":
            assert b"/orders/7" not in shape.raw
            continue
        assert b" /orders/7 HTTP/1." in shape.raw and b"Authorization: Bearer t\r\n" in shape.raw
    pipelined = next(s for s in asked.shapes if s.name == "pipelined")
    assert pipelined.raw.count(b"GET /orders/7 HTTP/1.1") == 2
    # A POST or HEAD to a user's GET path may be answered any way, a 500 of the app's own
    # included (Datasette's to a POST): its framing is judged by the connection staying in
    # step. The catalogue's stacks answer as the contract says.
    for name in ("head", "post-content-length", "post-chunked"):
        shape = next(s for s in asked.shapes if s.name == name)
        assert {403, 500} <= set(shape.answers[0].statuses) and shape.follow_up, name
        ours = next(s for s in CATALOGUE_SHAPES.shapes if s.name == name)
        assert 500 not in ours.answers[0].statuses, name
