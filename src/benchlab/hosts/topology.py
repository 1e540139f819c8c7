"""The hosts of one run: made (namespaces, the benchmark network) or connected to (SSH)
when it starts, described for the store, and left clean when it ends, whatever the end.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Any

from benchlab.core import environment
from benchlab.core.errors import UserError
from benchlab.hosts.base import Host, HostError, LocalHost, Placement
from benchlab.hosts.netns import BenchmarkNetwork, NetnsHost, existing_namespaces
from benchlab.hosts.ssh import SshHost, group_tag
from benchlab.recipe import HostPlan, Plan
from benchlab.recipe.host_spec import CONTROLLER_ADDRESS

LOOPBACK = "127.0.0.1"


def make_host(plan: HostPlan, with_network: bool) -> Host:
    if plan.spec.kind == "netns":
        assert plan.address is not None
        return NetnsHost(plan.name, plan.spec.name, plan.address)
    if plan.spec.kind == "ssh":
        return SshHost(plan.name, plan.spec, plan.address)
    # Namespaces reach this machine at the controller's address on the benchmark network.
    return LocalHost(plan.name, str(CONTROLLER_ADDRESS) if with_network else LOOPBACK)


def preflight(plan: Plan, owned_namespaces: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    """What only the hosts themselves can say, before anything starts: each SSH host answers,
    each namespace name is free. Every problem is a UserError naming the host and the fix."""
    path = plan.path
    wanted = [h for h in plan.hosts if h.spec.kind == "netns"]
    if wanted:
        if os.geteuid() != 0:
            raise UserError(
                f"{path}: key 'hosts.{wanted[0].name}.at': network namespaces need root; run "
                "benchlab as root, or use local and ssh:// hosts"
            )
        if shutil.which("ip") is None:
            raise UserError(f"{path}: network namespaces need 'ip': apt-get install iproute2")
        present = existing_namespaces() - owned_namespaces
        for host in wanted:
            if host.spec.name in present:
                raise UserError(
                    f"{path}: key 'hosts.{host.name}.at': network namespace '{host.spec.name}' "
                    "exists already and is not one a benchlab run made; choose another name, or "
                    f"remove it if nothing needs it: ip netns delete {host.spec.name}"
                )
    for host in plan.hosts:
        if host.spec.kind != "ssh":
            continue
        remote = SshHost(host.name, host.spec, host.address)
        try:
            remote.open()
        except HostError as exc:
            destination = f"{host.spec.user}@{host.spec.addr}" if host.spec.user else host.spec.addr
            port = f" -p {host.spec.port}" if host.spec.port else ""
            raise UserError(
                f"{path}: key 'hosts.{host.name}.at': {exc}; check the address, that sshd runs "
                f"there, and that 'ssh{port} {destination} true' works without a password "
                "(your keys or agent; BENCHLAB_SSH_CONFIG names another ssh config)"
            ) from None
        finally:
            remote.close()


class RunHosts:
    """Every host of a run, by role."""

    def __init__(self, plans: tuple[HostPlan, ...]) -> None:
        self.plans = plans
        with_network = any(p.spec.kind == "netns" for p in plans)
        self.hosts = {p.name: make_host(p, with_network) for p in plans}
        self.network: BenchmarkNetwork | None = None
        self.opened: list[Host] = []

    def _placements(self, role: str) -> list[Placement]:
        return [
            Placement(self.hosts[p.name], p.cores_of(role)) for p in self.plans if role in p.roles
        ]

    @property
    def server(self) -> Placement:
        return self._placements("server")[0]

    @property
    def database(self) -> Placement:
        found = self._placements("database")
        return found[0] if found else self.server

    @property
    def load(self) -> list[Placement]:
        return self._placements("load")

    def steal_cores(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The server's and the load's cores, where they are this machine's (steal is read
        from this machine's /proc/stat)."""
        server = self.server
        here = [p for p in self.load if p.host.same_machine]
        return (
            server.cores if server.host.same_machine else (),
            here[0].cores if here else (),
        )

    @property
    def distributed(self) -> bool:
        """Whether any role runs away from benchlab's own network namespace."""
        return any(not isinstance(h, LocalHost) for h in self.hosts.values())

    def controller_address(self, host: Host) -> str:
        """Where `host` sees benchlab's own connections come from."""
        if isinstance(host, LocalHost):
            return LOOPBACK
        if isinstance(host, SshHost):
            return host.controller_address() or host.address
        return str(CONTROLLER_ADDRESS)

    def open(self, workroot: Path, journal: Any | None = None) -> None:
        """Make the namespaces and their network; connect to SSH hosts and make the run's
        directory there. Each step is in the journal before it is taken."""
        namespaces = [h for h in self.hosts.values() if isinstance(h, NetnsHost)]
        if namespaces:
            self.network = BenchmarkNetwork()
            self.network.up(namespaces, journal)
        for host in self.hosts.values():
            if not isinstance(host, SshHost):
                continue
            host.open()
            if journal is not None:
                journal.add_remote(
                    host.spec.text, str(workroot), group_tag(), str(host.control_path),
                    os.environ.get(environment.SSH_CONFIG),
                )  # fmt: skip
            self.opened.append(host)
            host.make_rundir(workroot)

    def close(self) -> None:
        """After every process is stopped: what is left on SSH hosts, then the network."""
        for host in self.opened:
            if isinstance(host, SshHost):
                host.clean_rundir()
            with contextlib.suppress(Exception):
                host.close()
        self.opened.clear()
        if self.network is not None:
            self.network.down()
            self.network = None

    def records(self, this_machine: dict[str, Any]) -> list[dict[str, Any]]:
        """What the store keeps of each host: where, what for, on which cores, the machine
        (`this_machine`'s facts for a host on this machine, described once a run)."""
        out = []
        for plan in self.plans:
            host = self.hosts[plan.name]
            try:
                machine = this_machine if isinstance(host, LocalHost) else host.describe()
            except (HostError, OSError) as exc:
                machine = {"error": str(exc)}
            out.append(
                {
                    "name": plan.name,
                    "at": plan.spec.text,
                    "roles": list(plan.roles),
                    "address": host.address,
                    "cores": {role: list(cores) for role, cores in plan.cores},
                    "machine": machine,
                }
            )
        return out
