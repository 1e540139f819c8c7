"""What a second local user can do to a root that runs benchlab, tried for real: each attack
planted as that user (or as the user other daemons run as), benchlab run as root, and what
the attacker got read back. Each ends with nothing gained.

1. A tuned app's module (and its --setup) pushes keystrokes into root's terminal (TIOCSTI).
2. Links at every result and report path in the app's directory point at root's files.
3. A process of the user other daemons share (nobody) reads a stack's environment.
4. A server drips its answer a few bytes at a time against benchlab's answer check.
5. A cached binary others can write is swapped for the attacker's program.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlab.http.wire import ExchangeError, exchange
from benchlab.load import TOOLS
from benchlab.load import vegeta as vegeta_build
from benchlab.system import go_toolchain
from benchlab.system.process import ManagedProcess
from tests.other_user import become

try:
    from benchlab.system.users import stack_user
except ImportError:  # the code before issue 56, to show the attacks working there
    from benchlab.system.process import stack_user  # type: ignore[attr-defined,no-redef]

SECOND = "bl-second"
BENCHLAB = Path(sys.executable).with_name("benchlab")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the attacks are on root")


@pytest.fixture(scope="module")
def second() -> str:
    """A second local user of the machine: the attacker, and the owner of the app."""
    try:
        pwd.getpwnam(SECOND)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
             "--user-group", SECOND],
            check=True, capture_output=True,
        )  # fmt: skip
    return SECOND


def _as(user: str, *argv: str) -> None:
    subprocess.run([*become(user), *argv], check=True, capture_output=True, timeout=30)


def _give(path: Path, user: str) -> None:
    entry = pwd.getpwnam(user)
    for directory, _names, files in os.walk(path):
        os.chown(directory, entry.pw_uid, entry.pw_gid)
        for name in files:
            os.chown(os.path.join(directory, name), entry.pw_uid, entry.pw_gid)


INJECT = """
import fcntl, os, termios
def inject(text):
    for opened in (lambda: os.open("/dev/tty", os.O_RDWR), lambda: 0, lambda: 1, lambda: 2):
        try:
            fd = opened()
            for ch in text:
                fcntl.ioctl(fd, termios.TIOCSTI, ch.encode())
            return
        except OSError:
            continue
"""
APP = (
    INJECT
    + """
inject("id > /tmp/bl-injected\\n")

def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]
"""
)
# Root's shell, as the tests can have one: a session whose terminal is a pty; benchlab runs
# in it, then whatever waits in the terminal's input is read, as the shell would read it.
SHELL = """
import fcntl, json, os, select, subprocess, sys, termios
fcntl.ioctl(0, termios.TIOCSCTTY, 0)
done = subprocess.run(sys.argv[2:])
ready, _, _ = select.select([0], [], [], 1.5)
typed = os.read(0, 4096).decode(errors="replace") if ready else ""
open(sys.argv[1], "w").write(json.dumps({"rc": done.returncode, "typed": typed}))
"""


def _in_a_terminal(argv: list[str], cwd: Path, out: Path, env: dict[str, str]) -> dict:
    master, slave = os.openpty()
    shell = subprocess.Popen(
        [sys.executable, "-c", SHELL, str(out), *argv], stdin=slave, stdout=slave,
        stderr=slave, cwd=cwd, env=env, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    seen = bytearray()
    while shell.poll() is None:
        try:
            seen += os.read(master, 65536)
        except OSError:
            break
    shell.wait(timeout=300)
    os.close(master)
    assert out.exists(), seen.decode(errors="replace")[-3000:]
    return {**json.loads(out.read_text()), "screen": seen.decode(errors="replace")}


@pytest.mark.alone
@pytest.mark.slow
def test_a_tuned_app_cannot_type_into_roots_terminal(second: str, tmp_path: Path) -> None:
    app_dir = tmp_path / "app"
    app_dir.mkdir()
    (app_dir / "app.py").write_text(APP)
    (app_dir / "inject.py").write_text(INJECT + "\ninject('id > /tmp/bl-injected-setup\\n')\n")
    _give(app_dir, second)
    results = tmp_path / "root-results"
    results.mkdir()
    env = {**os.environ, "COLUMNS": "100"}
    found = _in_a_terminal(
        [str(BENCHLAB), "tune", "app.py:app", "--check-only", "--servers", "gunicorn-sync",
         "--workers", "1", "--results", str(results / "r.db"),
         "--setup", f"{sys.executable} inject.py"],
        app_dir, tmp_path / "shell.json", env,
    )  # fmt: skip
    assert found["rc"] == 0, found["screen"][-3000:]
    assert "bl-injected" not in found["typed"], f"typed into root's shell: {found['typed']!r}"


@pytest.mark.alone
@pytest.mark.slow
def test_links_in_the_app_directory_get_nothing_written_through_them(
    second: str, tmp_path: Path
) -> None:
    app_dir = tmp_path / "app"
    app_dir.mkdir()
    (app_dir / "app.py").write_text(APP.replace('inject("id', '# inject("id'))
    _give(app_dir, second)
    # Root's files the attacker aims at.
    targets = tmp_path / "root-files"
    targets.mkdir(mode=0o700)
    aimed = {name: targets / name for name in ("store", "page", "report")}
    for path in aimed.values():
        path.write_text("root's own\n")
    _as(second, "mkdir", str(app_dir / "results"))
    _as(second, "ln", "-s", str(aimed["store"]), str(app_dir / "results" / "benchlab.db"))
    _as(second, "ln", "-s", str(aimed["page"]), str(app_dir / "results" / "tune-app.html"))
    _as(second, "ln", "-s", str(aimed["report"]), str(app_dir / "report.md"))
    env = {**os.environ, "COLUMNS": "100"}
    tuned = subprocess.run(
        [BENCHLAB, "tune", "app.py:app", "--check-only", "--servers", "gunicorn-sync",
         "--workers", "1"],
        cwd=app_dir, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    for name, path in aimed.items():
        assert path.read_text() == "root's own\n", f"root's {name} was written through a link"
    assert tuned.returncode == 2, tuned.stdout + tuned.stderr
    said = tuned.stderr.strip().splitlines()[-1]
    assert SECOND in said and "--results" in said, said
    # A report root is asked to write there is written as the directory's owner: the link
    # is replaced by the owner's own file, root's file untouched.
    store = tmp_path / "store.db"
    subprocess.run(
        [BENCHLAB, "tune", "app.py:app", "--check-only", "--servers", "gunicorn-sync",
         "--workers", "1", "--results", str(store)],
        cwd=app_dir, env=env, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    written = subprocess.run(
        [BENCHLAB, "report", "--results", str(store), "-o", str(app_dir / "report.md")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr
    assert aimed["report"].read_text() == "root's own\n"
    report = app_dir / "report.md"
    assert not report.is_symlink() and report.stat().st_uid == pwd.getpwnam(SECOND).pw_uid


@pytest.mark.slow
def test_another_daemon_cannot_read_a_stacks_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOT_TOKEN", "root-ci-token")
    user = stack_user()
    assert user not in (None, "root")
    tmp_path.chmod(0o711)
    stack = ManagedProcess(
        ["sleep", "30"], cores=[0], log_path=tmp_path / "stack.log", user=user,
        env={"DB_PASSWORD": "stack-secret"},
    )  # fmt: skip
    try:
        time.sleep(0.3)
        environ = Path(f"/proc/{stack.pid}/environ")
        read = subprocess.run(
            [*become("nobody"), "cat", str(environ)], capture_output=True, timeout=10
        )
        assert b"stack-secret" not in read.stdout, "nobody read the stack's password"
        assert read.returncode != 0
        assert b"root-ci-token" not in environ.read_bytes(), "root's environment went to the stack"
    finally:
        stack.stop()


@pytest.fixture
def drip_server() -> Iterator[int]:
    """Sends its answer nine bytes every 0.2 s: headers, then a body that never ends."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            conn.recv(65536)
            answer = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100000
            for start in range(0, len(answer), 9):
                if stop.is_set():
                    break
                try:
                    conn.sendall(answer[start : start + 9])
                except OSError:
                    break
                time.sleep(0.2)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(5)
    listener.close()


def test_a_dripping_server_does_not_hold_the_answer_check(drip_server: int) -> None:
    began = time.monotonic()
    with pytest.raises(ExchangeError):
        exchange("127.0.0.1", drip_server, "GET", "/json", timeout=1.0)
    assert time.monotonic() - began < 2.0


@pytest.mark.slow
def test_a_cached_binary_others_can_write_is_not_run(
    second: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    (cache / "bin").mkdir(parents=True)
    monkeypatch.setenv("BENCHLAB_CACHE", str(cache))
    vegeta = TOOLS["vegeta"]
    planted = cache / "bin" / f"vegeta-{vegeta_build.VERSION}"
    shutil.copy("/bin/true", planted)
    planted.chmod(0o755)
    assert vegeta.executable() == str(planted), "root's own binary, root's alone: used"
    planted.chmod(0o777)  # now the second user can replace it
    _as(second, "cp", "/bin/false", str(planted))
    assert vegeta.executable() is None, "a binary others can write would run as root"
    # The pinned Go the same way: one file of the toolchain others can write, and it is not used.
    go = cache / "bin" / f"go-{go_toolchain.VERSION}"
    (go / "bin").mkdir(parents=True)
    shutil.copy("/bin/true", go / "bin" / "go")
    (go / "bin" / "gofmt").write_text("")
    (go / "bin" / "gofmt").chmod(0o666)
    assert go_toolchain.building_go(None) is None
