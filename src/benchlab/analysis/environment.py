"""What differs between the machines and versions two runs were measured with: a comparison
across them measures the difference too, so `compare` names each one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MACHINE_KEYS = ("cpu", "cores", "kernel", "governor")
VERSION_GROUPS = ("packages", "tools", "debian")


@dataclass(frozen=True)
class Difference:
    kind: str  # machine or versions
    name: str
    a: Any
    b: Any

    def text(self) -> str:
        return f"{self.name} {_shown(self.a)} → {_shown(self.b)}"


def _shown(value: Any) -> str:
    return "(none)" if value in (None, "") else str(value)


def differences(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[Difference]:
    """Machine facts (CPU, cores, kernel, governor) and versions (Python, packages, tools,
    Debian packages) that are not the same in both runs' machine records."""
    a, b = a or {}, b or {}
    found = [
        Difference("machine", key, a.get(key), b.get(key))
        for key in MACHINE_KEYS
        if a.get(key) != b.get(key)
    ]
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
    for kind in ("machine", "versions"):
        items = [d.text() for d in found if d.kind == kind]
        if items:
            lines.append(f"{kind}: {', '.join(items)}")
    return lines
