"""`benchlab doctor --hosts RECIPE`: what each host of a recipe needs for its roles, checked
before a run: it answers, the tools are there, their versions are the controller's, the
cores exist, its clock agrees. Each gap comes with its fix.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Iterator
from typing import Any

from benchlab.core.service_kinds import Service
from benchlab.doctor.check import Check
from benchlab.hosts.base import Host, HostError
from benchlab.hosts.machine import describe
from benchlab.hosts.netns import existing_namespaces
from benchlab.hosts.ssh import SOURCE_DIR
from benchlab.hosts.topology import make_host
from benchlab.http.scenarios import SCENARIOS
from benchlab.load import TOOLS
from benchlab.recipe import HostPlan, Plan
from benchlab.system.users import SETPRIV

CLOCK_TOLERANCE_MS = 50.0  # latencies are measured on one host each; logs are compared by time
# What must match the controller's on a host, by role: results must not depend on where a
# version came from.
COMPARED = {
    "load": ("tools",),
    "server": ("python", "packages", "tools", "debian"),
    "database": ("debian",),
}


@contextlib.contextmanager
def connected(host: Host) -> Iterator[None]:
    host.open()
    try:
        yield
    finally:
        host.close()


def host_checks(plan: Plan) -> list[tuple[str, Check]]:
    """Every check of every host of the plan, named by host."""
    controller = describe()
    found: list[tuple[str, Check]] = []
    with_network = any(h.spec.kind == "netns" for h in plan.hosts)
    for entry in plan.hosts:
        host = make_host(entry, with_network)
        found += [(entry.name, c) for c in _checks(plan, entry, host, controller)]
    return found


def _checks(plan: Plan, entry: HostPlan, host: Host, controller: dict[str, Any]) -> list[Check]:
    if entry.spec.kind == "netns":
        return _namespace_checks(entry)
    if entry.spec.kind == "local":
        return [Check("reach", True, "this machine")]
    try:
        with connected(host):
            return _remote_checks(plan, entry, host, controller)
    except HostError as exc:
        destination = f"{entry.spec.user}@{entry.spec.addr}" if entry.spec.user else entry.spec.addr
        return [
            Check(
                "reach", False, str(exc),
                f"start sshd there and make 'ssh {destination} true' work without a password "
                "(ssh-copy-id, or your agent)",
            )
        ]  # fmt: skip


def _namespace_checks(entry: HostPlan) -> list[Check]:
    checks = [
        Check(
            "root",
            os.geteuid() == 0,
            "network namespaces are made as root",
            "" if os.geteuid() == 0 else "run benchlab as root",
        ),
        Check(
            "ip",
            shutil.which("ip") is not None,
            "iproute2 (ip netns, veth, bridge)",
            "" if shutil.which("ip") else "apt-get install iproute2",
        ),
    ]
    taken = entry.spec.name in existing_namespaces()
    checks.append(
        Check(
            "namespace", not taken,
            f"'{entry.spec.name}' {'exists already' if taken else 'is free'} "
            f"(address {entry.address})",
            f"ip netns delete {entry.spec.name} (if nothing needs it), or another name"
            if taken else "",
        )
    )  # fmt: skip
    return checks


def _remote_checks(
    plan: Plan, entry: HostPlan, host: Host, controller: dict[str, Any]
) -> list[Check]:
    checks = [Check("reach", True, f"ssh as {host.user_name()}")]
    there = host.describe()
    checks.append(_benchlab_check(there))
    checks += _tool_checks(plan, entry, host)
    for role in entry.roles:
        checks += _version_checks(role, there, controller)
    checks.append(_cores_check(entry, there))
    checks.append(_clock_check(host))
    return checks


def _benchlab_check(there: dict[str, Any]) -> Check:
    ok = there.get("benchlab", True) is not None
    return Check(
        "benchlab", ok,
        f"its interpreter and source at {sys.executable} and {SOURCE_DIR}"
        + ("" if ok else ": missing"),
        "" if ok else f"check out benchlab at {SOURCE_DIR.parent} there and run ./lab setup",
    )  # fmt: skip


def _needed_programs(plan: Plan, entry: HostPlan) -> list[tuple[str, str]]:
    """What the host's roles run, each with its fix: a program on its PATH, or a load tool
    benchlab builds, by its path in benchlab's cache (the same there as here)."""
    programs = [_program(name) for name in ("taskset", SETPRIV, "ss", "tar")]
    if "load" in entry.roles:
        for name in sorted({profile.tool for profile in plan.recipe.load}):
            tool = TOOLS[name]
            built = tool.build is not None
            fix = "benchlab build there (./lab setup)" if built else tool.install
            programs.append((tool.program(), fix))
    if "database" in entry.roles:
        services = plan.recipe.services
        needed = ["mariadbd", "mariadb"] if services.database_service is Service.MARIADB else []
        needed += ["pgbouncer"] if services.pgbouncer else []
        needs_cache = any(SCENARIOS[c.scenario].needs_cache for c in plan.cells)
        needed += ["redis-server"] if needs_cache else []
        programs += [_program(name) for name in needed]
    return programs


def _program(name: str) -> tuple[str, str]:
    return name, f"install {name} there (./lab setup)"


def _tool_checks(plan: Plan, entry: HostPlan, host: Host) -> list[Check]:
    checks = []
    for program, fix in _needed_programs(plan, entry):
        path = host.which(program) if not program.startswith("/") else (
            program if host.run(["test", "-x", program]).returncode == 0 else None
        )  # fmt: skip
        name = os.path.basename(program)
        checks.append(Check(name, path is not None, path or "missing", "" if path else fix))
    if "database" in entry.roles and plan.recipe.services.database_service is Service.POSTGRESQL:
        found = host.glob("/usr/lib/postgresql/*/bin/postgres")
        checks.append(
            Check(
                "postgresql",
                bool(found),
                found[-1] if found else "missing",
                "" if found else "apt-get install postgresql-15",
            )
        )
    return checks


def _version_checks(role: str, there: dict[str, Any], controller: dict[str, Any]) -> list[Check]:
    checks = []
    for key in COMPARED[role]:
        mine, theirs = controller.get(key), there.get(key)
        if isinstance(mine, dict) and isinstance(theirs, dict):
            differ = sorted(k for k in mine if mine.get(k) != theirs.get(k))
            ok = not differ
            detail = "as the controller's" if ok else "differ: " + ", ".join(
                f"{k} {theirs.get(k) or 'missing'} (controller {mine[k]})" for k in differ[:5]
            )  # fmt: skip
        else:
            ok = mine == theirs
            detail = "as the controller's" if ok else f"{theirs} (controller {mine})"
        checks.append(
            Check(
                f"{role} {key}", ok, detail,
                "" if ok else "install the same versions there (git checkout the controller's "
                "commit, ./lab setup)",
            )
        )  # fmt: skip
    return checks


def _cores_check(entry: HostPlan, there: dict[str, Any]) -> Check:
    allowed = set(there.get("allowed_cores") or [])
    wanted = sorted({c for _, cores in entry.cores for c in cores})
    missing = [c for c in wanted if c not in allowed]
    return Check(
        "cores", not missing,
        f"{there.get('cores')} core(s); the recipe pins its roles to {wanted}",
        f"use cores of {sorted(allowed)} in hosts.{entry.name}.cores" if missing else "",
    )  # fmt: skip


def _clock_check(host: Host) -> Check:
    """The host's clock against the controller's, with the round trip as its uncertainty."""
    before = time.time()
    said = host.run(["date", "+%s.%N"]).stdout.decode().strip()
    after = time.time()
    try:
        offset_ms = (float(said) - (before + after) / 2) * 1000
    except ValueError:
        return Check("clock", False, f"could not read it ({said!r})", "check 'date' there")
    within = (after - before) * 500
    ok = abs(offset_ms) <= CLOCK_TOLERANCE_MS + within
    return Check(
        "clock", ok, f"offset {offset_ms:+.1f} ms (± {within:.1f} ms)",
        "" if ok else "run chrony or systemd-timesyncd on both machines",
    )  # fmt: skip
