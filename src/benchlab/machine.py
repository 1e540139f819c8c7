"""Facts about this machine that a result depends on, and the checks `benchlab doctor` runs."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

PACKAGES = (
    "benchlab", "fastapi", "starlette", "uvicorn", "uvloop", "httptools", "gunicorn",
    "flask", "werkzeug", "sanic", "tornado", "psutil", "litestar", "blacksheep", "quart",
    "hypercorn", "granian", "uvicorn-worker", "waitress", "gevent", "bottle", "falcon",
    "django", "aiohttp", "pyuwsgi", "psycopg", "psycopg-pool", "asyncpg", "pymysql",
    "aiomysql", "redis",
)  # fmt: skip
# The Debian packages a result can depend on: the load tools and the real services.
DEBIAN_PACKAGES = (
    "wrk", "apache2-utils", "hey", "siege", "nginx-light", "libnginx-mod-http-lua",
    "postgresql-15", "pgbouncer", "mariadb-server", "redis-server",
)  # fmt: skip
TOOL_VERSION_COMMANDS = {
    "wrk": ["wrk", "-v"],
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
    if shutil.which(argv[0]) is None:
        return None
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
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
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return {}
    pairs = (line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    return {name: version for name, version in pairs if version}


def git_commit() -> str | None:
    source = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def built_tool_versions() -> dict[str, str]:
    """Load tools benchlab builds itself, at their pinned versions."""
    from benchlab.load.vegeta import VERSION, binary

    return {"vegeta": VERSION} if binary().exists() else {}


def describe() -> dict:
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "allowed_cores": sorted(os.sched_getaffinity(0)),
        "kernel": platform.release(),
        "os": platform.platform(),
        "python": platform.python_version(),
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


# --- doctor --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True


PROGRAMS = (
    ("taskset", "pins server and load tool to their cores", "apt-get install util-linux", True),
    ("nginx", "the nginx-static ceiling stack", "apt-get install nginx-light", True),
    ("go", "builds the Go stacks and vegeta", "apt-get install golang (or go.dev/dl)", True),
    ("redis-server", "the cache scenario", "apt-get install redis-server", False),
    ("pgbouncer", "pooling in front of PostgreSQL", "apt-get install pgbouncer", False),
    ("mariadbd", "the MySQL scenarios", "apt-get install mariadb-server", False),
)


def _which(program: str) -> str | None:
    return shutil.which(program) or shutil.which(program, path="/usr/sbin:/sbin")


def doctor_checks() -> list[Check]:
    from benchlab.load import TOOLS

    checks = []
    for name, tool in TOOLS.items():
        path = tool.executable()
        purpose = "the default load tool" if name == "wrk" else "load tool"
        if tool.can_pace:
            purpose += " (fixed rates, capacity searches)"
        detail = path or f"missing ({purpose})"
        checks.append(
            Check(name, path is not None, detail, "" if path else tool.install, name == "wrk")
        )
    for program, purpose, fix, required in PROGRAMS:
        path = _which(program)
        detail = f"{path}" if path else f"missing ({purpose})"
        checks.append(Check(program, path is not None, detail, "" if path else fix, required))
    postgres = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    checks.append(
        Check(
            "postgresql",
            bool(postgres),
            str(postgres[-1].parent) if postgres else "missing (the db scenarios)",
            "" if postgres else "apt-get install postgresql-15",
            required=False,
        )
    )
    cores = os.cpu_count() or 1
    checks.append(
        Check(
            "cores",
            cores >= 2,
            f"{cores} core(s); server and load tool need separate cores",
            "" if cores >= 2 else "use a machine with at least 2 cores",
        )
    )
    checks.append(_pinning_check())
    governor = frequency_governor()
    if governor is None:
        checks.append(
            Check(
                "cpu frequency",
                True,
                "scaling governor not exposed (typical in a VM)",
                required=False,
            )
        )
    else:
        steady = governor == "performance"
        checks.append(
            Check(
                "cpu frequency",
                steady,
                f"scaling governor: {governor}",
                "" if steady else "cpupower frequency-set -g performance (steadier numbers)",
                required=False,
            )
        )
    return checks


def _pinning_check() -> Check:
    try:
        allowed = os.sched_getaffinity(0)
        os.sched_setaffinity(0, allowed)
    except OSError as exc:
        return Check(
            "pinning", False, f"sched_setaffinity failed: {exc}", "run outside a restricted cgroup"
        )
    if len(allowed) < 2:
        return Check(
            "pinning", False, f"only core(s) {sorted(allowed)} allowed", "allow >= 2 cores"
        )
    return Check("pinning", True, f"possible on cores {sorted(allowed)}")
