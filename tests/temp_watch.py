"""A session that leaves a benchlab temporary directory behind fails.

Every temporary directory benchlab makes is named `bl-…` (a run's, a stack's, the services',
ssh's control sockets), in TMPDIR or in /tmp. The names there are read when the session
starts and again when it ends; a `bl-` directory that appeared in between and is still there
is one some door forgot to remove, and the session fails naming it. It runs in the process
that runs the session (with pytest-xdist, the controller, after every worker has ended).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

BENCHLAB_TEMP_PREFIX = "bl-"
_BEFORE = pytest.StashKey[frozenset[Path]]()
_LEFT = pytest.StashKey[str]()


def temp_places() -> list[Path]:
    """Where benchlab makes its temporary directories: TMPDIR, and /tmp."""
    return list(dict.fromkeys([Path(tempfile.gettempdir()), Path("/tmp")]))


def benchlab_temp_dirs(places: list[Path]) -> frozenset[Path]:
    return frozenset(
        entry
        for place in places
        if place.is_dir()
        for entry in place.iterdir()
        if entry.name.startswith(BENCHLAB_TEMP_PREFIX) and entry.is_dir()
    )


def left_behind(before: frozenset[Path], after: frozenset[Path]) -> list[Path]:
    return sorted(after - before)


def _controls_the_session(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    if _controls_the_session(session.config):
        session.stash[_BEFORE] = benchlab_temp_dirs(temp_places())


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _controls_the_session(session.config) or _BEFORE not in session.stash:
        return
    left = left_behind(session.stash[_BEFORE], benchlab_temp_dirs(temp_places()))
    if not left:
        return
    shown = ", ".join(str(path) for path in left[:5]) + (" …" if len(left) > 5 else "")
    session.config.stash[_LEFT] = (
        f"benchlab temporary directories left behind by this session ({len(left)}): {shown}"
    )
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    said = terminalreporter.config.stash.get(_LEFT, None)
    if said is not None:
        terminalreporter.write_sep("=", "temporary directories left", red=True)
        terminalreporter.write_line(said, red=True)
