"""The watch that keeps the `slow` mark honest (tests/process_watch.py): it sees a process
started by a test or by a fixture it uses, and files the test by it."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest

from tests import process_watch as watch


def _item(slow: bool, fixtures: dict[str, list[object]] | None = None) -> SimpleNamespace:
    marker = pytest.mark.slow.mark if slow else None
    return SimpleNamespace(
        nodeid="tests/test_x.py::test_x",
        get_closest_marker=lambda name: marker if name == watch.SLOW_MARKER else None,
        stash=pytest.Stash(),
        _fixtureinfo=SimpleNamespace(name2fixturedefs=fixtures or {}),
    )


@pytest.mark.slow  # it starts `true`, for the watch to see
def test_the_watch_sees_a_process_started_and_whose_fixture_started_it() -> None:
    with watch._recording() as seen:
        subprocess.run(["true"], check=True)
    assert seen == ["true"]
    # A fixture's process is held against every test that uses the fixture.
    fixture = object()
    watch._fixtures_starting[fixture] = ["postgres -D data"]
    try:
        assert watch._started(_item(False, {"database": [fixture]})) == ["postgres -D data"]
        assert watch._started(_item(False, {"tmp_path": [object()]})) == []
    finally:
        del watch._fixtures_starting[fixture]


def test_a_test_is_filed_slow_exactly_when_it_starts_a_process_or_takes_seconds() -> None:
    unmarked, marked = _item(False), _item(True)
    assert "mark it @pytest.mark.slow" in (watch.misfiled(unmarked, ["true"], 0.1) or "")
    assert "not slow, unmark it" in (watch.misfiled(marked, [], 0.5) or "")
    assert watch.misfiled(marked, ["true"], 0.1) is None
    assert watch.misfiled(marked, [], watch.SLOW_S + 0.5) is None  # a long computation
    assert watch.misfiled(unmarked, [], 0.1) is None
