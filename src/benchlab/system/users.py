"""Becoming another user: the one way benchlab starts a process as a user other than its own.

benchlab, as root, runs the stacks, a tune's app, its probe and `--setup`, initdb and
mariadb-install-db as other users. Every such child is started by `start` or `run` here (or,
on an SSH host, by the command line `remote_line` builds), and by nothing else:
tests/test_root_doors.py finds every call site and checks each child it makes. Each one

- gets a session of its own and so no controlling terminal: a child that could open root's
  terminal could push keystrokes into root's shell (TIOCSTI);
- reads nothing of root's terminal (stdin is /dev/null unless it is given bytes) and holds
  no descriptor of benchlab's but the three it is given;
- sees an environment built from an allowlist: that user's HOME, USER and LOGNAME, a plain
  PATH, the locale, and what its caller gives on purpose (`--env`, `--env-file`, the
  addresses of the `--with` services, a stack's own settings) — never root's (a CI token,
  cloud credentials).

The drop itself is `setpriv` (util-linux): a prefix rather than Popen's `user=`, because it
must come after `ip netns exec`, which needs root, and inside a control group's wrapper.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from benchlab.core import environment
from benchlab.core.errors import UserError
from benchlab.system.trusted_path import NEUTRAL_DIR

SETPRIV = "setpriv"
# What a dropped child finds its programs on: the system's directories, nobody's own.
PLAIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Of root's environment, only how text is read and written, and the time zone.
LOCALE = re.compile(r"LANG|LANGUAGE|LC_[A-Z_]+|TZ")

# When benchlab is root, what it serves itself (the catalogue's stacks) runs as an account
# of its own: not nobody, which other daemons share (any of them could read a stack's
# environment), and not root (a hole in a framework, an endpoint open to every local user,
# must not be root's). A tuned app runs as the owner of its files. BENCHLAB_STACK_USER
# chooses another ("root": they stay root).
STACK_USER_VARIABLE = environment.STACK_USER
STACK_ACCOUNT = "benchlab-stack"
NO_HOME = "/nonexistent"
NO_SHELL = "/usr/sbin/nologin"


@dataclass(frozen=True)
class Account:
    """A user a child runs as."""

    name: str
    uid: int
    gid: int
    home: str

    @classmethod
    def named(cls, name: str) -> Account:
        entry = pwd.getpwnam(name)
        return cls(name, entry.pw_uid, entry.pw_gid, entry.pw_dir)


def environment_for(account: Account, given: Mapping[str, str] | None = None) -> dict[str, str]:
    """All a child running as `account` sees: the allowlist, then what its caller gives."""
    kept = {k: v for k, v in os.environ.items() if LOCALE.fullmatch(k)}
    who = {"HOME": account.home, "USER": account.name, "LOGNAME": account.name}
    return {**kept, "PATH": PLAIN_PATH, **who, **(given or {})}


def _drop(account: Account) -> list[str]:
    return [
        SETPRIV, f"--reuid={account.uid}", f"--regid={account.gid}", "--clear-groups", "--",
    ]  # fmt: skip


def start(
    user: str,
    argv: Sequence[str],
    *,
    outer: Sequence[str] = (),
    wrap: Callable[[list[str]], list[str]] | None = None,
    cwd: str | os.PathLike[str] = NEUTRAL_DIR,
    env: Mapping[str, str] | None = None,
    stdout: int | IO[bytes] | None = subprocess.DEVNULL,
    stderr: int | IO[bytes] | None = subprocess.STDOUT,
) -> subprocess.Popen[bytes]:
    """`argv` started as `user`, in a session of its own, stdin from /dev/null, with only
    the environment above. `outer` comes before the drop (`ip netns exec NAME`), `wrap`
    around everything (a control group's wrapper, which root must run)."""
    account = Account.named(user)
    full = [*outer, *_drop(account), *argv]
    return subprocess.Popen(
        wrap(full) if wrap else full,
        cwd=cwd, env=environment_for(account, env), stdin=subprocess.DEVNULL,
        stdout=stdout, stderr=stderr, start_new_session=True, close_fds=True,
    )  # fmt: skip


def run(
    user: str,
    argv: Sequence[str],
    *,
    outer: Sequence[str] = (),
    cwd: str | os.PathLike[str] = NEUTRAL_DIR,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """`argv` run to its end as `user` (as `start` starts one), its output captured."""
    account = Account.named(user)
    return subprocess.run(
        [*outer, *_drop(account), *argv],
        cwd=cwd, env=environment_for(account, env), input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True, timeout=timeout, check=False,
        start_new_session=True, close_fds=True,
    )  # fmt: skip


def remote_line(user: str | None, argv: Sequence[str], env_file: str | None = None) -> str:
    """The shell line that runs `argv` on an SSH host: as `user` (there) with the same
    allowlist — the host's own environment cleared (`env -i`), that user's HOME, USER and
    LOGNAME, a plain PATH, then `env_file`'s variables (a 0600 file root reads before the
    drop) — or, with no user, as the login there with `env_file` added."""
    command = shlex.join(argv)
    source = f"set -a; . {shlex.quote(env_file)}; set +a; " if env_file else ""
    if user is None:
        return f"( {source}exec {command} )" if source else command
    q = shlex.quote(user)
    inner = f'{source}exec {SETPRIV} --reuid={q} --regid="$(id -g {q})" --clear-groups -- {command}'
    home = f'"$(getent passwd {q} | cut -d: -f6)"'
    return (
        f"env -i PATH={PLAIN_PATH} HOME={home} USER={q} LOGNAME={q} LANG=C.UTF-8 "
        f"sh -c {shlex.quote(inner)}"
    )


# --- who the stacks run as ----------------------------------------------------------------


def stack_user(preferred: str | None = None) -> str | None:
    """The user a stack runs as here: None when benchlab is not root (its own user, then)
    or when that is root; BENCHLAB_STACK_USER if set, else `preferred` (a tuned app: the
    owner of its files, "root" for root's), else benchlab's own account (made on first
    need)."""
    if os.geteuid() != 0:
        return None
    chosen = os.environ.get(STACK_USER_VARIABLE) or preferred
    if chosen == "root":
        return None
    if chosen is None:
        ensure_stack_account()
        return STACK_ACCOUNT
    try:
        pwd.getpwnam(chosen)
    except KeyError:
        raise UserError(
            f"{STACK_USER_VARIABLE}={chosen!r}: no such user here; name the unprivileged user "
            f"the stacks run as when benchlab is root (default {STACK_ACCOUNT}), or root to "
            "keep them root"
        ) from None
    return chosen


def running_as(preferred: str | None = None) -> str:
    """The name of the user stacks run as here (what a run's record says)."""
    return stack_user(preferred) or pwd.getpwuid(os.geteuid()).pw_name


def ensure_stack_account() -> None:
    """The stacks' own system account, made when missing: no home, no shell, a group of its
    own. Only root can make it, and only root needs it. One that exists is used only when it
    is such an account (`system_account_problem`): a name alone proves nothing."""
    try:
        entry = pwd.getpwnam(STACK_ACCOUNT)
    except KeyError:
        entry = None
    if entry is not None:
        problem = system_account_problem(entry)
        if problem is not None:
            raise UserError(
                f"the user {STACK_ACCOUNT}, whom benchlab runs its stacks as when it is root, "
                f"is not a system account of its own ({problem}): remove it (userdel "
                f"{STACK_ACCOUNT}) for benchlab to make it again, or set "
                f"{STACK_USER_VARIABLE}=NAME"
            )
        return
    useradd = shutil.which("useradd") or shutil.which("useradd", path="/usr/sbin:/sbin")
    if os.geteuid() != 0 or useradd is None:
        raise UserError(
            f"benchlab is root and runs its stacks as the system user {STACK_ACCOUNT}, which "
            f"does not exist and cannot be made here (no useradd): make it (useradd --system "
            f"--no-create-home --shell {NO_SHELL} --user-group {STACK_ACCOUNT}), or set "
            f"{STACK_USER_VARIABLE}=NAME"
        )
    made = subprocess.run(
        [useradd, "--system", "--no-create-home", "--home-dir", NO_HOME, "--shell", NO_SHELL,
         "--user-group", "--comment", "benchlab's stacks", STACK_ACCOUNT],
        capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
        cwd=NEUTRAL_DIR,
    )  # fmt: skip
    if made.returncode != 0 and "already exists" not in made.stderr:
        last = (made.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"could not make the system user {STACK_ACCOUNT} for the stacks: {last}")


# Shells that start no session: an account with one of these cannot log in.
NO_LOGIN_SHELLS = ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false", "/usr/bin/false")


def system_account_problem(entry: pwd.struct_passwd) -> str | None:
    """Why an existing account is not the stacks' system account (None: it is one): its uid
    in the system range and not root's, no login shell, no password to log in with."""
    low, high = system_uids()
    if entry.pw_uid == 0:
        return "its uid is 0, root's"
    if not low <= entry.pw_uid <= high:
        return f"its uid {entry.pw_uid} is outside the system range {low}-{high}"
    if entry.pw_shell not in NO_LOGIN_SHELLS:
        return f"its shell is {entry.pw_shell}, a login shell"
    password = _shadow_password(entry.pw_name)
    if password is None or password == "" or not password.startswith(("!", "*")):
        return "it has a password (or an empty one) to log in with"
    return None


def system_uids(defs: str = "/etc/login.defs") -> tuple[int, int]:
    """The range of system accounts' uids (login.defs' SYS_UID_MIN, SYS_UID_MAX; useradd's
    defaults, 101 and UID_MIN - 1, where it does not say)."""
    found: dict[str, int] = {}
    try:
        lines = Path(defs).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            found[parts[0]] = int(parts[1])
    return found.get("SYS_UID_MIN", 101), found.get("SYS_UID_MAX", found.get("UID_MIN", 1000) - 1)


def _shadow_password(name: str) -> str | None:
    """The account's password field in /etc/shadow (root reads it), None when it has none
    there or it cannot be read."""
    try:
        lines = Path("/etc/shadow").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split(":")
        if fields[0] == name and len(fields) > 1:
            return fields[1]
    return None
