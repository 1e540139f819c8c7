"""Files and directories benchlab makes, made so that nobody else's link is followed.

benchlab often runs as root and hands directories to other users (postgres, mysql, redis,
the stacks' unprivileged user). Whoever can act as such a user can put a symbolic link
where root is about to write, and root would then write through it (to /etc/passwd, say)
and hand the target over. So every file and directory here is made new, never reused: a
directory with mkdir (refused if anything is there), a file with O_CREAT|O_EXCL|O_NOFOLLOW,
its mode and owner set on the open descriptor, never by path; and a file root writes for a
daemon is made in a directory root alone can write, before anything is handed over.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

from benchlab.core.errors import BenchlabError, UserError
from benchlab.system.trusted_path import is_trusted


class PathTaken(BenchlabError):
    """Something is already where benchlab was about to make a file or directory."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"{path} exists already (made by someone else while benchlab ran?); benchlab "
            "writes nothing through a path it did not make"
        )
        self.path = path


def user_ids(user: str | None, group: str | None = None) -> tuple[int, int]:
    """(uid, gid) to hand a file to: `user` with its own group, or -1 (unchanged) for what
    is not given; `group` alone changes the group only."""
    uid = pwd.getpwnam(user).pw_uid if user else -1
    if group is not None:
        return uid, grp.getgrnam(group).gr_gid
    return uid, pwd.getpwnam(user).pw_gid if user else -1


def new_dir(path: Path, mode: int = 0o700, owner: str | None = None) -> Path:
    """A directory made now at `path`, `mode` (whatever the umask), handed to `owner`."""
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        raise PathTaken(path) from None
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchmod(descriptor, mode)
        if owner is not None:
            os.fchown(descriptor, *user_ids(owner))
    finally:
        os.close(descriptor)
    return path


def new_owner(path: Path, owner: str) -> None:
    """Hand a directory benchlab made (and wrote in) to `owner`, through a descriptor: a link
    at `path` is refused, never followed."""
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchown(descriptor, *user_ids(owner))
    finally:
        os.close(descriptor)


def new_file(
    path: Path,
    data: str | bytes,
    mode: int = 0o600,
    owner: str | None = None,
    group: str | None = None,
) -> Path:
    """A file made now at `path` holding `data`: `mode` from its creation (a secret is never
    readable by others, not even for a moment), owned by `owner` and/or `group`."""
    try:
        descriptor = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode
        )
    except FileExistsError:
        raise PathTaken(path) from None
    try:
        os.fchmod(descriptor, mode)
        if owner is not None or group is not None:
            os.fchown(descriptor, *user_ids(owner, group))
        payload = data.encode() if isinstance(data, str) else data
        view = memoryview(payload)
        while view:
            view = view[os.write(descriptor, view) :]
    finally:
        os.close(descriptor)
    return path


def open_log(path: Path) -> BinaryIO:
    """A log to append to, readable by its owner only; a link at `path` is refused."""
    descriptor = os.open(
        path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
    )
    return os.fdopen(descriptor, "ab")


def made_here(directory: Path) -> bool:
    """Whether `directory` is one benchlab (this user) made and may remove: a directory, not
    a link to one, owned by this user."""
    try:
        info = os.lstat(directory)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()


def traversable_by_others(path: Path) -> bool:
    """Whether every directory from / down to `path` lets other users through."""
    return all(d.stat().st_mode & stat.S_IXOTH for d in (path, *path.parents))


def tmp_base() -> Path:
    """TMPDIR (else /tmp), checked: it and every directory and link on the way to it held
    by root or this user alone, but for the sticky bit (nobody else can replace what is
    made there); else one line says so."""
    base = Path(tempfile.gettempdir())
    if not is_trusted(base, sticky_last=True):
        raise UserError(
            f"TMPDIR {base}: another user can change it or a directory above it, and "
            "benchlab makes its run directories only where nobody else can; point TMPDIR at "
            "a directory of your own (or unset it: /tmp)"
        )
    return base


def reachable_tmpdir(prefix: str, others_need_it: bool) -> Path:
    """A new temporary directory (0711: traversable, not listable) that another user (a
    stack's, a daemon's) can reach when `others_need_it`: in TMPDIR when they can get there,
    else in /tmp (a TMPDIR closed to others, such as a home directory, stays closed)."""
    base = tmp_base()
    if others_need_it and not traversable_by_others(base):
        base = Path("/tmp")
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    path.chmod(0o711)
    return path
