"""The type checker is wired in and finds nothing: mypy, as pyproject.toml's [tool.mypy] sets
it, over the whole package (strict where the figures, their store and their reports live), run
by `./lab test` before the suite and here, so that running pytest alone shows it too."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STRICT_PACKAGES = {
    "benchlab.core.*",
    "benchlab.analysis.*",
    "benchlab.store.*",
    "benchlab.report.*",
}


def _mypy_config() -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert isinstance(config, dict)
    return config


def test_the_core_packages_are_checked_strictly() -> None:
    config = _mypy_config()
    assert config["files"] == ["src/benchlab"]
    overrides = config["overrides"]
    assert isinstance(overrides, list)
    strict = [o for o in overrides if o.get("disallow_untyped_defs")]
    assert strict, "no override turns on mypy's strict flags"
    assert set(strict[0]["module"]) >= STRICT_PACKAGES
    # `strict = true` in an override sets mypy's strict flags for every module, not its own.
    assert not any("strict" in o for o in overrides)
    assert "ignore_missing_imports" not in config, "name the untyped libraries in an override"


def test_lab_test_runs_the_type_checker_before_pytest() -> None:
    lab = (ROOT / "lab").read_text()
    branch = re.search(r"^  test\)\n(.*?)\n    ;;", lab, re.S | re.M)
    assert branch, "./lab has no `test)` branch"
    lines = branch.group(1).splitlines()
    mypy = next(i for i, line in enumerate(lines) if line.strip() == '"$VENV/bin/mypy"')
    pytest_args = next(i for i, line in enumerate(lines) if "pytest" in line)
    assert mypy < pytest_args


@pytest.mark.slow
def test_mypy_finds_no_error() -> None:
    # Its cache (.mypy_cache in the checkout) makes a second run read only what changed.
    checked = subprocess.run(
        [str(Path(sys.executable).parent / "mypy")],
        cwd=ROOT, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout[-6000:] + checked.stderr[-2000:]
