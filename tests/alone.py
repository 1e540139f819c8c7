"""Which tests run alone, and a watch that holds the others to it.

`./lab test` runs the suite in two phases: first every test not marked `alone`, two per core
(pytest-xdist), then the `alone` ones one at a time. A test is `alone` when it puts load on a
server (two loads at once make both sets of figures false), takes the machine's run lock
(`benchlab run`, `tune`, `selfcheck`, the checks), or judges the whole machine. While tests
share the machine, each worker watches its own process tree for a load tool or a benchlab
holding the run lock: a test that starts one without the marker fails, naming it, so a misfiled
test cannot quietly measure beside another.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from benchlab.load import TOOLS
from benchlab.resilience.slow_clients import SLOWHTTPTEST
from benchlab.runner.recovery import RUN_LOCK_FILE

ALONE_MARKER = "alone"
# The load tools benchlab drives, and the slow-client generator of the resilience checks.
LOAD_TOOL_NAMES = frozenset({*TOOLS, Path(SLOWHTTPTEST).name})
# A look at the tool's version or help is not load.
NOT_LOAD_ARGUMENTS = frozenset({"-v", "-V", "--version", "version", "-h", "--help"})
WATCH_INTERVAL_S = 0.1


def sharing_the_machine() -> bool:
    """True in a pytest-xdist worker: other tests run beside this one."""
    return "PYTEST_XDIST_WORKER" in os.environ


def measuring(process: psutil.Process) -> str | None:
    """What this process measures with: a load tool putting load (not a look at its version
    or help), or a benchlab holding the machine's run lock (a run, tune or check)."""
    try:
        name = process.name()
        tool = name.split("-")[0]  # benchlab's own vegeta build is vegeta-<version>
        if tool in LOAD_TOOL_NAMES:
            arguments = process.cmdline()  # empty once it has exited, unreaped
            looks = not arguments or NOT_LOAD_ARGUMENTS.intersection(arguments[1:2])
            return None if looks else tool
        if name == "java":  # JMeter, the WebSocket tool, is a JVM: known by its launcher
            arguments = process.cmdline()
            return "jmeter" if any("ApacheJMeter" in a for a in arguments) else None
        if name.startswith(("python", "benchlab")):
            held = any(Path(f.path).name == RUN_LOCK_FILE for f in process.open_files())
            return "benchlab's run lock" if held else None
    except psutil.Error:
        return None
    return None


class LoadWatch:
    """What measured in this process's tree since the last `take` (load tools, a benchlab
    holding the run lock), sampled every WATCH_INTERVAL_S: the tests' loads last a second or
    more."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="load-watch", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(WATCH_INTERVAL_S):
            try:
                descendants = me.children(recursive=True)
            except psutil.Error:
                continue
            tools = {tool for p in descendants if (tool := measuring(p)) is not None}
            if tools:
                with self._lock:
                    self._seen |= tools

    def take(self) -> set[str]:
        with self._lock:
            seen, self._seen = self._seen, set()
        return seen

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture(scope="session")
def _load_watch() -> Iterator[LoadWatch | None]:
    if not sharing_the_machine():
        yield None
        return
    watch = LoadWatch()
    yield watch
    watch.stop()


@pytest.fixture(autouse=True)
def _no_load_beside_other_tests(
    request: pytest.FixtureRequest, _load_watch: LoadWatch | None
) -> Iterator[None]:
    if _load_watch is None:
        yield
        return
    if request.node.get_closest_marker(ALONE_MARKER):
        pytest.fail(
            f"{request.node.nodeid} is marked {ALONE_MARKER}: it measures or judges the whole "
            "machine, so it runs without -n (./lab test runs it in its second phase)",
            pytrace=False,
        )
    yield
    seen = _load_watch.take()  # since the last test: this one's module fixtures count too
    if seen:
        pytest.fail(
            f"{request.node.nodeid} ran {', '.join(sorted(seen))} while other tests shared the "
            f"machine: mark it @pytest.mark.{ALONE_MARKER}",
            pytrace=False,
        )
