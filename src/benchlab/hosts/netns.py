"""Network namespaces as hosts: a machine's worth of network (own addresses, own ports, own
loopback) that benchlab creates for a run and removes after it.

The benchmark network: a bridge in the controller's namespace holding 198.18.0.1, and one
veth pair per namespace, its inner end holding the namespace's address; every address is
in 198.18.0.0/15, the range RFC 2544 reserves for benchmarking, so no packet of a run can
reach another network. Traffic between namespaces crosses two veth pairs and the bridge, as
it would cross a switch between machines; the cores, memory and kernel stay shared (a
recipe says which cores each role has).

Everything is recorded in the run's journal before it is made, so a benchlab killed with
SIGKILL leaves nothing that the next `benchlab run` or `doctor` does not remove.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from benchlab.hosts.base import HostError, ThisMachine
from benchlab.recipe.host_spec import BENCHMARK_NET, CONTROLLER_ADDRESS, HostSpec
from benchlab.system.trusted_path import NEUTRAL_DIR

PREFIX_LENGTH = BENCHMARK_NET.prefixlen
IP_TIMEOUT_S = 10.0


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["ip", *args],
        capture_output=True,
        text=True,
        timeout=IP_TIMEOUT_S,
        check=False,
        cwd=NEUTRAL_DIR,
    )
    if check and done.returncode != 0:
        raise HostError(f"'ip {' '.join(args)}' failed: {done.stderr.strip()}")
    return done


def existing_namespaces() -> set[str]:
    done = ip("netns", "list", check=False)
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


def namespace_pids(name: str) -> list[int]:
    done = ip("netns", "pids", name, check=False)
    return [int(pid) for pid in done.stdout.split() if pid.isdigit()]


def address_holder(address: str) -> str | None:
    """The interface of this namespace that holds `address`, if one does."""
    done = ip("-o", "addr", "show", "to", address, check=False)
    first = done.stdout.split()
    return first[1] if len(first) > 1 else None


def remove_namespace(name: str) -> None:
    """Kill whatever still runs inside (a namespace with processes outlives its name), then
    delete it; its veth ends go with it."""
    for pid in namespace_pids(name):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    ip("netns", "delete", name, check=False)


def remove_link(name: str) -> None:
    ip("link", "delete", name, check=False)


class NetnsHost(ThisMachine):
    """A network namespace of this machine. Processes enter it with `ip netns exec`, inside
    their control group's wrapper (ip remounts /sys for them, where the group's files would
    no longer be seen)."""

    def __init__(self, name: str, namespace: str, address: str) -> None:
        super().__init__(name, HostSpec("netns", name=namespace), address)
        self.namespace = namespace
        self.prefix = ("ip", "netns", "exec", namespace)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "namespace": self.namespace, "address": self.address}

    def free_port(self) -> int:
        """Free inside the namespace (its ports are not the controller's)."""
        program = "import socket; s = socket.socket(); s.bind(('', 0)); print(s.getsockname()[1])"
        done = self.run([sys.executable, "-I", "-c", program], timeout=10)
        try:
            return int(done.stdout)
        except ValueError:
            raise HostError(f"{self.where}: cannot find a free port there") from None


class BenchmarkNetwork:
    """The bridge and veth pairs joining a run's namespaces and the controller."""

    def __init__(self, tag: int | None = None) -> None:
        tag = tag or os.getpid()
        self.bridge = f"blbr{tag}"  # interface names: 15 characters at most
        self._veth = f"blv{tag}x"
        self.namespaces: list[str] = []
        self.links: list[str] = []

    def up(self, hosts: Sequence[NetnsHost], journal: Any | None = None) -> None:
        """Make the bridge and each host's namespace; recorded in `journal` first."""
        holder = address_holder(str(CONTROLLER_ADDRESS))
        if holder is not None:
            raise HostError(
                f"{CONTROLLER_ADDRESS} is already on interface {holder}: another benchmark "
                "network is up (another benchlab run?); 'benchlab doctor' removes a killed "
                f"run's, or 'ip link delete {holder}' if it is none of benchlab's"
            )
        if journal is not None:
            journal.add_network([h.namespace for h in hosts], [self.bridge])
        self.links.append(self.bridge)
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{CONTROLLER_ADDRESS}/{PREFIX_LENGTH}", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        for index, host in enumerate(hosts):
            self.namespaces.append(host.namespace)
            outer = f"{self._veth}{index}"
            ip("netns", "add", host.namespace)
            ip("link", "add", outer, "type", "veth", "peer", "name", "eth0", "netns",
               host.namespace)  # fmt: skip
            ip("link", "set", outer, "master", self.bridge, "up")
            inside = ("-n", host.namespace)
            ip(*inside, "addr", "add", f"{host.address}/{PREFIX_LENGTH}", "dev", "eth0")
            ip(*inside, "link", "set", "eth0", "up")
            ip(*inside, "link", "set", "lo", "up")

    def down(self) -> None:
        for namespace in reversed(self.namespaces):
            remove_namespace(namespace)
        for link in self.links:
            remove_link(link)
        self.namespaces.clear()
        self.links.clear()
