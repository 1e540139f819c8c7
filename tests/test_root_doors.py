"""One way to become another user, and a test that knows every door through it.

benchlab, as root, starts children as other users (the stacks, a tuned app, its probe and
--setup, initdb, mariadb-install-db): every one through benchlab.system.users, which gives it a
session of its own (no controlling terminal), stdin from /dev/null, no descriptor but three,
and an environment from an allowlist. This file reads the source for every place that could
start a process as another user and checks each goes through that one way; then it runs a
child through each door, as another user, and reads what the child got."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchlab.hosts.base import THIS_MACHINE
from benchlab.system import users
from benchlab.system.process import ManagedProcess
from tests.conftest import REPO

SOURCE = REPO / "src" / "benchlab"
# Every call of the one way, by module and function: a new one fails here until it is listed
# (and so looked at). The runtime checks below run the two functions they call.
DOORS = {
    ("system/process.py", "_spawn", "start"),
    ("hosts/base.py", "run", "run"),
    ("hosts/base.py", "stack_user", "stack_user"),
    ("tune/app.py", "_check_reachable", "run"),
    ("tune/app.py", "run_app_python", "run"),
    ("tune/app.py", "app_owner", "stack_user"),
    ("tune/command.py", "command_owner", "stack_user"),
    ("hosts/machine.py", "_git", "run"),
    ("tune/setup_step.py", "run_setup", "start"),
    ("stacks/python_env.py", "_serves", "run"),
    ("stacks/python_env.py", "_base_python", "run"),
    ("system/outputs.py", "write_output", "run"),
    ("hosts/ssh.py", "run", "remote_line"),
    ("hosts/ssh.py", "_spawn", "remote_line"),
}
DROPPING_KEYWORDS = {"user", "group", "extra_groups", "preexec_fn", "process_group"}
IDENTITY_CALLS = {"setuid", "setgid", "seteuid", "setegid", "setresuid", "setresgid", "setreuid"}


def _sources() -> list[tuple[str, ast.Module]]:
    return [
        (path.relative_to(SOURCE).as_posix(), ast.parse(path.read_text()))
        for path in sorted(SOURCE.rglob("*.py"))
        if "apps" not in path.relative_to(SOURCE).parts
    ]


def _functions(tree: ast.Module) -> dict[ast.AST, str]:
    """Each node, with the name of the function it is in ('' at module level)."""
    owner: dict[ast.AST, str] = {}

    def visit(node: ast.AST, name: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = (
                child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else name
            )
            owner[child] = inner
            visit(child, inner)

    visit(tree, "")
    return owner


def test_every_child_as_another_user_goes_through_the_one_way() -> None:
    found: set[tuple[str, str, str]] = set()
    elsewhere: list[str] = []
    for module, tree in _sources():
        owner = _functions(tree)
        for node in ast.walk(tree):
            where = f"{module}:{getattr(node, 'lineno', '?')}"
            if module != "system/users.py":
                if isinstance(node, ast.Constant) and node.value == users.SETPRIV:
                    elsewhere.append(f"{where}: the string 'setpriv' (use system.users)")
                if isinstance(node, ast.Call):
                    name = (
                        node.func.attr
                        if isinstance(node.func, ast.Attribute)
                        else getattr(node.func, "id", "")
                    )
                    if name in IDENTITY_CALLS:
                        elsewhere.append(f"{where}: {name}() changes who benchlab is")
                    bad = {k.arg for k in node.keywords} & DROPPING_KEYWORDS
                    on = node.func.value if isinstance(node.func, ast.Attribute) else None
                    if bad and isinstance(on, ast.Name) and on.id == "subprocess":
                        elsewhere.append(f"{where}: subprocess {name}({', '.join(bad)}=)")
            if module == "system/users.py":
                continue
            if (
                isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "users" and node.attr in ("start", "run", "stack_user")
            ):  # fmt: skip
                found.add((module, owner.get(node, ""), node.attr))
            if isinstance(node, ast.Name) and node.id == "remote_line":
                found.add((module, owner.get(node, ""), "remote_line"))
    assert not elsewhere, "\n".join(elsewhere)
    assert found == DOORS, (
        f"new doors (check each, then list it in DOORS): {sorted(found - DOORS)}; "
        f"gone: {sorted(DOORS - found)}"
    )


# What a child reports of itself: its session, its terminal, its descriptors, its environment.
REPORT = """
import json, os, sys
stat = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
try:
    os.close(os.open("/dev/tty", os.O_RDWR))
    tty = True
except OSError:
    tty = False
def open_fd(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False
out = {"pid": os.getpid(), "sid": os.getsid(0), "tty_nr": int(stat[4]), "opens_tty": tty,
       "fds": [fd for fd in range(1024) if open_fd(fd)], "env": dict(os.environ),
       "uid": os.getuid()}
print("REPORT" + json.dumps(out))
"""
ALLOWED = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ"}

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only root starts another user's child")


def _report(text: str) -> dict:
    line = next(line for line in text.splitlines() if line.startswith("REPORT"))
    return json.loads(line.removeprefix("REPORT"))


def _check(report: dict, given: set[str]) -> None:
    assert report["uid"] != 0
    assert report["sid"] == report["pid"], "a session of its own"
    assert report["tty_nr"] == 0 and not report["opens_tty"], "no controlling terminal"
    extra = set(report["env"]) - ALLOWED - given - {k for k in report["env"] if k.startswith("LC_")}
    assert not extra, f"root's environment leaked: {sorted(extra)}"
    assert "ROOT_SECRET" not in report["env"]


@pytest.fixture
def root_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOT_SECRET", "root-only-value")


@pytest.mark.slow
@pytest.mark.usefixtures("root_secret")
def test_run_gives_the_child_only_what_it_needs() -> None:
    done = THIS_MACHINE.run([sys.executable, "-I", "-c", REPORT], user="nobody")
    assert done.returncode == 0, done.stderr
    report = _report(done.stdout.decode())
    _check(report, set())
    assert report["fds"] == [0, 1, 2]


@pytest.mark.slow
@pytest.mark.usefixtures("root_secret")
def test_a_managed_process_as_another_user_gets_only_what_it_needs(tmp_path: Path) -> None:
    log = tmp_path / "child.log"
    child = ManagedProcess(
        [sys.executable, "-I", "-c", REPORT], cores=[0], log_path=log, user="nobody",
        env={"GIVEN": "1"},
    )  # fmt: skip
    try:
        assert child.wait(30) == 0
    finally:
        child.stop()
    report = _report(log.read_text())
    _check(report, {"GIVEN"})
    assert report["env"]["GIVEN"] == "1" and report["env"]["HOME"] != os.environ.get("HOME")
    assert report["fds"] == [0, 1, 2]


@pytest.mark.slow
def test_the_remote_line_clears_the_environment_before_the_drop(tmp_path: Path) -> None:
    """The line an SSH host runs, run here by a shell: what the host's login had is gone."""
    env_file = tmp_path / "vars"
    env_file.write_text("GIVEN=1\n")
    env_file.chmod(0o600)
    line = users.remote_line("nobody", [sys.executable, "-I", "-c", REPORT], str(env_file))
    done = subprocess.run(
        ["sh", "-c", line], capture_output=True, text=True, timeout=30,
        env={**os.environ, "ROOT_SECRET": "root-only-value"}, start_new_session=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = _report(done.stdout)
    assert report["env"]["GIVEN"] == "1"
    # PWD: the shell the line runs in sets it, as every shell does.
    assert set(report["env"]) - ALLOWED - {"GIVEN", "PWD"} == set(), report["env"]
