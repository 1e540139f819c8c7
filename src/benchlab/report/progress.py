"""Live progress of a run: a rich progress bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import time

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from benchlab.core.modes import Mode
from benchlab.core.text import minutes, one_line
from benchlab.recipe import Cell, Plan


def _field(text: str) -> str:
    """A progress column's text: its columns read markup, and a message may quote a log."""
    return escape(one_line(text))


def _cell_text(cell: Cell) -> str:
    rate = f" {cell.rate_text}" if cell.rate_text else ""
    search = " capacity" if cell.mode == Mode.SLO else ""
    return f"{cell.stack} {cell.scenario} c={cell.connections}{rate}{search}"


class _Counter:
    def __init__(self) -> None:
        self.total = 0
        self.done = 0
        self.started = time.monotonic()


class LineReporter:
    """For logs and CI: one line per event."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.counter = _Counter()
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

    def trial(
        self, position: int, cells: int, round_index: int, cell: Cell, figure: str,
        seconds_left: float,
    ) -> None:  # fmt: skip
        self.counter.done += 1
        self.console.print(
            f"[{self.counter.done}/{self.counter.total}] round {round_index + 1}/{self.rounds} "
            f"cell {position + 1}/{cells} {_cell_text(cell)}: {figure}"
            f" — about {minutes(seconds_left)} left"
        )

    def extend(self, trials: int) -> None:
        self.counter.total += trials

    def cell_failed(self, cell: Cell, reason: str) -> None:
        self.counter.total -= 1
        self.console.print(f"  FAILED {_cell_text(cell)}: {reason}", style="red", markup=False)

    def finish(self) -> None:
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

    def trial(
        self, position: int, cells: int, round_index: int, cell: Cell, figure: str,
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
            last=_field(figure),
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

    def finish(self) -> None:
        self.progress.stop()
