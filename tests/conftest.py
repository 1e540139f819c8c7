"""Shared helpers: recipes written to tmp dirs, the CLI run as a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parent.parent
ALL_CORE_STACKS = ["nginx-static", "gin", "fastapi+uvicorn", "flask+gunicorn", "sanic", "tornado"]


def write_recipe(directory: Path, body: str, name: str = "recipe.toml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(body))
    return path


def benchlab(
    *args: str, cwd: Path = REPO, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchlab", *args],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def benchlab_process(*args: str, env: dict[str, str], cwd: Path = REPO) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "benchlab", *args],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def living(processes: list[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for proc in processes:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.Error:
            continue
    return alive


@pytest.fixture
def isolated_tmp(tmp_path: Path) -> Path:
    """A TMPDIR of the test's own, to check that benchlab leaves no temp directory."""
    directory = tmp_path / "tmp"
    directory.mkdir()
    return directory
