"""What a run writes for its servers and clients before they start: the static scenario's
files and, when a cell goes over TLS, the run's certificate authority and server
certificate; and how a client reaches a cell's server (its protocol, the authority)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from benchlab.hosts.base import Host
from benchlab.http.dataset import file_bytes, file_name
from benchlab.http.protocols import PROTOCOLS
from benchlab.http.scenarios import Scenario
from benchlab.http.tls import TlsFiles, make_certificates
from benchlab.http.wire import Wire
from benchlab.recipe import Cell


class RunFiles:
    def __init__(self) -> None:
        self.static_dir: Path | None = None  # the files the static scenario serves
        self.static_kb: frozenset[int] = frozenset()  # their sizes
        self.tls: TlsFiles | None = None  # the run's certificates, when a cell uses TLS

    def prepare(
        self,
        cells: Sequence[Cell],
        scenarios: Mapping[str, Scenario],
        workroot: Path,
        server: Host,
        clients: Sequence[Host],
        server_user: str | None = None,
        extra_kb: Collection[int] = (),
    ) -> None:
        """Once a run: written under `workroot`, copied to the hosts that read them; the
        server's key readable by `server_user` (who the stacks run as) only. `extra_kb`:
        files of these sizes too (for the slow readers of a resilience check)."""
        sizes = {kb for c in cells for kb in scenarios[c.scenario].file_sizes(c.ms)}
        sizes |= set(extra_kb)
        if self.static_dir is None and sizes:
            # Readable by a server that drops root (nginx's workers run as nobody).
            workroot.chmod(workroot.stat().st_mode | 0o011)
            directory = workroot / "static"
            directory.mkdir(mode=0o755)
            for kb in sorted(sizes):
                (directory / file_name(kb)).write_bytes(file_bytes(kb))
                (directory / file_name(kb)).chmod(0o644)
            server.push(directory)
            self.static_dir = directory
            self.static_kb = frozenset(sizes)
        if self.tls is None and any(PROTOCOLS[c.protocol].tls for c in cells):
            local_owner = server_user if server.same_machine else None
            self.tls = make_certificates(
                workroot / "tls", (server.address, "127.0.0.1"), key_owner=local_owner
            )
            for host in (server, *clients):
                host.push(self.tls.ca.parent)
            if server_user is not None and not server.same_machine:
                server.check(["chown", "-h", f"{server_user}:", str(self.tls.key)])

    def wire(self, cell: Cell) -> Wire:
        """How a client reaches the cell's server: its protocol, and the run's authority."""
        protocol = PROTOCOLS[cell.protocol]
        return Wire(protocol, self.tls.ca if protocol.tls and self.tls else None)

    def tls_for(self, cell: Cell) -> TlsFiles | None:
        """The certificate a server started for the cell presents (None: no TLS)."""
        return self.tls if PROTOCOLS[cell.protocol].tls else None
