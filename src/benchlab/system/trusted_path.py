"""The trusted path: a file benchlab runs, imports or keeps as state is used only when root
(or the user it runs as) owns it and every directory above it, and no one else can write
them — sshd's StrictModes, sudo's secure_path. Every door goes through `walk`: the exec of an
interpreter or a cached tool, an import, a state file read or written, the place an output
lands.

The walk resolves the path as the kernel would: from /, one name at a time, a link followed
where it stands (the link itself must be held too: its owner could point it elsewhere), and
`..` taken from the directory the walk has really reached, never collapsed from the text
(`root-dir/link/../x` is in the link target's parent). What is checked is the resolved path,
and what is opened afterwards is opened by that path (by descriptor where the caller then
reads or writes it): once every step is held by root or the user alone, nobody else can swap
any of them between the check and the use.

A directory others may write is passed only when it is root's and sticky (/tmp): nobody but
root and an entry's owner can rename or remove what is in it.
"""

from __future__ import annotations

import functools
import grp
import os
import pwd
import stat
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from benchlab.core.errors import UserError

MOST_LINKS = 40
# Where a child runs that needs no directory of its own: /, root's, where nobody else can
# put a file for the child to find (a Python run with `-m` puts its working directory first
# on its path; uv, git and Maven read configuration from theirs).
NEUTRAL_DIR = Path("/")


class Why(Enum):
    """Why a step of a path is not held."""

    OWNER = "owner"  # owned by someone not allowed
    OPEN = "open"  # writable by others (and not a sticky directory of root's)
    MISSING = "missing"  # not there
    LOOP = "loop"  # too many links


@dataclass(frozen=True)
class Step:
    """The first step of a walk that is not held: the path to it, its owner, why."""

    path: Path
    uid: int
    why: Why

    def describe(self) -> str:
        if self.why is Why.MISSING:
            return f"{self.path} does not exist"
        if self.why is Why.LOOP:
            return f"{self.path}: too many links on the way"
        if self.why is Why.OPEN:
            return f"{self.path} is writable by users other than its owner {user_name(self.uid)}"
        return f"{self.path} belongs to {user_name(self.uid)}"


@dataclass(frozen=True)
class Walk:
    """Where a path leads (as far as it exists) and the first step not held (None: all)."""

    resolved: Path
    step: Step | None


def user_name(uid: int) -> str:
    """A user's name, or `uid N` for a uid this machine has no name for."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def owners(user: str | None = None) -> frozenset[int]:
    """Who may hold a trusted path: root, benchlab's own user, and `user` (whom a child
    runs as) when given."""
    allowed = {0, os.geteuid()}
    if user is not None:
        allowed.add(pwd.getpwnam(user).pw_uid)
    return frozenset(allowed)


def walk(
    path: Path, allowed: frozenset[int], sticky_last: bool = False, missing_ok: bool = False
) -> Walk:
    """`path` resolved from /, each step's owner and mode read as it is reached: the first
    step held by no uid of `allowed`, or writable by others, stops the walk. `sticky_last`:
    the path itself may be a sticky directory of root's (TMPDIR); `missing_ok`: a missing
    step ends the walk as held (what is missing below a held directory is made there)."""
    text = os.fspath(path)
    pending = list(Path(text if os.path.isabs(text) else os.path.join(os.getcwd(), text)).parts)
    pending = pending[1:]
    current, links = Path("/"), 0
    found = _held(current, allowed, last=not pending and not sticky_last)
    if found is not None:
        return Walk(current, found)
    while pending:
        name = pending.pop(0)
        if name == "..":
            current = current.parent
            continue
        candidate = current / name
        try:
            info = os.lstat(candidate)
        except OSError:
            return Walk(Path(candidate, *pending), None if missing_ok else _missing(candidate))
        if stat.S_ISLNK(info.st_mode):
            if info.st_uid not in allowed:
                return Walk(candidate, Step(candidate, info.st_uid, Why.OWNER))
            links += 1
            if links > MOST_LINKS:
                return Walk(candidate, Step(candidate, info.st_uid, Why.LOOP))
            target = Path(os.readlink(candidate))
            pending = [*(target.parts[1:] if target.is_absolute() else target.parts), *pending]
            current = Path("/") if target.is_absolute() else current
            continue
        step = _step(candidate, info, allowed, last=not pending and not sticky_last)
        if step is not None:
            return Walk(candidate, step)
        current = candidate
    return Walk(current, None)


def _missing(path: Path) -> Step:
    return Step(path, -1, Why.MISSING)


def _held(path: Path, allowed: frozenset[int], last: bool) -> Step | None:
    return _step(path, os.lstat(path), allowed, last)


def _step(path: Path, info: os.stat_result, allowed: frozenset[int], last: bool) -> Step | None:
    if info.st_uid not in allowed:
        return Step(path, info.st_uid, Why.OWNER)
    if opened_to_others(info) and (last or not sticky_of_root(info)):
        return Step(path, info.st_uid, Why.OPEN)
    return None


def opened_to_others(info: os.stat_result) -> bool:
    """Writable by everyone, or by a group another user is in (a symbolic link's own mode
    means nothing; a user's private group, umask 002's, holds no one else)."""
    if stat.S_ISLNK(info.st_mode):
        return False
    if info.st_mode & stat.S_IWOTH:
        return True
    return bool(info.st_mode & stat.S_IWGRP) and not private_group(info.st_gid, info.st_uid)


@functools.cache
def private_group(gid: int, uid: int) -> bool:
    """Whether group `gid` can hold no user but `uid`: none else has it as their own group
    or is listed in it."""
    try:
        members = set(grp.getgrgid(gid).gr_mem)
        owner = pwd.getpwuid(uid)
    except KeyError:
        return False
    if members - {owner.pw_name}:
        return False
    return all(entry.pw_uid == uid for entry in pwd.getpwall() if entry.pw_gid == gid)


def sticky_of_root(info: os.stat_result) -> bool:
    """A sticky directory of root's (/tmp): others may add to it, not replace what is there."""
    return stat.S_ISDIR(info.st_mode) and bool(info.st_mode & stat.S_ISVTX) and info.st_uid == 0


class Untrusted(UserError):
    """A path benchlab would run, import or keep as state, held by someone else."""


def is_trusted(path: Path, user: str | None = None, sticky_last: bool = False) -> bool:
    """Whether `path` and every directory above it are held by root, benchlab's own user or
    `user` alone (see the top)."""
    return walk(path, owners(user), sticky_last).step is None


def check(
    path: Path, what: str, fix: str, user: str | None = None, missing_ok: bool = False
) -> Path:
    """`path` resolved, when it and every directory above it are held by root, benchlab's
    own user or `user` alone; else one line naming the path, the step that fails, its owner
    and `fix`. `missing_ok`: what is missing below a held directory passes (it is made)."""
    found = walk(path, owners(user), missing_ok=missing_ok)
    if found.step is None:
        return found.resolved
    raise refusal(path, found.step, what, fix, user)


def refusal(path: Path, step: Step, what: str, fix: str, user: str | None = None) -> Untrusted:
    """The one line a path that is not trusted gets."""
    who = "root" if os.geteuid() == 0 else user_name(os.geteuid())
    held = f"{who} or {user}" if user not in (None, who) else who
    return Untrusted(
        f"{what} {path}: {step.describe()}, and benchlab uses only what {held} alone can change, "
        f"from / down; {fix}"
    )


def trusted_tree(path: Path, user: str | None = None) -> bool:
    """`path` trusted (see `is_trusted`), and so is everything in it: a whole toolchain or
    environment, any file of which a child may run or import."""
    if not path.exists() or not is_trusted(path, user):
        return False
    allowed = owners(user)
    for directory, names, files in os.walk(path):
        for name in (*names, *files):
            info = os.lstat(os.path.join(directory, name))
            if info.st_uid not in allowed or opened_to_others(info):
                return False
    return True


def open_directory(path: Path, what: str, fix: str) -> int:
    """A descriptor of the directory at `path`, checked (see `check`) and opened without
    following a link; its owner and mode read again on the descriptor."""
    resolved = check(path, what, fix)
    descriptor = os.open(resolved, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    info = os.fstat(descriptor)
    step = _step(resolved, info, owners(), last=True)
    if step is not None:
        os.close(descriptor)
        raise refusal(path, step, what, fix)
    return descriptor
