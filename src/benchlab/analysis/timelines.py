"""A cell's fixed-rate trials second by second (load/timeline.py): the trials its figures
come from, each with its round and the rate it was asked for, as reports show them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchlab.load.result import Timeline
from benchlab.store import TrialRecord


@dataclass(frozen=True)
class TrialTimeline:
    round: int
    target_rate: float | None
    timeline: Timeline

    def to_json(self) -> dict[str, Any]:
        return {"round": self.round, "target_rate": self.target_rate, **self.timeline.to_json()}


def trial_timelines(trials: Sequence[TrialRecord]) -> tuple[TrialTimeline, ...]:
    """Each trial that kept its latency over time (a fixed-rate trial read request by
    request, stored since schema 9), in the order given."""
    return tuple(
        TrialTimeline(trial.round, trial.target_rate, timeline)
        for trial in trials
        if (timeline := trial.timeline) is not None
    )
