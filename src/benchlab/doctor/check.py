"""One finding of `benchlab doctor`: what was checked, whether it is fine, and the fix."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True


APT = "apt-get install "


def apt_command(checks: list[Check]) -> str | None:
    """The one apt-get command that installs every Debian package the failed checks name."""
    packages = []
    for check in checks:
        if not check.ok and check.fix.startswith(APT):
            package = check.fix.removeprefix(APT).split()[0]
            if package not in packages:
                packages.append(package)
    return f"apt-get install -y {' '.join(packages)}" if packages else None
