"""The watch that fails a session leaving a benchlab temporary directory behind."""

from __future__ import annotations

from pathlib import Path

from tests.temp_watch import benchlab_temp_dirs, left_behind


def test_a_bl_directory_that_appeared_during_the_session_is_left_behind(tmp_path: Path) -> None:
    (tmp_path / "bl-before").mkdir()
    (tmp_path / "pytest-of-root").mkdir()
    before = benchlab_temp_dirs([tmp_path])
    (tmp_path / "bl-run-x1").mkdir()  # a run's directory nobody removed
    (tmp_path / "bl-removed").mkdir()
    (tmp_path / "bl-removed").rmdir()
    (tmp_path / "bl-a-file").write_text("")  # a file, not a directory benchlab makes
    (tmp_path / "other-dir").mkdir()
    after = benchlab_temp_dirs([tmp_path])
    assert left_behind(before, after) == [tmp_path / "bl-run-x1"]


def test_nothing_new_is_nothing_left(tmp_path: Path) -> None:
    (tmp_path / "bl-old").mkdir()
    seen = benchlab_temp_dirs([tmp_path, tmp_path / "absent"])
    assert left_behind(seen, benchlab_temp_dirs([tmp_path])) == []
