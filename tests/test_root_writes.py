"""Root never writes through a path someone else controls (issue 36): benchlab, as root,
hands directories to postgres, mysql and redis; whoever can act as one of them plants
symbolic links at every name root writes, as fast as it can, while the services start. The
link targets stay untouched and the services come up right. Every file root opens for
writing, every directory it makes and every owner or mode it sets (Python's audit events)
lies in a directory only root can write."""

from __future__ import annotations

import ast
import contextlib
import os
import pwd
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pymysql
import pytest
import redis

from benchlab.core.errors import BenchlabError
from benchlab.recipe import Services as ServicesConfig
from benchlab.services import Services
from benchlab.system.process import ProcessRegistry
from tests.conftest import REPO, short_tmp
from tests.other_user import become

SERVICE_USERS = ("postgres", "mysql", "redis")
# Every name root wrote in a daemon's directory before issue 36, and the ones it writes now:
# a link is put there before root writes it.
NAMES = (
    "superuser-password", "postgres.log", "pgbouncer.ini", "users.txt", "pgbouncer.log",
    "redis.conf", "redis.log", "mariadb.log", "passwords", "server.log", "nginx.conf",
    "hypercorn.toml", "setup.log", "server.key", "vegeta-targets.json",
)  # fmt: skip
# Names the daemon writes first and root wrote over (pg_hba.conf, in PostgreSQL's data after
# initdb): a link replaces the file once it is there and the daemon is done with it (written
# SETTLED_S ago: initdb writes pg_hba.conf, then sets its mode, and a link between the two
# made initdb fail on the link's target, the daemon stopped by its own user, not root's write).
OVER = ("pg_hba.conf",)
SETTLED_S = 1.0
# A process of the daemon's user, planting links at every name, in every directory it can
# write, over and over (a link over a file root wrote once, too: root may write it again).
# The run's directories are traversable, not listable: it guesses them (benchlab's layout is
# no secret), then walks down from each.
GUESSED = (
    "", "pg/services", "pg/services/pg", "pg/services/pg/data", "pg/services/pgbouncer",
    "pg/services/redis", "my/services", "my/services/mariadb",
)  # fmt: skip
PLANTER = """
import os, sys, time
root, target, stop = sys.argv[1], sys.argv[2], sys.argv[3]
names, over, guessed = sys.argv[4].split(","), sys.argv[5].split(","), sys.argv[6].split(",")
settled = float(sys.argv[7])
deadline = time.monotonic() + 120
while time.monotonic() < deadline and not os.path.exists(stop):
    found = [d for g in guessed for d, _, _ in os.walk(os.path.join(root, g))]
    for directory in dict.fromkeys(found + [os.path.join(root, g) for g in guessed]):
        # A daemon's own data: a new link there would only stop its own daemon; root never
        # writes there, and once there a file root once wrote over gets a link.
        own = set(directory.split(os.sep)) & {"data", "run", "tmp"}
        if not os.access(directory, os.W_OK):
            continue
        for name in over if own else names + over:
            path = os.path.join(directory, name)
            if os.path.islink(path) or (name in over and not os.path.isfile(path)):
                continue
            try:
                if name in over and time.time() - os.lstat(path).st_mtime < settled:
                    continue
                os.symlink(target, path + ".planting")
                os.replace(path + ".planting", path)
            except OSError:
                pass
    time.sleep(0.001)
"""
WRITING_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
WRITING_EVENTS = {
    "os.chown", "os.chmod", "os.mkdir", "os.rename", "os.replace", "os.symlink", "os.link",
    "os.truncate", "os.remove", "os.rmdir",
}  # fmt: skip

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="only root hands directories to other users"
)


@contextlib.contextmanager
def planters(root: Path, target: Path) -> Iterator[None]:
    stop = root.parent / f"{root.name}.stop"
    users = [u for u in SERVICE_USERS if _exists(u)]
    argv = [sys.executable, "-I", "-c", PLANTER, str(root), str(target), str(stop)]
    started = [
        subprocess.Popen(
            [*become(user), *argv, *(",".join(n) for n in (NAMES, OVER, GUESSED)), f"{SETTLED_S}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for user in users
    ]
    try:
        yield
    finally:
        stop.touch()
        for process in started:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        stop.unlink(missing_ok=True)


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True


@contextlib.contextmanager
def audited_writes(root: Path) -> Iterator[list[tuple[str, str, bool]]]:
    """Every write-like event of this process, by path, under `root`, and whether only root
    could write in its directory at that moment (checked as the event happens)."""
    seen: list[tuple[str, str, bool]] = []
    active = [True]

    def hook(event: str, args: tuple) -> None:
        if not active[0] or not args:
            return
        path = args[0]
        if event == "open":
            mode, flags = args[1], args[2]
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & WRITING_FLAGS
            )
            if not writes:
                return
        elif event not in WRITING_EVENTS:
            return
        if isinstance(path, (str, bytes, os.PathLike)):
            text = os.fsdecode(path)
            if text.startswith(str(root)):
                seen.append((event, text, _root_alone_writes(Path(text).parent)))

    sys.addaudithook(hook)  # audit hooks cannot be removed: this one goes quiet instead
    try:
        yield seen
    finally:
        active[0] = False


def _root_alone_writes(directory: Path) -> bool:
    info = os.lstat(directory)
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022


@pytest.mark.slow
def test_links_planted_by_the_services_users_are_never_followed() -> None:
    workroot = short_tmp()
    canary_dir = short_tmp()  # root's, closed: the daemons' users cannot read the target
    canary = canary_dir / "only-root-may-write-this"
    canary.write_text("untouched\n")
    canary.chmod(0o600)
    before = os.stat(canary)
    workroot.chmod(0o711)
    registry = ProcessRegistry()
    sides: list[Services] = []
    try:
        refused: BenchlabError | None = None
        with planters(workroot, canary), audited_writes(workroot) as writes:
            try:
                for database, name in (("postgres", "pg"), ("mariadb", "my")):
                    (workroot / name).mkdir()
                    services = Services(registry, workroot / name, (0,))
                    sides.append(services)
                    config = ServicesConfig(database=database, pgbouncer=database == "postgres")
                    services.start(config, need_database=True, need_cache=database == "postgres")
            except BenchlabError as exc:
                refused = exc
            time.sleep(0.5)  # the planters' last round, after every write of the start
        after = os.stat(canary)
        assert canary.read_text() == "untouched\n"
        assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (
            before.st_uid, before.st_gid, 0o600,
        )  # fmt: skip
        # Nothing of root's is where a planter could put a link: the run is not even refused.
        assert refused is None, str(refused)
        _answer(sides)
        # Each service's directories: root's config directory, the daemon's own data.
        outside = [(event, path) for event, path, safe in writes if not safe]
        assert writes and not outside, outside
    finally:
        for side in sides:
            side.close_monitors()
        registry.stop_all()
        for side in sides:
            side.remove_data()
        shutil.rmtree(workroot, ignore_errors=True)
        shutil.rmtree(canary_dir, ignore_errors=True)


def _answer(sides: list[Services]) -> None:
    """Every service came up right, planted links or not."""
    postgres, mariadb = sides[0].running, sides[1].running
    with psycopg.connect(postgres["postgresql"].dsn) as conn:
        assert conn.execute("SELECT count(*) FROM user_basic").fetchone() == (10_000,)
    with psycopg.connect(postgres["pgbouncer"].dsn, prepare_threshold=None) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    with redis.Redis.from_url(postgres["redis"].dsn) as client:
        assert client.ping()
    service = mariadb["mariadb"]
    conn = pymysql.connect(
        host="127.0.0.1", port=service.port, user="benchlab", password=service.password,
        database="benchlab",
    )  # fmt: skip
    with conn.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM user_basic")
        assert cursor.fetchone() == (10_000,)
    conn.close()


# --- every place benchlab writes a file, known ------------------------------------------------

# Where each write of the source goes, and why root may write there: the one way a command
# writes what a user asked for (system/outputs.py), files made new (system/safe_files.py),
# a directory of the run's own that benchlab made new and holds alone, benchlab's cache and
# state (root's alone: build_cache.usable_cache, state_files.state_directory), the results store
# (after outputs.check_store_place), the kernel's control groups, a developer's tool. A new
# write fails here until it is classified — and so looked at.
DOOR, MADE_NEW, RUN_DIR, CACHE, STORE, CGROUP, DEVELOPER = (
    "the door", "made new", "the run's own directory", "benchlab's cache and state",
    "the results store", "the kernel's control groups", "a developer's tool",
)  # fmt: skip
WRITES = {
    ("system/outputs.py", "_make_parents", "mkdir"): DOOR,
    ("system/outputs.py", "_replace", "os.replace"): DOOR,
    ("system/outputs.py", "_replace", "os.open"): DOOR,
    ("system/outputs.py", "is_database", "os.open"): DOOR,  # read only: a SQLite header
    ("system/outputs.py", "open_stream", "os.open"): DOOR,
    ("system/outputs.py", "open_stream", "os.replace"): DOOR,
    # /dev/null over stdout once the stream's reader is gone (`| head`).
    ("cli/measuring.py", "write", "os.open"): MADE_NEW,
    ("system/safe_files.py", "new_dir", "os.mkdir"): MADE_NEW,
    ("system/safe_files.py", "new_dir", "os.open"): MADE_NEW,
    ("system/safe_files.py", "new_file", "os.open"): MADE_NEW,
    ("system/safe_files.py", "new_owner", "os.open"): MADE_NEW,
    ("system/safe_files.py", "open_log", "os.open"): MADE_NEW,
    ("system/safe_files.py", "reachable_tmpdir", "tempfile.mkdtemp"): MADE_NEW,
    ("services/__init__.py", "_base_dir", "tempfile.mkdtemp"): MADE_NEW,
    ("services/manual.py", "services_up", "tempfile.mkdtemp"): MADE_NEW,
    ("hosts/ssh.py", "open", "tempfile.mkdtemp"): MADE_NEW,
    ("hosts/ssh.py", "_stream", "tempfile.TemporaryFile"): MADE_NEW,
    ("checks/one_stack.py", "_static_files", "write_bytes"): RUN_DIR,
    ("checks/noise_check.py", "measure_noise", "mkdir"): RUN_DIR,
    ("hosts/generators.py", "_start_all", "mkdir"): RUN_DIR,
    ("hosts/ssh.py", "pull", "mkdir"): RUN_DIR,
    ("load/h2load.py", "command", "write_bytes"): RUN_DIR,
    ("load/siege.py", "command", "write_text"): RUN_DIR,
    ("load/vegeta.py", "command", "write_text"): RUN_DIR,
    ("load/vegeta_live.py", "_opened", "os.open"): RUN_DIR,  # read only, as vegeta writes it
    ("load/jmeter.py", "command", "write_text"): RUN_DIR,
    ("runner/ws_load.py", "_jmeter", "mkdir"): RUN_DIR,
    ("runner/ws_load.py", "_jmeter", "write_text"): RUN_DIR,
    ("load/wrk.py", "_script", "write_bytes"): RUN_DIR,
    ("load/wrk.py", "_script", "write_text"): RUN_DIR,
    ("resilience/slow_clients.py", "_trial", "mkdir"): RUN_DIR,
    ("runner/run_files.py", "prepare", "mkdir"): RUN_DIR,
    ("runner/run_files.py", "prepare", "write_bytes"): RUN_DIR,
    ("services/__init__.py", "_base_dir", "mkdir"): RUN_DIR,
    ("services/base.py", "log_dir", "os.mkdir"): RUN_DIR,
    ("services/credentials.py", "passwords_file", "mkdir"): RUN_DIR,
    ("services/credentials.py", "record_password", "os.open"): RUN_DIR,
    ("services/nginx_proxy.py", "start_proxy", "mkdir"): RUN_DIR,
    ("stacks/nginx_stacks.py", "nginx_launch", "write_text"): RUN_DIR,
    ("stacks/servers.py", "_hypercorn_config", "write_text"): RUN_DIR,
    ("system/state_files.py", "open_lock", "os.open"): CACHE,
    ("load/vegeta.py", "build", "rename"): CACHE,
    ("load/jmeter.py", "build", "tempfile.TemporaryDirectory"): CACHE,
    ("load/jmeter.py", "build", "rename"): CACHE,
    ("load/jmeter.py", "_lay_out", "mkdir"): CACHE,
    ("load/jmeter.py", "_lay_out", "shutil.copy"): CACHE,
    ("stacks/go_stacks.py", "build", "rename"): CACHE,
    ("stacks/python_env.py", "build", "mkdir"): CACHE,
    ("stacks/python_env.py", "build", "shutil.copytree"): CACHE,
    ("system/build_cache.py", "usable_cache", "mkdir"): CACHE,
    ("system/go_toolchain.py", "_unpack", "mkdir"): CACHE,
    ("system/go_toolchain.py", "_unpack", "open(wb)"): CACHE,
    ("system/go_toolchain.py", "_unpack", "shutil.copyfileobj"): CACHE,
    ("system/go_toolchain.py", "install", "rename"): CACHE,
    ("system/go_toolchain.py", "install", "tempfile.TemporaryDirectory"): CACHE,
    ("system/go_toolchain.py", "_download", "open(wb)"): CACHE,
    ("system/state_files.py", "state_directory", "os.mkdir"): CACHE,
    ("system/state_files.py", "read_state", "os.open"): CACHE,
    ("system/state_files.py", "write_state", "os.open"): CACHE,
    ("system/state_files.py", "write_state", "os.replace"): CACHE,
    ("system/trusted_path.py", "open_directory", "os.open"): CACHE,
    ("store/database.py", "__init__", "mkdir"): STORE,
    ("store/database.py", "__init__", "sqlite3.connect"): STORE,
    ("store/database.py", "_open_read_only", "sqlite3.connect"): STORE,
    ("runner/recovery.py", "_abandon", "sqlite3.connect"): STORE,
    ("runner/recovery.py", "_empty_group", "write_text"): CGROUP,
    ("system/cpu_account.py", "_accounting_group", "mkdir"): CGROUP,
    ("system/cpu_account.py", "_v1_group", "mkdir"): CGROUP,
    ("system/cpu_account.py", "_v2_controls", "write_text"): CGROUP,
    ("system/cpu_account.py", "_limit", "write_text"): CGROUP,
    ("report/json_schemas.py", "write_schemas", "write_text"): DEVELOPER,
    ("reference_docs.py", "refresh_docs", "write_text"): DEVELOPER,
}
WRITING_METHODS = {"write_text", "write_bytes", "touch", "symlink_to", "mkdir", "hardlink_to"}


def _write_kind(node: ast.Call) -> str | None:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    on = (
        func.value.id
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
        else ""
    )
    if on == "os" and name in ("mkdir", "makedirs", "replace", "rename", "symlink", "link", "open"):
        return f"os.{name}"
    if name in WRITING_METHODS or (name == "rename" and on != "os"):
        return name
    if on == "shutil" and name.startswith("copy"):
        return f"shutil.{name}"
    if (on == "tempfile" and name[0] in "mTN") or (on == "tempfile" and name == "mkstemp"):
        return f"tempfile.{name}"
    if on == "sqlite3" and name == "connect":
        return "sqlite3.connect"
    if name == "open":
        modes = [a.value for a in node.args if isinstance(a, ast.Constant)]
        modes += [
            k.value.value
            for k in node.keywords
            if k.arg == "mode" and isinstance(k.value, ast.Constant)
        ]
        mode = next((m for m in modes if isinstance(m, str) and set(m) <= set("rwabxt+")), "r")
        if set(mode) & set("wax+"):
            return f"open({mode})"
    return None


def test_every_write_of_the_source_is_known() -> None:
    source = REPO / "src" / "benchlab"
    found: dict[tuple[str, str, str], int] = {}
    for path in sorted(source.rglob("*.py")):
        module = path.relative_to(source).as_posix()
        if module.startswith("apps/"):
            continue  # the reference apps: run as the stacks' user, never as root
        tree = ast.parse(path.read_text())
        owner: dict[ast.AST, str] = {}
        stack: list[tuple[ast.AST, str]] = [(tree, "")]
        while stack:
            node, name = stack.pop()
            for child in ast.iter_child_nodes(node):
                inner = (
                    child.name
                    if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                    else name
                )
                owner[child] = inner
                stack.append((child, inner))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (kind := _write_kind(node)):
                found[(module, owner.get(node, ""), kind)] = node.lineno
    unknown = {key: line for key, line in found.items() if key not in WRITES}
    assert not unknown, (
        "writes no one has classified (add each to WRITES, with why root may "
        "write there): " + ", ".join(f"{m}:{line} {f} {k}" for (m, f, k), line in unknown.items())
    )
    gone = set(WRITES) - set(found)
    assert not gone, f"WRITES lists writes that are gone: {sorted(gone)}"
