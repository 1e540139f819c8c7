"""A recipe's `[hosts]` checked and resolved: which host plays which role, on which cores.

Every mistake is one UserError naming the file, the key and the fix, before anything
starts. What needs the hosts themselves (an SSH host that answers, a namespace name that is
free) is checked by `hosts.topology.preflight` just before the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchlab.core.errors import UserError
from benchlab.core.text import quoted
from benchlab.http.scenarios import SCENARIOS
from benchlab.load import MERGEABLE_TOOLS
from benchlab.recipe.cells import scenario_names
from benchlab.recipe.cores import CoreAssignment, default_cores
from benchlab.recipe.host_spec import (
    HOST_NAME,
    HostSpec,
    SpecError,
    check_namespace_address,
    check_service_address,
    default_addresses,
    parse_spec,
)
from benchlab.recipe.schema import Recipe


@dataclass(frozen=True)
class HostPlan:
    """One host of a run: where it is, what it does, on which of its cores."""

    name: str
    spec: HostSpec
    roles: tuple[str, ...]
    cores: tuple[tuple[str, tuple[int, ...]], ...]  # role -> cores
    address: str | None = None  # netns: its address; ssh: where its servers are reached

    def cores_of(self, role: str) -> tuple[int, ...]:
        return dict(self.cores)[role]


def local_only(cores: CoreAssignment) -> tuple[HostPlan, ...]:
    """No [hosts]: this machine plays every role, on the recipe's (or default) cores."""
    return (
        HostPlan(
            name="local",
            spec=parse_spec("local"),
            roles=("server", "database", "load"),
            cores=(
                ("server", cores.server),
                ("database", cores.service_cores),
                ("load", cores.load),
            ),
        ),
    )


def _roles_needed(recipe: Recipe) -> list[str]:
    needed = ["server", "load"]
    if any(
        SCENARIOS[s].needs_database or SCENARIOS[s].needs_cache
        for s in scenario_names(recipe)
        if s in SCENARIOS
    ):
        needed.append("database")
    return needed


def resolve_hosts(
    path: Path, recipe: Recipe, allowed: tuple[int, ...]
) -> tuple[tuple[HostPlan, ...], CoreAssignment]:
    if recipe.cores is not None:
        raise UserError(
            f"{path}: key 'cores': with [hosts], each host gives the cores of its roles "
            "(hosts.NAME.cores); remove [cores]"
        )
    specs = {}
    for name, entry in recipe.hosts.items():
        if not HOST_NAME.fullmatch(name):
            raise UserError(
                f"{path}: key 'hosts': the host name {name!r} is 1 to 40 letters, digits, '.', "
                "'_' or '-', starting with a letter or digit"
            )
        try:
            specs[name] = parse_spec(entry.at)
        except SpecError as exc:
            raise UserError(f"{path}: key 'hosts.{name}.at': {exc}") from None
    _check_unique_places(path, recipe, specs)
    addresses = _addresses(path, recipe, specs)
    _check_roles(path, recipe)
    defaults = default_cores(allowed)
    plans = []
    for name, entry in recipe.hosts.items():
        spec = specs[name]
        per_role: dict[str, tuple[int, ...]] = {}
        for role in entry.roles:
            given = entry.cores.get(role) if isinstance(entry.cores, dict) else entry.cores
            if given is None and not spec.same_machine:
                raise UserError(
                    f"{path}: key 'hosts.{name}.cores': give the cores the {role} role is "
                    f"pinned to on {spec.text}, e.g. cores = [0, 1] (or a table per role)"
                )
            if given is None:
                given = list(defaults.load if role == "load" else defaults.server)
            per_role[role] = tuple(given)
        if isinstance(entry.cores, dict):
            for role in entry.cores:
                if role not in entry.roles:
                    raise UserError(
                        f"{path}: key 'hosts.{name}.cores.{role}': '{name}' has no {role} role; "
                        f"its roles: {', '.join(entry.roles)}"
                    )
        if spec.same_machine:
            _check_allowed(path, name, per_role, allowed)
        plans.append(
            HostPlan(name, spec, tuple(entry.roles), tuple(per_role.items()), addresses.get(name))
        )
    _check_shared_cores(path, plans)
    _check_load_split(path, recipe, sum("load" in p.roles for p in plans))
    server = next(p for p in plans if "server" in p.roles)
    load = [p for p in plans if "load" in p.roles]
    database = next((p for p in plans if "database" in p.roles), server)
    here = [p for p in load if p.spec.same_machine]
    cores = CoreAssignment(
        server=server.cores_of("server"),
        load=load[0].cores_of("load"),
        services=database.cores_of("database") if database is not server else (),
        controller=here[0].cores_of("load") if here else (),
    )
    return tuple(plans), cores


def _check_unique_places(path: Path, recipe: Recipe, specs: dict) -> None:
    seen: dict[str, str] = {}
    for name, spec in specs.items():
        if spec.kind == "ssh":
            continue  # one machine may well be reached twice (roles on different cores)
        other = seen.setdefault(spec.text, name)
        if other != name:
            raise UserError(
                f"{path}: key 'hosts.{name}.at': '{spec.text}' is already host '{other}'; give "
                f"one host all its roles (roles = [...]) or another name"
            )


def _addresses(path: Path, recipe: Recipe, specs: dict) -> dict[str, str]:
    given: dict[str, str] = {}
    for name, entry in recipe.hosts.items():
        key = f"{path}: key 'hosts.{name}.address'"
        if entry.address is None:
            if specs[name].kind == "ssh":
                given[name] = _ssh_address(path, name, specs[name].addr)
            continue
        if specs[name].kind == "local":
            raise UserError(
                f"{key}: this machine's address is not chosen; remove 'address' "
                "(namespaces reach it at 198.18.0.1)"
            )
        try:
            if specs[name].kind == "netns":
                address = str(check_namespace_address(entry.address))
            else:
                address = check_service_address(entry.address)
        except SpecError as exc:
            raise UserError(f"{key}: {exc}") from None
        twin = next((n for n, a in given.items() if a == address), None)
        if twin is not None and specs[name].kind != "ssh":
            raise UserError(f"{key}: {address} is already host '{twin}'s; give each its own")
        given[name] = address
    unaddressed = [n for n, s in specs.items() if s.kind == "netns" and n not in given]
    for name, address in zip(
        unaddressed, default_addresses(set(given.values()), len(unaddressed)), strict=True
    ):
        given[name] = address
    return given


def _ssh_address(path: Path, name: str, connected: str) -> str:
    """An SSH host's servers are reached at the address benchlab connects to, which must
    then be an IPv4 address (a name cannot go into the databases' lists of clients)."""
    try:
        return check_service_address(connected)
    except SpecError:
        raise UserError(
            f"{path}: key 'hosts.{name}.address': {quoted(connected)} (its 'at') is not an IPv4 "
            "address, and the other hosts reach its servers at one; give it: address = "
            '"10.0.0.5" (the address the other hosts reach it at)'
        ) from None


def _check_roles(path: Path, recipe: Recipe) -> None:
    names = list(recipe.hosts)
    for role in _roles_needed(recipe):
        having = [n for n, e in recipe.hosts.items() if role in e.roles]
        why = {"database": " (a scenario of the recipe uses the database)"}.get(role, "")
        if not having:
            raise UserError(
                f"{path}: key 'hosts': no host has the role '{role}'{why}; add \"{role}\" to "
                f"the roles of one of them ({', '.join(names)})"
            )
        if len(having) > 1 and role != "load":
            raise UserError(
                f"{path}: key 'hosts.{having[1]}.roles': '{role}' is already host "
                f"'{having[0]}'s; one host plays it (only 'load' may have several)"
            )


def _check_allowed(
    path: Path, name: str, per_role: dict[str, tuple[int, ...]], allowed: tuple[int, ...]
) -> None:
    for role, cores in per_role.items():
        for core in cores:
            if core not in allowed:
                raise UserError(
                    f"{path}: key 'hosts.{name}.cores': core {core} ({role}) is not one this "
                    f"process may use; it may use {', '.join(map(str, allowed))}"
                )


def _check_shared_cores(path: Path, plans: list) -> None:
    """On one machine (this one and its namespaces), load generators must not share a core
    with the server or the database: their fight for it would be what is measured."""
    here = [p for p in plans if p.spec.same_machine]
    serving = {
        core: p.name
        for p in here
        for role, cores in p.cores
        if role != "load"
        for core in cores
    }  # fmt: skip
    for plan in here:
        if "load" not in plan.roles:
            continue
        shared = sorted(set(plan.cores_of("load")) & set(serving))
        if shared:
            raise UserError(
                f"{path}: key 'hosts.{plan.name}.cores': load core(s) {shared} are also "
                f"host '{serving[shared[0]]}''s server or database cores, on this same machine; "
                "give the load its own cores"
            )


def _check_load_split(path: Path, recipe: Recipe, load_hosts: int) -> None:
    if load_hosts < 2:
        return
    for i, profile in enumerate(recipe.load):
        if profile.tool not in MERGEABLE_TOOLS:
            raise UserError(
                f"{path}: key 'load[{i}].tool': {profile.tool} gives percentiles only, which "
                f"cannot be merged exactly over {load_hosts} load hosts; use "
                f"{' or '.join(MERGEABLE_TOOLS)}, or one load host"
            )
        values = (
            profile.connections if isinstance(profile.connections, list) else [profile.connections]
        )
        if min(values) < load_hosts:
            raise UserError(
                f"{path}: key 'load[{i}].connections': {min(values)} connection(s) cannot be "
                f"split over {load_hosts} load hosts; give at least {load_hosts}"
            )
