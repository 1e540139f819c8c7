"""Tests act as another local user (the attacker who shares the machine, a normal user):
the prefix that becomes one. Tests only: benchlab's own children become another user through
benchlab.system.users, and nowhere else (tests/test_root_doors.py)."""

from __future__ import annotations

import pwd
import shutil


def become(user: str) -> list[str]:
    """The argv prefix that runs a command as `user`, its own group, no other group."""
    entry = pwd.getpwnam(user)
    setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"  # the child's PATH may not name it
    return [setpriv, f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups"]
