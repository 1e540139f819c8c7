"""The `slow` mark, kept honest by a watch rather than by hand: the fast subset
(`pytest -m "not slow"`) is every test that starts no real process.

An audit hook (`sys.addaudithook`) sees every process this one starts (`subprocess`,
`os.fork`, `os.exec*`, `os.posix_spawn`, `os.system`), and says whose it is: the test's own
(its setup, call or teardown), or a fixture's (recorded when the fixture was made, and held
against every test that uses it, since the test needs the process whoever started it). Then,
for every test that passed:

- not marked slow, but it or a fixture it uses started a process: it fails, "mark it slow";
- marked slow, but nothing it uses started a process and it took under SLOW_S: it fails,
  "not slow: unmark it" (a long simulation may stay slow: it takes its seconds).

So a new test is filed by what it does, the first time it runs: nothing to remember.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

SLOW_MARKER = "slow"
SLOW_S = 2.0  # what makes a test slow without starting a process (pyproject's marker)
# The audit events of a process started (Python's audit events table).
STARTS = frozenset(
    {
        "subprocess.Popen", "os.fork", "os.forkpty", "os.exec", "os.posix_spawn", "os.spawn",
        "os.system", "pty.spawn",
    }
)  # fmt: skip

_recorders: list[list[str]] = []  # what each open recording has seen (nested: test, fixture)
_lock = threading.Lock()
_fixtures_starting: dict[object, list[str]] = {}  # fixture definition -> what it started
_SPAWNED = pytest.StashKey[list[str]]()
_SECONDS = pytest.StashKey[float]()


def _what(event: str, args: tuple[Any, ...]) -> str:
    """The process started, in a few words: its program and first argument."""
    if event == "subprocess.Popen" and len(args) > 1:
        argv = args[1] if isinstance(args[1], list | tuple) else [args[1]]
        return " ".join(str(a) for a in argv[:2])
    return f"{event} {args[0] if args else ''}".strip()


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event not in STARTS or not _recorders:
        return
    what = _what(event, args)
    with _lock:
        for seen in _recorders:
            seen.append(what)


sys.addaudithook(_hook)  # for the life of the process: an audit hook cannot be removed


@contextmanager
def _recording() -> Iterator[list[str]]:
    seen: list[str] = []
    with _lock:
        _recorders.append(seen)
    try:
        yield seen
    finally:
        with _lock:  # this recording, not an equal one nested in it (list.remove compares)
            del _recorders[next(i for i, r in enumerate(_recorders) if r is seen)]


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> Generator[None, None, None]:
    with _recording() as seen:
        yield
    if seen:
        _fixtures_starting.setdefault(fixturedef, []).extend(seen)


def _record(item: pytest.Item) -> Iterator[None]:
    with _recording() as seen:
        yield
    item.stash.setdefault(_SPAWNED, []).extend(seen)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    yield from _record(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    yield from _record(item)


def _started(item: pytest.Item) -> list[str]:
    """What the test, or a fixture it uses, started."""
    found = list(item.stash.get(_SPAWNED, []))
    info = getattr(item, "_fixtureinfo", None)
    for definitions in info.name2fixturedefs.values() if info else ():
        for definition in definitions:
            found += _fixtures_starting.get(definition, [])
    return found


def misfiled(item: pytest.Item, started: list[str], seconds: float) -> str | None:
    """Why the test's `slow` mark is wrong, if it is."""
    slow = item.get_closest_marker(SLOW_MARKER) is not None
    if started and not slow:
        shown = ", ".join(dict.fromkeys(started[:3]))
        return (
            f"{item.nodeid} started a process ({shown}) and is not marked slow: mark it "
            f"@pytest.mark.{SLOW_MARKER} (the fast subset starts no process)"
        )
    if slow and not started and seconds < SLOW_S:
        return (
            f"{item.nodeid} is marked {SLOW_MARKER} but started no process and took "
            f"{seconds:.2f} s (under {SLOW_S:g}): not slow, unmark it"
        )
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if call.when in ("setup", "call"):
        item.stash[_SECONDS] = item.stash.get(_SECONDS, 0.0) + call.duration
    if call.when != "call" or not report.passed:
        return
    why = misfiled(item, _started(item), item.stash.get(_SECONDS, 0.0))
    if why is not None:
        report.outcome = "failed"
        report.longrepr = why
