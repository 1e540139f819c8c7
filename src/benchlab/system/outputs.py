"""Where benchlab writes what a user asked for — a results store, a report, a page — and how:
the one way a command writes such a file.

As root, benchlab must never write through a path another user controls: a link planted in
their directory (`results/tune-app.html` -> /root/.ssh/authorized_keys) would make root
write there. So before writing, the path is walked from / down to its directory, as the
kernel would resolve it, and each step's owner read (`owner_of`):

- every step root's (or benchlab's own user's), writable by no one else: root writes, by a
  new file renamed into place, never through what is there;
- a step another user owns (their home, their project): the file is written *as that user*
  (through users.py, by a child that can do no more than they can), so a link of theirs
  can only point where they could write anyway; a results store, which root must keep open
  itself, is refused there in one line saying where to put it instead;
- a directory anyone may write without the sticky bit: refused.

A benchlab that is not root writes as itself: the kernel bounds it.
"""

from __future__ import annotations

import os
import pwd
import secrets
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from benchlab.core.errors import UserError
from benchlab.system import users

MOST_LINKS = 40


@dataclass(frozen=True)
class Owner:
    """Who controls a path: `user` None for root (or benchlab's own user); `open` for a
    directory anyone may write (no sticky bit), named by `where`."""

    user: str | None
    where: Path
    open: bool = False


def owner_of(path: Path) -> Owner:
    """Who controls `path`'s directory (and the directories and links leading to it): the
    first step, from /, that root does not hold alone."""
    me = os.geteuid()
    pending = list(Path(os.path.abspath(path)).parent.parts[1:])
    current, links = Path("/"), 0
    while True:
        found = _step_owner(current, me, dir_expected=True)
        if found is not None:
            return found
        if not pending:
            return Owner(None, current)
        name = pending.pop(0)
        candidate = current / name
        try:
            info = os.lstat(candidate)
        except FileNotFoundError:
            return Owner(None, current)  # what is missing below a held directory is made
        if stat.S_ISLNK(info.st_mode):
            if info.st_uid not in (0, me):
                return Owner(_name(info.st_uid), candidate)
            links += 1
            if links > MOST_LINKS:
                raise UserError(f"{path}: too many links on the way")
            target = Path(os.readlink(candidate))
            parts = target.parts[1:] if target.is_absolute() else target.parts
            pending = [*parts, *pending]
            current = Path("/") if target.is_absolute() else current
            continue
        current = current.parent if name == ".." else candidate


def _step_owner(directory: Path, me: int, dir_expected: bool) -> Owner | None:
    info = os.lstat(directory)
    if info.st_uid not in (0, me):
        return Owner(_name(info.st_uid), directory)
    writable_by_others = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if writable_by_others and not info.st_mode & stat.S_ISVTX:
        return Owner(None, directory, open=True)
    return None


def _name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def write_output(path: Path, data: str | bytes, what: str = "output") -> None:
    """`data` in the file at `path` (its directory made if missing): as root, written as the
    owner of the directory when that is another user (see above); the file replaced whole,
    never written through a link."""
    payload = data.encode() if isinstance(data, str) else data
    if os.geteuid() != 0:
        _replace(path, payload, what)
        return
    owner = owner_of(path)
    if owner.user is None and not owner.open:
        _make_parents(path, what)
        owner = owner_of(path)  # again: what root just made, or found made in between
    if owner.open:
        raise _refused(path, owner, what)
    if owner.user is None:
        _replace(path, payload, what)
        return
    done = users.run(
        owner.user, ["sh", "-c", WRITER, "writer", str(path)], input=payload, timeout=60
    )
    if done.returncode != 0:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
        raise UserError(
            f"{what} {path}: cannot write it as {owner.user}, who owns {owner.where}: {last}"
        )


def _make_parents(path: Path, what: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{what} {path}: cannot make its directory ({exc.strerror})") from None


def _replace(path: Path, payload: bytes, what: str) -> None:
    _make_parents(path, what)
    if path.is_dir():
        raise UserError(
            f"{what} {path}: is a directory; give a file name such as {path}/report.html"
        )
    try:
        with tempfile.NamedTemporaryFile(
            dir=path.parent, prefix=f".{path.name}.", delete=False
        ) as out:
            out.write(payload)
            temporary = Path(out.name)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)  # a link at `path` is replaced, never followed
    except OSError as exc:
        raise UserError(f"{what} {path}: cannot write it ({exc.strerror})") from None


# Run as the directory's owner: its directory made, the file replaced by a new one (`mv -T`
# renames over what is there, a link included, and never into a directory).
WRITER = (
    'set -e; d=$(dirname -- "$1"); mkdir -p -- "$d"; '
    't=$(mktemp -- "$d/.$(basename -- "$1").XXXXXX"); cat > "$t"; chmod 644 -- "$t"; '
    'mv -fT -- "$t" "$1"'
)


def check_output_place(path: Path, what: str) -> None:
    """Whether `write_output` will be able to write at `path`, asked before a long run: not a
    directory, not in one every user may write, its directory makeable."""
    if path.is_dir():
        raise UserError(f"{what} {path}: is a directory; give a file name in it")
    if os.geteuid() == 0 and (owner := owner_of(path)).open:
        raise _refused(path, owner, what)
    existing = next(p for p in (path.parent, *path.parent.parents) if p.exists())
    if not existing.is_dir():
        raise UserError(f"{what} {path}: {existing} is not a directory")
    if os.geteuid() != 0 and not os.access(existing, os.W_OK | os.X_OK):
        raise UserError(f"{what} {path}: cannot write in {existing}; choose a writable path")


def check_store_place(path: Path) -> None:
    """A results store root opens is in a place only root controls; else one line says
    where to put it instead."""
    if os.geteuid() != 0:
        return
    owner = owner_of(path)
    if owner.user is not None or owner.open:
        raise _refused(path, owner, "results store")
    if path.is_symlink():
        raise UserError(f"results store {path}: is a link; benchlab writes through none")


def check_stream_place(path: Path, what: str, store: Path | None = None) -> None:
    """Whether `open_stream` will write at `path`, asked before a run: never over the run's
    results store (`store`) or any SQLite database; a file benchlab keeps open and writes as
    it goes is, as root, only where root alone holds the path (as a results store: no writer
    as another user can follow it line by line)."""
    if _a_database(path) or (store is not None and _same_file(path, store)):
        raise UserError(
            f"{what} {path}: is a SQLite database (a results store?); benchlab never writes "
            "over one: give another file, such as events.ndjson"
        )
    if os.geteuid() != 0:
        check_output_place(path, what)
        return
    if path.is_dir():
        raise UserError(f"{what} {path}: is a directory; give a file name in it")
    existing = next(p for p in (path.parent, *path.parent.parents) if p.exists())
    if not existing.is_dir():
        raise UserError(f"{what} {path}: {existing} is not a directory")
    owner = owner_of(path)
    if owner.user is not None or owner.open:
        raise _refused(path, owner, what)


def _a_database(path: Path) -> bool:
    try:
        with open(path, "rb") as opened:
            return opened.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _same_file(path: Path, other: Path) -> bool:
    if path.absolute() == other.absolute():
        return True
    try:
        return os.path.samefile(path, other)
    except OSError:
        return False


def open_stream(path: Path, what: str) -> BinaryIO:
    """A new file at `path` (what was there replaced, a link never followed) to write as
    benchlab goes: made beside it and renamed into place at once, so a reader following
    `path` reads this file's lines from the first."""
    check_stream_place(path, what)  # again: what was checked before the run may have moved
    _make_parents(path, what)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    try:
        handle = os.open(
            temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644
        )
        os.fchmod(handle, 0o644)
        os.replace(temporary, path)  # a link at `path` is replaced, never followed
    except OSError as exc:
        raise UserError(f"{what} {path}: cannot write it ({exc.strerror})") from None
    return os.fdopen(handle, "wb", buffering=0)


def _refused(path: Path, owner: Owner, what: str) -> UserError:
    whose = "writable by every user" if owner.open else f"{owner.user}'s"
    return UserError(
        f"{what} {path}: {owner.where} is {whose}, and benchlab, as root, writes nothing "
        "where another user can put a link: give a path in a directory of root's (--results "
        f"~/benchlab.db, -o ~/report.html), or run benchlab as "
        f"{owner.user or 'a normal user'}"
    )
