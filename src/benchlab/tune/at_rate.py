"""`benchlab tune --rate R`: the cheapest candidate that holds R under the target.

After the first pass, every candidate whose closed loop reached R with the spare capacity a
rate to run at keeps (R ÷ capacity.RUN_AT_MEDIAN_SHARE: no capacity can pass what a closed
loop serves) is replayed at R by its printed command, cheapest first (tune_choice.cost:
fewest workers or smallest knob values, then least memory, then least CPU per request, as
its first pass measured them) and judged by the proof's rule (every ~2-s window under the
target). The first that holds is the answer, with that replay as its proof. When none
does, the tune goes on as without --rate, and its answer says how far the most it holds is
from R.
"""

from __future__ import annotations

from collections.abc import Callable

from benchlab.analysis.capacity import RUN_AT_MEDIAN_SHARE, RUN_AT_SPARE_PCT
from benchlab.analysis.tune_choice import Cost, cost
from benchlab.recipe import CoreAssignment
from benchlab.runner import Measurer
from benchlab.store import TrialRecord
from benchlab.tune.candidates import Candidate
from benchlab.tune.proof import PROOF_S, Searched, held_text, replay_at
from benchlab.tune.session import TuneSession


def first_pass_cost(candidate: Candidate, trial: TrialRecord) -> Cost:
    """What a candidate costs to run, as its first pass measured it (tune_choice.cost)."""
    return cost(candidate.size, trial.server_rss_mb, trial.cpu_us_per_request)


def needed_closed_rps(rate: float) -> float:
    """The closed-loop throughput a candidate needs to run at `rate` with capacity to spare."""
    return rate / RUN_AT_MEDIAN_SHARE


def reachable(session: TuneSession, first_pass: list[Searched], rate: float) -> list[Searched]:
    """The candidates whose first pass served `rate` in a closed loop with capacity to
    spare, cheapest first."""
    costed = []
    for entry in first_pass:
        trials = session.cells.trials_of(entry.cell)
        if session.cells.failure_of(entry.cell) is not None or not trials:
            continue
        trial = trials[-1]
        if trial.throughput_rps < needed_closed_rps(rate):
            continue
        costed.append((first_pass_cost(entry.candidate, trial), entry))
    return [entry for _, entry in sorted(costed, key=lambda c: c[0])]


def cheapest_at(
    session: TuneSession,
    measurer: Measurer,
    first_pass: list[Searched],
    cores: CoreAssignment,
    connections: int,
    rate: float,
    say: Callable[[str], None],
    proof_s: int = PROOF_S,
) -> Searched | None:
    """Replay the reachable candidates at `rate`, cheapest first, until one holds; its
    judgement (and each miss's) is stored in the replay cell's facts, keyed by the first
    pass's cell."""
    possible = reachable(session, first_pass, rate)
    if not possible:
        best = max((_closed(session, e) for e in first_pass), default=0.0)
        say(f"no candidate reached {needed_closed_rps(rate):,.0f} {session.unit} even in a "
            f"closed loop ({rate:,.0f} with {RUN_AT_SPARE_PCT} % to spare; the most: "
            f"{best:,.0f}): looking for the most that holds instead")  # fmt: skip
        return None
    for index, entry in enumerate(possible):
        label = session.cells.label_of(entry.cell)
        replayed = replay_at(
            session, measurer, entry, rate, cores, connections, proof_s, 0, extends_plan=index > 0
        )
        if replayed is None:
            say(f"{rate:,.0f} {session.unit}: no budget left to replay {label} (raise --budget)")
            return None
        if replayed.trial is None:
            say(f"{label} at {rate:,.0f} {session.unit}: {replayed.problem}")
            continue
        if replayed.missed is None:
            held = held_text(replayed.trial.windows_p99, replayed.trial.latency_p99_ms)
            say(f"{label} held {rate:,.0f} {session.unit} for {proof_s} s ({held}): the cheapest")
            return entry
        say(f"{label} missed {rate:,.0f} {session.unit} over {proof_s} s ({replayed.missed})")
    return None


def _closed(session: TuneSession, entry: Searched) -> float:
    trials = session.cells.trials_of(entry.cell)
    return trials[-1].throughput_rps if trials else 0.0
