"""benchlab's memory between runs — every run's journal, the step costs, the services
`benchlab services up` started, the noise record — kept the way the journal always was: in a
directory this user (root, for root) holds along its whole path (trusted_path.py), each file
opened relative to that directory's descriptor, never through a link, and believed only when
this user wrote it and no one else can have.

What is read here decides what root kills, removes and runs next: a state directory under
one another user can write (a shared team cache as $BENCHLAB_CACHE, `sudo -E` keeping a
user's $HOME) would let them forge it, so such a directory is refused in one line.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from benchlab.core import environment
from benchlab.system.trusted_path import (
    Step,
    Untrusted,
    Why,
    check,
    open_directory,
    opened_to_others,
    refusal,
)

# A state file is a few kilobytes; one that is not is not benchlab's.
MOST_BYTES = 4 * 2**20
FIX = (
    f"set {environment.CACHE} to a directory of yours that only you can write (or run sudo "
    "without -E, which keeps your user's $HOME)"
)
WHAT = "benchlab's state directory"


def state_directory(path: Path, private: bool = False) -> Path:
    """The state directory at `path`, made where missing (below a directory held by this
    user alone, never in another's), and checked: held from / down by root or this user,
    and writable by no one else. `private`: it is made 0700, and one an earlier benchlab
    made with the umask's mode is closed to others now (the journals: what root's runs
    started); else 0755, as the build cache below it must be reachable by the stacks."""
    check(path, WHAT, FIX, missing_ok=True)
    for missing in reversed([p for p in (path, *path.parents) if not p.exists()]):
        with contextlib.suppress(FileExistsError):
            os.mkdir(missing, 0o700 if private and missing == path else 0o755)
    resolved = check(path, WHAT, FIX)
    info = os.lstat(resolved)
    if private and info.st_uid == os.geteuid() and info.st_mode & 0o077:
        os.chmod(resolved, 0o700)  # reached without a link: the walk held every step
    return resolved


@contextlib.contextmanager
def _directory(path: Path) -> Iterator[int]:
    descriptor = open_directory(state_directory(path), WHAT, FIX)
    try:
        yield descriptor
    finally:
        os.close(descriptor)


def _own(path: Path, info: os.stat_result) -> None:
    """A state file is believed only when this user wrote it and no one else can have."""
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        raise refusal(path, Step(path, info.st_uid, Why.OWNER), "a state file", _remove(path))
    if opened_to_others(info):
        raise refusal(path, Step(path, info.st_uid, Why.OPEN), "a state file", _remove(path))


def _remove(path: Path) -> str:
    return f"remove it (benchlab did not leave it so), or {FIX}"


def read_state(path: Path, most: int = MOST_BYTES) -> bytes | None:
    """The state file at `path`, or None when there is none; one that is a link, not this
    user's, writable by others or over `most` bytes is refused (Untrusted)."""
    if not path.parent.exists():
        return None
    with _directory(path.parent) as directory:
        try:
            descriptor = os.open(
                path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                dir_fd=directory,
            )  # fmt: skip
        except FileNotFoundError:
            return None
        except OSError:  # a link (ELOOP), or a name that is no file
            raise refusal(path, Step(path, -1, Why.OWNER), "a state file", _remove(path)) from None
        with os.fdopen(descriptor, "rb") as opened:
            _own(path, os.fstat(opened.fileno()))
            data = opened.read(most + 1)
    if len(data) > most:
        raise Untrusted(f"a state file {path}: over {most // 2**20} MiB; {_remove(path)}")
    return data


def write_state(path: Path, data: str | bytes) -> None:
    """`data` as the state file at `path`: a new file (0600) written beside it, then renamed
    over whatever is there (a link included, which is replaced, never followed)."""
    payload = data.encode() if isinstance(data, str) else data
    with _directory(path.parent) as directory:
        partial = f".{path.name}.{secrets.token_hex(4)}"
        descriptor = os.open(
            partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
            dir_fd=directory,
        )  # fmt: skip
        try:
            with os.fdopen(descriptor, "wb") as out:
                out.write(payload)
            os.replace(partial, path.name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(partial, dir_fd=directory)
            raise


def open_lock(path: Path) -> int:
    """A descriptor on the lock file at `path` (made 0600 if missing), opened relative to
    its checked directory and without following a link, and this user's."""
    with _directory(path.parent) as directory:
        descriptor = os.open(
            path.name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
            dir_fd=directory,
        )  # fmt: skip
    try:
        _own(path, os.fstat(descriptor))
    except Untrusted:
        os.close(descriptor)
        raise
    return descriptor


def remove_state(path: Path) -> None:
    """The state file at `path` removed (what is there, a link included; never its target)."""
    if not path.parent.exists():
        return
    with _directory(path.parent) as directory, contextlib.suppress(FileNotFoundError):
        os.unlink(path.name, dir_fd=directory)


def state_names(directory: Path, suffix: str) -> list[str]:
    """The names in a state directory that end with `suffix`, sorted."""
    if not directory.exists():
        return []
    with _directory(directory) as opened:
        return sorted(name for name in os.listdir(opened) if name.endswith(suffix))
