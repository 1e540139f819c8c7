"""The trusted path (issue 65), its one walk and every door through it.

A file root runs, imports or keeps as state is used only when root (or the user it runs as)
owns it and every directory above it, and no one else can write them: system/trusted_path.py
walks a path as the kernel resolves it. This file checks the walk on small trees, then reads
the source for every door — each child benchlab starts runs in a directory given on purpose,
each `python -m` is isolated, each tool or interpreter benchlab runs from its cache or
another's environment is found through the walk, each state file is read through the state
directory's door — so that a new door fails here until it is looked at."""

from __future__ import annotations

import ast
import json
import os
import pwd
import subprocess
from pathlib import Path

import pytest

from benchlab.core.errors import UserError
from benchlab.system import trusted_path
from benchlab.system.state_files import read_state, state_directory, write_state
from benchlab.system.trusted_path import Untrusted, Why, owners, walk
from tests.conftest import REPO

SOURCE = REPO / "src" / "benchlab"
ROOT = os.geteuid() == 0


def _sources() -> list[tuple[str, ast.Module]]:
    return [
        (path.relative_to(SOURCE).as_posix(), ast.parse(path.read_text()))
        for path in sorted(SOURCE.rglob("*.py"))
        if "apps" not in path.relative_to(SOURCE).parts
    ]


def _functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _innermost(tree: ast.Module) -> dict[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Each node, with the innermost function it is in."""
    found: dict[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for function in sorted(_functions(tree), key=lambda f: f.lineno):
        for node in ast.walk(function):
            found[node] = function  # a nested function, later in the order, wins
    return found


# --- the walk ----------------------------------------------------------------------------


@pytest.fixture
def other_uid() -> int:
    """A user that is neither root nor this process's."""
    return pwd.getpwnam("nobody").pw_uid


@pytest.mark.skipif(not ROOT, reason="the trees below are given to another user")
def test_dot_dot_is_taken_from_where_a_link_leads_not_from_the_text(
    tmp_path: Path, other_uid: int
) -> None:
    theirs = tmp_path / "theirs" / "inner"
    theirs.mkdir(parents=True)
    os.chown(theirs.parent, other_uid, -1)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "link").symlink_to(theirs)  # root's own link, into another user's directory
    found = walk(mine / "link" / ".." / "out.html", owners(), missing_ok=True)
    assert found.step is not None and found.step.path == theirs.parent
    assert found.step.why is Why.OWNER and found.step.uid == other_uid
    # The same text, collapsed as os.path.abspath would: root's, and wrongly so.
    assert (
        walk(
            Path(os.path.abspath(mine / "link" / ".." / "out.html")), owners(), missing_ok=True
        ).step
        is None
    )


@pytest.mark.skipif(not ROOT, reason="the trees below are given to another user")
def test_a_link_held_by_another_user_is_refused_even_when_it_points_at_roots(
    tmp_path: Path, other_uid: int
) -> None:
    target = tmp_path / "root-file"
    target.write_text("x")
    link = tmp_path / "link"
    link.symlink_to(target)
    assert walk(link, owners()).step is None
    os.lchown(link, other_uid, -1)
    step = walk(link, owners()).step
    assert step is not None and step.why is Why.OWNER and step.path == link
    # ... and held by the user a child runs as, it passes for that child.
    assert walk(link, owners("nobody")).step is None


def test_a_sticky_directory_of_roots_passes_on_the_way_and_never_as_the_place(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    inside = shared / "mine"
    inside.mkdir()
    if ROOT:
        assert walk(inside, owners()).step is None
    last = walk(shared, owners()).step
    assert last is not None and last.why in (Why.OPEN, Why.OWNER)
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)  # writable by all, no sticky bit: never passed
    (open_dir / "x").mkdir()
    step = walk(open_dir / "x", owners()).step
    assert step is not None and step.path == open_dir and step.why is Why.OPEN


def test_a_refusal_is_one_line_naming_the_path_its_owner_and_the_fix(tmp_path: Path) -> None:
    opened = tmp_path / "open"
    opened.mkdir()
    opened.chmod(0o777)
    with pytest.raises(Untrusted) as refused:
        trusted_path.check(opened / "tool", "the tool", "give it to root")
    said = str(refused.value)
    assert "\n" not in said and str(opened) in said and said.endswith("give it to root")
    assert "writable by users other than its owner" in said


# --- state files ---------------------------------------------------------------------------


def test_a_state_file_is_never_read_through_a_link_nor_written_through_one(tmp_path: Path) -> None:
    state = state_directory(tmp_path / "state")
    aimed = tmp_path / "aimed"
    aimed.write_text("someone's own\n")
    (state / "costs.json").symlink_to(aimed)
    with pytest.raises(Untrusted):
        read_state(state / "costs.json")
    write_state(state / "costs.json", json.dumps({"start": 1.0}))
    assert aimed.read_text() == "someone's own\n"
    assert not (state / "costs.json").is_symlink()
    assert json.loads(read_state(state / "costs.json") or b"") == {"start": 1.0}


def test_a_state_directory_others_can_write_is_refused_in_one_line(tmp_path: Path) -> None:
    shared = tmp_path / "team-cache"
    shared.mkdir()
    shared.chmod(0o1777)
    with pytest.raises(UserError) as refused:
        write_state(shared / "costs.json", "{}")
    assert "\n" not in str(refused.value) and "BENCHLAB_CACHE" in str(refused.value)
    assert not (shared / "costs.json").exists()


@pytest.mark.skipif(not ROOT, reason="the file is given to another user")
def test_a_state_file_another_user_owns_is_not_believed(tmp_path: Path, other_uid: int) -> None:
    state = state_directory(tmp_path / "state")
    forged = state / "services.json"
    forged.write_text("{}")
    os.chown(forged, other_uid, -1)
    with pytest.raises(Untrusted):
        read_state(forged)


# --- every child runs somewhere given on purpose ------------------------------------------

SUBPROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output"}
# os functions that start a program and take no working directory: none may be used.
NO_CWD = {"system", "popen", "spawnl", "spawnle", "spawnlp", "spawnv", "spawnve", "spawnvp",
          "execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe",
          "posix_spawn", "posix_spawnp"}  # fmt: skip


def _may_be_none(annotation: ast.expr | None) -> bool:
    return annotation is None or "None" in ast.unparse(annotation)


def test_every_child_benchlab_starts_gets_an_explicit_working_directory() -> None:
    """Every subprocess call names `cwd`, and what it names cannot be None: a literal, an
    expression, or a parameter of its function that is typed without None and has no None
    default (so each caller gives one). A child that inherited benchlab's working directory
    would run (as root) wherever root typed the command: a Python's `-m` imports from
    there, uv and git read configuration files there."""
    problems, seen = [], 0
    for module, tree in _sources():
        within = _innermost(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            on = node.func.value
            name = node.func.attr
            where = f"{module}:{node.lineno}"
            if isinstance(on, ast.Name) and on.id == "os" and name in NO_CWD:
                problems.append(f"{where}: os.{name} starts a program in no given directory")
            if not (isinstance(on, ast.Name) and on.id == "subprocess"):
                continue
            if name not in SUBPROCESS_CALLS:
                continue
            seen += 1
            cwd = next((k.value for k in node.keywords if k.arg == "cwd"), None)
            if cwd is None or (isinstance(cwd, ast.Constant) and cwd.value is None):
                problems.append(f"{where}: subprocess.{name} without cwd=")
                continue
            function = within.get(node)
            if isinstance(cwd, ast.Name) and function is not None:
                arguments = function.args
                params = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
                defaults = dict(
                    zip(
                        [a.arg for a in arguments.args][::-1],
                        arguments.defaults[::-1],
                        strict=False,
                    )
                ) | {
                    a.arg: d
                    for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
                    if d is not None
                }
                param = next((p for p in params if p.arg == cwd.id), None)
                if param is not None:
                    default = defaults.get(param.arg)
                    if _may_be_none(param.annotation) or (
                        isinstance(default, ast.Constant) and default.value is None
                    ):
                        problems.append(
                            f"{where}: cwd={cwd.id}, a parameter of {function.name} that may "
                            "be None"
                        )
    assert seen > 20, "the walk found the calls"
    assert not problems, "\n".join(problems)


# Lists that run a Python module (`-m`) without -I: each runs as another user (the stacks',
# the app's owner) in the directory it serves, which must be on its path.
MODULE_RUNS_NOT_ISOLATED = {
    ("stacks/servers.py", "program"): "a server: as the stacks' user or the app's owner, in "
    "the directory of the app it serves (the app imports from there)",
}


def test_every_python_module_run_is_isolated() -> None:
    """`python -m X` puts the working directory first on the path: a planted X.py (or
    X/__main__.py) would run instead. Every argv that runs a module carries -I (isolated:
    neither the directory nor PYTHON* variables count), but those listed above."""
    found = set()
    for module, tree in _sources():
        within = _innermost(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.List):
                continue
            words = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            if "-m" not in words or "-I" in words or "-P" in words:
                continue
            function = within.get(node)
            found.add((module, function.name if function else ""))
    assert found == set(MODULE_RUNS_NOT_ISOLATED), (
        f"new: {sorted(found - set(MODULE_RUNS_NOT_ISOLATED))}; "
        f"gone: {sorted(set(MODULE_RUNS_NOT_ISOLATED) - found)}"
    )


# --- every exec of an interpreter or cached tool --------------------------------------------

# Every function that names a path in benchlab's build cache (cache_dir()), and the function
# whose trusted-path check guards what is run from there. A new one fails below until it is
# listed here, with its check.
CACHED = {
    ("load/vegeta.py", "binary"): ("load/vegeta.py", "build"),
    ("load/jmeter.py", "home"): ("load/jmeter.py", "build"),
    ("load/jmeter.py", "maven_repository"): ("system/build_cache.py", "usable_cache"),
    ("stacks/go_stacks.py", "binary_path"): ("stacks/go_stacks.py", "build"),
    ("stacks/python_env.py", "place"): ("stacks/python_env.py", "build"),
    ("system/go_toolchain.py", "pinned_go"): ("system/go_toolchain.py", "building_go"),
    ("system/build_cache.py", "usable_cache"): ("system/build_cache.py", "usable_cache"),
}
# Every place that names an interpreter or a Python tool benchlab runs: checked through the
# trusted path (the function named), or benchlab's own (sys.executable: root runs it
# already), or a name shown, not run.
OWN = "benchlab's own interpreter: root runs it already"
SHOWN = "named in a message or a document, not run"
INTERPRETERS: dict[tuple[str, str], tuple[str, str] | str] = {
    ("stacks/python_env.py", "_base_python"): ("stacks/python_env.py", "_base_python"),
    ("stacks/python_env.py", "_uv"): ("stacks/python_env.py", "_uv"),
    ("tune/app.py", "app_python"): ("tune/app.py", "app_owner"),
    ("tune/app.py", "app_owner"): SHOWN,
    ("stacks/python_env.py", ""): OWN + " (the stacks', only where their user can run it)",
    ("stacks/base.py", ""): OWN + " (a launch's default)",
    ("hosts/netns.py", "free_port"): OWN + ", in a namespace benchlab made",
    ("hosts/ssh.py", "interpreter_paths"): "checked on the SSH host: root's there (HELD)",
    ("hosts/ssh.py", "describe"): "run on the SSH host after interpreter_paths' check",
    ("doctor/hosts.py", "_benchlab_check"): SHOWN,
    ("core/environment.py", ""): "the declaration of $VIRTUAL_ENV",
    ("tune/probe_app.py", "main"): "the probe's report of the app's interpreter",
    ("reference_docs.py", "_portable"): SHOWN,
}
CHECKS = {"is_trusted", "trusted", "trusted_tree", "check", "walk", "usable_cache"}


def _calls(function: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def _names_an_interpreter(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "executable":
        return getattr(node.value, "id", "") == "sys"
    if isinstance(node, ast.Name) and node.id in ("VIRTUAL_ENV", "SYSTEM_PYTHONS"):
        return True
    return (
        isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "which"
        and any(isinstance(a, ast.Constant) and a.value == "uv" for a in node.args)
    )  # fmt: skip


def test_every_cached_tool_and_interpreter_is_run_through_the_trusted_path() -> None:
    trees = dict(_sources())
    functions: dict[tuple[str, str], ast.AST] = {}
    for module, tree in trees.items():
        for f in _functions(tree):  # a module's own function before a method of its name
            functions.setdefault((module, f.name), f)
    naming_cache = {
        (module, f.name)
        for module, tree in trees.items()
        for f in _functions(tree)
        if "cache_dir" in _calls(f) and module != "system/build_cache.py"
    } | {("system/build_cache.py", "usable_cache")}
    assert naming_cache == set(CACHED), (
        f"new (list each with its check): {sorted(naming_cache - set(CACHED))}; "
        f"gone: {sorted(set(CACHED) - naming_cache)}"
    )
    interpreters = set()
    for module, tree in trees.items():
        within = _innermost(tree)
        for node in ast.walk(tree):
            if _names_an_interpreter(node):
                function = within.get(node)
                interpreters.add((module, function.name if function else ""))
    assert interpreters == set(INTERPRETERS), (
        f"new (list each with its check): {sorted(interpreters - set(INTERPRETERS))}; "
        f"gone: {sorted(set(INTERPRETERS) - interpreters)}"
    )
    checkers = {*CACHED.values(), *(v for v in INTERPRETERS.values() if isinstance(v, tuple))}
    for checker in checkers:
        assert _calls(functions[checker]) & CHECKS, f"{checker} calls no trusted-path check"


def test_every_state_file_goes_through_the_state_directorys_door() -> None:
    """What is kept in benchlab's state directory (state_dir()) is read and written only by
    state_files.py's functions: no open, read_text, write_text or unlink of a path there."""
    problems = []
    for module, tree in _sources():
        if module in ("system/state_files.py", "system/build_cache.py"):
            continue
        for function in _functions(tree):
            calls = _calls(function)
            if "state_dir" in calls or "journal_dir" in calls or "state_file" in calls:
                direct = calls & {"read_text", "write_text", "read_bytes", "write_bytes",
                                  "unlink", "open", "mkdir"}  # fmt: skip
                if direct:
                    problems.append(f"{module}:{function.name} {sorted(direct)}")
    assert not problems, problems


# --- -o -----------------------------------------------------------------------------------


def test_every_destination_is_given_the_stores_its_command_reads() -> None:
    """Every command's `formats.destination(...)` names the stores it reads (`reads=`), so
    its -o is checked against them (cli/formats.py); test_cli_contract tries each."""
    calls = [
        (module, node.lineno, {k.arg for k in node.keywords})
        for module, tree in _sources()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "destination"
    ]
    assert len(calls) >= 11
    assert all("reads" in keywords for _, _, keywords in calls), calls


@pytest.mark.slow
def test_git_reads_an_apps_repository_as_its_owner(tmp_path: Path) -> None:
    """git runs what a repository's configuration names (core.fsmonitor): as root, on an app
    of another user's, it runs as that user."""
    if not ROOT:
        pytest.skip("only root runs git as another user")
    from benchlab.hosts.machine import git_commit

    repo = tmp_path / "app"
    repo.mkdir()
    ran = tmp_path / "fsmonitor-ran"
    hook = f"#!/bin/sh\nid -u >> {ran}\n"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, cwd=tmp_path)
    (repo / "hook").write_text(hook)
    (repo / "hook").chmod(0o755)
    (repo / "app.py").write_text("app = None\n")
    subprocess.run(["git", "-C", str(repo), "add", "app.py"], check=True, cwd=tmp_path)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a"],
        check=True, cwd=tmp_path,
    )  # fmt: skip
    subprocess.run(["git", "-C", str(repo), "config", "core.fsmonitor", str(repo / "hook")],
                   check=True, cwd=tmp_path)  # fmt: skip
    nobody = pwd.getpwnam("nobody")
    for directory, names, files in os.walk(repo):
        for name in [directory, *(os.path.join(directory, n) for n in (*names, *files))]:
            os.chown(name, nobody.pw_uid, nobody.pw_gid)
    tmp_path.chmod(0o777)  # the hook's note, as nobody
    git_commit(repo, "nobody")
    assert ran.exists(), "git did not read the repository (nor run its fsmonitor)"
    assert set(ran.read_text().split()) == {str(nobody.pw_uid)}, "git ran the hook as root"


def test_the_apps_virtualenv_is_never_looked_for_in_tmp_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An app in a directory of its own in the real /tmp: the search for its .venv stops at
    /tmp (every user can write there; a /tmp/.venv would be anyone's) and says so."""
    import sys
    import tempfile

    from benchlab.tune.app import app_python

    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    demo = Path(tempfile.mkdtemp(prefix="trust-demo-", dir="/tmp"))
    try:
        (demo / "app.py").write_text("app = None\n")
        python, why = app_python("app.py:app", demo, None, False)
    finally:
        (demo / "app.py").unlink()
        demo.rmdir()
    assert python == sys.executable
    assert why.endswith("(the search stopped at /tmp: other users can write)"), why


def test_the_stacks_account_is_used_only_when_it_is_a_system_account() -> None:
    from benchlab.system.users import system_account_problem, system_uids

    def entry(uid: int, shell: str) -> pwd.struct_passwd:
        return pwd.struct_passwd(("benchlab-stack", "x", uid, uid, "", "/nonexistent", shell))

    low, high = system_uids()
    assert "uid is 0" in (system_account_problem(entry(0, "/usr/sbin/nologin")) or "")
    assert "outside the system range" in (
        system_account_problem(entry(high + 1, "/usr/sbin/nologin")) or ""
    )
    assert "login shell" in (system_account_problem(entry(low, "/bin/bash")) or "")
    if ROOT:  # its password, from /etc/shadow, which root alone reads
        made = pwd.getpwnam("benchlab-stack") if _exists("benchlab-stack") else None
        if made is not None:
            assert system_account_problem(made) is None


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True


@pytest.mark.skipif(not ROOT, reason="only root writes as another user")
def test_an_output_in_a_directory_of_a_nameless_uid_is_one_line(tmp_path: Path) -> None:
    from benchlab.system.outputs import check_output_place, write_output

    nameless = next(uid for uid in range(4242, 5000) if not _has_name(uid))
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, nameless, nameless)
    for attempt in (
        lambda: write_output(theirs / "report.md", "x", "-o"),
        lambda: check_output_place(theirs / "report.md", "-o"),
    ):
        with pytest.raises(UserError) as refused:
            attempt()
        said = str(refused.value)
        assert "\n" not in said and f"uid {nameless}" in said and "no name" in said
    assert not (theirs / "report.md").exists()


def _has_name(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def test_a_directory_its_owners_private_group_may_write_is_held(tmp_path: Path) -> None:
    """umask 002 with a group per user (a user private group) makes directories writable by
    the owner's group alone: no one else is in it, so they are held; a group another user
    is in is not."""
    import grp

    from benchlab.system.trusted_path import opened_to_others, private_group

    mine = tmp_path / "umask-002"
    mine.mkdir()
    mine.chmod(0o775)
    info = os.stat(mine)
    others = [g for g in grp.getgrall() if set(g.gr_mem) - {pwd.getpwuid(info.st_uid).pw_name}]
    assert opened_to_others(info) is not private_group(info.st_gid, info.st_uid)
    if others and ROOT:
        os.chown(mine, -1, others[0].gr_gid)
        assert opened_to_others(os.stat(mine)), f"group {others[0].gr_name} has other members"


# --- a user's own command -------------------------------------------------------------------

# Every argv that runs a shell over what the user gave (`bash -c`: tune's --command, a
# candidate's printed deploy command, --setup), and the function that decides, through the
# trusted path, whom it runs as when benchlab is root. A new one fails below until it is
# listed here, with its check.
USER_SHELLS = {
    ("tune/command.py", "launch"): ("tune/command.py", "command_owner"),
    ("tune/candidates.py", "launch"): ("tune/app.py", "app_owner"),
    ("tune/setup_step.py", "run_setup"): ("tune/app.py", "app_owner"),
}


def test_every_shell_over_a_users_command_runs_as_an_owner_the_trusted_path_decided() -> None:
    trees = dict(_sources())
    functions = {(module, f.name): f for module, tree in trees.items() for f in _functions(tree)}
    found = set()
    for module, tree in trees.items():
        within = _innermost(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.List) and [
                e.value for e in node.elts[:2] if isinstance(e, ast.Constant)
            ] == ["bash", "-c"]:
                function = within.get(node)
                found.add((module, function.name if function else ""))
    assert found == set(USER_SHELLS), (
        f"new (list each with its check): {sorted(found - set(USER_SHELLS))}; "
        f"gone: {sorted(set(USER_SHELLS) - found)}"
    )
    for checker in set(USER_SHELLS.values()):
        assert _calls(functions[checker]) & CHECKS, f"{checker} calls no trusted-path check"


@pytest.mark.skipif(not ROOT, reason="only root runs a command as another user")
def test_a_command_runs_as_its_directorys_owner_and_never_over_a_file_another_could_write(
    tmp_path: Path, other_uid: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As root, tune's --command runs as the owner of the directory it was typed in and of
    the files its template names there (trust's app_owner, for a command), and is refused in
    one line where someone else could have changed what it runs."""
    from benchlab.tune.command import command_owner

    monkeypatch.delenv("BENCHLAB_STACK_USER", raising=False)
    grid = (("procs", ("1", "2")),)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "server").write_text("#!/bin/sh\n")
    assert command_owner("GOMAXPROCS={procs} ./server --port {port}", grid, mine) == "root"
    # The directory another user's: the command runs as that user.
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "server").write_text("#!/bin/sh\n")
    for path in (theirs, theirs / "server"):
        os.chown(path, other_uid, -1)
    assert command_owner("./server {procs}", grid, theirs) == "nobody"

    def refused(template: str, directory: Path) -> str:
        with pytest.raises(UserError) as refusal:
            command_owner(template, grid, directory)
        said = str(refusal.value)
        assert "\n" not in said and said.startswith("--command"), said
        return said

    # Root's directory, a file in it another user wrote: never run as root, nor as them.
    os.chown(mine / "server", other_uid, -1)
    assert "is nobody's" in refused("./server {procs}", mine)
    os.chown(mine / "server", 0, -1)
    # A file the template names elsewhere, held by another user (as the value of a variable).
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chown(elsewhere, other_uid, -1)
    (elsewhere / "tool").write_text("#!/bin/sh\n")
    assert "belongs to nobody" in refused(f"RUN={elsewhere}/tool ./server {{procs}}", mine)
    # The directory itself writable by others (no sticky bit).
    opened = tmp_path / "opened"
    opened.mkdir()
    opened.chmod(0o777)
    assert "writable by users other" in refused("node server.js --workers {procs}", opened)
    # Named by BENCHLAB_STACK_USER, the user must still hold the whole chain.
    monkeypatch.setenv("BENCHLAB_STACK_USER", "nobody")
    assert command_owner("./server {procs}", grid, theirs) == "nobody"
    with pytest.raises(UserError):
        command_owner(f"{elsewhere}/missing ./server {{procs}}", grid, opened)


def test_a_venv_whose_python_leads_nowhere_reachable_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A .venv beside the app whose python is a link this user cannot follow (into another
    user's home; here a loop, which fails as that does, for root too): found and named as the
    app's, then refused in one line by check_interpreter, never a traceback from Path.exists."""
    from benchlab.tune.app import app_python, check_interpreter

    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    (tmp_path / "app.py").write_text("app = None\n")
    (tmp_path / "pyproject.toml").write_text("")  # the project's root: the search ends here
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(bin_dir / "python3")
    (bin_dir / "python3").symlink_to(bin_dir / "python")
    python, why = app_python("app.py:app", tmp_path, None, False)
    assert python == str(bin_dir / "python") and "found from the app" in why, (python, why)
    with pytest.raises(UserError) as refused:
        check_interpreter(python)
    said = str(refused.value)
    assert said.startswith(f"{python}: the app's interpreter cannot be reached"), said
    assert "\n" not in said
    with pytest.raises(UserError, match="no such interpreter"):
        check_interpreter(str(tmp_path / "nope"))
