"""tune's three subjects (issue 67): a Python app, a server started by a command over a grid
of its knobs, and an endpoint already running, measured by one machinery.

Known answers, on real servers (loopback, or a namespace host benchlab's code makes): a
server of one worker that burns 5 ms of CPU a request holds at most 200 req/s; started by
the test outside benchlab, its capacity by URL is within 10 % of that, and a rate it holds is
proved, by its address on loopback and in a namespace; the catalogue's Go server by
`--command` over GOMAXPROCS 1 and 2 on one server core holds the same either way, and the
answer names the cheaper, whose printed command runs; a Python app by `--command` and by its
app spec gives capacities within each other's intervals. A URL that answers wrong, refuses
or stalls: one line, exit 2, no figure."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from benchlab.analysis.evidence import Evidence
from benchlab.analysis.run_options import DEFAULT_TARGET_HALF_WIDTH_PCT
from benchlab.analysis.tune_options import SubjectKind, TuneOptions
from benchlab.core.errors import UserError
from benchlab.core.figures import CAPACITY
from benchlab.http.verify import wait_until_answering
from benchlab.recipe.schema import NAME_MAX
from benchlab.tune.command import CommandTemplate, check_template, parse_grid
from benchlab.tune.driver import checks_for_a_proxy
from benchlab.tune.endpoint import Endpoint, parse_url
from benchlab.tune.plan import TuneRequest, plan, tune_recipe
from benchlab.tune.proxy_check import BEHIND_PROXY
from benchlab.tune.requests import EchoEndpoint
from tests.conftest import benchlab, check_against_schema, error_line
from tests.killed_tunes import KilledTune, connect
from tests.known_server import BURNS, BURNS_COMMAND, MOST, SERVICE_S, free_port, known_server
from tests.spec_tune import SpecTune

ALONE = (pytest.mark.alone, pytest.mark.slow)


def alone(test):  # type: ignore[no-untyped-def]
    for mark in ALONE:
        test = mark(test)
    return test


# --- what is read before anything starts --------------------------------------------------


def test_a_grid_and_its_template_are_read_or_refused_in_one_line() -> None:
    grid = parse_grid(["procs=1,2", "mode=fast, slow"])
    assert grid == (("procs", ("1", "2")), ("mode", ("fast", "slow")))
    check_template("GOMAXPROCS={procs} ./server --{mode} --port {port}", grid)
    refusals = {
        ("x {w}", ()): "{w} is neither a knob of --grid",
        ("x", (("w", ("1",)),)): "the template has no {w}",
        ("x {", ()): "a literal brace is written twice",
        ("", ()): "give the command that starts your server",
    }
    for (template, knobs), said in refusals.items():
        with pytest.raises(UserError, match=said.replace("{", r"\{").replace("}", r"\}")):
            check_template(template, knobs)
    for given, said in (
        (["w"], "give a knob and its values"), (["port=1"], "benchlab's to fill"),
        (["w=1", "w=2"], "given twice"),
    ):  # fmt: skip
        with pytest.raises(UserError, match=said):
            parse_grid(given)
    with pytest.raises(UserError, match="at most 32"):
        check_template("{a}{b}", (("a", tuple("123456")), ("b", tuple("123456"))))


def test_every_subject_names_its_run_as_every_recipe_is_named(tmp_path: Path) -> None:
    """A recipe's name is one line of at most NAME_MAX characters: a long command (a venv's
    path deep in a CI checkout made this 102 and the tune a traceback), a command over
    several lines, or a long host name still makes a run, named by its head and a digest
    of the whole (two such names differ, one subject's is the same each time: --resume)."""
    deep = "/check/work/main/.venv/bin/gunicorn -w 1 -k gthread --threads {threads} -b "
    commands = [
        deep + "{host}:{port} burn:app",
        deep + "{host}:{port} other:app",
        "cd srv &&\n\tGOMAXPROCS={threads} ./server " + "--flag " * 400,
    ]
    subjects: list[CommandTemplate | Endpoint] = [
        CommandTemplate(text, (("threads", ("1",)),), tmp_path) for text in commands
    ]
    subjects.append(Endpoint(parse_url(f"http://{'a' * 63}.{'b' * 63}.example:8080/")))
    names = []
    for subject in subjects:
        found = subject.candidates(1, None)
        request = TuneRequest(
            app=subject.shown, python="python3", interface=None, requests=(),
            slo_p99_ms=100, budget_min=3, cwd=tmp_path,
        )  # fmt: skip
        recipe = tune_recipe(request, subject, found)
        assert len(recipe.name) <= NAME_MAX and "\n" not in recipe.name, recipe.name
        assert recipe.name == tune_recipe(request, subject, found).name
        names.append(recipe.name)
    assert len(set(names)) == len(names), names
    assert names[0].startswith("tune /check/work/main/.venv/bin/gunicorn")


def test_only_a_server_benchlab_starts_over_http_is_checked_for_a_proxy(tmp_path: Path) -> None:
    """The answer's check beside slow clients (HTTP parsing, slow clients) restarts the
    printed command: an endpoint is measured, not restarted; a WebSocket echo's clients are
    not HTTP's; --behind-proxy says a proxy is there. Only a checked tune's plan keeps room
    for it and says it will run (an endpoint's said so, and never ran it)."""
    command = CommandTemplate(BURNS_COMMAND, (("threads", ("1",)),), tmp_path)
    endpoint = Endpoint(parse_url("http://127.0.0.1:8080/"))

    def request(behind_proxy: bool = False, echo: EchoEndpoint | None = None) -> TuneRequest:
        return TuneRequest(
            app="x", python="python3", interface=None, requests=(), slo_p99_ms=100,
            budget_min=5, cwd=tmp_path, behind_proxy=behind_proxy, echo=echo,
        )  # fmt: skip

    assert checks_for_a_proxy(request(), command)
    assert not checks_for_a_proxy(request(behind_proxy=True), command)
    assert not checks_for_a_proxy(request(echo=EchoEndpoint("/ws")), command)
    assert not checks_for_a_proxy(request(), endpoint)
    # One candidate, five minutes: room for the check only where there is one.
    found = command.candidates(1, None)
    checked, unchecked = (plan(found, 5, proof_s=10, checks=c) for c in (True, False))
    assert checked.check and "slow clients" in checked.describe(5) and checked.answer_checked
    assert not unchecked.check and "slow clients" not in unchecked.describe(5)
    assert not unchecked.answer_checked  # not run either when the budget leaves time
    assert unchecked.replicates >= checked.replicates  # its room goes to the search
    # The option is part of a tune's key: --resume continues only a tune asked the same.
    assert request().key() != request(behind_proxy=True).key()


def test_a_commands_candidates_are_its_grid_and_it_prints_what_it_deploys(
    tmp_path: Path,
) -> None:
    subject = CommandTemplate(
        "GOMAXPROCS={procs} ./server", (("procs", ("2", "1")),), tmp_path, {"TOKEN": "s3cret"}
    )
    found = subject.candidates(1, None)
    assert [(c.label, c.size) for c in found] == [("procs=2", (2.0,)), ("procs=1", (1.0,))]
    stack = subject.catalogue(None)["procs=1"]
    assert stack.label(1, None, None) == "procs=1"
    # No {port} in the template: the server reads PORT, which the command sets; --env values
    # by name only.
    assert stack.deploy is not None
    assert stack.deploy(1, None) == 'TOKEN="$TOKEN" PORT=8000 GOMAXPROCS=1 ./server'
    deploy = CommandTemplate("node s.js --port {port}", (), tmp_path).catalogue(None)["command"]
    assert deploy.deploy is not None and deploy.deploy(1, None) == "node s.js --port 8000"


def test_an_endpoints_url_is_read_or_refused() -> None:
    url = parse_url("http://localhost:8080/orders?id=7")
    assert (url.host, url.port, url.target, url.origin) == (
        "localhost",
        8080,
        "/orders?id=7",
        "http://localhost:8080",
    )
    assert parse_url("http://127.0.0.1").port == 80
    for text, said in (
        ("https://example.com/", "https is not measured yet"),
        ("http://127.0.0.1:99999/", "port is not a number"),
        ("http:///x", "give an http:// URL with a host"),
        ("http://u:p@127.0.0.1/", "a user or password"),
    ):
        with pytest.raises(UserError, match=said):
            parse_url(text)


def test_tune_options_read_back_what_older_stores_kept() -> None:
    """One reader for every store: the untyped dict stored before subjects, and now."""
    old = {
        "key": "k", "app": "app.py:app", "target": "app:app", "slo_p99_ms": 50,
        "requests": ["GET /"], "deploy_target": {"cpus": 1.5, "memory_mb": None},
        "quick": True, "app_versions": {"gunicorn": "23.0"}, "a_key_of_the_future": 1,
    }  # fmt: skip
    read = TuneOptions.from_json(old)
    assert (read.subject, read.given, read.subject_kind) == (
        "app:app",
        "app.py:app",
        SubjectKind.PYTHON_APP,
    )
    assert read.deploy_target.cpus == 1.5 and read.quick and read.requests == ("GET /",)
    again = TuneOptions.from_json(json.loads(json.dumps(read.to_json())))
    assert again == read


# --- a URL that cannot be measured: one line, exit 2, no figure ----------------------------


class _Stalls(threading.Thread):
    """Accepts connections and never answers."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.held: list[socket.socket] = []

    def run(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                self.held.append(self.listener.accept()[0])

    def close(self) -> None:
        self.listener.close()
        for held in self.held:
            held.close()


@pytest.mark.slow
def test_a_url_that_answers_wrong_refuses_or_stalls_is_one_line_and_no_figure(
    tmp_path: Path,
) -> None:
    stalls = _Stalls()
    stalls.start()
    refused = socket.create_server(("127.0.0.1", 0))
    closed_port = refused.getsockname()[1]
    refused.close()
    try:
        with known_server(tmp_path) as (port, _):
            cases = {
                f"http://127.0.0.1:{port}/": ("--check-body", "not what it says", "body"),
                f"http://127.0.0.1:{closed_port}/": ("--check-status", "200", "refused"),
                f"http://127.0.0.1:{stalls.port}/": ("--check-status", "200", "stalls"),
                # .invalid never resolves (RFC 2606): the name is said, not the connection.
                "http://benchlab-no-such-host.invalid/": ("--check-status", "200", "not known"),
            }
            for url, (option, value, said) in cases.items():
                done = benchlab(
                    "tune", url, option, value, "--results", str(tmp_path / "r.db"),
                    cwd=tmp_path, timeout=60,
                )  # fmt: skip
                assert done.returncode == 2, done.stdout + done.stderr
                line = error_line(done.stderr)
                assert line.startswith(f"error: {url}") and said in line.lower(), line
                assert "Traceback" not in done.stderr and done.stdout == ""
    finally:
        stalls.close()
    assert not (tmp_path / "r.db").exists()  # nothing measured, nothing stored


# --- known answers -----------------------------------------------------------------------


def _told_apart(a: list[float], b: list[float]) -> bool:
    """Two tunes' capacity replicates told apart by the evidence rule every run and tune
    decides by (analysis/evidence.py: 3+ replicates a side, a ratio interval that excludes 1,
    an effect over the practical threshold); otherwise a tie."""
    return Evidence(DEFAULT_TARGET_HALF_WIDTH_PCT).judge(a, b, CAPACITY).decided


def _answer_replicates(results: Path, candidate: str) -> list[float]:
    """The capacity replicates of the answer's search, as the tune stored them."""
    rows = connect(results).execute(
        "SELECT cells.stack, capacities.capacity_rps FROM capacities JOIN cells ON cells.id ="
        " capacities.cell_id WHERE cells.mode = 'slo' ORDER BY capacities.round"
    )
    rows = [tuple(row) for row in rows]
    searched = {stack for stack, _ in rows}
    wanted = candidate if candidate in searched or len(searched) != 1 else searched.pop()
    return [rate for stack, rate in rows if stack == wanted]


def _shown(report: dict) -> str:
    """What a failed known answer shows: the answer's figures and each candidate's."""
    best = report["recommendation"] or {}
    keys = ("capacity_rps", "run_at_rps", "reason", "proof")
    candidates = [
        {k: c[k] for k in ("label", "closed_loop_rps", "cpu_us_per_request", "verdicts")}
        for c in report["candidates"]
    ]
    return json.dumps({"answer": {k: best.get(k) for k in keys}, "candidates": candidates})


def _tune(where: Path, *args: str, timeout: float = 420) -> dict:
    done = benchlab(
        "tune", *args, "--results", str(where / "r.db"), "-f", "json", cwd=where,
        timeout=timeout,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout)


def _resumed(tune: KilledTune) -> dict:
    """A killed and resumed tune's answer, as _tune reads one: it ended well, and its JSON
    is the published format's."""
    done = tune.resumed
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert tune.report is not None
    check_against_schema((tune.cwd / "resumed.json").read_text())
    return tune.report


@alone
def test_a_secret_the_command_names_itself_is_said_masked_from_its_first_line(
    tmp_path: Path,
) -> None:
    """An --env value the template also writes out: masked in every line tune says, its
    first ("your command: …") included, as in the store and every report."""
    (tmp_path / "burn.py").write_text(BURNS)
    tmp_path.chmod(0o755)
    secret = "Zq8s3cretVALUE"
    done = benchlab(
        "tune", "--command", f"SECRET_ECHO={secret} " + BURNS_COMMAND, "--grid", "threads=1",
        "--env", f"API_KEY={secret}", "--check-only", "--results", str(tmp_path / "r.db"),
        cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    said = done.stdout + done.stderr
    assert secret not in said, said
    assert "your command: SECRET_ECHO=***" in " ".join(said.split()), said


@alone
def test_an_endpoint_of_known_capacity_by_its_url(endpoint_tune_killed: KilledTune) -> None:
    # The tune tests/test_tune_kept.py kills and resumes: its answer, once resumed, is the
    # answer a tune of this URL gives (its first pass kept, its search and proof measured
    # after the resume).
    report = _resumed(endpoint_tune_killed)
    best = report["recommendation"]
    print("figures:", _shown(report))  # shown with -rP: the known answer's figures
    assert report["subject"]["kind"] == "endpoint" and report["subject"]["unmeasured"] is None
    # Its CPU, counted over its pid: 5 ms a request, and what gunicorn adds to it.
    (candidate,) = report["candidates"]
    cpu_us = candidate["cpu_us_per_request"]
    assert 1e6 * SERVICE_S <= cpu_us <= 1.5e6 * SERVICE_S, candidate
    # Its capacity within 10 % of the 200 req/s its app's 5 ms allow, or (below) of what one
    # worker serves with gunicorn's own CPU a request added, as this test counted it (5.15
    # ms here: 194 req/s).
    capacity = best["capacity_rps"]["median"]
    assert 0.9 * min(MOST, 1e6 / cpu_us) <= capacity <= 1.1 * MOST, _shown(report)
    assert best["proof"]["held"] and best["run_at_rps"] > 0, best["proof"]


@alone
@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces are made by root")
def test_the_same_endpoint_in_a_namespace_host_by_its_address_there(tmp_path: Path) -> None:
    from benchlab.hosts.netns import BenchmarkNetwork, NetnsHost

    host = NetnsHost("endpoint", f"blt-ep{os.getpid()}", "198.18.0.30")
    network = BenchmarkNetwork()
    try:
        network.up([host])
        tmp_path.chmod(0o755)
        with known_server(tmp_path, host.prefix, host.address) as (port, _):
            rate = MOST / 2
            report = _tune(
                tmp_path, f"http://{host.address}:{port}/", "--check-body", "done", "--rate",
                f"{rate:g}", "--proof", "10", "--budget", "2",
            )  # fmt: skip
    finally:
        network.down()
    best = report["recommendation"]
    assert best["rate_goal"]["held"] and best["proof"]["held"], _shown(report)
    assert report["subject"]["unmeasured"].startswith("not measured")
    (candidate,) = report["candidates"]
    assert candidate["closed_loop_rps"] <= 1.1 * MOST, candidate
    assert candidate["cpu_us_per_request"] is None  # nothing watched it: not measured


@alone
def test_the_go_server_by_its_command_over_gomaxprocs_on_one_core(tmp_path: Path) -> None:
    from benchlab.stacks.go_stacks import binary_path, build

    build("nethttp")
    server = binary_path("nethttp")
    template = f"BENCHLAB_ADDR={{host}}:{{port}} GOMAXPROCS={{procs}} {server}"
    report = _tune(
        tmp_path, "--command", template, "--grid", "procs=2,1", "--request",
        "GET /cpu?us=2000", "--budget", "5", "--proof", "10",
    )  # fmt: skip
    best = report["recommendation"]
    print("figures:", _shown(report))
    searched = {c["label"]: c for c in report["candidates"] if c["capacity_rps"]}
    assert set(searched) == {"procs=1", "procs=2"}, report["candidates"]
    # One core is one core: the tune's own ranking (the evidence rule every run decides by)
    # cannot tell the two apart, and its answer names the cheaper.
    assert best["candidate"] == "procs=1", best
    assert [c["candidate"] for c in best["equally_good"]] == ["procs=2"], _shown(report)
    # The answer is checked for needing a proxy (the one tune here that is: the others are
    # told --behind-proxy): Go's HTTP/1.1 parsing gets every shape right, and its goroutine a
    # connection is not held by 32 slow clients.
    parsing, slow = best["parsing"], best["slow_clients"]
    assert parsing["requests"] > 0 and parsing["faults"] == parsing["unranking"] == [], parsing
    assert slow["checked"] and slow["needs_proxy"] is False, slow
    # The printed command runs: started as printed, on another port, it answers.
    port = free_port(())
    command = best["command"].replace("0.0.0.0:8000", f"127.0.0.1:{port}")
    started = subprocess.Popen(["bash", "-c", command], start_new_session=True)
    try:
        assert wait_until_answering("127.0.0.1", port, lambda: started.poll() is None, 20) is None
    finally:
        os.killpg(started.pid, signal.SIGTERM)
        started.wait(10)


@alone
def test_a_python_app_by_command_and_by_app_spec_holds_the_same(
    app_tuned_by_spec: SpecTune, command_tune_killed: KilledTune
) -> None:
    # One worker of one thread by its app spec (gunicorn's gthread: connections kept alive;
    # under one CPU, which one such worker cannot exceed: tests/spec_tune.py); by --command,
    # the tune tests/test_tune_kept.py kills and resumes: one such worker, of one thread or
    # two (they share its interpreter lock: two carry what one does).
    by_spec = app_tuned_by_spec.report  # its JSON checked against the schema as it came
    by_command = _resumed(command_tune_killed)
    a = by_spec["recommendation"]["capacity_rps"]
    b = by_command["recommendation"]["capacity_rps"]
    print("figures: by spec", _shown(by_spec), "by command", _shown(by_command))
    replicates = [
        _answer_replicates(where, tuned["recommendation"]["candidate"])
        for where, tuned in (
            (app_tuned_by_spec.results, by_spec),
            (command_tune_killed.results, by_command),
        )
    ]
    assert all(replicates) and not _told_apart(*replicates), replicates
    for found in (a, b):  # and each interval reaches the known answer's 15 %
        assert found["low"] <= 1.1 * MOST and found["high"] >= 0.85 * MOST, found
    # Served behind a proxy (--behind-proxy): not checked for needing one, and said so.
    for tuned in (by_spec, by_command):
        slow = tuned["recommendation"]["slow_clients"]
        assert slow == {"checked": False, "problem": BEHIND_PROXY, "needs_proxy": None}, slow
