"""A run as it goes, for a program: one JSON line per event (stream_events.py declares them),
written and flushed as each happens, to stdout (`--progress json`) or a file
(`--progress-file`). `Reporters` hands each event to several reporters: the stream to a file
beside the terminal's bar."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from benchlab.analysis.ranking import Ranking
from benchlab.core import figures as F
from benchlab.load.live import LiveFigure, LiveLoad
from benchlab.recipe import Cell, Plan
from benchlab.report.json_schemas import PointRanking
from benchlab.report.progress import TrialCounter
from benchlab.report.stream_events import (
    STREAM_LINE,
    CellFailed,
    CellVerified,
    FigureValue,
    RankingJudged,
    RunFinished,
    RunStarted,
    StreamCell,
    StreamEvent,
    TrialDone,
    TrialRunning,
)
from benchlab.store import RoundMeasured

# Where a line goes: bytes, a whole line each call (written and flushed at once).
Sink = Callable[[bytes], object]
# What a running trial's line carries by the registry, beside its count of errors.
LIVE_FIGURES = (F.ACHIEVED, F.REQUESTS, F.ERROR_RATE)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def stream_cell(cell: Cell) -> StreamCell:
    return StreamCell(
        key=cell.key, stack=cell.stack, scenario=cell.scenario, mode=str(cell.mode),
        connections=cell.connections, tool=cell.tool, protocol=cell.protocol,
        duration_s=cell.duration, rate=cell.rate_text, point=cell.point,
    )  # fmt: skip


def round_figures(cell: Cell, measured: RoundMeasured) -> list[FigureValue]:
    """The round's figures by the registry, as its records hold them: each trial's, then a
    search's replicate's (a round has one plain trial, or a WebSocket echo's beside its
    search: no figure twice); one it holds no value of (a WebSocket figure of an HTTP
    trial, CPU not counted) left out."""
    held: dict[F.Figure, float | None] = {}
    for trial in measured.trials:
        held |= F.of_record(trial, cell.mode)
    if measured.replicate is not None:
        held |= F.of_record(measured.replicate, cell.mode, replicate=True)
    return [
        FigureValue(key=f.key, unit=f.unit_in(measured.rate_unit), value=value)
        for f, value in held.items()
        if value is not None
    ]


def live_figures(figure: LiveLoad) -> list[FigureValue]:
    values = {
        F.ACHIEVED.key: figure.achieved_rps,
        F.REQUESTS.key: float(figure.requests),
        F.ERROR_RATE.key: figure.error_pct,
    }
    return [FigureValue(key=f.key, unit=f.unit, value=values[f.key]) for f in LIVE_FIGURES]


class StreamReporter:
    """Each event of a run as one JSON line to `sink`."""

    def __init__(self, sink: Sink, lost: Callable[[str], object] = lambda _: None) -> None:
        self.sink = sink
        self.lost = lost  # told once when the sink fails (its reader gone, a full disk)
        self.failed = False
        self.counter = TrialCounter()
        self.run_id = ""
        self.lock = threading.Lock()  # a running trial's line comes from the load's thread

    def _emit(self, event: StreamEvent) -> None:
        """The event's line, whole; a sink that fails ends the stream, never the run (a
        dashboard that goes away costs no measurement)."""
        line = STREAM_LINE.dump_json(event) + b"\n"
        with self.lock:
            if self.failed:
                return
            try:
                self.sink(line)
            except OSError as exc:
                self.failed = True
                self.lost(f"the stream stopped ({exc.strerror or exc}); the run goes on")

    def start(self, run_id: str, total_trials: int, plan: Plan) -> None:
        self.run_id = run_id
        self.counter.total = total_trials
        recipe = plan.recipe
        self._emit(
            RunStarted(
                at=_now(),
                run_id=run_id,
                recipe=recipe.name,
                trials=total_trials,
                rounds=recipe.trials,
                max_rounds=recipe.max_trials or recipe.trials,
                cells=[stream_cell(cell) for cell in plan.cells],
            )
        )

    def status(self, message: str) -> None:
        pass  # words for a person: the events carry what happened

    def verified(self, cell: Cell, negotiated: str) -> None:
        self._emit(
            CellVerified(at=_now(), run_id=self.run_id, cell=cell.key, negotiated=negotiated)
        )

    def live(self, cell: Cell, figure: LiveFigure) -> None:
        if isinstance(figure, LiveLoad):
            event = TrialRunning(
                at=_now(), run_id=self.run_id, cell=cell.key, elapsed_s=round(figure.elapsed_s, 2),
                duration_s=figure.duration_s, figures=live_figures(figure),
                errors=figure.errors, no_figure=None,
            )  # fmt: skip
        else:
            event = TrialRunning(
                at=_now(), run_id=self.run_id, cell=cell.key, elapsed_s=None, duration_s=None,
                figures=[], errors=None, no_figure=figure.reason,
            )  # fmt: skip
        self._emit(event)

    def trial(
        self, position: int, cells: int, round_index: int, cell: Cell, measured: RoundMeasured,
        seconds_left: float,
    ) -> None:  # fmt: skip
        self.counter.done += 1
        self._emit(
            TrialDone(
                at=_now(),
                run_id=self.run_id,
                cell=cell.key,
                round=round_index,
                trials_done=self.counter.done,
                trials_total=self.counter.total,
                seconds_left=round(seconds_left, 1),
                ranked_by=measured.ranked_by,
                started_at=[t.started_at for t in measured.trials],
                figures=round_figures(cell, measured),
            )
        )

    def cell_failed(self, cell: Cell, reason: str) -> None:
        self.counter.total -= 1
        self._emit(CellFailed(at=_now(), run_id=self.run_id, cell=cell.key, reason=reason))

    def ranking(self, ranking: Ranking, next_round: Sequence[str]) -> None:
        self._emit(
            RankingJudged(
                at=_now(),
                run_id=self.run_id,
                decided=not ranking.still_to_decide().entrants,
                next_round=list(next_round),
                rankings=[
                    PointRanking.model_validate(dataclasses.asdict(p.as_json()))
                    for p in ranking.points.values()
                ],
            )
        )

    def extend(self, trials: int) -> None:
        self.counter.total += trials

    def finish(self, status: str, reason: str | None) -> None:
        self._emit(
            RunFinished(
                at=_now(),
                run_id=self.run_id,
                status=status,
                reason=reason,
                trials_done=self.counter.done,
            )
        )


class Reporters:
    """Several reporters as one: each event to each, in order."""

    def __init__(self, *reporters: Any) -> None:
        self.reporters = reporters

    def start(self, run_id: str, total_trials: int, plan: Plan) -> None:
        for reporter in self.reporters:
            reporter.start(run_id, total_trials, plan)

    def status(self, message: str) -> None:
        for reporter in self.reporters:
            reporter.status(message)

    def verified(self, cell: Cell, negotiated: str) -> None:
        for reporter in self.reporters:
            reporter.verified(cell, negotiated)

    def live(self, cell: Cell, figure: LiveFigure) -> None:
        for reporter in self.reporters:
            reporter.live(cell, figure)

    def trial(
        self, position: int, cells: int, round_index: int, cell: Cell, measured: RoundMeasured,
        seconds_left: float,
    ) -> None:  # fmt: skip
        for reporter in self.reporters:
            reporter.trial(position, cells, round_index, cell, measured, seconds_left)

    def cell_failed(self, cell: Cell, reason: str) -> None:
        for reporter in self.reporters:
            reporter.cell_failed(cell, reason)

    def ranking(self, ranking: Ranking, next_round: Sequence[str]) -> None:
        for reporter in self.reporters:
            reporter.ranking(ranking, next_round)

    def extend(self, trials: int) -> None:
        for reporter in self.reporters:
            reporter.extend(trials)

    def finish(self, status: str, reason: str | None) -> None:
        for reporter in self.reporters:
            reporter.finish(status, reason)
