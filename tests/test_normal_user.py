"""benchlab run by a normal user, on a machine where its Debian packages are installed
(issue 36): it measures — its services and stacks as that user — and names what only root
would have made exact (CPU counted per control group)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchlab.system.build_cache import cache_dir
from tests.conftest import REPO, error_line, short_tmp
from tests.other_user import become

USER = "nobody"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="the test becomes a normal user from root (setpriv)"
)


def _as_user(home: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """benchlab as USER, with a home of its own (its cache and journal) and nothing of
    root's environment but PATH."""
    env = {
        "PATH": os.environ["PATH"], "HOME": str(home), "BENCHLAB_CACHE": str(home / "cache"),
        "TMPDIR": str(home / "tmp"), "COLUMNS": "200", "LANG": "C.UTF-8",
        "BENCHLAB_NOISE_RECORD": str(home / "noise.json"),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }  # fmt: skip
    return subprocess.run(
        [*become(USER), sys.executable, "-m", "benchlab", *args],
        cwd=home, env=env, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


@pytest.mark.alone
@pytest.mark.slow
def test_a_normal_user_runs_the_quick_recipe() -> None:
    home = short_tmp()
    try:
        (home / "tmp").mkdir()
        # The Go stacks it would build on first use (a minute here, with Go installed): the
        # same sources' binaries, copied.
        (home / "cache").mkdir()
        shutil.copytree(cache_dir(), home / "cache" / "bin")
        uid, gid = pwd.getpwnam(USER).pw_uid, pwd.getpwnam(USER).pw_gid
        for directory, _, files in os.walk(home):
            os.chown(directory, uid, gid)
            for name in files:
                os.chown(Path(directory) / name, uid, gid)
        results = home / "results" / "benchlab.db"
        done = _as_user(
            home, "run", "quick", "--trials", "1", "--duration", "1", "--warmup", "0",
            "--results", str(results),
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        report = _as_user(home, "report", "--results", str(results), "-f", "json")
        assert report.returncode == 0, report.stderr
        data = json.loads(report.stdout)
        cells = data["cells"]
        assert len(cells) == 12 and all(c["status"] == "ok" for c in cells), [
            (c["stack"], c["status"], c.get("reason")) for c in cells
        ]
        assert data["run"]["machine"]["stacks_run_as"] == USER
        # Without root no control group is made: CPU is counted over the process tree, and
        # the report says what that leaves out.
        assert {c["cpu_source"] for c in cells} == {"process tree"}
        markdown = _as_user(home, "report", "--results", str(results), "-f", "md").stdout
        assert "no control group could be made" in " ".join(markdown.split())
        # Everything it made is its own: nothing of root's, nothing left in its TMPDIR, nor
        # in its home (gunicorn's control socket, ~/.gunicorn/ by default, is in the stack's
        # own directory).
        assert list((home / "tmp").iterdir()) == []
        assert not (home / ".gunicorn").exists()
        owners = {os.lstat(Path(d)).st_uid for d, _, _ in os.walk(home)}
        assert owners == {uid}
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.slow
def test_without_a_package_a_normal_user_is_told_what_to_install(tmp_path: Path) -> None:
    """What a normal user cannot install itself is named with its command, in one line."""
    home = short_tmp()
    try:
        os.chown(home, pwd.getpwnam(USER).pw_uid, pwd.getpwnam(USER).pw_gid)
        recipe = home / "r.toml"
        recipe.write_text(
            'name = "r"\nstacks = ["nginx-static"]\nscenarios = ["json"]\n'
            '[[load]]\ntool = "ab"\nconnections = 2\nduration = 1\n'
        )
        os.chown(recipe, pwd.getpwnam(USER).pw_uid, pwd.getpwnam(USER).pw_gid)
        hidden = home / "bin"
        hidden.mkdir()
        for program in ("taskset", "python3"):
            found = shutil.which(program)
            if found:
                (hidden / program).symlink_to(found)
        env_path = f"{hidden}:{Path(sys.executable).parent}"
        done = subprocess.run(
            [*become(USER), sys.executable, "-m", "benchlab", "run", str(recipe)],
            cwd=home, capture_output=True, text=True, timeout=120, check=False,
            env={"PATH": env_path, "HOME": str(home), "PYTHONPATH": str(REPO / "src")},
        )  # fmt: skip
        assert done.returncode == 2, done.stdout + done.stderr
        line = error_line(done.stderr)  # after the plan (progress, on stderr)
        assert "ab" in line and "apt-get install" in line, line
    finally:
        shutil.rmtree(home, ignore_errors=True)
