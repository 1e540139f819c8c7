"""benchlab doctor: this machine checked (and what a killed benchlab left, cleaned), and
the hosts of a recipe's [hosts]."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from benchlab.cli import formats
from benchlab.core.errors import ExitCode, UserError
from benchlab.core.text import printable
from benchlab.recipe import build_plan, load_recipe
from benchlab.stacks import CATALOGUE

if TYPE_CHECKING:
    from rich.console import Console

    from benchlab.doctor.check import Check
    from benchlab.recipe import Plan


def doctor(
    hosts: Annotated[
        Path | None,
        typer.Option(
            "--hosts", metavar="RECIPE",
            help="Also check every host of this recipe's [hosts]: reach, tools, versions, "
            "cores, clock.",
        ),
    ] = None,
    fmt: Annotated[str | None, formats.option(formats.DOCTOR)] = None,
    output: Annotated[Path | None, formats.output(formats.DOCTOR)] = None,
) -> None:  # fmt: skip
    """Check this machine: tools, cores, CPU frequency scaling, pinning; clean up after a
    benchlab that was killed (its processes, directories, namespaces, what it left on SSH
    hosts; its run marked abandoned)."""
    from benchlab.doctor import apt_command, doctor_checks
    from benchlab.doctor.hosts import host_checks
    from benchlab.runner.recovery import clean_stale, live_runs

    where = formats.destination(fmt, output, formats.DOCTOR, reads=())
    hosts_plan = _hosts_plan(hosts) if hosts is not None else None  # bad input before output
    found = Found(
        cleaned=[stale.describe() for stale in clean_stale()],
        busy=live_runs(),
        checks=doctor_checks(),
        hosts=host_checks(hosts_plan) if hosts_plan is not None else [],
    )
    install = apt_command(found.checks)
    if where.format == "json":
        where.document(_json(found, install))
    else:
        where.table(lambda out: _table(found, install, out))
    if found.problems:
        raise typer.Exit(ExitCode.HARNESS)


@dataclass(frozen=True)
class Found:
    """What doctor found: what killed benchlabs left (cleaned), the live ones, the checks of
    this machine and of the recipe's hosts (each with its host's name)."""

    cleaned: list[str]
    busy: list[dict[str, Any]]
    checks: list[Check]
    hosts: list[tuple[str, Check]]

    @property
    def problems(self) -> int:
        """Required items missing, here and on the hosts."""
        mine = sum(1 for c in self.checks if not c.ok and c.required)
        return mine + sum(1 for _, c in self.hosts if not c.ok)


def _table(found: Found, install: str | None, out: Console) -> None:
    for line in found.cleaned:
        out.print(Text.assemble(("cleaned", "yellow"), printable(f"  after {line}")))
    for other in found.busy:
        out.print(
            Text.assemble(
                ("busy", "yellow"),
                printable(
                    f"     benchlab {other['kind']} pid {other['pid']} is running "
                    f"(since {other['started_at']})"
                ),
            )
        )
    for check in found.checks:
        _print_check(out, check, check.required, width=14)
    if install:
        out.print(f"to install every missing Debian package: {install}", markup=False)
    current = None
    for name, check in found.hosts:
        if name != current:
            out.print(Text.assemble("host ", (printable(name), "bold")), highlight=False)
            current = name
        _print_check(out, check, True, width=18)
    if found.problems:
        out.print(f"{found.problems} required item(s) missing; ./lab setup installs them on Debian")


def _json(found: Found, install: str | None) -> str:
    from benchlab.report.json_formats import DOCTOR

    def entry(check: Check) -> dict[str, Any]:
        return {"name": check.name, "ok": check.ok, "required": check.required,
                "detail": check.detail, "fix": check.fix or None}  # fmt: skip

    return DOCTOR.dumps({
        "ready": found.problems == 0,
        "checks": [entry(c) for c in found.checks],
        "install": install or None,
        "hosts": [{"host": name, **entry(c)} for name, c in found.hosts],
        "cleaned": found.cleaned,
        "busy": [{"kind": o["kind"], "pid": o["pid"], "started_at": o["started_at"]}
                 for o in found.busy],
    })  # fmt: skip


def _print_check(out: Console, check: Check, required: bool, width: int) -> None:
    mark = "[green]ok[/]" if check.ok else ("[red]missing[/]" if required else "[yellow]warn[/]")
    fix_text = f" → {check.fix}" if check.fix else ""
    # Markup for benchlab's own mark only: what a check found is shown as it is.
    shown = Text.from_markup(f"{mark:>20}")
    shown.append(printable(f"  {check.name:<{width}} {check.detail}{fix_text}"))
    out.print(shown, highlight=False)


def _hosts_plan(path: Path) -> Plan:
    recipe, text = load_recipe(path, CATALOGUE)
    if not recipe.hosts:
        raise UserError(f"--hosts {path}: the recipe has no [hosts]; every role runs here")
    return build_plan(path, recipe, text, CATALOGUE)
