"""tune's environment is one thing: what it measures is what its printed command deploys
(the env file read as the shell reads it, or refused), and the values reach the app through
its environment, never a command line (issue 36)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchlab.core.errors import UserError
from benchlab.http.verify import wait_until_answering
from benchlab.runner import HOST, free_port, start_stack
from benchlab.stacks import LaunchContext
from benchlab.system.process import ProcessRegistry
from benchlab.tune.app import AppInfo, parse_app
from benchlab.tune.candidates import KINDS, deploy_command, replay_stack_for
from benchlab.tune.setup_step import run_setup
from benchlab.tune.user_env import env_pairs, masked_command, read_env_file

# --- the env file: exactly what the deploy command's shell reads, or refused -------------------

# The characters that decide how a shell reads a line, and some that do not.
VALUE_CHARS = st.sampled_from(list("ab Z09_-./:@%+,=?*[]{}^!#$`\\\"'~;&|<>()\t"))
LINES = st.builds(
    lambda name, value, quoted, export: f"{'export ' if export else ''}{name}={quoted(value)}",
    st.sampled_from(["A", "DB_URL", "_x"]),
    st.text(VALUE_CHARS, max_size=12),
    st.sampled_from([lambda v: v, lambda v: f"'{v}'", lambda v: f'"{v}"']),
    st.booleans(),
)


def _shell_reads(shell: str, line: str, name: str, tmp: Path) -> str | None:
    """The value `shell` gives `name` after `set -a; . FILE` (None: it failed)."""
    path = tmp / "env"
    path.write_text(line + "\n")
    done = subprocess.run(
        [shell, "-c", f'set -a; . "$1" >/dev/null 2>&1; printf %s "${{{name}-UNSET}}"', "_",
         str(path)],
        capture_output=True, text=True, timeout=10, env={"PATH": "/usr/bin:/bin", "HOME": "/h"},
        cwd=tmp,
    )  # fmt: skip
    return done.stdout if done.returncode == 0 else None


@pytest.mark.slow
@settings(max_examples=150, deadline=None, database=None)
@given(line=LINES)
def test_an_env_file_line_is_read_as_the_shell_reads_it_or_refused(line: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        tmp = Path(directory)
        path = tmp / "given.env"
        path.write_text(line + "\n")
        try:
            found = read_env_file(path)
        except UserError as exc:
            assert "line 1" in str(exc) and "\n" not in str(exc)
            # The value is not shown: the message may be pasted where others read it.
            value = line.partition("=")[2]
            assert len(value) < 3 or value not in str(exc)
            return
        ((name, value),) = found.items()
        for shell in ("bash", "sh"):
            assert _shell_reads(shell, line, name, tmp) == value, (shell, line, value)


def test_the_audits_lines_are_refused_naming_the_line(tmp_path: Path) -> None:
    for line in ("A=$HOME/x", "C=a b", "X=`id`", "Y=~/x", "Z=a;b"):
        path = tmp_path / "e.env"
        path.write_text(f"# comment\n\nOK=1\n{line}\n")
        with pytest.raises(UserError, match=r"line 4 \(.=…\)"):
            read_env_file(path)
    path.write_text("B=\"quoted\" # note\nexport E='x y'\n")
    assert read_env_file(path) == {"B": "quoted", "E": "x y"}


def test_env_keys_must_be_shell_names() -> None:
    for pair in ("X;touch /tmp/owned;Y=1", "$(id)=3", "A B=2", "=v", "1X=2", "noequals"):
        with pytest.raises(UserError, match="shell variable name"):
            env_pairs([pair])
    assert env_pairs(["SECRET_KEY=a;b c", "E="]) == {"SECRET_KEY": "a;b c", "E": ""}


def test_the_stored_command_line_hides_env_values_and_setup() -> None:
    shown = masked_command(
        ["tune", "app:app", "--env", "SECRET_KEY=hunter2-hunter2", "--env=TOKEN=t0k3n-t0k3n",
         "--setup", "PGPASSWORD=pw123456 psql -c x", "--requests-file", "my file.toml"]
    )  # fmt: skip
    for secret in ("hunter2", "t0k3n", "pw123456"):
        assert secret not in shown
    assert '--env "SECRET_KEY=$SECRET_KEY"' in shown and '--env="TOKEN=$TOKEN"' in shown
    assert "--setup '***'" in shown and "'my file.toml'" in shown


# --- the values travel through the environment: the printed command, replayed; --setup --------

APP = """
import os

def app(environ, start_response):
    body = (os.environ.get("SECRET_KEY", "-") + "|" + os.environ.get("FILE_SECRET", "-")).encode()
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [body]
"""


def _info(tmp: Path, secret: str, file_secret: str) -> AppInfo:
    (tmp / "app.py").write_text(APP)
    env_file = tmp / "app.env"
    env_file.write_text(f"FILE_SECRET='{file_secret}'\n")
    return AppInfo(
        spec=parse_app("app.py:app", tmp), python=sys.executable, python_version="3",
        interface="wsgi", servers={"gunicorn": True}, rss_mb=30.0, env={"SECRET_KEY": secret},
        cwd=tmp, env_file=env_file, env_from_file=read_env_file(env_file),
    )  # fmt: skip


def _command_lines(root: int) -> list[str]:
    found = []
    for proc in [psutil.Process(root), *psutil.Process(root).children(recursive=True)]:
        try:
            found.append(" ".join(proc.cmdline()))
        except psutil.Error:
            continue
    return found


@pytest.mark.slow
def test_the_printed_command_replayed_gets_the_values_from_its_environment(
    isolated_tmp: Path,
) -> None:
    secret, file_secret = "s3cr3t-of-the-env", "s3cr3t-of-the-file"
    info = _info(isolated_tmp, secret, file_secret)
    kind = next(k for k in KINDS if k.name == "gunicorn-sync")
    printed = deploy_command(kind, info, 1, None)
    assert secret not in printed and file_secret not in printed
    assert 'SECRET_KEY="$SECRET_KEY" gunicorn app:app' in printed
    assert printed.startswith("set -a && . ./app.env && set +a")
    ctx = LaunchContext(HOST, free_port(), isolated_tmp / "w", (0,), 1)
    registry = ProcessRegistry()
    try:
        server = start_stack(registry, replay_stack_for(kind, info), ctx, (0,))
        problem = wait_until_answering(HOST, ctx.port, server.alive, 30)
        assert problem is None, (problem, server.log_tail())
        with urllib.request.urlopen(f"http://{HOST}:{ctx.port}/", timeout=10) as answer:
            assert answer.read().decode() == f"{secret}|{file_secret}"
        lines = _command_lines(server.pid)
        assert any("gunicorn" in line for line in lines), lines
        assert not any(secret in line or file_secret in line for line in lines), lines
    finally:
        registry.stop_all()


@pytest.mark.slow
def test_the_setup_command_is_not_on_a_command_line(isolated_tmp: Path) -> None:
    info = _info(isolated_tmp, "s3cr3t-of-the-env", "s3cr3t-of-the-file")
    marker = "setup-s3cr3t-marker"
    command = f'sleep 0.5; printf %s "$SECRET_KEY|$FILE_SECRET" > out # {marker}'
    seen: list[str] = []

    def watch() -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not (isolated_tmp / "out").exists():
            for proc in psutil.process_iter(["cmdline"]):
                seen.append(" ".join(proc.info["cmdline"] or ()))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    run_setup(command, info, {}, isolated_tmp / "setup.log", lambda _: None)
    watcher.join()
    assert (isolated_tmp / "out").read_text() == "s3cr3t-of-the-env|s3cr3t-of-the-file"
    assert any("BENCHLAB_SETUP_COMMAND" in line for line in seen), "the setup was not seen"
    assert not any(marker in line for line in seen)
    assert "BENCHLAB_SETUP_COMMAND" not in os.environ
