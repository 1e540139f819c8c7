"""The records a cell's figures are made of, chosen once (`counted`, which the one builder of
a cell's result calls): a closed-loop or fixed-rate cell's own trials (not its probes); a
capacity search's sustained replicates, with each one's trial at the capacity it found."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from benchlab.analysis.capacity import sustained
from benchlab.core.modes import Mode
from benchlab.core.request_errors import Errors
from benchlab.load.ws_requests import REFUSED
from benchlab.store import CapacityRecord, TrialRecord


@dataclass(frozen=True)
class CellRecords:
    """The trials and replicates a cell counts."""

    trials: list[TrialRecord]
    capacities: list[CapacityRecord]  # a search's sustained replicates; none otherwise


def own_trials(trials: Sequence[TrialRecord]) -> list[TrialRecord]:
    """A cell's own trials, not a search's probes: a closed-loop or fixed-rate cell's figures,
    and ws-echo's fixed-rate trial beside an [slo]'s search."""
    return [t for t in trials if t.probe is None]


def refused_opens(trial: TrialRecord) -> int | None:
    """The opens a WebSocket hold's server refused, where refusing is why its steps ended
    (the store keeps them as its connect errors); None: no hold, or one that ended otherwise."""
    return trial.errors_connect if trial.ws_hold_stop == REFUSED else None


def reported_errors(trial: TrialRecord) -> Errors:
    """A trial's errors as every report counts them: what went wrong, not what a hold's stop
    reason already explains (a server that refused past its limit: the hold's finding)."""
    if refused_opens(trial) is not None:
        return dataclasses.replace(trial.errors, connect=0)
    return trial.errors


def counted(
    mode: Mode, trials: Sequence[TrialRecord], capacities: Sequence[CapacityRecord]
) -> CellRecords:
    """The trials and replicates a cell of `mode` counts, of those stored."""
    if mode == Mode.SLO:
        found = sustained(capacities)
        return CellRecords(_at_capacity(trials, found), found)
    return CellRecords(own_trials(trials), [])


def _at_capacity(
    trials: Sequence[TrialRecord], capacities: Sequence[CapacityRecord]
) -> list[TrialRecord]:
    """Each replicate's trial at the capacity it found (the highest rate that held)."""
    found = []
    for record in capacities:
        if record.bracket_low_rps is None:
            continue
        at = [
            t for t in trials
            if t.round == record.round and t.probe in ("step", "search", "confirm")
            and t.target_rate == record.bracket_low_rps
        ]  # fmt: skip
        if at:
            found.append(at[-1])
    return found
