"""Facts about this machine that a result depends on: CPU, kernel, versions of what it runs.
Another machine says the same of itself by running describe() there (hosts/ssh.py)."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import subprocess
from pathlib import Path

from benchlab.load import TOOLS
from benchlab.stacks.servers import distributions
from benchlab.system import users
from benchlab.system.go_toolchain import building_go, machine_go
from benchlab.system.trusted_path import NEUTRAL_DIR

# benchlab, the frameworks and what they load, every server (servers.py), the drivers.
PACKAGES = tuple(dict.fromkeys((
    "benchlab", "fastapi", "starlette", "uvloop", "httptools", "flask", "werkzeug", "sanic",
    "tornado", "psutil", "litestar", "blacksheep", "quart", "bottle", "falcon", "django",
    "aiohttp", *distributions(), "psycopg", "psycopg-pool", "asyncpg", "pymysql", "aiomysql",
    "redis",
)))  # fmt: skip
# The Debian packages a result can depend on: the load tools' and the real services'.
DEBIAN_PACKAGES = (
    *(tool.package for tool in TOOLS.values() if tool.package),
    "nginx-light", "libnginx-mod-http-lua", "postgresql-15", "pgbouncer", "mariadb-server",
    "redis-server",
)  # fmt: skip
TOOL_VERSION_COMMANDS = {
    **{name: list(tool.version_command) for name, tool in TOOLS.items() if tool.version_command},
    "nginx": ["nginx", "-v"],
    "go": ["go", "version"],
}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_flags() -> list[str]:
    """The first CPU's feature flags (what a build or a kernel may use), sorted."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return sorted(set(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return []


def memory_mb() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def python_build() -> str:
    """Which Python, built how: two builds of one version can differ in speed."""
    number, date = platform.python_build()
    return (
        f"{platform.python_implementation()} {platform.python_version()} "
        f"({number}, {date}; {platform.python_compiler()})"
    )


def package_versions() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def tool_version(name: str) -> str | None:
    argv = TOOL_VERSION_COMMANDS[name]
    if name == "go":  # the one that builds: the machine's, or benchlab's pinned one
        go = building_go(machine_go())
        if go is None:
            return None
        argv = [go, *argv[1:]]
    if shutil.which(argv[0]) is None:
        return None
    try:
        result = subprocess.run(
            argv, capture_output=True, text=True, timeout=10, check=False, cwd=NEUTRAL_DIR,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (result.stdout + result.stderr).strip().splitlines()
    return text[0] if text else None


def debian_versions() -> dict[str, str]:
    if shutil.which("dpkg-query") is None:
        return {}
    try:
        result = subprocess.run(
            ["dpkg-query", "-W", "-f", "${Package} ${Version}\n", *DEBIAN_PACKAGES],
            capture_output=True, text=True, timeout=10, check=False, cwd=NEUTRAL_DIR,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return {}
    pairs = (line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    return {name: version for name, version in pairs if version}


def git_commit(source: Path | None = None, user: str | None = None) -> str | None:
    """The commit of the repository `source` is in (default: benchlab's own), with "+dirty"
    when tracked files changed since; None outside a repository. `user`: whom git runs as
    (the owner of an app's directory, when benchlab is root: git runs what a repository's
    configuration names, core.fsmonitor say, and that is its owner's to run, not root's)."""
    source = source or Path(__file__).resolve().parent
    try:
        head = _git(user, source, "rev-parse", "HEAD")
        if head.returncode != 0:
            return None
        dirty = _git(user, source, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _git(user: str | None, source: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = ["git", "-C", str(source), *args]
    if user is None:
        return subprocess.run(
            argv, cwd=source, capture_output=True, text=True, timeout=10, check=False,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    done = users.run(user, argv, cwd=source, timeout=10)
    out, err = (part.decode(errors="replace") for part in (done.stdout, done.stderr))
    return subprocess.CompletedProcess(done.args, done.returncode, out, err)


def built_tool_versions() -> dict[str, str]:
    """Load tools benchlab builds itself, at their pinned versions."""
    return {
        name: tool.pinned_version
        for name, tool in TOOLS.items()
        if tool.pinned_version is not None and tool.executable() is not None
    }


def describe() -> dict:
    return {
        "cpu": cpu_model(),
        "cpu_flags": cpu_flags(),
        "cores": os.cpu_count(),
        "memory_mb": memory_mb(),
        "allowed_cores": sorted(os.sched_getaffinity(0)),
        "kernel": platform.release(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "python_build": python_build(),
        "packages": package_versions(),
        "tools": {
            **{name: tool_version(name) for name in TOOL_VERSION_COMMANDS},
            **built_tool_versions(),
        },
        "debian": debian_versions(),
        "governor": frequency_governor(),
    }


def frequency_governor() -> str | None:
    governors = {
        p.read_text().strip()
        for p in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")
        if p.is_file()
    }
    return ",".join(sorted(governors)) if governors else None
