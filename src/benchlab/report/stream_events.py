"""The events of a run's stream (`--progress json`, `--progress-file`), declared once: each a
dataclass whose fields are its JSON line's keys, in the order they are written, every line
stamped with the stream's format and version (json_formats.STREAM) first. The published
schema (docs/schemas/benchlab-stream-1.schema.json) is generated from these
(json_schemas.py); a test validates every line a real run writes against it.

A figure travels by its key in the figure registry (core/figures.py) with its unit and its
value as the results store keeps it, never as words: a dashboard reads `p99` in a trial's
line as the run's JSON report names it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

from pydantic import ConfigDict, Field, TypeAdapter

from benchlab.report.json_schemas import PointRanking


class _Line:
    # Closed, as the other formats' models are; a key with a default is still written on
    # every line, so the schema requires it.
    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(
        extra="forbid", json_schema_serialization_defaults_required=True
    )


@dataclass(frozen=True, kw_only=True)
class StreamCell(_Line):
    """A cell as the run planned it."""

    key: str
    """The cell's key: as the run's JSON report (`cells[].key`) and every event name it."""
    stack: str
    scenario: str
    mode: str
    """closed, rate or slo (core/modes.py)."""
    connections: int
    tool: str
    protocol: str
    duration_s: int
    rate: str
    """A fixed rate as the recipe gives it ("2,000/s", or "60%" of the cell's closed-loop
    throughput); empty for a closed loop."""
    point: str | None


@dataclass(frozen=True, kw_only=True)
class FigureValue(_Line):
    """One figure of the registry: its key, its unit, its value (one not measured is not
    listed)."""

    key: str
    """As a cell's figure in the run's JSON report (`throughput_rps`, `p99`, ...)."""
    unit: str
    value: float


@dataclass(frozen=True, kw_only=True)
class _Event(_Line):
    format: Literal["benchlab-stream"] = "benchlab-stream"
    format_version: Literal[1] = 1
    at: str
    """When it happened: UTC, ISO 8601."""
    run_id: str


@dataclass(frozen=True, kw_only=True)
class RunStarted(_Event):
    event: Literal["run_started"] = "run_started"
    recipe: str
    trials: int
    """The trials planned (adaptive rounds add to it: see `trial.trials_total`)."""
    rounds: int
    """The recipe's rounds; `max_rounds` the most an undecided pair gets."""
    max_rounds: int
    cells: list[StreamCell]


@dataclass(frozen=True, kw_only=True)
class CellVerified(_Event):
    """The cell's answers were checked right, the first time in this run."""

    event: Literal["cell_verified"] = "cell_verified"
    cell: str
    negotiated: str
    """What a client asking over the cell's protocol got ("HTTP/2 over TLSv1.3"); empty
    where only the answer was checked (tune --check-only)."""


@dataclass(frozen=True, kw_only=True)
class TrialRunning(_Event):
    """A fixed-rate trial while it runs, about once a second: its figures so far, as its
    load tool counts them; or, once at its start, why it has none until it ends."""

    event: Literal["trial_running"] = "trial_running"
    cell: str
    elapsed_s: float | None
    duration_s: float | None
    figures: list[FigureValue]
    """achieved_rps, requests and error_pct so far (empty when `no_figure` says why)."""
    errors: int | None
    """Failed requests so far (a transport error or a status outside 2xx-3xx)."""
    no_figure: str | None


@dataclass(frozen=True, kw_only=True)
class TrialDone(_Event):
    """A cell's round, stored: its figures as the results store then holds them."""

    event: Literal["trial"] = "trial"
    cell: str
    round: int
    """0 for the first, as the store keeps it (`report -f json --trials`)."""
    trials_done: int
    trials_total: int
    seconds_left: float
    ranked_by: str
    """The key of the figure the cell is ranked by."""
    started_at: list[str]
    """When each trial of the round started, as the store keeps it (a search's round: none
    of its own; its replicate's figures are `capacity_rps` and its probes)."""
    figures: list[FigureValue]


@dataclass(frozen=True, kw_only=True)
class CellFailed(_Event):
    event: Literal["cell_failed"] = "cell_failed"
    cell: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class RankingJudged(_Event):
    """The run's ranking as the runner judged it to choose its next round: decided (no
    round would settle anything more), or the cells the next round measures; after the last
    round it may take, `next_round` is empty whether it is decided or not."""

    event: Literal["ranking"] = "ranking"
    decided: bool
    next_round: list[str]
    rankings: list[PointRanking]  # type: ignore[valid-type]
    """Each grid point's order, as the run's JSON report's `rankings`."""


@dataclass(frozen=True, kw_only=True)
class RunFinished(_Event):
    event: Literal["run_finished"] = "run_finished"
    status: str
    """complete, partial, interrupted or failed."""
    reason: str | None
    trials_done: int


StreamEvent = (
    RunStarted | CellVerified | TrialRunning | TrialDone | CellFailed | RankingJudged | RunFinished
)
# One line of the stream: any event, told apart by its `event`.
STREAM_LINE: TypeAdapter[StreamEvent] = TypeAdapter(
    Annotated[StreamEvent, Field(discriminator="event")]
)
