"""The checks `benchlab doctor` runs on this machine: its load tools and programs, its cores,
pinning and CPU frequency scaling; each gap with its fix."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from benchlab.doctor.check import Check
from benchlab.hosts.machine import frequency_governor
from benchlab.load import TOOLS
from benchlab.system import go_toolchain

BUILT = " and ".join(name for name, tool in TOOLS.items() if tool.build is not None)
PROGRAMS = (
    ("taskset", "pins server and load tool to their cores", "apt-get install util-linux", True),
    ("nginx", "the nginx-static ceiling stack", "apt-get install nginx-light", True),
    ("redis-server", "the cache scenario", "apt-get install redis-server", False),
    ("pgbouncer", "pooling in front of PostgreSQL", "apt-get install pgbouncer", False),
    ("mariadbd", "the MySQL scenarios", "apt-get install mariadb-server", False),
)


def _which(program: str) -> str | None:
    return shutil.which(program) or shutil.which(program, path="/usr/sbin:/sbin")


def _go_check() -> Check:
    """Go by its version: the machine's when new enough, else benchlab's pinned one."""
    found = go_toolchain.machine_go()
    if found is not None and found.new_enough and found.release is not None:
        return Check("go", True, f"{found.path} (Go {go_toolchain.release_text(found.release)})")
    machine = go_toolchain.why_not(found)
    needed = go_toolchain.release_text(go_toolchain.NEEDED)
    pinned = go_toolchain.pinned_go()
    if pinned.exists():
        detail = f"{pinned} (benchlab's pinned Go {go_toolchain.VERSION}; {machine})"
        return Check("go", True, detail)
    return Check(
        "go", False,
        f"missing: Go ≥ {needed} builds the Go stacks and {BUILT} ({machine})",
        f"benchlab build (installs the pinned Go {go_toolchain.VERSION} into its cache)",
    )  # fmt: skip


def doctor_checks() -> list[Check]:
    checks = []
    for name, tool in TOOLS.items():
        path = tool.executable()
        purpose = "the default load tool" if tool.is_default else "load tool"
        if tool.can_pace:
            purpose += " (fixed rates, capacity searches)"
        detail = path or f"missing ({purpose})"
        checks.append(
            Check(name, path is not None, detail, "" if path else tool.install, tool.is_default)
        )
    for program, purpose, fix, required in PROGRAMS:
        path = _which(program)
        detail = f"{path}" if path else f"missing ({purpose})"
        checks.append(Check(program, path is not None, detail, "" if path else fix, required))
    checks.append(_go_check())
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
