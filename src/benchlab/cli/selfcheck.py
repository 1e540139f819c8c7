"""benchlab selfcheck: the harness's own cost, or where this machine's variation comes
from (--noise)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from benchlab.cli import formats
from benchlab.cli.app import progress
from benchlab.cli.measuring import claim
from benchlab.core.errors import ExitCode, RunInterrupted
from benchlab.recipe import default_cores

if TYPE_CHECKING:
    from rich.console import Console

    from benchlab.analysis.noise import NoiseComponents
    from benchlab.checks.selfcheck import SelfCheck
    from benchlab.cli.formats import Destination
    from benchlab.recipe import CoreAssignment


def selfcheck(
    pairs: Annotated[
        int, typer.Option(metavar="N", min=1, max=50, help="Alternated bare/benchlab pairs.")
    ] = 6,
    duration: Annotated[
        int, typer.Option(metavar="S", min=1, max=60, help="Seconds per measurement.")
    ] = 2,
    connections: Annotated[int, typer.Option(metavar="C", min=1, help="Connections.")] = 64,
    noise: Annotated[
        bool,
        typer.Option(
            "--noise",
            help="Instead: where this machine's variation comes from (within a launch, between "
            "launches, shared by a round, a stack's own drift), kept for the runs that follow.",
        ),
    ] = False,
    rounds: Annotated[
        int, typer.Option(metavar="N", min=3, max=60, help="Rounds for --noise.")
    ] = 6,
    fmt: Annotated[str | None, formats.option(formats.SELFCHECK)] = None,
    output: Annotated[Path | None, formats.output(formats.SELFCHECK)] = None,
) -> None:
    """Measure the harness's own cost: bare wrk vs benchlab on nginx-static, same cores.
    What it measures as it goes is progress, on stderr; the answer is on stdout."""
    from benchlab.checks.selfcheck import run_selfcheck

    where = formats.destination(fmt, output, formats.SELFCHECK, reads=())
    claim(False)  # it measures: one load at a time on this machine
    cores = default_cores()
    if noise:
        _noise_check(rounds, duration, connections, cores, where)
        return
    try:
        check = run_selfcheck(
            pairs=pairs,
            duration=duration,
            connections=connections,
            server_cores=cores.server,
            load_cores=cores.load,
            progress=progress.print,
        )
    except (KeyboardInterrupt, RunInterrupted) as exc:
        _stopped(exc)
    if where.format == "json":
        where.document(cost_json(check))
    else:
        where.table(lambda out: _cost_table(check, out))


def cost_json(check: SelfCheck) -> str:
    from benchlab.report.json_formats import SELFCHECK

    cost = {"bare": dataclasses.asdict(check.bare), "benchlab": dataclasses.asdict(check.harness),
            "ratio": dataclasses.asdict(check.ratio), "command": check.command}  # fmt: skip
    return SELFCHECK.dumps({"cost": cost, "noise": None})


def noise_json(found: NoiseComponents, kept_in: Path) -> str:
    from benchlab.report.json_formats import SELFCHECK

    noise = {"within_launch": found.within_launch, "between_launches": found.between_launches,
             "shared_by_round": found.shared_by_round, "own_drift": found.own_drift,
             "pairing_helps": found.pairing_helps, "kept_in": str(kept_in)}  # fmt: skip
    return SELFCHECK.dumps({"cost": None, "noise": noise})


def _stopped(exc: BaseException) -> None:
    progress.print(f"selfcheck stopped by {str(exc) or 'SIGINT'}; nothing was left running")
    raise typer.Exit(ExitCode.INTERRUPTED) from None


def _cost_table(check: SelfCheck, out: Console) -> None:
    for name, estimate in (("bare wrk", check.bare), ("benchlab", check.harness)):
        out.print(
            f"{name:<11}: {estimate.median:,.0f} req/s [{estimate.low:,.0f}–{estimate.high:,.0f}]"
        )
    out.print(
        f"ratio      : {check.ratio.median:.3f} [{check.ratio.low:.3f}–{check.ratio.high:.3f}] "
        f"({check.ratio.confidence:.0%} interval over {check.ratio.n} pairs)"
    )
    out.print(f"bare command: {check.command}", markup=False)


def _noise_check(
    rounds: int, duration: int, connections: int, cores: CoreAssignment, where: Destination
) -> None:
    from benchlab.analysis.noise_record import noise_path
    from benchlab.checks.noise_check import NoiseDesign, measure_noise

    design = NoiseDesign(rounds=rounds, duration=duration, connections=connections)
    minutes = rounds * len(design.stacks) * design.launches * (3 + design.trials * duration) / 60
    progress.print(
        f"noise: {rounds} rounds × {len(design.stacks)} stacks ({', '.join(design.stacks)}) × "
        f"{design.launches} launches × {design.trials} trials of {duration} s; about "
        f"{minutes:.0f} min"
    )
    try:
        found = measure_noise(design, cores, progress.print)
    except (KeyboardInterrupt, RunInterrupted) as exc:
        _stopped(exc)
    if where.format == "json":
        where.document(noise_json(found, noise_path()))
    else:
        where.table(lambda out: _noise_table(found, noise_path(), out))


def _noise_table(found: NoiseComponents, kept_in: Path, out: Console) -> None:
    out.print("throughput's relative standard deviation:")
    for name, value in (
        ("within a launch", found.within_launch), ("between launches", found.between_launches),
        ("shared by a round", found.shared_by_round), ("a stack's own drift", found.own_drift),
    ):  # fmt: skip
        out.print(f"  {name:<20}: {100 * value:.1f} %")
    method = "paired by round" if found.pairing_helps else "independent cells"
    out.print(f"ratios between cells: {method} (kept in {kept_in})", markup=False)
