"""A load tool's figures must add up: in a closed loop, throughput × mean latency is about
the connections held open (Little's law on the client side). Checked on servers built to
make a tool wait outside what it times, and on well-behaved ones, with every tool."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from benchlab.load import TOOLS as TOOLS_BY_NAME
from benchlab.recipe import build_plan, load_recipe
from benchlab.report.progress import LineReporter
from benchlab.runner import SessionOptions, run_recipe
from benchlab.stacks import CATALOGUE
from benchlab.store import Store
from tests.conftest import benchlab, write_recipe
from tests.test_failures import _misbehaving_stack

# Every test here measures or takes the machine: one at a time (tests/alone.py).
pytestmark = pytest.mark.alone

TOOLS = ["wrk", "ab", "hey", "siege", "vegeta"]


@pytest.mark.slow
def test_a_tool_that_waits_outside_its_requests_is_caught_and_healthy_ones_are_not(
    tmp_path: Path, isolated_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalogue = {
        **CATALOGUE,
        **{mode: _misbehaving_stack(mode, mode) for mode in ("stall", "sleepy", "ok")},
    }
    monkeypatch.setenv("TMPDIR", str(isolated_tmp))
    profiles = "".join(
        f"[[load]]\ntool = {json.dumps(t)}\nconnections = 4\nduration = 2\ntimeout = 2\n"
        for t in TOOLS
    )
    path = write_recipe(
        tmp_path,
        'name = "consistency"\nstacks = ["stall", "sleepy", "ok"]\nscenarios = ["json"]\n'
        "trials = 1\nwarmup = 0\n" + profiles,
    )
    recipe, text = load_recipe(path, catalogue)
    store = Store(tmp_path / "r.db")
    reporter = LineReporter(Console(file=io.StringIO()))
    run_id = run_recipe(
        build_plan(path, recipe, text, catalogue), store, reporter, SessionOptions("test")
    ).run_id
    report = json.loads(
        benchlab("report", run_id, "--results", str(tmp_path / "r.db"), "-f", "json").stdout
    )
    cells = {(c["stack"], c["tool"]): c for c in report["cells"]}
    stalled = []
    for (stack, tool), cell in cells.items():
        assert cell["status"] in ("ok", "failed"), cell
        flagged = "tool-stalled" in cell["verdicts"]
        if stack in ("sleepy", "ok") and cell["latency_ms"]["mean"] is not None:
            assert not flagged, (stack, tool, cell["verdict_sentences"])
            assert cell["status"] == "ok", (stack, tool, cell["reason"])
            continue
        if cell["status"] == "failed":
            continue  # a tool may give up on a server that swallows requests: never a figure
        mean = cell["latency_ms"]["mean"]
        if mean < TOOLS_BY_NAME[tool].latency_resolution_ms:
            assert not flagged, "a mean under the tool's resolution cannot be checked"
            continue
        in_flight = cell["throughput_rps"]["median"] * mean / 1000
        # The verdict says exactly when the figures do not add up.
        assert flagged == (in_flight < 0.5 * 4), (tool, in_flight, cell["verdict_sentences"])
        if flagged:
            stalled.append(tool)
    assert "wrk" in stalled, "the stalling server should stall wrk, which reuses connections"


RECIPE_001 = """
name = "siege-dev-server"
stacks = ["flask+dev-server"]
scenarios = ["json"]
trials = 1
warmup = 0
[cores]
server = [0]
load = [1]
[[load]]
tool = "siege"
connections = [1, 15]
duration = 3
[[load]]
tool = "wrk"
connections = [1, 15]
duration = 3
"""


@pytest.mark.slow
def test_siege_measures_the_flask_dev_server_as_wrk_does(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    results = tmp_path / "r.db"
    run = benchlab(
        "run", str(write_recipe(tmp_path, RECIPE_001)), "--results", str(results),
        env={"TMPDIR": str(isolated_tmp)},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(benchlab("report", "--results", str(results), "-f", "json").stdout)
    cells = {(c["stack"], c["tool"], c["connections"]): c for c in report["cells"]}
    for connections in (1, 15):
        siege = cells[("flask+dev-server", "siege", connections)]
        wrk = cells[("flask+dev-server", "wrk", connections)]
        assert siege["status"] == "ok", siege["reason"]
        assert "tool-stalled" not in siege["verdicts"], siege["verdict_sentences"]
        # The same order of magnitude as wrk's: siege opens a connection a request here.
        assert siege["throughput_rps"]["median"] >= 0.25 * wrk["throughput_rps"]["median"], (
            connections,
            siege["throughput_rps"],
            wrk["throughput_rps"],
        )
