"""What a second local user can do to a root that runs benchlab, tried for real: each attack
planted as that user (or as the user other daemons run as), benchlab run as root, and what
the attacker got read back. Each ends with nothing gained.

1. A tuned app's module (and its --setup) pushes keystrokes into root's terminal (TIOCSTI).
2. Links at every result and report path in the app's directory point at root's files.
3. A process of the user other daemons share (nobody) reads a stack's environment.
4. A server drips its answer a few bytes at a time against benchlab's answer check.
5. A cached binary others can write is swapped for the attacker's program.
6. A virtualenv planted in a directory every user can write, above a root-owned app
   (/tmp/.venv over /tmp/demo), offered to root's tune as the app's interpreter.
7. A `venv/__main__.py` in the directory root runs benchlab from, imported by the build of
   the stacks' Python environment (`python -m venv` puts the directory first on its path).
8. A `uv.toml` there naming the attacker's package index for that build.
9. A shared cache (BENCHLAB_CACHE another user can write): a link where root keeps its step
   costs, and a forged services.json naming root's process group and directory for
   `services down` to kill and remove.
10. `..` through a root-owned link into the attacker's directory, as an output path.
11. A process named `pid=N` listening first on a stack's port, N the stack's pid.
12. A changed JMeter jar where Maven takes it from (a mirror's, or one kept in its
    repository after a poisoned download).

Issue 65's attacks (6-12) are written against names main had then too, so that the file runs
on that code as well (PYTHONPATH=<main's src>): each of them passed there, i.e. worked.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
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


# --- issue 65: the trusted path ---------------------------------------------------------

WSGI_OK = """
def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]
"""


@pytest.mark.alone
@pytest.mark.slow
def test_a_virtualenv_planted_in_a_shared_tmp_above_the_app_never_runs_as_root(
    second: str, tmp_path: Path
) -> None:
    # A directory as /tmp is (root's, sticky, every user's: the real one is shared with the
    # machine's other tests), a root-owned app in it with no project marker, and the
    # second user's `.venv` beside the app's directory: its `python` notes who ran it.
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    demo = shared / "demo"
    demo.mkdir()
    (demo / "app.py").write_text(WSGI_OK)
    ran = shared / "planted-ran"
    planted = shared / ".venv" / "bin" / "python"
    _as(second, "mkdir", "-p", str(planted.parent))
    script = f'#!/bin/sh\nid -u >> {ran}\nexec {sys.executable} "$@"\n'
    _as(second, "sh", "-c", f"printf '%s' '{script}' > {planted} && chmod 755 {planted}")
    results = tmp_path / "root-results"
    results.mkdir()
    tuned = subprocess.run(
        [BENCHLAB, "tune", "app.py:app", "--check-only", "--servers", "gunicorn-sync",
         "--workers", "1", "--results", str(results / "r.db")],
        cwd=demo, env={**os.environ, "COLUMNS": "200"}, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    said = " ".join((tuned.stdout + tuned.stderr).split())  # its lines, unwrapped
    assert not ran.exists(), f"the planted interpreter ran as uid {ran.read_text().split()}"
    # benchlab's own interpreter instead, and the plan says why.
    assert tuned.returncode == 0, said[-3000:]
    assert f"({sys.executable}: benchlab's own" in said, said[-3000:]
    assert f"the search stopped at {shared}: other users can write" in said, said[-3000:]


def _planted_dir(second: str, tmp_path: Path) -> Path:
    """The second user's own directory, which root runs benchlab from."""
    place = tmp_path / "second-dir"
    place.mkdir()
    _give(place, second)
    return place


def _build_stacks_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, where: Path) -> None:
    """The stacks' Python environment built now, as a root benchlab the stacks' account
    cannot run builds it, from `where`, into a cache of the test's own."""
    from benchlab.core.errors import UserError
    from benchlab.stacks import python_env
    from benchlab.system.users import STACK_ACCOUNT, ensure_stack_account

    ensure_stack_account()
    monkeypatch.setenv("BENCHLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(where)
    with contextlib.suppress(UserError):  # the build cut short by the attack, on main
        python_env.build(STACK_ACCOUNT)


def _stacks_env_complete() -> bool:
    from benchlab.stacks import python_env

    return (python_env.place() / python_env.COMPLETE).is_file()


@pytest.mark.slow
def test_a_venv_module_in_the_directory_root_runs_from_is_never_imported_by_the_build(
    second: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    place = _planted_dir(second, tmp_path)
    ran = place / "planted-ran"
    module = "import os\nopen(" + repr(str(ran)) + ", 'a').write(str(os.getuid()))\n"
    _as(second, "mkdir", str(place / "venv"))
    _as(
        second, "touch", str(place / "venv" / "__init__.py")
    )  # a package: found before the stdlib's
    _as(second, "sh", "-c", f"cat > {place / 'venv' / '__main__.py'} << 'EOF'\n{module}EOF")
    _build_stacks_env(monkeypatch, tmp_path, place)
    assert not ran.exists(), f"the planted venv/__main__.py ran as uid {ran.read_text()}"
    assert _stacks_env_complete()


@pytest.fixture
def planted_index() -> Iterator[tuple[int, list[str]]]:
    """A package index of the attacker's: every path asked of it, noted."""
    asked: list[str] = []

    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], asked
    server.shutdown()
    server.server_close()


@pytest.mark.slow
def test_a_uv_toml_in_the_directory_root_runs_from_does_not_choose_the_index(
    second: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    planted_index: tuple[int, list[str]],
) -> None:  # fmt: skip
    port, asked = planted_index
    place = _planted_dir(second, tmp_path)
    index = f'index-url = "http://127.0.0.1:{port}/simple"\n'
    _as(second, "sh", "-c", f"printf '%s\\n[pip]\\n%s' '{index}' '{index}' > {place / 'uv.toml'}")
    _build_stacks_env(monkeypatch, tmp_path, place)
    assert asked == [], f"the build asked the planted index for {asked[:3]}"
    assert _stacks_env_complete()


@pytest.fixture
def shared_cache(second: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A team's cache every user may write (mode 1777, as a shared directory often is), as
    root's BENCHLAB_CACHE."""
    cache = tmp_path / "team-cache"
    cache.mkdir()
    cache.chmod(0o1777)
    monkeypatch.setenv("BENCHLAB_CACHE", str(cache))
    return cache


@pytest.mark.slow
def test_a_link_in_a_shared_cache_gets_nothing_of_roots_written_through_it(
    second: str, tmp_path: Path, shared_cache: Path
) -> None:
    from benchlab.core.errors import UserError
    from benchlab.runner.estimates import Costs

    aimed = tmp_path / "root-only" / "authorized_keys"
    aimed.parent.mkdir(mode=0o700)
    aimed.write_text("root's own\n")
    _as(second, "ln", "-s", str(aimed), str(shared_cache / "costs.json"))
    with contextlib.suppress(UserError):  # refused: the cache is not root's alone
        Costs({"start": 1.0}).save()
    assert aimed.read_text() == "root's own\n", "root wrote its step costs through the link"


@pytest.mark.slow
def test_a_forged_services_file_in_a_shared_cache_kills_and_removes_nothing_of_roots(
    second: str, tmp_path: Path, shared_cache: Path
) -> None:
    from benchlab.core.errors import UserError
    from benchlab.services.manual import services_down

    victim = subprocess.Popen(["sleep", "60"], start_new_session=True, cwd="/")  # root's
    kept = tmp_path / "root-data"
    kept.mkdir()
    (kept / "results.db").write_text("root's runs\n")
    forged = json.dumps({
        "workroot": str(kept), "services": {},
        "processes": [{"name": "postgresql", "pid": victim.pid, "stop_signal": 9,
                       "create_time": psutil.Process(victim.pid).create_time()}],
    })  # fmt: skip
    _as(second, "sh", "-c", f"printf '%s' '{forged}' > {shared_cache / 'services.json'}")
    try:
        with contextlib.suppress(UserError):  # refused: the cache is not root's alone
            services_down()
        time.sleep(0.3)
        assert victim.poll() is None, "root killed the process group the forged file named"
        assert (kept / "results.db").exists(), "root removed the directory the forged file named"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()


@pytest.mark.slow
def test_dot_dot_through_a_root_owned_link_writes_nothing_as_root_in_anothers_directory(
    second: str, tmp_path: Path
) -> None:
    from benchlab.core.errors import UserError
    from benchlab.system.outputs import write_output

    theirs = _planted_dir(second, tmp_path) / "inner"
    _as(second, "mkdir", str(theirs))
    mine = tmp_path / "root-dir"
    mine.mkdir()
    (mine / "link").symlink_to(theirs)  # root's own link, into the second user's directory
    out = mine / "link" / ".." / "out.html"  # read as text: root-dir/out.html, root's
    with contextlib.suppress(UserError):
        write_output(out, "<p>report</p>", "-o")
    landed = theirs.parent / "out.html"
    assert not (mine / "out.html").exists()
    if landed.exists():  # written where the path leads: as its owner, never as root
        assert landed.stat().st_uid == pwd.getpwnam(second).pw_uid, "root wrote it there"


NAMED = """
import ctypes, socket, sys, time
ctypes.CDLL(None).prctl(15, sys.argv[2].encode(), 0, 0, 0)  # PR_SET_NAME: its name in ss -p
listener = socket.socket()
listener.bind(("127.0.0.1", int(sys.argv[1])))
listener.listen(1)
print("listening", flush=True)
time.sleep(30)
"""


@pytest.mark.slow
def test_a_process_named_after_a_stacks_pid_does_not_pass_for_the_stack(
    second: str, tmp_path: Path
) -> None:
    from benchlab.hosts.base import THIS_MACHINE
    from benchlab.system.process import free_port

    stack = THIS_MACHINE.start(["sleep", "30"], cores=[0], log_path=tmp_path / "stack.log")
    port = free_port()
    squatter = subprocess.Popen(
        [*become(second), sys.executable, "-I", "-c", NAMED, str(port), f"pid={stack.pid}"],
        stdout=subprocess.PIPE, text=True, cwd="/",
    )  # fmt: skip
    try:
        assert squatter.stdout is not None and squatter.stdout.readline().strip() == "listening"
        assert not stack.listens_on(port), "a process named pid=N passed for the stack"
    finally:
        squatter.kill()
        squatter.wait()
        stack.stop()


@pytest.mark.slow
def test_a_changed_jmeter_jar_is_never_laid_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchlab.core.errors import UserError
    from benchlab.load import jmeter

    if shutil.which("mvn") is None or shutil.which("java") is None:
        pytest.skip("JMeter is built with Maven and Java")
    source = Path("/var/cache/benchlab/bin/maven-repository")
    if not source.is_dir():
        pytest.skip("no Maven repository of an earlier build to start from (benchlab build)")
    cache = tmp_path / "cache"
    repository = cache / "bin" / "maven-repository"
    shutil.copytree(source, repository, symlinks=True)
    (jar,) = repository.rglob("jmeter-websocket-samplers-1.3.1.jar")
    jar.write_bytes(jar.read_bytes() + b"\0")  # what a poisoned copy would be: another jar
    monkeypatch.setenv("BENCHLAB_CACHE", str(cache))
    with contextlib.suppress(UserError):
        jmeter.build()
    laid = jmeter.home() / "lib" / "ext" / jar.name
    assert not laid.exists(), "the changed jar was laid out for JMeter to load"
