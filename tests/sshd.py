"""A real sshd for tests, in a network namespace of the test's own, reached with a key the
test generates: the SSH host path without a mock and without touching ~/.ssh.

The namespace is joined to benchlab's by one veth pair (198.19.255.1 here, 198.19.255.2
there: a /30 of the benchmarking range 198.18.0.0/15, away from the addresses benchlab's own
namespaces take). Everything is removed on exit, whatever happened.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

NAMESPACE = "blt-ssh"
OUTER, INNER = "bltssh0", "eth0"
HERE_ADDRESS, THERE_ADDRESS = "198.19.255.1", "198.19.255.2"
SSHD = "/usr/sbin/sshd"


@dataclass(frozen=True)
class SshServer:
    address: str
    config: Path  # the client config (BENCHLAB_SSH_CONFIG) that reaches it as root
    namespace: str
    pid: int

    @property
    def target(self) -> str:
        return f"ssh://root@{self.address}"


def available() -> str | None:
    """Why a test cannot start sshd here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, sshd)"
    for program in (SSHD, "ssh", "ssh-keygen", "ip"):
        if shutil.which(program) is None and not Path(program).exists():
            return f"'{program}' is not installed (apt-get install openssh-server)"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


@contextlib.contextmanager
def sshd_in_namespace() -> Iterator[SshServer]:
    directory = Path(tempfile.mkdtemp(prefix="blt-sshd-", dir="/tmp"))
    made_run_dir = not Path("/run/sshd").exists()
    process = None
    try:
        # One left by a test that was killed (its finally never ran) is this test's own.
        subprocess.run(["ip", "netns", "delete", NAMESPACE], capture_output=True, check=False)
        _ip("netns", "add", NAMESPACE)
        _ip("link", "add", OUTER, "type", "veth", "peer", "name", INNER, "netns", NAMESPACE)
        _ip("addr", "add", f"{HERE_ADDRESS}/30", "dev", OUTER)
        _ip("link", "set", OUTER, "up")
        _ip("-n", NAMESPACE, "addr", "add", f"{THERE_ADDRESS}/30", "dev", INNER)
        _ip("-n", NAMESPACE, "link", "set", INNER, "up")
        _ip("-n", NAMESPACE, "link", "set", "lo", "up")
        for name in ("host_key", "user_key"):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(directory / name)],
                check=True, timeout=30,
            )  # fmt: skip
        (directory / "authorized_keys").write_text((directory / "user_key.pub").read_text())
        host_key = (directory / "host_key.pub").read_text().split()
        (directory / "known_hosts").write_text(f"{THERE_ADDRESS} {host_key[0]} {host_key[1]}\n")
        (directory / "sshd_config").write_text(
            f"ListenAddress {THERE_ADDRESS}\nPort 22\nHostKey {directory / 'host_key'}\n"
            f"PidFile {directory / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {directory / 'authorized_keys'}\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nMaxSessions 50\n"
            "MaxStartups 50\n"
        )
        config = directory / "ssh_config"
        config.write_text(
            f"Host {THERE_ADDRESS}\n  User root\n  IdentityFile {directory / 'user_key'}\n"
            f"  IdentitiesOnly yes\n  UserKnownHostsFile {directory / 'known_hosts'}\n"
            "  StrictHostKeyChecking yes\n"
        )
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation
        # nsenter --net, not ip netns exec: sshd keeps this machine's /sys (its control
        # groups), as sshd on another machine has its own.
        process = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{NAMESPACE}", SSHD, "-D", "-e", "-f",
             str(directory / "sshd_config")],
            stdout=subprocess.DEVNULL, stderr=(directory / "sshd.log").open("w"),
            start_new_session=True,
        )  # fmt: skip
        _wait_listening(process, directory)
        yield SshServer(THERE_ADDRESS, config, NAMESPACE, process.pid)
    finally:
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(5)
        for pid in subprocess.run(
            ["ip", "netns", "pids", NAMESPACE], capture_output=True, text=True, check=False
        ).stdout.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        subprocess.run(["ip", "netns", "delete", NAMESPACE], capture_output=True, check=False)
        subprocess.run(["ip", "link", "delete", OUTER], capture_output=True, check=False)
        shutil.rmtree(directory, ignore_errors=True)
        if made_run_dir:
            shutil.rmtree("/run/sshd", ignore_errors=True)


def _wait_listening(process: subprocess.Popen, directory: Path) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited: {(directory / 'sshd.log').read_text()}")
        with contextlib.suppress(OSError), socket.create_connection((THERE_ADDRESS, 22), 0.5):
            return
        time.sleep(0.1)
    raise RuntimeError("sshd did not listen within 15 s")


def processes_in_namespace() -> list[int]:
    done = subprocess.run(["ip", "netns", "pids", NAMESPACE], capture_output=True, text=True)
    return [int(pid) for pid in done.stdout.split()]
