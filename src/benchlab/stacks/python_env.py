"""The Python the Python stacks run on, and the reference apps they serve: benchlab's own
interpreter and package when the user the stacks run as can run them, else a copy of both
that it can.

benchlab installed by root the way its README says (`uv tool install`, `pipx`, a venv)
lives under /root or another private directory, which the stacks' account cannot enter. So,
as root, the set-up builds the stacks' environment beside the Go builds (root's build cache,
/var/cache/benchlab/python/): a venv on a system Python, holding exactly the distributions
and versions of benchlab's own environment (itself installed from requirements.lock), and a
copy of the reference apps. Its name is a hash of both, so a new pin or an app's change
makes a new one; it is used only once complete, and only while it and everything in it is
root's and writable by no one else. Each wheel is installed by its hash in benchlab's own lock
(requirements.lock, which the package carries), from PyPI named on the command line.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from benchlab.core.errors import UserError
from benchlab.stacks.base import APPS_DIR
from benchlab.system import users
from benchlab.system.build_cache import cache_dir
from benchlab.system.safe_files import new_dir, new_file
from benchlab.system.trusted_path import check, is_trusted, trusted_tree

OWN_APPS = APPS_DIR / "python"
COMPLETE = ".complete"
BUILD_TIMEOUT_S = 900
# Interpreters the set-up may build the stacks' venv on, after benchlab's own base one.
SYSTEM_PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3")


@dataclass(frozen=True)
class StackPython:
    python: str  # the interpreter a stack runs
    apps: Path  # the reference apps' directory (the stacks' working directory)


OWN = StackPython(sys.executable, OWN_APPS)


def for_user(user: str | None) -> StackPython:
    """What a stack running as `user` runs: benchlab's own where `user` can run it, else
    the stacks' environment (built now if it is missing)."""
    if user is None or _runs_own(user):
        return OWN
    return build(user)


@functools.cache
def _runs_own(user: str) -> bool:
    """Whether `user` runs benchlab's interpreter and imports the apps from their place
    (through another program, as stacks are started: `env`, then the interpreter)."""
    return _serves(user, OWN)


IMPORTS_APPS = "import sys; sys.path.insert(0, sys.argv[1]); import sanic, benchlab_backend"


def _serves(user: str, python: StackPython) -> bool:
    check = ["env", python.python, "-I", "-c", IMPORTS_APPS, str(python.apps)]
    return users.run(user, check, timeout=60).returncode == 0


def pins() -> list[str]:
    """name==version of every distribution benchlab needs to run (its requirements, their
    requirements, …), as installed beside it: what the lock put there."""
    found: dict[str, str] = {}
    pending = ["benchlab"]
    while pending:
        name = pending.pop()
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in found:
            continue
        found[key] = dist.version
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(requirement.name)
    found.pop("benchlab", None)
    return sorted(f"{name}=={version}" for name, version in found.items())


def _digest(requirements: list[str]) -> str:
    digest = hashlib.sha256("\n".join([sys.version.split()[0], *requirements]).encode())
    for path in sorted(OWN_APPS.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(OWN_APPS).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def place() -> Path:
    """Where the stacks' environment of this benchlab is (or would be)."""
    return cache_dir().parent / "python" / _digest(pins())


def build(user: str) -> StackPython:
    """The stacks' environment, built if missing: a venv `user` can run, with benchlab's
    pins (each installed by its hash in benchlab's lock), and the apps beside it. Every
    child of the build runs in the new directory root holds (nothing of the directory
    benchlab was started in is read: `python -I`, uv without its configuration files)."""
    home = place()
    built = StackPython(str(home / "venv" / "bin" / "python"), home / "apps")
    if (home / COMPLETE).is_file() and trusted_tree(home):
        return built
    requirements = hashed_pins()
    base = _base_python(user)
    check(home.parent, "the stacks' Python environments", PARENT_FIX, missing_ok=True)
    home.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    check(home.parent, "the stacks' Python environments", PARENT_FIX)
    shutil.rmtree(home, ignore_errors=True)  # a build cut short, or one not root's alone
    new_dir(home, 0o755)
    print(f"building the stacks' Python environment in {home} (once)", file=sys.stderr)
    _run([base, "-I", "-m", "venv", str(home / "venv")], home)
    listed = new_file(home / "requirements.txt", "\n".join(requirements) + "\n", 0o644)
    _install(home / "venv" / "bin" / "python", listed, home)
    shutil.copytree(OWN_APPS, home / "apps", ignore=shutil.ignore_patterns("__pycache__"))
    _run([built.python, "-I", "-m", "compileall", "-q", str(home / "apps")], home)
    new_file(home / COMPLETE, _digest(pins()) + "\n", 0o644)
    if not _serves(user, built):
        raise UserError(f"the stacks' Python environment in {home} does not run as {user}")
    return built


PARENT_FIX = "give it and the directories above it to root, mode 755"
LOCK = Path(__file__).resolve().parent.parent / "requirements.lock"
# Where the stacks' wheels come from: PyPI, named (never an index a configuration file or
# the environment chose), and each wheel checked against its hash in the lock.
INDEX = "https://pypi.org/simple"


def lock_hashes(text: str) -> dict[tuple[str, str], list[str]]:
    """(name, version) -> its hashes, from a lock `uv pip compile --generate-hashes` wrote."""
    found: dict[tuple[str, str], list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        pinned = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", line)
        if pinned:
            current = found.setdefault((canonicalize_name(pinned[1]), pinned[2]), [])
        elif not line.startswith(" "):
            current = None
        if current is not None:
            current += re.findall(r"--hash=(sha256:[0-9a-f]{64})", line)
    return found


def hashed_pins() -> list[str]:
    """Every pin with its hashes from benchlab's lock (the one it was installed from); a
    pin the lock does not hold, or holds without a hash, is refused in one line."""
    try:
        hashes = lock_hashes(LOCK.read_text())
    except OSError:
        hashes = {}
    lines = []
    for pin in pins():
        name, version = pin.split("==")
        known = hashes.get((canonicalize_name(name), version))
        if not known:
            raise UserError(
                f"benchlab is root and builds its stacks' Python environment from pinned "
                f"wheels checked by hash, and its lock ({LOCK}) has no hash for {pin}: install "
                "benchlab with its lock (uv tool install PATH -c PATH/requirements.lock), or "
                f"set {users.STACK_USER_VARIABLE}=root"
            )
        lines.append(" ".join([pin, *(f"--hash={h}" for h in known)]))
    return lines


def _base_python(user: str) -> str:
    """A Python ≥ 3.11, of benchlab's own minor version, that `user` can run and that only
    root holds (root runs it to make the venv)."""
    own_base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    wanted = "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, sys.argv[1].split('.'))))"
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for candidate in (str(own_base), *SYSTEM_PYTHONS):
        if os.access(candidate, os.X_OK) and is_trusted(Path(candidate)):
            checked = users.run(user, ["env", candidate, "-I", "-c", wanted, version], timeout=60)
            if checked.returncode == 0:
                return candidate
    raise UserError(
        f"benchlab is root and runs its stacks as {user}, who can run neither its Python "
        f"({sys.executable}) nor a system Python {version} only root can change, to build "
        f"theirs on: install python{version} from the system's packages (apt-get install "
        f"python3), run benchlab as a normal user, or set {users.STACK_USER_VARIABLE}=root"
    )


def _uv() -> str | None:
    """uv, when there is one only root can change: on PATH, or beside benchlab's Python."""
    for found in (shutil.which("uv"), shutil.which("uv", path=str(Path(sys.executable).parent))):
        if found and is_trusted(Path(found)):
            return found
    return None


def _install(python: Path, requirements: Path, cwd: Path) -> None:
    uv = _uv()
    if uv:
        argv = [uv, "pip", "install", "-q", "--no-config", "--no-deps", "--require-hashes",
                "--index-url", INDEX, "--compile-bytecode", "--python", str(python),
                "-r", str(requirements)]  # fmt: skip
    else:
        argv = [str(python), "-I", "-m", "pip", "install", "-q", "--isolated",
                "--disable-pip-version-check", "--no-deps", "--require-hashes",
                "--index-url", INDEX, "--compile", "-r", str(requirements)]  # fmt: skip
    _run(argv, cwd)


# The variables that would choose where a build's packages come from, or what its Python
# imports first: none of the caller's reaches a build.
BUILD_SETTINGS = ("UV_", "PIP_", "PYTHON", "VIRTUAL_ENV", "CONDA_")


def _run(argv: list[str], cwd: Path) -> None:
    """One step of the build, run in `cwd` (the new directory root holds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(BUILD_SETTINGS)}
    try:
        done = subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
            check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise UserError(
            f"building the stacks' Python environment: {argv[0]} took over "
            f"{BUILD_TIMEOUT_S // 60} minutes (downloading?); run 'benchlab build' where PyPI "
            "answers"
        ) from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"building the stacks' Python environment: {argv[0]} failed: {last}")
