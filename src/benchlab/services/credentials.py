"""Per-run passwords: random, written only to owner-only files, never to the command line."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

SECRETS_DIR = "secrets"
PASSWORDS_FILE = "passwords"


def new_password() -> str:
    # URL-safe, so it goes into DSNs, libpq conninfo and pgbouncer's userlist unquoted.
    return secrets.token_urlsafe(24)


def passwords_file(workdir: Path) -> Path:
    """The run's password file: `workdir/secrets/passwords`, 0600 in a 0700 directory."""
    directory = workdir / SECRETS_DIR
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)
    return directory / PASSWORDS_FILE


def record_password(workdir: Path, service: str, user: str, password: str) -> Path:
    """Append `service user password` to the run's password file (what `cat` shows a human)."""
    path = passwords_file(workdir)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.fchmod(descriptor, 0o600)
        os.write(descriptor, f"{service} {user} {password}\n".encode())
    finally:
        os.close(descriptor)
    return path
