"""A run's resilience checks (recipe keys drain, slow_clients; issue 40), in process: the
real Session, Measurer, store, verdicts and reports, with a stand-in executor whose checks
return what the test sets. The checks' measurements themselves are tested against real
servers in test_graceful_stop.py and test_slow_clients.py."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from benchlab.analysis.summary import summarise
from benchlab.report.html import render_html
from benchlab.report.markdown import render_markdown
from benchlab.report.terminal import render_table
from benchlab.resilience.drain import Drain
from benchlab.resilience.slow_clients import SlowClients, SlowResult, Trial
from tests.conftest import benchlab
from tests.inprocess import FakeExecutor, FakeStack, Figures, run_inprocess

# What gunicorn's sync worker did here: a request queued behind the long one reset.
DROPS = Drain("SIGTERM", 20, None, 39, 4, 61, 0, 61, 0, 1.0, ("connection reset by peer",))
HELD = SlowClients(
    32, 100,
    (SlowResult(
        "headers", (Trial(2.0, 100.0, 0.0),) * 3, (Trial(None, 0.0, 1.0),) * 3
    ),),
)  # fmt: skip


def _recipe(extra: str) -> str:
    return f"""
    name = "resilience"
    stacks = ["gin", "sanic", "tornado"]
    scenarios = ["plaintext"]
    trials = 2
    warmup = 0
    {extra}
    [[load]]
    connections = 4
    duration = 2
    """


def test_each_stack_is_checked_once_after_its_rounds_and_its_verdicts_and_section_follow(
    tmp_path: Path,
) -> None:
    executor = FakeExecutor(
        {
            "gin": FakeStack({"plaintext": Figures(40_000)}, stopped=DROPS, slowed=HELD),
            "sanic": FakeStack({"plaintext": Figures(30_000)}),
            "tornado": FakeStack({"plaintext": Figures(5_000)}, check_fails="vegeta: boom"),
        }
    )
    extra = 'conform = true\ndrain = true\nslow_clients = ["headers"]'
    run = run_inprocess(tmp_path, _recipe(extra), executor)
    assert run.outcome.status == "complete"
    # Two rounds of three launches, then one launch each for its checks, on that launch.
    assert executor.launches[6:] == [("gin", 3), ("sanic", 3), ("tornado", 3)]
    assert [(stack, launch) for stack, launch, _ in executor.resilience_checked] == [
        ("gin", 3), ("gin", 3), ("sanic", 3), ("sanic", 3), ("tornado", 3), ("tornado", 3),
    ]  # fmt: skip
    assert all(not server.alive() for server in executor.servers.values())
    assert "resilience checks [1/3] gin: slow clients and stop under load" in run.output

    report = run.report()
    cells = {c["stack"]: c for c in report["cells"]}
    assert cells["gin"]["facts"]["drain"]["verdict"] == "drops"
    assert cells["gin"]["facts"]["slow_clients"]["needs_proxy"] is True
    assert {"drops", "needs-proxy"} <= set(cells["gin"]["verdicts"])
    assert "4 of 39 sent before SIGTERM" in cells["gin"]["verdict_sentences"]["drops"]
    assert "buffering proxy" in cells["gin"]["verdict_sentences"]["needs-proxy"]
    assert not {"drops", "hangs", "needs-proxy"} & set(cells["sanic"]["verdicts"])
    assert cells["sanic"]["facts"]["drain"]["verdict"] == "drains"
    # A check that failed is that stack's: said, no verdict, the others checked.
    assert cells["tornado"]["facts"]["slow_clients"] == {"problem": "vegeta: boom"}
    assert cells["tornado"]["facts"]["drain"] == {"problem": "vegeta: boom"}
    # Robustness verdicts leave the ranking alone.
    ranked = [r["stack"] for point in report["rankings"] for r in point["ranking"]]
    assert ranked[0].startswith("gin")

    summary = summarise(run.store, run.run_id)
    markdown = render_markdown(summary)
    assert "Stopped under load" in markdown and "Slow clients (32" in markdown
    assert "| gin | SIGTERM | answered | 4 of 39 | 0/61/0 | 1.00 s | drops |" in markdown
    assert "gin: conformant; harmed by 32 slow clients" in markdown
    assert "it needs a buffering proxy in front" in markdown
    assert "| tornado | – | – | – | – | – | not checked: vegeta: boom |" in markdown
    assert "tornado: conformant; slow clients not checked (vegeta: boom)" in markdown
    terminal = io.StringIO()
    render_table(summary, Console(file=terminal, width=160))
    assert "Resilience" in terminal.getvalue() and "drains" in terminal.getvalue()
    page = render_html(summary)
    assert 'id="resilience"' in page and "Stopped under load" in page


def test_a_run_stopped_during_its_checks_resumes_with_the_stacks_left(tmp_path: Path) -> None:
    stacks = {
        "gin": FakeStack(stopped=DROPS),
        "sanic": FakeStack(interrupts_check=True),
        "tornado": FakeStack(),
    }
    recipe = _recipe("drain = true")
    first = run_inprocess(tmp_path, recipe, FakeExecutor(stacks))
    assert first.outcome.status == "interrupted"
    facts = {c.stack: c.facts or {} for c in first.store.cells(first.run_id)}
    assert "drain" in facts["gin"] and "drain" not in facts["sanic"]
    stacks["sanic"] = FakeStack()
    again = FakeExecutor(stacks)
    resumed = run_inprocess(tmp_path, recipe, again, resume=first.run_id)
    assert resumed.outcome.status == "complete" and resumed.run_id == first.run_id
    # No round again; the two stacks left checked, gin not again.
    assert again.launches == [("sanic", 1), ("tornado", 1)]
    cells = {c["stack"]: c for c in resumed.report()["cells"]}
    assert cells["gin"]["facts"]["drain"]["verdict"] == "drops"
    assert all(cells[s]["facts"]["drain"]["verdict"] == "drains" for s in ("sanic", "tornado"))


def test_slow_readers_get_their_file_only_when_the_run_sends_them(tmp_path: Path) -> None:
    """The run writes the slow readers' 1 MiB file for its stacks only when it sends them
    (`read`); which stacks serve it is the mode's to say (test_slow_clients.py)."""
    executor = FakeExecutor({name: FakeStack() for name in ("gin", "sanic", "tornado")})
    (tmp_path / "read").mkdir()
    run_inprocess(tmp_path / "read", _recipe('slow_clients = ["read"]'), executor)
    assert [c.serves_read_file for c in executor.checks] == [True, True, True]
    executor = FakeExecutor({name: FakeStack() for name in ("gin", "sanic", "tornado")})
    (tmp_path / "headers").mkdir()
    run_inprocess(tmp_path / "headers", _recipe('slow_clients = ["headers"]'), executor)
    assert [c.serves_read_file for c in executor.checks] == [False, False, False]


def test_a_stack_that_does_not_start_or_dies_for_its_checks_is_said_not_checked(
    tmp_path: Path,
) -> None:
    executor = FakeExecutor({
        "gin": FakeStack(start_fails_at=3),  # two rounds, then its checks' launch
        "sanic": FakeStack(dies_in_check=True),
        "tornado": FakeStack(),
    })  # fmt: skip
    run = run_inprocess(tmp_path, _recipe('drain = true\nslow_clients = ["headers"]'), executor)
    assert run.outcome.status == "complete"
    cells = {c["stack"]: c["facts"] for c in run.report()["cells"]}
    for key in ("slow_clients", "drain"):
        assert "exited during start" in cells["gin"][key]["problem"], cells["gin"]
    assert cells["sanic"]["slow_clients"]["needs_proxy"] is False
    assert cells["sanic"]["drain"]["problem"].startswith("it was not running after the slow")
    assert cells["tornado"]["drain"]["verdict"] == "drains"


def test_within_a_budget_the_rounds_leave_the_checks_their_time(tmp_path: Path) -> None:
    """Two stacks that never separate would take every adaptive round the budget allows:
    the rounds stop where the checks' time begins, and every stack is checked."""
    flipping = [Figures(10_000), Figures(12_000)]
    executor = FakeExecutor({
        "gin": FakeStack({"plaintext": flipping}),
        "sanic": FakeStack({"plaintext": flipping[::-1]}),
        "tornado": FakeStack(),
    })  # fmt: skip
    recipe = _recipe("drain = true\nmax_trials = 60")
    run = run_inprocess(tmp_path, recipe, executor, deadline_s=150.0)
    cells = {c["stack"]: c["facts"] for c in run.report()["cells"]}
    assert all(cells[s]["drain"].get("verdict") == "drains" for s in cells), cells
    rounds = sum(1 for stack, _ in executor.launches if stack == "gin") - 1
    assert 2 < rounds < 60  # adaptive rounds ran, and stopped short for the checks
    assert executor.now <= 150.0


def test_a_run_without_the_keys_checks_nothing_and_shows_no_section(tmp_path: Path) -> None:
    executor = FakeExecutor({name: FakeStack() for name in ("gin", "sanic", "tornado")})
    run = run_inprocess(tmp_path, _recipe("conform = false"), executor)
    assert executor.resilience_checked == [] and len(executor.launches) == 6
    assert "Resilience" not in render_markdown(summarise(run.store, run.run_id))


@pytest.mark.slow
def test_the_checks_need_every_role_on_this_machine(tmp_path: Path) -> None:
    recipe = tmp_path / "r.toml"
    recipe.write_text(
        'name = "r"\nstacks = ["gin"]\nscenarios = ["plaintext"]\ndrain = true\n'
        '[hosts.a]\nat = "netns:bl-a"\naddress = "198.18.0.20"\nroles = ["server"]\n'
        '[hosts.b]\nat = "netns:bl-b"\naddress = "198.18.0.10"\nroles = ["load", "database"]\n'
        "[[load]]\nconnections = 4\n"
    )
    done = benchlab("run", str(recipe), "--dry-run")
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "key 'drain'" in line and "remove [hosts]" in line and "\n" not in line
    recipe.write_text(
        'name = "r"\nstacks = ["gin"]\nscenarios = ["plaintext"]\nslow_clients = ["slow"]\n'
        "[[load]]\nconnections = 4\n"
    )
    done = benchlab("run", str(recipe), "--dry-run")
    assert done.returncode == 2 and "slow_clients" in done.stderr, done.stderr


@pytest.mark.alone
@pytest.mark.slow
def test_behind_nginx_uvicorn_still_drains_and_the_go_app_still_drops(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    """For real, the runner's path: each stack started once more after its round, behind
    benchlab's nginx, and stopped under load there. What nginx's clients see: uvicorn
    answers what it had taken (later requests get nginx's 502, not a refusal: nginx still
    listens); the Go app's request in flight comes back as nginx's 502."""
    recipe = tmp_path / "drain.toml"
    recipe.write_text(
        'name = "drain-behind-nginx"\nstacks = ["starlette+uvicorn", "gin"]\n'
        'scenarios = ["plaintext"]\ntrials = 1\nwarmup = 0\ndrain = true\n'
        '[services]\nproxy = "nginx"\n[[load]]\nconnections = 8\nduration = 1\n'
    )
    results = tmp_path / "results.db"
    done = benchlab(
        "run", str(recipe), "--results", str(results), "-o", str(tmp_path / "r.md"),
        env={"TMPDIR": str(isolated_tmp)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(benchlab("report", "--results", str(results), "-f", "json").stdout)
    cells = {c["stack"]: c for c in report["cells"]}
    uvicorn, gin = cells["starlette+uvicorn"], cells["gin"]
    stop = uvicorn["facts"]["drain"]
    assert stop["verdict"] == "drains" and stop["in_flight"] is None, stop
    assert stop["sent_before"] >= 20 and stop["failed_before"] == 0, stop
    assert stop["refused_after"] == 0 and stop["failed_after"] > 0, stop  # nginx's 502s
    assert "drops" not in uvicorn["verdicts"]
    assert gin["facts"]["drain"]["in_flight"] == "502", gin["facts"]["drain"]
    assert "drops" in gin["verdicts"]
    assert "| gin | SIGTERM | 502 |" in (tmp_path / "r.md").read_text()
    assert list(isolated_tmp.iterdir()) == []
