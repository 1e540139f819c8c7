"""benchlab as a tool in the user's own project: the wheel built from this checkout, installed
into a fresh virtualenv outside it, run from an empty directory — a quick run, its HTML
report, and a tune of a small app in that directory — on a machine without Go (a stock
Debian's is too old): benchlab installs its pinned Go once and builds gin and vegeta with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from benchlab.system import go_toolchain, users
from tests.conftest import REPO

# Every test here measures or takes the machine: one at a time (tests/alone.py).
pytestmark = pytest.mark.alone

UV = Path(sys.executable).with_name("uv")
APP = """
def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]
"""


def _run(
    *args: str | Path, cwd: Path, cache: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    if cache is not None:  # a user's own cache, empty before their first run, and no Go
        env["BENCHLAB_CACHE"] = str(cache)
        # PATH without the machine's Go (this one's is under /usr/local/go; a Debian golang in
        # /usr/bin would be 1.19, passed over as too old): the pinned one is fetched and used.
        env["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin"
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env={**env, "COLUMNS": "100"}, capture_output=True,
        text=True, timeout=timeout, check=False,
    )  # fmt: skip


@pytest.mark.slow
def test_the_installed_wheel_works_from_an_empty_directory(tmp_path: Path) -> None:
    # As root installs it (`uv tool install`, pipx, a venv in its home): in a directory no
    # other user can enter, where the stacks' account cannot run its Python.
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    dist, venv, work = tmp_path / "dist", private / "venv", tmp_path / "project"
    cache = tmp_path / "cache"
    built = _run(UV, "build", "--sdist", "--wheel", "--out-dir", dist, REPO, cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    (wheel,) = dist.glob("benchlab-*.whl")
    (sdist,) = dist.glob("benchlab-*.tar.gz")
    # As PyPI would take them: metadata complete, the README renders, the licence is in both.
    checked = _run(sys.executable, "-m", "twine", "check", "--strict", wheel, sdist, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "LICENSE" in " ".join(zipfile.ZipFile(wheel).namelist())
    assert _run(UV, "venv", "--python", sys.executable, venv, cwd=tmp_path).returncode == 0
    installed = _run(
        UV, "pip", "install", "--python", venv / "bin" / "python", wheel,
        "--constraint", REPO / "requirements.lock", cwd=tmp_path,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    work.mkdir()
    (work / "app.py").write_text(APP)
    benchlab = venv / "bin" / "benchlab"
    listed = _run(benchlab, "recipes", cwd=work, cache=cache)
    assert listed.returncode == 0 and "seed-000-gin-vs-python" in listed.stdout, listed.stderr
    # The version is the package's, read from its metadata.
    shown = _run(benchlab, "--version", cwd=work)
    assert (
        shown.stdout.strip()
        == f"benchlab {tomllib.loads((REPO / 'pyproject.toml').read_text())['project']['version']}"
    )
    run = _run(
        benchlab, "run", "quick", "--duration", "1", "--trials", "1", "--warmup", "0",
        "--results", "r.db",
        cwd=work, cache=cache,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"installing Go {go_toolchain.VERSION}" in run.stderr, run.stderr
    assert list((cache / "bin").glob("gin-*")), run.stdout  # built on its first use
    if os.geteuid() == 0:  # the stacks not as root, on an environment of their own
        assert "building the stacks' Python environment" in run.stderr, run.stderr
        ran = json.loads(
            _run(benchlab, "report", "--results", "r.db", "-f", "json", cwd=work).stdout
        )
        assert ran["run"]["machine"]["stacks_run_as"] == users.STACK_ACCOUNT
        assert {c["status"] for c in ran["cells"]} == {"ok"}
    page = _run(benchlab, "report", "--results", "r.db", "-o", "x.html", cwd=work, cache=cache)
    assert page.returncode == 0 and (work / "x.html").stat().st_size > 10_000, page.stderr
    tune = _run(
        benchlab, "tune", "app.py:app", "--python", venv / "bin" / "python", "--quick",
        "--servers", "gunicorn-sync", "--workers", "1", "--check-body", "ok",
        "--results", "r.db", "-f", "json", "-o", "tune.json", cwd=work, cache=cache,
    )  # fmt: skip
    assert tune.returncode == 0, tune.stdout + tune.stderr
    assert "building vegeta" in tune.stderr and list((cache / "bin").glob("vegeta-*"))
    assert "installing Go" not in tune.stderr, "installed once, then found in the cache"
    go = cache / "bin" / f"go-{go_toolchain.VERSION}" / "bin" / "go"
    for binary in [*cache.glob("bin/gin-*"), *cache.glob("bin/vegeta-*")]:
        made_by = subprocess.run([go, "version", binary], capture_output=True, text=True)
        assert made_by.stdout.strip().endswith(f"go{go_toolchain.VERSION}"), made_by.stdout
    assert '"command": "gunicorn app:app' in (work / "tune.json").read_text()
    assert "gunicorn" in json.loads((work / "tune.json").read_text())["app"]["versions"]
    assert REPO.as_posix() not in (work / "tune.json").read_text()  # nothing of the checkout
