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

import contextlib
import os
import secrets
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from benchlab.core.errors import UserError
from benchlab.system import users
from benchlab.system.trusted_path import Why, owners, user_name, walk

# The first bytes of every SQLite database (a results store): never written over.
SQLITE_HEADER = b"SQLite format 3\x00"


@dataclass(frozen=True)
class Owner:
    """Who controls a path: `user` None for root (or benchlab's own user); `open` for a
    directory anyone may write (no sticky bit), named by `where`; `uid` the owner's (a uid
    this machine has no name for has `user` None and `nameless`); `directory` the directory
    the path resolves to, when root holds it all."""

    user: str | None
    where: Path
    open: bool = False
    uid: int = 0
    directory: Path | None = None

    @property
    def nameless(self) -> bool:
        return self.user is None and self.uid not in owners()


def owner_of(path: Path) -> Owner:
    """Who controls `path`'s directory (and the directories and links leading to it, as the
    kernel resolves them: `root-dir/link/../x` is in the link target's parent): the first
    step, from /, that root does not hold alone."""
    found = walk(path.parent, owners(), missing_ok=True)
    step = found.step
    if step is None:
        return Owner(None, found.resolved, directory=found.resolved)
    if step.why is Why.LOOP:
        raise UserError(f"{path}: too many links on the way")
    if step.why is Why.OPEN:
        return Owner(None, step.path, open=True, uid=step.uid)
    name = user_name(step.uid)
    return Owner(None if name.startswith("uid ") else name, step.path, uid=step.uid)


def is_database(path: Path) -> bool:
    """Whether a SQLite database is at `path` (a results store, or any other): a regular
    file that starts as one (a FIFO or a device planted there is neither waited on nor
    read)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return False
    with os.fdopen(descriptor, "rb") as opened:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return False
        return opened.read(len(SQLITE_HEADER)) == SQLITE_HEADER


def write_output(path: Path, data: str | bytes, what: str = "output") -> None:
    """`data` in the file at `path` (its directory made if missing): as root, written as the
    owner of the directory when that is another user (see above); the file replaced whole,
    never written through a link, never over a SQLite database."""
    payload = data.encode() if isinstance(data, str) else data
    if is_database(path):
        raise _database(path, what)
    if os.geteuid() != 0:
        _make_parents(path, what)
        _replace(path.parent, path, payload, what)
        return
    owner = owner_of(path)
    if owner.user is None and not owner.open and not owner.nameless:
        _make_parents(path, what)
        owner = owner_of(path)  # again: what root just made, or found made in between
    if owner.open or owner.nameless:
        raise _refused(path, owner, what)
    if owner.user is None:
        _replace(owner.directory or path.parent, path, payload, what)
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


def _replace(directory: Path, path: Path, payload: bytes, what: str) -> None:
    """The file named `path.name` in `directory` (the directory `path` resolved to) replaced
    by a new one, made and moved through the directory's descriptor: a link at the name is
    replaced, never followed, and the new file's mode is set on its own descriptor."""
    try:
        folder = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise UserError(f"{what} {path}: cannot write it ({exc.strerror})") from None
    partial = f".{path.name}.{secrets.token_hex(4)}"
    try:
        if _is_directory(folder, path.name):
            raise UserError(
                f"{what} {path}: is a directory; give a file name such as {path}/report.html"
            )
        descriptor = os.open(
            partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
            dir_fd=folder,
        )  # fmt: skip
        with os.fdopen(descriptor, "wb") as out:
            os.fchmod(out.fileno(), 0o644)
            out.write(payload)
        os.replace(partial, path.name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(partial, dir_fd=folder)
        raise UserError(f"{what} {path}: cannot write it ({exc.strerror})") from None
    finally:
        os.close(folder)


def _is_directory(folder: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


# Run as the directory's owner: its directory made, the file replaced by a new one (`mv -T`
# renames over what is there, a link included, and never into a directory).
WRITER = (
    'set -e; d=$(dirname -- "$1"); mkdir -p -- "$d"; '
    't=$(mktemp -- "$d/.$(basename -- "$1").XXXXXX"); cat > "$t"; chmod 644 -- "$t"; '
    'mv -fT -- "$t" "$1"'
)


def check_output_place(
    path: Path, what: str, stores: Sequence[Path] = (), make_directory: bool = False
) -> None:
    """Whether `write_output` will be able to write at `path`, asked before a long run: not
    a directory, not a results store of `stores` the command reads (nor its journal), not any
    SQLite database, in a directory that exists (or, `make_directory`, can be made: a page
    benchlab names beside the store) and that no other user controls (as root)."""
    if path.is_dir():
        raise UserError(f"{what} {path}: is a directory; give a file name in it")
    for store in stores:
        if _same_store(path, store):
            raise UserError(
                f"{what} {path}: is the results store this command reads ({store}); "
                "benchlab never writes a report over it: give another file, such as report.md"
            )
    if is_database(path):
        raise _database(path, what)
    parent = path.parent
    if make_directory:
        parent = next(p for p in (parent, *parent.parents) if p.exists())
        if not parent.is_dir():
            raise UserError(f"{what} {path}: {parent} is not a directory")
    if parent.exists() and not parent.is_dir():
        raise UserError(f"{what} {path}: {parent} is not a directory")
    if not parent.is_dir():
        raise UserError(
            f"{what} {path}: the directory {parent} does not exist; make it (mkdir -p "
            f"{parent}) or give a file in a directory that does"
        )
    if os.geteuid() == 0:
        owner = owner_of(path)
        if owner.open or owner.nameless:
            raise _refused(path, owner, what)
    elif not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{what} {path}: cannot write in {parent}; choose a writable path")


def _same_store(path: Path, store: Path) -> bool:
    """`path` is the store, or one of the files SQLite keeps beside it."""
    names = [store, *(store.with_name(store.name + s) for s in ("-wal", "-shm", "-journal"))]
    for name in names:
        if path.absolute() == name.absolute():
            return True
        try:
            if path.exists() and name.exists() and os.path.samefile(path, name):
                return True
        except OSError:
            continue
    return False


def _database(path: Path, what: str) -> UserError:
    return UserError(
        f"{what} {path}: is a SQLite database (a results store?); benchlab never writes a "
        "report over one: give another file, such as report.md"
    )


def check_store_place(path: Path) -> None:
    """A results store root opens is in a place only root controls; else one line says
    where to put it instead."""
    if os.geteuid() != 0:
        return
    owner = owner_of(path)
    if owner.user is not None or owner.open or owner.nameless:
        raise _refused(path, owner, "results store")
    if path.is_symlink():
        raise UserError(f"results store {path}: is a link; benchlab writes through none")


def check_stream_place(path: Path, what: str, stores: Sequence[Path] = ()) -> None:
    """Whether `open_stream` will write at `path`, asked before a run: where `write_output`
    would (never over a results store of `stores`, nor any SQLite database; in a directory
    that exists), and, as root, only where root alone holds the path: a file benchlab keeps
    open and writes as it goes is no file a writer as another user can take line by line
    (a results store neither)."""
    check_output_place(path, what, stores)
    if os.geteuid() == 0 and (owner := owner_of(path)).user is not None:
        raise _refused(path, owner, what)


def open_stream(path: Path, what: str) -> BinaryIO:
    """A new file at `path` to write as benchlab goes (a run's stream): made beside it in
    the directory `path` resolves to and renamed over what was there at once (a link
    replaced, never followed), so a reader following `path` reads its lines from the first."""
    check_stream_place(path, what)  # again: the place checked before the run may have moved
    directory = (owner_of(path).directory if os.geteuid() == 0 else None) or path.parent
    try:
        folder = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise UserError(f"{what} {path}: cannot write it ({exc.strerror})") from None
    partial = f".{path.name}.{secrets.token_hex(4)}"
    try:
        descriptor = os.open(
            partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
            dir_fd=folder,
        )  # fmt: skip
        os.fchmod(descriptor, 0o644)
        os.replace(partial, path.name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(partial, dir_fd=folder)
        raise UserError(f"{what} {path}: cannot write it ({exc.strerror})") from None
    finally:
        os.close(folder)
    return os.fdopen(descriptor, "wb", buffering=0)


def _refused(path: Path, owner: Owner, what: str) -> UserError:
    if owner.nameless:
        return UserError(
            f"{what} {path}: {owner.where} belongs to uid {owner.uid}, which has no name on "
            "this machine, and benchlab, as root, writes only where root alone can or as a "
            "named user: give a path in a directory of root's, or chown "
            f"{owner.where} to a user of this machine"
        )
    whose = "writable by every user" if owner.open else f"{owner.user}'s"
    return UserError(
        f"{what} {path}: {owner.where} is {whose}, and benchlab, as root, writes nothing "
        "where another user can put a link: give a path in a directory of root's (--results "
        f"~/benchlab.db, -o ~/report.html), or run benchlab as "
        f"{owner.user or 'a normal user'}"
    )
