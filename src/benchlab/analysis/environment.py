"""What differs between the machines and versions two runs were measured with (their
environment fingerprints): a comparison across them measures the difference too, so
`compare` and each change point of `history` name every one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# What makes a machine another one: a change here starts a new history segment.
MACHINE_KEYS = ("cpu", "cores", "kernel", "governor")
# What else is recorded of the machine, and named when it differs (not a new segment).
FINGERPRINT_KEYS = (*MACHINE_KEYS, "memory_mb", "allowed_cores", "python_build")
VERSION_GROUPS = ("packages", "tools", "debian")
# Steal (CPU time the hypervisor took during the run) is named when it moved this much.
STEAL_NAMED_PTS = 1.0
CONDITIONS = "conditions"  # a Difference's kind for the run's conditions (steal)
# A Difference's kind for how long or how often a cell was measured (series_key.Measurement):
# the cells are compared all the same, and the difference named.
SETTINGS = "settings"


@dataclass(frozen=True)
class Difference:
    kind: str  # machine, versions, conditions (the run's, not the machine's: steal), settings
    name: str
    a: Any
    b: Any

    @property
    def is_condition(self) -> bool:
        """The run's condition (steal), not its machine or versions: it differs on any shared
        machine, so it is named but never warned of or failed on."""
        return self.kind == CONDITIONS

    @property
    def is_environment(self) -> bool:
        """The machine or the versions: what makes two runs' figures not alike (`compare`
        warns of it, `--strict` fails on it)."""
        return self.kind in ("machine", "versions")

    def text(self) -> str:
        return f"{self.name} {_shown(self.a)} → {_shown(self.b)}"


def _shown(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value) or "(none)"
    return "(none)" if value in (None, "") else str(value)


def _flags(a: dict[str, Any], b: dict[str, Any]) -> list[Difference]:
    """CPU flags gained and lost, as one difference (only when both runs recorded them)."""
    mine, theirs = a.get("cpu_flags"), b.get("cpu_flags")
    if not mine or not theirs or set(mine) == set(theirs):
        return []
    lost = " ".join(f"-{flag}" for flag in sorted(set(mine) - set(theirs)))
    gained = " ".join(f"+{flag}" for flag in sorted(set(theirs) - set(mine)))
    return [Difference("machine", "cpu flags", lost, gained)]


def _steal(a: dict[str, Any], b: dict[str, Any]) -> list[Difference]:
    mine, theirs = a.get("steal_pct"), b.get("steal_pct")
    if mine is None or theirs is None or abs(mine - theirs) < STEAL_NAMED_PTS:
        return []
    return [Difference(CONDITIONS, "steal %", f"{mine:.1f}", f"{theirs:.1f}")]


def differences(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[Difference]:
    """Machine facts (CPU, its flags, cores, affinity, memory, kernel, governor, steal) and
    versions (Python and its build, packages, tools, Debian packages) not the same in both
    runs' records. A fact one side did not record (an older run) is not a difference."""
    a, b = a or {}, b or {}
    found = [
        Difference("machine", key, a.get(key), b.get(key))
        for key in FINGERPRINT_KEYS
        if a.get(key) != b.get(key) and (key in MACHINE_KEYS or (key in a and key in b))
    ]
    found += _flags(a, b) + _steal(a, b)
    if a.get("python") != b.get("python"):
        found.append(Difference("versions", "python", a.get("python"), b.get("python")))
    for group in VERSION_GROUPS:
        mine, theirs = a.get(group) or {}, b.get(group) or {}
        for name in sorted(set(mine) | set(theirs)):
            if mine.get(name) != theirs.get(name):
                found.append(Difference("versions", name, mine.get(name), theirs.get(name)))
    return found


def describe(found: list[Difference]) -> list[str]:
    """One line per kind: 'machine: cores 2 → 96, cpu …'."""
    lines = []
    for kind in ("machine", "versions", CONDITIONS, SETTINGS):
        items = [d.text() for d in found if d.kind == kind]
        if items:
            lines.append(f"{kind}: {', '.join(items)}")
    return lines
