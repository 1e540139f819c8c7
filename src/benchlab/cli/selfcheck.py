"""benchlab selfcheck: the harness's own cost, or where this machine's variation comes
from (--noise)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from benchlab.cli.app import console
from benchlab.cli.measuring import claim
from benchlab.core.errors import ExitCode, RunInterrupted
from benchlab.recipe import default_cores

if TYPE_CHECKING:
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
) -> None:
    """Measure the harness's own cost: bare wrk vs benchlab on nginx-static, same cores."""
    from benchlab.checks.selfcheck import run_selfcheck

    claim(False)  # it measures: one load at a time on this machine
    cores = default_cores()
    if noise:
        _noise_check(rounds, duration, connections, cores)
        return
    try:
        check = run_selfcheck(
            pairs=pairs,
            duration=duration,
            connections=connections,
            server_cores=cores.server,
            load_cores=cores.load,
            progress=console.print,
        )
    except (KeyboardInterrupt, RunInterrupted) as exc:
        console.print(f"selfcheck stopped by {str(exc) or 'SIGINT'}; nothing was left running")
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    for name, estimate in (("bare wrk", check.bare), ("benchlab", check.harness)):
        console.print(
            f"{name:<11}: {estimate.median:,.0f} req/s [{estimate.low:,.0f}–{estimate.high:,.0f}]"
        )
    console.print(
        f"ratio      : {check.ratio.median:.3f} [{check.ratio.low:.3f}–{check.ratio.high:.3f}] "
        f"({check.ratio.confidence:.0%} interval over {check.ratio.n} pairs)"
    )
    console.print(f"bare command: {check.command}", markup=False)


def _noise_check(rounds: int, duration: int, connections: int, cores: CoreAssignment) -> None:
    from benchlab.analysis.noise_record import noise_path
    from benchlab.checks.noise_check import NoiseDesign, measure_noise

    design = NoiseDesign(rounds=rounds, duration=duration, connections=connections)
    minutes = rounds * len(design.stacks) * design.launches * (3 + design.trials * duration) / 60
    console.print(
        f"noise: {rounds} rounds × {len(design.stacks)} stacks ({', '.join(design.stacks)}) × "
        f"{design.launches} launches × {design.trials} trials of {duration} s; about "
        f"{minutes:.0f} min"
    )
    try:
        found = measure_noise(design, cores, console.print)
    except (KeyboardInterrupt, RunInterrupted) as exc:
        console.print(f"selfcheck stopped by {str(exc) or 'SIGINT'}; nothing was left running")
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    for name, value in (
        ("within a launch", found.within_launch), ("between launches", found.between_launches),
        ("shared by a round", found.shared_by_round), ("a stack's own drift", found.own_drift),
    ):  # fmt: skip
        console.print(f"{name:<20}: ±{100 * value:.1f} %")
    method = "paired by round" if found.pairing_helps else "independent cells"
    console.print(f"ratios between cells: {method} (kept in {noise_path()})", markup=False)
