"""A cell's fixed-rate trials second by second (load/timeline.py): the trials its figures
come from, each with its round and the rate it was asked for, as reports show them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchlab.core.latency_timeline import Timeline
from benchlab.store import TrialRecord


@dataclass(frozen=True)
class TrialTimeline:
    round: int
    target_rate: float | None
    timeline: Timeline

    def as_json(self) -> TrialTimelineJson:
        return TrialTimelineJson(self.round, self.target_rate, **self.timeline.to_json())


@dataclass(frozen=True)
class TrialTimelineJson:
    """A fixed-rate trial second by second (what `vegeta plot` draws): step i covers
    [t_s[i], t_s[i] + step_s) seconds after the trial's first request was sent."""

    round: int
    target_rate: float | None  # the rate the trial was asked for
    step_s: int  # 1, or more for a trial over 600 s (at most 600 steps)
    t_s: list[int]
    # The p50 and p99 of the requests sent in the step, from their due time; null: none was.
    p50_ms: list[float | None]
    p99_ms: list[float | None]
    achieved_rps: list[float]  # successful answers (2xx, 3xx) that came back in the step, /s
    errors: list[int]  # failed requests (no answer, or 4xx/5xx) whose failure came in the step


def trial_timelines(trials: Sequence[TrialRecord]) -> tuple[TrialTimeline, ...]:
    """Each trial that kept its latency over time (a fixed-rate trial read request by
    request, stored since schema 9), in the order given."""
    return tuple(
        TrialTimeline(trial.round, trial.target_rate, timeline)
        for trial in trials
        if (timeline := trial.timeline) is not None
    )
