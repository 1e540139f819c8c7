"""Shared helpers: recipes written to tmp dirs, the CLI run as a real subprocess."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import psutil
import pytest

from tests import process_watch
from tests.alone import (  # noqa: F401 (fixtures)
    _load_watch,
    _no_load_beside_other_tests,
    sharing_the_machine,
)
from tests.temp_watch import (  # noqa: F401 (hooks: no temporary directory left)
    pytest_sessionfinish,
    pytest_sessionstart,
    pytest_terminal_summary,
)

if TYPE_CHECKING:
    from benchlab.stacks import Stack
    from tests.killed_tunes import KilledTune
    from tests.spec_tune import SpecTune

REPO = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    # The watch that keeps the slow mark honest, as a plugin: a conftest's hooks see only
    # the fixtures of nodes below its directory, so a session fixture's processes (made for
    # the session, above tests/) would go unseen and its later tests called not slow.
    config.pluginmanager.register(process_watch, "benchlab-process-watch")


# A shell that starts the tests in the background (`cmd &` without job control, as some CI
# runners do) ignores SIGINT for them, and every benchlab they start inherits that: the
# tests that press Ctrl-C would press it on a process that cannot hear it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# The suite's runs choose their ratio method as a fresh machine's would: never from a noise
# record `benchlab selfcheck --noise` left in this machine's cache (it can switch them to
# paired ratios, which need more rounds than the tests' short runs have).
os.environ["BENCHLAB_NOISE_RECORD"] = str(
    Path(tempfile.gettempdir()) / f"benchlab-tests-{os.getpid()}-noise.json"
)
ALL_CORE_STACKS = ["nginx-static", "gin", "fastapi+uvicorn", "flask+gunicorn", "sanic", "tornado"]


# A recipe of one stack whose speed a test sets (tests/apps: $BENCHLAB_SLOW_MS of work a
# request), short enough to run several times in a test.
SLOWABLE_RECIPE = """
name = "{name}"
stacks = ["slowable"]
scenarios = ["json"]
trials = 3
warmup = 0
[[load]]
connections = 4
duration = 1
"""


@pytest.fixture
def tmp_path(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """pytest's own, traversable by others (pytest makes them 0700): as root, benchlab runs
    a tune's app found there as nobody (its files are root's), as on a machine where the
    app is in a directory others can read."""
    return traversable_dir(tmp_path_factory, re.sub(r"\W", "_", request.node.name)[:30])


def traversable_dir(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A new directory of pytest's, which others can read and reach (as tmp_path is)."""
    path = tmp_path_factory.mktemp(name, numbered=True)
    path.chmod(0o755)  # readable: Python lists a directory it imports from
    for directory in path.parents:
        if directory == directory.parent or directory.stat().st_mode & 0o001:
            break
        directory.chmod(directory.stat().st_mode | 0o011)
    return path


# Tunes measured once a session and judged by tests of two files (tests/killed_tunes.py):
# each is two minutes or more of the suite. Only `alone` tests use them, and a session
# fixture is made before the check that fails an `alone` test run beside others: it checks.
def _not_beside_other_tests(fixture: str) -> None:
    if sharing_the_machine():
        pytest.fail(f"{fixture} measures: its tests are marked alone (run them without -n)")


@pytest.fixture(scope="session")
def endpoint_tune_killed(tmp_path_factory: pytest.TempPathFactory) -> KilledTune:
    """The known server tuned by its URL: killed, resumed, then tuned again with --quick."""
    from tests.killed_tunes import endpoint_tune

    _not_beside_other_tests("endpoint_tune_killed")
    return endpoint_tune(traversable_dir(tmp_path_factory, "endpoint_tune"))


@pytest.fixture(scope="session")
def command_tune_killed(tmp_path_factory: pytest.TempPathFactory) -> KilledTune:
    """The known server's app tuned by --command: killed, resumed, then tuned with --quick."""
    from tests.killed_tunes import command_tune

    _not_beside_other_tests("command_tune_killed")
    return command_tune(traversable_dir(tmp_path_factory, "command_tune"))


@pytest.fixture(scope="session")
def app_tuned_by_spec(tmp_path_factory: pytest.TempPathFactory) -> SpecTune:
    """The known server's app tuned by its app spec under one CPU (tests/spec_tune.py)."""
    from tests.spec_tune import spec_tune

    _not_beside_other_tests("app_tuned_by_spec")
    return spec_tune(traversable_dir(tmp_path_factory, "spec_tune"))


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


@pytest.fixture
def invoke(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    """benchlab's entry point in this process, as the console script calls it."""
    from benchlab import cli
    from benchlab.cli.app import console, progress

    def run(*args: str) -> Ran:
        monkeypatch.setattr(sys, "argv", ["benchlab", *args])
        # A command's --quiet or --no-color sets the consoles: never for the next test.
        for shown in (console, progress):
            monkeypatch.setattr(shown, "quiet", shown.quiet)
            monkeypatch.setattr(shown, "no_color", shown.no_color)
        capsys.readouterr()
        with pytest.raises(SystemExit) as ended:
            cli.main()
        captured = capsys.readouterr()
        return Ran(int(ended.value.code or 0), captured.out, captured.err)

    return run


def write_recipe(directory: Path, body: str, name: str = "recipe.toml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(body))
    return path


def benchlab(
    *args: str, cwd: Path = REPO, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it. A JSON document it prints is checked against its published
    schema on the way (every test that reads one checks the schema too)."""
    done = subprocess.run(
        [sys.executable, "-m", "benchlab", *args],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    # benchlab's own documents begin with their format (the trackers' exports have none).
    if done.returncode in (0, 1, 4) and done.stdout.startswith('{\n  "format": "benchlab-'):
        check_against_schema(done.stdout)
    return done


def check_against_schema(text: str) -> None:
    """A benchlab JSON document validates against its format's published schema (in
    docs/schemas/) and names no key the schema does not (its closed variant)."""
    import json

    import jsonschema

    from benchlab.report.json_formats import FORMATS
    from benchlab.report.json_schemas import json_schema, schema_file

    document = json.loads(text)
    known = [f for f in FORMATS if f.name == document.get("format")]
    assert len(known) == 1, f"JSON of no known format: {text[:300]!r}"
    (fmt,) = known
    published = json.loads((REPO / "docs" / "schemas" / schema_file(fmt)).read_text())
    jsonschema.validate(document, published, cls=jsonschema.Draft202012Validator)
    jsonschema.validate(
        document, json_schema(fmt, closed=True), cls=jsonschema.Draft202012Validator
    )


@contextmanager
def benchlab_process(
    *args: str, env: dict[str, str], cwd: Path = REPO
) -> Iterator[subprocess.Popen[str]]:
    """benchlab in the background, for a test to signal or to kill a child of; killed if left."""
    process = subprocess.Popen(
        [sys.executable, "-m", "benchlab", *args],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def living(processes: list[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for proc in processes:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.Error:
            continue
    return alive


def short_tmp() -> Path:
    """A TMPDIR of a test's own, to check that benchlab leaves no temp directory behind.

    Short, under /tmp: servers put Unix sockets in TMPDIR, and pytest's own tmp paths
    would push those past the 107-byte limit of a socket path.
    """
    directory = Path(tempfile.mkdtemp(prefix="blt-", dir="/tmp"))
    # As /tmp is: the users benchlab runs stacks and daemons as (as root) reach their own
    # directories below it. A TMPDIR closed to them sends benchlab's to /tmp instead.
    directory.chmod(0o711)
    return directory


@pytest.fixture
def isolated_tmp() -> Iterator[Path]:
    directory = short_tmp()
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def run_and_report(path: Path, results: Path, catalogue: Mapping[str, Stack] | None = None) -> dict:
    """Run a recipe through benchlab's own runner (in this process, with a test's own stacks
    in `catalogue`), then its JSON report, as `benchlab report -f json` writes it."""
    import io
    import json

    from rich.console import Console

    from benchlab.recipe import build_plan, load_recipe
    from benchlab.report.progress import LineReporter
    from benchlab.runner import SessionOptions, run_recipe
    from benchlab.stacks import CATALOGUE
    from benchlab.store import Store

    catalogue = catalogue or CATALOGUE
    recipe, text = load_recipe(path, catalogue)
    reporter = LineReporter(Console(file=io.StringIO()))
    plan = build_plan(path, recipe, text, catalogue)
    run_id = run_recipe(plan, Store(results), reporter, SessionOptions("test")).run_id
    return json.loads(benchlab("report", run_id, "--results", str(results), "-f", "json").stdout)


def error_line(stderr: str) -> str:
    """The one line an error ends with: the last on stderr, and the only one that is an error
    (a run's plan and progress, on stderr too, may come before it)."""
    lines = stderr.strip().splitlines()
    assert lines and [line for line in lines if line.startswith("error: ")] == [lines[-1]], stderr
    return lines[-1]
