"""Processes benchlab starts: pinned to cores, in their own session, always stopped."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import psutil

from benchlab.core.errors import RunInterrupted
from benchlab.system import users
from benchlab.system.cpu_account import PROCESS_TREE, CpuGroup, tree_cpu_seconds
from benchlab.system.journal import Journal
from benchlab.system.safe_files import open_log
from benchlab.system.trusted_path import NEUTRAL_DIR

ListenerPids = Callable[[int], "set[int] | None"]


def local_listener_pids(port: int, prefix: Sequence[str] = ()) -> set[int] | None:
    """Processes with a socket listening on `port` in this machine's network namespace, or
    in the one `prefix` (`ip netns exec NAME`) enters.

    From `ss`, which asks the kernel for listening sockets only: psutil reads every socket,
    and a machine that has just served a load without keep-alive holds tens of thousands in
    TIME_WAIT (0.2-0.4 s a look, at every launch). `ss` names the sockets' inodes (-e), never
    their processes (-p prints each process's own name unescaped, and a process named
    `pid=N` would be read as pid N): the processes are those holding one of these inodes
    among their descriptors (`holding`). psutil where there is no `ss` (it sees benchlab's
    own namespace only)."""
    try:
        done = subprocess.run(
            [*prefix, "ss", "-Hltne", f"sport = :{port}"],
            capture_output=True, timeout=10, check=False, stdin=subprocess.DEVNULL,
            cwd=NEUTRAL_DIR,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        done = None
    if done is not None and done.returncode == 0:
        return holding({int(i) for i in re.findall(rb"\bino:(\d+)", done.stdout)})
    if prefix:
        return None
    with contextlib.suppress(psutil.Error):
        return {
            conn.pid
            for conn in psutil.net_connections(kind="tcp")
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port
            and conn.pid is not None
        }  # fmt: skip
    return None


def holding(inodes: set[int]) -> set[int]:
    """The processes with a descriptor on one of these sockets (by inode), from /proc."""
    wanted = {f"socket:[{inode}]" for inode in inodes if inode}
    found: set[int] = set()
    if not wanted:
        return found
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            descriptors = os.listdir(f"/proc/{entry.name}/fd")
        except OSError:
            continue
        for fd in descriptors:
            try:
                if os.readlink(f"/proc/{entry.name}/fd/{fd}") in wanted:
                    found.add(int(entry.name))
                    break
            except OSError:
                continue
    return found


LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port free on this network namespace's loopback now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


OWN_VARIABLES = "BENCHLAB_"


def environment(without_benchlab: bool = False) -> dict[str, str]:
    """What a child inherits: this process's environment, less benchlab's own settings
    (BENCHLAB_STORE_TIMEOUT_S, ...) for a process that is none of benchlab's business."""
    if not without_benchlab:
        return dict(os.environ)
    return {k: v for k, v in os.environ.items() if not k.startswith(OWN_VARIABLES)}


class ManagedProcess:
    """A child process (and everything it forks), pinned with taskset, logging to a file.

    It runs in a session of its own, so a Ctrl-C in the terminal reaches only benchlab,
    which then stops every child in order instead of leaving half-dead servers behind.
    `prefix` enters the host it runs on (`ip netns exec NAME` for a namespace): inside the
    control group's wrapper, whose shell must see the controller's /sys/fs/cgroup.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cores: Sequence[int],
        log_path: Path,
        cwd: Path = NEUTRAL_DIR,
        env: dict[str, str] | None = None,
        user: str | None = None,
        stop_signal: signal.Signals = signal.SIGTERM,
        cpu_group: CpuGroup | None = None,
        prefix: Sequence[str] = (),
        listeners: ListenerPids = local_listener_pids,
        isolated_env: bool = False,
    ) -> None:
        self.argv = list(argv)
        self.isolated_env = isolated_env
        self.stop_signal = stop_signal
        self.log_path = log_path
        self.cpu_group = cpu_group
        self._listeners = listeners
        self._log = open_log(log_path)  # closed in stop(); owner-only, never through a link
        self.popen = self._spawn(cores, cwd, env, user, prefix)
        self.pid = self.popen.pid
        self.rusage: resource.struct_rusage | None = None
        self._known: dict[int, psutil.Process] = {}
        self.remember_tree()

    def _spawn(
        self,
        cores: Sequence[int],
        cwd: Path,
        env: dict[str, str] | None,
        user: str | None,
        prefix: Sequence[str],
    ) -> subprocess.Popen:
        wrap = self.cpu_group.wrap if self.cpu_group else None
        if user is not None:
            return users.start(
                user, [*pin(cores), *self.argv], outer=prefix, wrap=wrap, cwd=cwd, env=env,
                stdout=self._log,
            )  # fmt: skip
        pinned = [*prefix, *pin(cores), *self.argv]
        return subprocess.Popen(
            wrap(pinned) if wrap else pinned,
            cwd=cwd,
            env={**environment(self.isolated_env), **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    # --- state ----------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def tree(self) -> list[psutil.Process]:
        """The root and its living descendants, remembered so that they are stopped even if
        their parent dies first."""
        pids = descendant_pids(self.pid)
        if pids is None:
            try:
                root = psutil.Process(self.pid)
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                return []
        else:
            procs = [proc for proc in map(self._process_object, pids) if proc is not None]
        for proc in procs:
            self._known.setdefault(proc.pid, proc)
        return procs

    def remember_tree(self) -> None:
        self.tree()

    @contextlib.contextmanager
    def exits_counted(self, interval: float = 0.02) -> Iterator[Callable[[], int]]:
        """While inside, its tree sampled every `interval` s in a thread (a worker that dies
        as it starts lives some 50 ms): yields how many of its processes have exited so far."""
        done = threading.Event()
        exited = [0]

        def sample() -> None:
            while not done.wait(interval):
                self.remember_tree()
                known = list(self._known.items())
                exited[0] = sum(1 for pid, proc in known if pid != self.pid and not _running(proc))

        thread = threading.Thread(target=sample, name="tree-exits", daemon=True)
        thread.start()
        try:
            yield lambda: exited[0]
        finally:
            done.set()
            thread.join()

    def cpu_seconds(self) -> tuple[float, str]:
        """CPU time of the whole tree so far, and how it was counted."""
        if self.cpu_group is not None:
            return self.cpu_group.seconds(), self.cpu_group.source
        return tree_cpu_seconds(self.tree()), PROCESS_TREE

    def _process_object(self, pid: int) -> psutil.Process | None:
        """The psutil object already known for `pid` (it checks the pid was not reused)."""
        known = self._known.get(pid)
        if known is not None and known.is_running():
            return known
        try:
            return psutil.Process(pid)
        except psutil.Error:
            return None

    def memory_sample(self) -> tuple[int, set[tuple[int, float]]]:
        """Resident memory of the tree now, in bytes, and its processes (pid, start time)."""
        return resident(self.tree())

    def listens_on(self, port: int) -> bool:
        """Whether the socket listening on `port` (on the host it runs on) is this tree's."""
        listening = self._listeners(port)
        return bool(listening and listening & {proc.pid for proc in self.tree()})

    def oom_kills(self) -> int:
        """Its processes the kernel killed at its memory limit (none without one)."""
        return self.cpu_group.oom_kills() if self.cpu_group is not None else 0

    def tool_cpu_seconds(self) -> float | None:
        """CPU time the process used, once it has exited and been waited for (load tools)."""
        if self.rusage is None:
            return None
        return self.rusage.ru_utime + self.rusage.ru_stime

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])

    # --- ending ---------------------------------------------------------------------------

    def wait(self, timeout: float) -> int | None:
        """Wait for exit and keep the resource usage of the whole child (for load tools)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.popen.returncode is not None:
                return self.popen.returncode
            try:
                pid, status, rusage = os.wait4(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.popen.poll()
            if pid == self.pid:
                self.rusage = rusage
                self.popen.returncode = os.waitstatus_to_exitcode(status)
                return self.popen.returncode
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)

    def stop(self, grace: float = 5.0) -> None:
        """Stop signal to the whole session, then SIGKILL what is left after `grace` seconds."""
        self.remember_tree()
        self.signal_all(self.stop_signal)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and self.survives():
            self.wait(0.05)
        if self.survives():
            self.signal_all(signal.SIGKILL)
            # Until none runs: a killed grandchild left a zombie (its parent killed too, and
            # a PID 1 that does not reap) would hold psutil.wait_procs for its whole timeout.
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline and self.survives():
                time.sleep(0.02)
        self.wait(1.0)
        with contextlib.suppress(OSError):
            self._log.close()
        if self.cpu_group is not None:
            self.cpu_group.remove()

    def survives(self) -> bool:
        """Whether any process of the tree is still running."""
        return bool(self._survivors())

    def signal_all(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)
        for proc in self._survivors():
            with contextlib.suppress(psutil.Error):
                proc.send_signal(sig)

    def _survivors(self) -> list[psutil.Process]:
        return [proc for proc in self._known.values() if _running(proc)]


def resident(processes: Sequence[psutil.Process]) -> tuple[int, set[tuple[int, float]]]:
    """Their resident memory now, in bytes, and which they are (pid, start time)."""
    rss, seen = 0, set()
    for proc in processes:
        try:
            with proc.oneshot():
                seen.add((proc.pid, proc.create_time()))
                rss += proc.memory_info().rss
        except psutil.Error:
            continue
    return rss, seen


def living(pids: Sequence[int]) -> list[psutil.Process]:
    """The processes of these pids that still run."""
    found = []
    for pid in pids:
        try:
            found.append(psutil.Process(pid))
        except psutil.Error:
            continue
    return found


def _running(proc: psutil.Process) -> bool:
    """Running, not a zombie (and not another process that reused its pid)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def pin(cores: Sequence[int]) -> list[str]:
    return ["taskset", "--cpu-list", ",".join(str(c) for c in cores)]


_CHILDREN_FILES = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def descendant_pids(root: int) -> list[int] | None:
    """`root` and its descendants, from the kernel's /proc/PID/task/TID/children lists.

    The monitor walks the server's tree every sample, on the load tool's core: psutil's
    children() reads the status of every process on the machine (2 ms here), these files
    only the tree's own (0.08 ms). None where the kernel lacks them (CONFIG_PROC_CHILDREN).
    """
    if not _CHILDREN_FILES:
        return None
    pids, pending = [], [root]
    while pending:
        pid = pending.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue  # gone
        pids.append(pid)
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children") as handle:
                    pending.extend(int(child) for child in handle.read().split())
            except OSError:
                continue
    return pids


def _raise_interrupt(signum: int, frame: object) -> None:
    raise RunInterrupted(signal.Signals(signum).name)


INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM and SIGHUP (a dropped ssh session) raise RunInterrupted, as Ctrl-C raises
    KeyboardInterrupt: either way every `finally` runs and stops the children (Python's
    default for both is to die at once, leaving them running)."""
    previous = {
        sig: signal.signal(sig, _raise_interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Ctrl-C or SIGTERM while a child starts is handled once it is registered: raised in
    between, it would leave a child that nobody stops."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {
        sig: signal.signal(sig, lambda signum, _frame: caught.append(signum)) for sig in INTERRUPTS
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        for signum in caught:
            os.kill(os.getpid(), signum)  # now, to whatever handler the caller had installed


class Launcher(Protocol):
    """Where a process runs: a host's way to start one (see hosts/)."""

    def start(self, argv: Sequence[str], **kwargs: Any) -> ManagedProcess: ...


class _Here:
    def start(self, argv: Sequence[str], **kwargs: Any) -> ManagedProcess:
        return ManagedProcess(argv, **kwargs)


LOCAL: Launcher = _Here()


class ProcessRegistry:
    """Every process of a run, so that one call stops them all on any exit path; with a
    journal, each is also recorded on disk as it starts (see journal.py)."""

    def __init__(self, journal: Journal | None = None) -> None:
        self._processes: list[ManagedProcess] = []
        self.journal = journal

    def start(
        self, argv: Sequence[str], *, host: Launcher | None = None, **kwargs: Any
    ) -> ManagedProcess:
        """Start `argv` on `host` (default: here, in benchlab's own namespace)."""
        with signals_deferred():
            process = (host or LOCAL).start(argv, **kwargs)
            self._processes.append(process)
            if self.journal is not None:
                group = process.cpu_group
                self.journal.add_process(
                    process.pid, int(process.stop_signal), str(group.path) if group else None
                )
        return process

    def stop(self, process: ManagedProcess, grace: float = 5.0) -> None:
        process.stop(grace)
        if process in self._processes:
            self._processes.remove(process)

    def stop_all(self) -> None:
        """Stop every process, all at once: one grace period for all, then SIGKILL (a
        stopped or stuck one must not make the others wait their turn)."""
        processes = list(reversed(self._processes))
        for process in processes:
            process.remember_tree()
            process.signal_all(process.stop_signal)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and any(p.survives() for p in processes):
            time.sleep(0.05)
        for process in processes:
            process.stop(grace=0.0)
        self._processes.clear()
