"""Live progress of a run: a rich progress bar on a terminal, plain lines otherwise; both
made of the typed values the runner reports (runner/outcome.py's Reporter)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from benchlab.analysis.ranking import Ranking
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.core.text import minutes, one_line
from benchlab.load.live import LiveFigure, NoLive
from benchlab.recipe import Cell, Plan
from benchlab.store import RoundMeasured


def _field(text: str) -> str:
    """A progress column's text: its columns read markup, and a message may quote a log."""
    return escape(one_line(text))


def round_text(cell: Cell, measured: RoundMeasured) -> str:
    """A round of a cell in words: the figure it is ranked by (a search's capacity, with its
    probes), at its fixed rate where it had one."""
    figure = F.FIGURES[measured.ranked_by]
    unit = figure.unit_in(measured.rate_unit)
    replicate = measured.replicate
    if replicate is not None and figure.source and figure.source.combine is F.Combine.REPLICATES:
        value = F.of_record(replicate, cell.mode, replicate=True).get(figure)
        return f"{figure.label} {figure.format(value)} {unit} ({replicate.probes} probes)"
    if not measured.trials:
        return "measured"
    trial = measured.trials[-1]
    text = f"{figure.label} {figure.format(F.of_record(trial, cell.mode).get(figure))} {unit}"
    if trial.target_rate and figure.key != F.ACHIEVED.key:
        text += f" at {F.rate_text(trial.target_rate)} {F.TARGET_RATE.unit_in(measured.rate_unit)}"
    return text


def live_text(figure: LiveFigure, rate_unit: str = F.REQ_S) -> str:
    """A running fixed-rate trial so far, for the progress line."""
    if isinstance(figure, NoLive):
        return f"no figure until the trial ends: {figure.reason}"
    errors = f"{figure.errors:,} error{'' if figure.errors == 1 else 's'}"
    return (
        f"{F.ACHIEVED.label} {F.ACHIEVED.format(figure.achieved_rps)} "
        f"{F.ACHIEVED.unit_in(rate_unit)} · {errors} so far "
        f"({figure.elapsed_s:.0f} of {figure.duration_s:g} s)"
    )


def _cell_text(cell: Cell) -> str:
    rate = f" {cell.rate_text}" if cell.rate_text else ""
    search = " capacity" if cell.mode == Mode.SLO else ""
    return f"{cell.stack} {cell.scenario} c={cell.connections}{rate}{search}"


class TrialCounter:
    """Trials done of the trials planned (adaptive rounds add some; a failed cell's go)."""

    def __init__(self) -> None:
        self.total = 0
        self.done = 0
        self.started = time.monotonic()


class LineReporter:
    """For logs and CI: one line per event."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.counter = TrialCounter()
        self.rounds = 1

    def start(self, run_id: str, total_trials: int, plan: Plan) -> None:
        self.counter.total = total_trials
        self.rounds = plan.recipe.max_trials or plan.recipe.trials
        trials = (
            f" × {plan.recipe.trials} trial{'s' if plan.recipe.trials > 1 else ''}"
            if total_trials
            else ", nothing measured"
        )
        self.console.print(
            f"run {run_id}: {len(plan.cells)} cells{trials}; "
            f"server cores {list(plan.cores.server)}, load cores {list(plan.cores.load)}"
        )

    def status(self, message: str) -> None:
        self.console.print(f"  {message}", markup=False)

    def verified(self, cell: Cell, negotiated: str) -> None:
        pass  # a cell that fails its check says so; one that passes is measured next

    def live(self, cell: Cell, figure: LiveFigure) -> None:
        pass  # a log gets the trial's line when it ends, not a line a second

    def trial(
        self, position: int, cells: int, round_index: int, cell: Cell, measured: RoundMeasured,
        seconds_left: float,
    ) -> None:  # fmt: skip
        self.counter.done += 1
        self.console.print(
            f"[{self.counter.done}/{self.counter.total}] round {round_index + 1}/{self.rounds} "
            f"cell {position + 1}/{cells} {_cell_text(cell)}: {round_text(cell, measured)}"
            f" — about {minutes(seconds_left)} left"
        )

    def ranking(self, ranking: Ranking, next_round: Sequence[str]) -> None:
        pass  # an adaptive round says what it is for in its status

    def extend(self, trials: int) -> None:
        self.counter.total += trials

    def cell_failed(self, cell: Cell, reason: str) -> None:
        self.counter.total -= 1
        self.console.print(f"  FAILED {_cell_text(cell)}: {reason}", style="red", markup=False)

    def finish(self, status: str, reason: str | None) -> None:
        pass


class BarReporter(LineReporter):
    """For a terminal: a bar with cell i of N, the last throughput and the time left."""

    def __init__(self, console: Console) -> None:
        super().__init__(console)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("trials · last {task.fields[last]} · about {task.fields[left]} left"),
            TextColumn("[dim]{task.fields[phase]}"),
            console=console,
            transient=False,
        )
        self.task = self.progress.add_task("starting", total=1, last="–", left="?", phase="")

    def start(self, run_id: str, total_trials: int, plan: Plan) -> None:
        super().start(run_id, total_trials, plan)
        self.progress.update(self.task, total=total_trials)
        self.progress.start()

    def status(self, message: str) -> None:
        self.progress.update(self.task, phase=_field(message))

    def live(self, cell: Cell, figure: LiveFigure) -> None:
        self.progress.update(self.task, phase=_field(f"{cell.stack}: {live_text(figure)}"))

    def trial(
        self, position: int, cells: int, round_index: int, cell: Cell, measured: RoundMeasured,
        seconds_left: float,
    ) -> None:  # fmt: skip
        self.counter.done += 1
        self.progress.update(
            self.task,
            advance=1,
            description=_field(
                f"round {round_index + 1}/{self.rounds} · cell {position + 1}/{cells}"
                f" {_cell_text(cell)}"
            ),
            last=_field(round_text(cell, measured)),
            left=minutes(seconds_left),
            phase="",
        )

    def extend(self, trials: int) -> None:
        super().extend(trials)
        self.progress.update(self.task, total=self.counter.total)

    def cell_failed(self, cell: Cell, reason: str) -> None:
        self.counter.total -= 1
        self.progress.update(self.task, total=self.counter.total)
        self.progress.console.print(
            f"FAILED {_cell_text(cell)}: {reason}", style="red", markup=False
        )

    def finish(self, status: str, reason: str | None) -> None:
        self.progress.stop()
