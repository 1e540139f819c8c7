"""Another machine over SSH, through the system's `ssh` client: the user's own keys, agent,
~/.ssh/config and known hosts, exactly as `ssh user@addr` in a terminal uses them (benchlab
stores no secret; BENCHLAB_SSH_CONFIG names another client config file, as `ssh -F` does).
One master connection per host (ControlMaster) carries every command, so a command costs a
few milliseconds rather than a handshake.

A process started there runs in the session sshd gives every command (sshd calls setsid),
so its shell's pid is its process group: recorded in the run's directory on that host
(`pids/`), which is how it is stopped, sampled and, after a killed run, found again. Its
output comes back through the connection into the controller's log file.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchlab.core import environment
from benchlab.hosts.base import COMMAND_TIMEOUT_S, Host, HostError
from benchlab.recipe.host_spec import HostSpec, SpecError, check_service_address
from benchlab.system.cpu_account import GROUP_PREFIX, PROCESS_TREE, CpuGroup, Limits
from benchlab.system.process import ManagedProcess, pin
from benchlab.system.safe_files import new_file, tmp_base
from benchlab.system.trusted_path import NEUTRAL_DIR
from benchlab.system.users import (
    NO_HOME,
    NO_SHELL,
    STACK_ACCOUNT,
    STACK_USER_VARIABLE,
    remote_line,
)

CONNECT_TIMEOUT_S = 5
STREAM_TIMEOUT_S = 300
SOURCE_DIR = Path(__file__).resolve().parent.parent.parent  # where `import benchlab` finds it


# What a host says of itself, by benchlab's own code there — imported only from a tree
# nobody else can have written: every directory from / down and every file of the package
# owned by root or this user and writable by no one else (a sticky directory such as /tmp
# may be: nobody else can replace what root or this user has in it).
DESCRIBE = """
import json, os, stat, sys
root = sys.argv[1]
me = os.geteuid()
def ours(path, sticky_will_do):
    info = os.lstat(path)
    open_to_others = info.st_mode & 0o022 and not stat.S_ISLNK(info.st_mode)
    sticky = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX
    return info.st_uid in (0, me) and (not open_to_others or (sticky_will_do and sticky))
package = os.path.join(root, "benchlab")
parts = package.split(os.sep)
above = [os.sep.join(parts[:i]) or os.sep for i in range(1, len(parts))]
tree = [os.path.join(d, f) for d, _, fs in os.walk(package) for f in fs + ["."]]
if not (all(ours(p, True) for p in above) and all(ours(p, False) for p in tree)):
    sys.exit(3)
sys.path.insert(0, root)
from benchlab.hosts.machine import describe
print(json.dumps(describe()))
"""


# Before root runs the host's interpreter there: it, its prefix, its site directories and
# their .pth files (which Python runs at start, before any check of its own), and benchlab's
# package, each held — with every directory above — by root or the login user, writable by
# no one else (a sticky directory excepted). Exit 3 when not: the interpreter is not run.
HELD = r"""
me=$(id -u)
held() {
  p=$(readlink -f -- "$1") || return 1
  while :; do
    o=$(stat -c %u -- "$p") && m=$(stat -c %a -- "$p") || return 1
    [ "$o" = 0 ] || [ "$o" = "$me" ] || return 1
    if [ $((0$m & 022)) -ne 0 ] && [ $((0$m & 01000)) -eq 0 ]; then return 1; fi
    [ "$p" = / ] && return 0
    p=$(dirname -- "$p")
  done
}
for f in "$@"; do held "$f" || exit 3; done
for d in "$@"; do
  [ -d "$d" ] || continue
  for f in "$d"/*.pth; do [ -e "$f" ] || continue; held "$f" || exit 3; done
done
exit 0
"""


def interpreter_paths() -> list[str]:
    """What the interpreter runs at its start and what benchlab's describe imports."""
    import sysconfig

    paths = sysconfig.get_paths()
    found = [sys.executable, sys.prefix, paths["purelib"], paths["platlib"]]
    return [*dict.fromkeys(found), str(SOURCE_DIR / "benchlab")]


def ssh_options(control_path: Path | None) -> list[str]:
    options = [
        "-o", "BatchMode=yes",  # keys or agent only: never a password prompt
        "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}",
        "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3",
        "-o", "LogLevel=ERROR",
        # Nothing of the controller's reaches the host: no agent, no forwarded port.
        "-o", "ForwardAgent=no", "-o", "ClearAllForwardings=yes",
    ]  # fmt: skip
    config = os.environ.get(environment.SSH_CONFIG)
    if config:
        options = ["-F", config, *options]
    if control_path is not None:
        # ControlPersist bounds how long a master outlives a benchlab killed with SIGKILL.
        options += ["-o", f"ControlPath={control_path}", "-o", "ControlMaster=auto",
                    "-o", "ControlPersist=60"]  # fmt: skip
    return options


def ssh_destination(spec: HostSpec) -> list[str]:
    """The port, then `--`, then the destination: nothing after the options is an option."""
    port = ["-p", str(spec.port)] if spec.port else []
    return [*port, "--", f"{spec.user}@{spec.addr}" if spec.user else spec.addr]


# A run's process on a host is known by its group's leader, as its pid file names it: the
# pid and its start time (clock ticks since boot, /proc/PID/stat's 22nd field). A group is
# signalled only while it is still that one — its leader there with that start time, or
# gone with members left (a group's id is not reused while it has any) — never a reused or a
# planted pid (1 would be every process).
def _start_time(pid: str) -> str:
    return f"sed 's/.*) //' /proc/{pid}/stat 2>/dev/null | cut -d' ' -f20"


RECORD_LEADER = f'echo "$$ $({_start_time("$$")})"'
OURS = (
    '{ [ "$pg" -gt 1 ] 2>/dev/null && { [ "$(' + _start_time("$pg") + ')" = "$st" ] || '
    '{ [ ! -e /proc/$pg ] && [ -n "$(ps -o pid= -g "$pg" 2>/dev/null)" ]; }; }; }'
)


def cleanup_script(rundir: str, group_tag: str) -> str:
    """Stop every process the run started on a host (by the process groups in its `pids/`),
    empty and remove its control groups, and remove its directory. Used at the end of a run
    and by the next benchlab after a killed one."""
    d = shlex.quote(rundir)
    groups = " ".join(
        f"{root}/{group_tag}-*"
        for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/cpuacct")
    )
    return f"""
ours=""
for f in {d}/pids/*.pid; do
  [ -s "$f" ] && read pg st < "$f" && {OURS} && ours="$ours $pg"
done 2>/dev/null
groups() {{ echo "$ours"; }}
for pg in $(groups); do kill -s TERM -- "-$pg" 2>/dev/null; done
i=0
while [ $i -lt 50 ]; do
  alive=0
  for pg in $(groups); do kill -s 0 -- "-$pg" 2>/dev/null && alive=1; done
  [ $alive = 0 ] && break
  sleep 0.1; i=$((i+1))
done
for pg in $(groups); do kill -s KILL -- "-$pg" 2>/dev/null; done
for g in {groups}; do
  [ -d "$g" ] || continue
  if [ -f "$g/cgroup.kill" ]; then echo 1 > "$g/cgroup.kill"
  else for p in $(cat "$g/cgroup.procs" "$g/tasks" 2>/dev/null); do kill -9 "$p"; done; fi
  i=0; while ! rmdir "$g" 2>/dev/null && [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done
done
rm -rf {d}
"""


def run_over_ssh(
    spec: HostSpec, control_path: Path | None, command: str, *, input: bytes | None = None,
    timeout: float = COMMAND_TIMEOUT_S,
) -> subprocess.CompletedProcess[bytes]:  # fmt: skip
    return subprocess.run(
        ["ssh", *ssh_options(control_path), *ssh_destination(spec), command],
        input=input, capture_output=True, timeout=timeout, check=False,
        stdin=None if input is not None else subprocess.DEVNULL, cwd=NEUTRAL_DIR,
    )  # fmt: skip


class SshHost(Host):
    def __init__(self, name: str, spec: HostSpec, address: str | None = None) -> None:
        super().__init__(name, spec, address or spec.addr)
        self._control_dir: Path | None = None
        self.control_path: Path | None = None
        self.rundir: str | None = None  # this run's directory there (the controller's path)
        self._user: str | None = None

    # --- connection -------------------------------------------------------------------------

    def open(self) -> None:
        """Connect once (the master connection); HostError says why it cannot."""
        if self.control_path is None:
            self._control_dir = Path(tempfile.mkdtemp(prefix="bl-ssh-", dir=tmp_base()))
            self.control_path = self._control_dir / "c"
        try:
            done = self._ssh("true", timeout=CONNECT_TIMEOUT_S + 10)
        except subprocess.TimeoutExpired:
            raise HostError(f"{self.where}: no answer within {CONNECT_TIMEOUT_S + 10} s") from None
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip().splitlines()
            raise HostError(f"{self.where}: cannot connect ({said[-1] if said else 'no reason'})")

    def close(self) -> None:
        if self.control_path is not None and self.control_path.exists():
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                subprocess.run(
                    ["ssh", *ssh_options(self.control_path), "-O", "exit",
                     *ssh_destination(self.spec)],
                    capture_output=True, timeout=10, check=False, cwd=NEUTRAL_DIR,
                )  # fmt: skip
        if self._control_dir is not None:
            # The master removes its socket as it exits, maybe between a listing and an
            # unlink here: one missing entry must not leave the directory (rmtree skips it).
            shutil.rmtree(self._control_dir, ignore_errors=True)
        self.control_path = None
        self._control_dir = None

    def _ssh(
        self, command: str, *, input: bytes | None = None, timeout: float = COMMAND_TIMEOUT_S
    ) -> subprocess.CompletedProcess[bytes]:
        return run_over_ssh(self.spec, self.control_path, command, input=input, timeout=timeout)

    def process_argv(self, command: str) -> list[str]:
        """A long-lived process gets a connection of its own: sshd limits the sessions one
        connection carries (MaxSessions, 10 by default), and the run's processes would fill
        the shared one."""
        return [
            "ssh", *ssh_options(None), "-o", "ControlPath=none", *ssh_destination(self.spec),
            command,
        ]  # fmt: skip

    # --- the run's directory ----------------------------------------------------------------

    def make_rundir(self, path: Path) -> None:
        """The run's directory at the controller's path. One that exists already is someone
        else's, unless it holds the controller's own token: then the host shares the
        controller's files (another namespace of this machine, say) and it is the same one."""
        token = uuid.uuid4().hex
        new_file(path / ".owner", token, 0o600)  # nobody else may read it, and so forge it
        q = shlex.quote(str(path))
        script = (
            f'if [ -e {q} ]; then [ "$(cat {q}/.owner 2>/dev/null)" = {token} ] || exit 3; '
            f"else mkdir {q}; fi && chmod 711 {q} && mkdir -p -m 700 {q}/pids"
        )
        done = self._ssh(script)
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip() or "it exists already"
            raise HostError(f"{self.where}: cannot make the run's directory {path}: {said}")
        self.rundir = str(path)

    def clean_rundir(self) -> None:
        """Stop what the run left there and remove its directory and control groups."""
        if self.rundir is None:
            return
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self._ssh(cleanup_script(self.rundir, group_tag()), timeout=30)
        self.rundir = None

    # --- processes ----------------------------------------------------------------------------

    def start(self, argv: Sequence[str], **kwargs: Any) -> ManagedProcess:
        if self.rundir is None:
            raise HostError(f"{self.where}: no run directory to start processes from")
        return RemoteProcess(self, argv, **kwargs)

    def create_cpu_group(self, limits: Limits | None = None) -> CpuGroup | None:
        if limits is not None:  # only tune sets limits, and it tunes on this machine
            raise HostError(f"{self.where}: CPU and memory limits are set on this machine only")
        name = f"{group_tag()}-{uuid.uuid4().hex[:8]}"
        script = f"""
for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
  if [ -f $d/cgroup.procs ] && [ -f $d/cgroup.controllers ] && mkdir $d/{name} 2>/dev/null; then
    grep -q usage_usec $d/{name}/cpu.stat && {{ echo "2 $d/{name}"; exit 0; }}
    rmdir $d/{name}
  fi
done
d=/sys/fs/cgroup/cpuacct
[ -f $d/cpuacct.usage ] && mkdir $d/{name} 2>/dev/null && {{ echo "1 $d/{name}"; exit 0; }}
exit 1
"""
        done = self._ssh(script)
        if done.returncode != 0:
            return None
        version, path = done.stdout.decode().split()
        return RemoteCpuGroup(self, Path(path), int(version))

    def run(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float = COMMAND_TIMEOUT_S,
        user: str | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        return self._ssh(remote_line(user, argv), input=input, timeout=timeout)

    # --- files --------------------------------------------------------------------------------

    def make_dir(self, path: Path, mode: int = 0o700, owner: str | None = None) -> None:
        # mkdir without -p fails on anything already there; chown -h never follows a link.
        q = shlex.quote(str(path))
        chown = f" && chown -h {shlex.quote(owner)}: {q}" if owner else ""
        self.check(["sh", "-c", f"mkdir -m {mode:o} -- {q}{chown}"])

    def write_file(
        self,
        path: Path,
        data: str | bytes,
        mode: int = 0o600,
        owner: str | None = None,
        group: str | None = None,
    ) -> None:
        # The mode from the file's creation (umask); noclobber (set -C) refuses an existing
        # file or link, dangling or not; chown -h never follows one.
        q = shlex.quote(str(path))
        who = f"{owner or ''}:{group or ''}" if owner or group else ""
        chown = f" && chown -h {shlex.quote(who)} {q}" if who else ""
        umask = 0o777 & ~mode
        self.check(
            ["sh", "-c", f"umask {umask:03o} && set -C && cat > {q}{chown}"],
            input=data.encode() if isinstance(data, str) else data,
        )

    def read_file(self, path: Path) -> bytes:
        return self.check(["cat", str(path)])

    def remove_dir(self, path: Path) -> None:
        self.run(["rm", "-rf", str(path)])

    def push(self, directory: Path) -> None:
        """The directory's files streamed there (tar | ssh tar)."""
        q = shlex.quote(str(directory))
        remote = f"mkdir -p {q} && tar -C {q} -xf - --no-same-owner"
        self._stream(["tar", "-C", str(directory), "-cf", "-", "."], self._ssh_argv(remote),
                     f"copying {directory} there")  # fmt: skip

    def pull(self, directory: Path) -> None:
        """The directory's files streamed back (ssh tar | tar): however large a load tool's
        record of every request, it never sits in memory. Extracted as this user's files,
        whatever owner the archive names."""
        directory.mkdir(parents=True, exist_ok=True)
        remote = shlex.join(["tar", "-C", str(directory), "-cf", "-", "."])
        self._stream(self._ssh_argv(remote),
                     ["tar", "-C", str(directory), "-xf", "-", "--no-same-owner"],
                     f"copying {directory} back")  # fmt: skip

    def _ssh_argv(self, command: str) -> list[str]:
        return ["ssh", *ssh_options(self.control_path), *ssh_destination(self.spec), command]

    def _stream(self, sender_argv: list[str], receiver_argv: list[str], what: str) -> None:
        """`sender | receiver`, bounded in time; either failing is a HostError."""
        with tempfile.TemporaryFile() as sender_errors:
            sender = subprocess.Popen(
                sender_argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=sender_errors, cwd=NEUTRAL_DIR,
            )  # fmt: skip
            assert sender.stdout is not None
            try:
                received = subprocess.run(
                    receiver_argv, stdin=sender.stdout, capture_output=True,
                    timeout=STREAM_TIMEOUT_S, check=False, cwd=NEUTRAL_DIR,
                )  # fmt: skip
                sender.stdout.close()
                sent = sender.wait(timeout=STREAM_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                sender.kill()
                sender.wait()
                raise HostError(f"{self.where}: {what} took over 5 minutes") from None
            if sent != 0 or received.returncode != 0:
                sender_errors.seek(0)
                said = sender_errors.read() + received.stderr
                raise HostError(
                    f"{self.where}: {what} failed: {said.decode(errors='replace').strip()[-300:]}"
                )

    def free_port(self) -> int:
        """A port nothing listens on there (ss), drawn from the ephemeral range."""
        done = self.run(["sh", "-c", "ss -Htln | awk '{print $4}' | sed 's/.*://'"])
        taken = {int(p) for p in done.stdout.decode().split() if p.isdigit()}
        return next(p for p in iter(lambda: secrets.choice(range(32768, 61000)), 0)
                    if p not in taken)  # fmt: skip

    def which(self, program: str) -> str | None:
        q = shlex.quote(program)
        done = self.run(["sh", "-c", f"PATH=$PATH:/usr/sbin:/sbin command -v {q}"])
        found = done.stdout.decode().strip()
        return found or None

    def glob(self, pattern: str) -> list[str]:
        done = self.run(["sh", "-c", f'for f in {pattern}; do [ -e "$f" ] && echo "$f"; done'])
        return sorted(done.stdout.decode().split())

    # --- the machine --------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """What benchlab says of a machine, said by the same code there (the controller's
        interpreter and source, at the same paths); a shorter one when they are not there."""
        # Only an interpreter nobody else can have changed is run, as root; -I: nothing of
        # the environment's (PYTHONPATH, the user's site) is imported.
        held = self.run(["sh", "-c", HELD, "held", *interpreter_paths()], timeout=60)
        done = (
            self.run([sys.executable, "-I", "-c", DESCRIBE, str(SOURCE_DIR)], timeout=60)
            if held.returncode == 0
            else held
        )
        if done.returncode == 0:
            with contextlib.suppress(ValueError):
                return {**json.loads(done.stdout), "address": self.address}
        return {**self._short_description(), "address": self.address, "benchlab": None}

    def _short_description(self) -> dict[str, Any]:
        script = "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2; nproc --all; nproc; uname -r"
        lines = self.run(["sh", "-c", script]).stdout.decode().splitlines()
        lines += [""] * (4 - len(lines))
        cores = int(lines[1]) if lines[1].strip().isdigit() else None
        allowed = int(lines[2]) if lines[2].strip().isdigit() else 0
        return {
            "cpu": lines[0].strip() or "unknown",
            "cores": cores,
            "allowed_cores": list(range(allowed)),
            "kernel": lines[3].strip(),
        }

    def user_name(self) -> str:
        if self._user is None:
            self._user = self.check(["id", "-un"]).decode().strip()
        return self._user

    def stack_user(self, preferred: str | None = None) -> str | None:
        """As on this machine: when benchlab logs in there as root, stacks run as its own
        account there, made when missing (or BENCHLAB_STACK_USER, if that user exists)."""
        if self.user_name() != "root":
            return None
        name = os.environ.get(STACK_USER_VARIABLE) or preferred or STACK_ACCOUNT
        if name == "root":
            return None
        if self.run(["id", "-u", name]).returncode != 0:
            made = name == STACK_ACCOUNT and self.run(
                ["useradd", "--system", "--no-create-home", "--home-dir", NO_HOME,
                 "--shell", NO_SHELL, "--user-group", STACK_ACCOUNT]
            ).returncode == 0  # fmt: skip
            if not made:
                raise HostError(f"{self.where}: no user '{name}' there to run the stacks as")
        return name

    def controller_address(self) -> str | None:
        """The controller's address as this host sees it (what its databases must admit)."""
        done = self._ssh('echo "$SSH_CLIENT"')
        words = done.stdout.decode().split()
        if not words:
            return None
        try:  # it goes into the databases' lists of clients: an address, nothing else
            return check_service_address(words[0])
        except SpecError:
            return None


def group_tag() -> str:
    """The prefix of every control group this benchlab makes, on any host."""
    return f"{GROUP_PREFIX}{os.getpid()}"


class RemoteCpuGroup(CpuGroup):
    """A control group on an SSH host: its counter read over the connection."""

    def __init__(self, host: SshHost, path: Path, version: int) -> None:
        super().__init__(path, version)
        self.host = host

    def _read(self, name: str) -> str:
        return self.host.read_file(self.path / name).decode()

    def remove(self) -> None:
        q = shlex.quote(str(self.path))
        self.host.run(
            ["sh", "-c", f"i=0; while ! rmdir {q} 2>/dev/null && [ -d {q} ] && [ $i -lt 20 ];"
             " do sleep 0.1; i=$((i+1)); done"]
        )  # fmt: skip


_TIMES = re.compile(r"(\d+)m([\d.]+)s")


class RemoteProcess(ManagedProcess):
    """A process on an SSH host, seen through the local `ssh` client that started it: alive
    while it is, its exit code when it ends, its output in the local log."""

    def __init__(self, host: SshHost, argv: Sequence[str], **kwargs: Any) -> None:
        self.host = host
        token = uuid.uuid4().hex[:12]
        assert host.rundir is not None
        self.pidfile = f"{host.rundir}/pids/{token}.pid"
        self._token_base = f"{host.rundir}/pids/{token}"
        super().__init__(argv, **kwargs)

    def _spawn(
        self,
        cores: Sequence[int],
        cwd: Path,
        env: dict[str, str] | None,
        user: str | None,
        prefix: Sequence[str],
    ) -> subprocess.Popen:
        q = shlex.quote
        lines = [f"{RECORD_LEADER} > {q(self.pidfile)} || exit 97"]
        if self.cpu_group is not None:
            procs = "cgroup.procs" if self.cpu_group.version == 2 else "tasks"
            lines.append(f"echo $$ > {q(str(self.cpu_group.path / procs))} || exit 97")
        lines.append(f"cd {q(str(cwd))} || exit 97")
        env_file = None
        if env:
            # In a 0600 file, not on the command line, where any user there could read it.
            env_file = f"{self._token_base}.env"
            self.host.write_file(Path(env_file), "".join(f"{k}={q(v)}\n" for k, v in env.items()))
        lines += [
            f"{remote_line(user, [*pin(cores), *self.argv], env_file)} < /dev/null 2>&1",
            "rc=$?",
            f"times > {q(self._token_base)}.cpu",  # the command's CPU time, as wait4 gives it
            "exit $rc",
        ]
        return subprocess.Popen(
            self.host.process_argv(shlex.join(["sh", "-c", "\n".join(lines)])),
            cwd=NEUTRAL_DIR,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def tree(self) -> list:
        return []  # its processes are on another machine: see memory_sample

    def _remote(self, script: str, timeout: float = 15) -> str:
        done = self.host.run(["sh", "-c", script], timeout=timeout)
        return done.stdout.decode(errors="replace")

    def _group_leader(self) -> str:
        return f"read pg st < {shlex.quote(self.pidfile)} 2>/dev/null && {OURS} || exit 0"

    def memory_sample(self) -> tuple[int, set[tuple[int, float]]]:
        out = self._remote(f'{self._group_leader()}; ps -o pid=,rss= --sid "$pg"')
        rss, seen = 0, set()
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
                seen.add((int(parts[0]), 0.0))
                rss += int(parts[1]) * 1024
        return rss, seen

    def cpu_seconds(self) -> tuple[float, str]:
        if self.cpu_group is not None:
            return self.cpu_group.seconds(), self.cpu_group.source
        # utime, stime, cutime, cstime of each process (fields 14-17 of /proc/PID/stat,
        # counted after the command's name), in clock ticks; the tick rate last.
        out = self._remote(
            f'{self._group_leader()}; for p in $(ps -o pid= --sid "$pg"); do '
            "sed 's/.*) //' /proc/$p/stat 2>/dev/null | cut -d' ' -f12-15; done; getconf CLK_TCK"
        )
        values = [int(v) for v in out.split() if v.isdigit()]
        if not values:
            return 0.0, PROCESS_TREE
        return sum(values[:-1]) / max(values[-1], 1), PROCESS_TREE

    def listens_on(self, port: int) -> bool:
        """Whether a socket listening on `port` there is one of this tree's descriptors, by
        inode (as process.local_listener_pids: `ss -p` would print each process's own name,
        and a process named `pid=N` would pass for N)."""
        out = self._remote(
            f'{self._group_leader()}; for p in $(ps -o pid= --sid "$pg"); do '
            'for f in /proc/$p/fd/*; do readlink "$f"; done; done 2>/dev/null; echo --; '
            f'ss -Hltne "sport = :{port}"'
        )
        ours, _, listening = out.partition("\n--\n")
        held = {m[1] for m in (re.fullmatch(r"socket:\[(\d+)\]", line) for line in
                               ours.splitlines()) if m}  # fmt: skip
        return bool(held & set(re.findall(r"\bino:(\d+)", listening)))

    def tool_cpu_seconds(self) -> float | None:
        try:
            text = self.host.read_file(Path(f"{self._token_base}.cpu")).decode()
        except HostError:
            return None
        lines = text.strip().splitlines()
        if len(lines) < 2:
            return None
        return sum(int(m) * 60 + float(s) for m, s in _TIMES.findall(lines[1]))

    def survives(self) -> bool:
        # The ssh client ends when the command's shell there ends, which waits for the
        # command; what outlives it is killed with the group in stop().
        return self.popen.poll() is None

    def remember_tree(self) -> None:
        pass

    def signal_all(self, sig: signal.Signals) -> None:
        self._remote(f'{self._group_leader()}; kill -s {sig.name[3:]} -- "-$pg" 2>/dev/null')

    def stop(self, grace: float = 5.0) -> None:
        tenths = max(int(grace * 10), 0)
        kill_group = ""
        if self.cpu_group is not None:
            g = shlex.quote(str(self.cpu_group.path))
            kill_group = (
                f"[ -f {g}/cgroup.kill ] && echo 1 > {g}/cgroup.kill || "
                f"for p in $(cat {g}/cgroup.procs {g}/tasks 2>/dev/null); do kill -9 $p; done"
            )
        script = f"""
f={shlex.quote(self.pidfile)}; i=0
while [ ! -s "$f" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
[ -s "$f" ] || exit 0
read pg st < "$f"; {OURS} || exit 0
kill -s {self.stop_signal.name[3:]} -- "-$pg" 2>/dev/null
i=0; while kill -s 0 -- "-$pg" 2>/dev/null && [ $i -lt {tenths} ]; do sleep 0.1; i=$((i+1)); done
kill -s KILL -- "-$pg" 2>/dev/null
{kill_group}
exit 0
"""
        with contextlib.suppress(HostError, OSError, subprocess.TimeoutExpired):
            self._remote(script, timeout=grace + 20)
        deadline = time.monotonic() + 3
        while self.popen.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(5)
        with contextlib.suppress(OSError):
            self._log.close()
        if self.cpu_group is not None:
            with contextlib.suppress(HostError, OSError, subprocess.TimeoutExpired):
                self.cpu_group.remove()

    def wait(self, timeout: float) -> int | None:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
