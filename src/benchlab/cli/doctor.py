"""benchlab doctor: this machine checked (and what a killed benchlab left, cleaned), and
the hosts of a recipe's [hosts]."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from benchlab.cli.app import console
from benchlab.core.errors import ExitCode, UserError
from benchlab.recipe import build_plan, load_recipe
from benchlab.stacks import CATALOGUE

if TYPE_CHECKING:
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
) -> None:  # fmt: skip
    """Check this machine: tools, cores, CPU frequency scaling, pinning; clean up after a
    benchlab that was killed (its processes, directories, namespaces, what it left on SSH
    hosts; its run marked abandoned)."""
    from benchlab.doctor import apt_command, doctor_checks
    from benchlab.runner.recovery import clean_stale, live_runs

    hosts_plan = _hosts_plan(hosts) if hosts is not None else None  # bad input before output
    for stale in clean_stale():
        console.print(f"[yellow]cleaned[/]  after {escape(stale.describe())}")
    for other in live_runs():
        console.print(
            f"[yellow]busy[/]     benchlab {other['kind']} pid {other['pid']} is running "
            f"(since {other['started_at']})"
        )
    problems = 0
    checks = doctor_checks()
    for check in checks:
        _print_check(check.ok, check.required, check.name, check.detail, check.fix, width=14)
        problems += (not check.ok) and check.required
    install = apt_command(checks)
    if install:
        console.print(f"to install every missing Debian package: {install}", markup=False)
    if hosts_plan is not None:
        problems += _doctor_hosts(hosts_plan)
    if problems:
        console.print(f"{problems} required item(s) missing; ./lab setup installs them on Debian")
        raise typer.Exit(ExitCode.HARNESS)


def _print_check(
    ok: bool, required: bool, name: str, detail: str, fix: str | None, width: int
) -> None:
    mark = "[green]ok[/]" if ok else ("[red]missing[/]" if required else "[yellow]warn[/]")
    fix_text = f" → {fix}" if fix else ""
    console.print(
        f"{mark:>20}  {name:<{width}} {escape(detail)}{escape(fix_text)}", highlight=False
    )


def _hosts_plan(path: Path) -> Plan:
    recipe, text = load_recipe(path, CATALOGUE)
    if not recipe.hosts:
        raise UserError(f"--hosts {path}: the recipe has no [hosts]; every role runs here")
    return build_plan(path, recipe, text, CATALOGUE)


def _doctor_hosts(plan: Plan) -> int:
    from benchlab.doctor import host_checks

    problems, current = 0, None
    for name, check in host_checks(plan):
        if name != current:
            console.print(f"host [bold]{escape(name)}[/]", highlight=False)
            current = name
        _print_check(check.ok, True, check.name, check.detail, check.fix, width=18)
        problems += not check.ok
    return problems
