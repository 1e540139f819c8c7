"""Where a role runs, as a recipe writes it: `local`, `netns:NAME` or `ssh://user@addr[:port]`.

Pure parsing and checking (no command runs): the recipe's validation uses it to name the
key and the fix of every mistake before anything starts.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

# RFC 2544 reserves 198.18.0.0/15 for benchmarking: namespaces take their addresses there.
BENCHMARK_NET = ipaddress.IPv4Network("198.18.0.0/15")
# The controller's own address on the benchmark network (the bridge in its namespace).
CONTROLLER_ADDRESS = ipaddress.IPv4Address("198.18.0.1")
ROLES = ("server", "database", "load")
NETNS_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")
# A user and an address each start with a letter or digit: one starting with '-' would be
# read by ssh as an option (-F FILE, -o ProxyCommand=...).
SSH_TARGET = re.compile(
    r"ssh://(?:(?P<user>[A-Za-z0-9][A-Za-z0-9_.-]{0,31})@)?"
    r"(?P<addr>[A-Za-z0-9][A-Za-z0-9_.-]{0,252})(?::(?P<port>\d{1,5}))?"
)
# The name of a host in [hosts]: it names interfaces, directories and log lines.
HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")


class SpecError(ValueError):
    """A host spec or address that cannot be used; the message says what would be right."""


@dataclass(frozen=True)
class HostSpec:
    kind: str  # local, netns, ssh
    name: str = ""  # netns: the namespace's name
    user: str | None = None  # ssh
    addr: str = ""  # ssh: the address or name the controller connects to
    port: int | None = None  # ssh

    @property
    def text(self) -> str:
        if self.kind == "netns":
            return f"netns:{self.name}"
        if self.kind == "ssh":
            user = f"{self.user}@" if self.user else ""
            port = f":{self.port}" if self.port else ""
            return f"ssh://{user}{self.addr}{port}"
        return "local"

    @property
    def same_machine(self) -> bool:
        """Whether it shares the controller's kernel, cores, processes and files."""
        return self.kind in ("local", "netns")


def parse_spec(text: str) -> HostSpec:
    if text == "local":
        return HostSpec("local")
    if text.startswith("netns:"):
        name = text.removeprefix("netns:")
        if not NETNS_NAME.fullmatch(name):
            raise SpecError(
                f"'{text}': a namespace name is 1 to 40 letters, digits, '.', '_' or '-' "
                "(e.g. netns:bl-server)"
            )
        return HostSpec("netns", name=name)
    if text.startswith("ssh://"):
        match = SSH_TARGET.fullmatch(text)
        if not match:
            raise SpecError(
                f"{text!r}: write an SSH host as ssh://user@address[:port], the user and the "
                "address each starting with a letter or a digit"
            )
        port = int(match["port"]) if match["port"] else None
        if port is not None and not 0 < port < 65536:
            raise SpecError(f"'{text}': port {port} is not a TCP port")
        return HostSpec("ssh", user=match["user"], addr=match["addr"], port=port)
    raise SpecError(
        f'\'{text}\': a host is "local", "netns:NAME" (a network namespace benchlab makes) '
        'or "ssh://user@address"'
    )


def check_namespace_address(text: str) -> ipaddress.IPv4Address:
    """A namespace's address: inside 198.18.0.0/15, neither its first nor last address nor
    the controller's."""
    try:
        address = ipaddress.IPv4Address(text)
    except ipaddress.AddressValueError:
        raise SpecError(
            f"'{text}' is not an IPv4 address; give one in {BENCHMARK_NET}, e.g. 198.18.0.2"
        ) from None
    if address not in BENCHMARK_NET:
        raise SpecError(
            f"{address} is outside {BENCHMARK_NET}, the range RFC 2544 reserves for "
            "benchmarking; give one inside it, e.g. 198.18.0.2"
        )
    if address in (BENCHMARK_NET.network_address, BENCHMARK_NET.broadcast_address):
        raise SpecError(f"{address} is the network's own first or last address; e.g. 198.18.0.2")
    if address == CONTROLLER_ADDRESS:
        raise SpecError(
            f"{address} is the controller's address on the benchmark network; e.g. 198.18.0.2"
        )
    return address


def check_service_address(text: str) -> str:
    """An address other hosts reach a server or a database at, as it goes into pg_hba.conf,
    MariaDB's accounts, pgbouncer, nginx and Redis: one IPv4 address, in its canonical form,
    that a socket can be bound to."""
    try:
        address = ipaddress.IPv4Address(text)
    except ipaddress.AddressValueError:
        raise SpecError(
            f"{text!r} is not an IPv4 address (a name, a network or IPv6 are not taken: it "
            "goes into the databases' lists of who may connect); e.g. 10.0.0.5"
        ) from None
    if (
        address.is_unspecified
        or address.is_multicast
        or address.is_reserved
        or (address == ipaddress.IPv4Address("255.255.255.255"))
    ):
        raise SpecError(
            f"{address} is not the address of one host (unspecified, multicast, broadcast or "
            "reserved); give the address the other hosts reach it at, e.g. 10.0.0.5"
        )
    return str(address)


def default_addresses(taken: set[str], count: int) -> list[str]:
    """Free addresses for namespaces the recipe gave none, from 198.18.0.2 up."""
    found: list[str] = []
    if count == 0:
        return found
    for host in BENCHMARK_NET.hosts():
        if host == CONTROLLER_ADDRESS or str(host) in taken:
            continue
        found.append(str(host))
        if len(found) == count:
            break
    return found
