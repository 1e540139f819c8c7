"""A tune's last step: the recommended command, run exactly as printed, holds the rate it
says to run at in every window of a sustained replay, or the rate steps down until it does.

The capacity search judges a rate by a few 2-s windows; a queue that grows by a few
requests a second shows only later (DESIGN: a Django site held 378 req/s in its search and
gave p99 190 ms over 10 s), and at a capacity's knee one window's p99 swings from 13 to
180 ms. The proof replays the printed command, fresh and warmed up, for `--proof` seconds
(60 by default) at the rate every search replicate held, and judges it by the search's
delivery rule, the latency trend, and the p99 of every ~2-s window: one window over the
target, or more than one in 30 over the target divided by its headroom, and the rate steps
down (capacity.PROOF_WINDOWS_MISSED and PROOF_HEADROOM, and why, there).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from benchlab.analysis import capacity
from benchlab.analysis.cell_result import stored_ranking
from benchlab.analysis.proof_record import ProofJudgement
from benchlab.analysis.tune_choice import Cost, choose
from benchlab.core.modes import Mode
from benchlab.load import RATE_TOOL, TOOLS
from benchlab.recipe import Cell, CoreAssignment
from benchlab.runner import Measurer
from benchlab.store import TrialRecord
from benchlab.tune.candidates import SCENARIO, Candidate
from benchlab.tune.session import TuneSession

PROOF_S = capacity.PROOF_S
PROOF_STEPS = 4  # the rate found, then at most three steps down (within the budget)
PROOF_REPLAYS = 2  # replays the plan keeps room for when it can: the first may miss
# A replay's warm-up, at its rate: at least as long as the acceptance replay's (5 s), and
# until each worker has served about WARM_REQUESTS_PER_WORKER requests, at most 10 s.
# Measured (issue 38): Wagtail's proofs with the search's 1-s warm-up (31–50 req/s over 3
# workers, ten requests each) missed only in their first window, at every rate tried (374,
# 233, 249 ms; the rest 13–55 ms), and stepped down from a rate its replay held.
PROOF_WARMUP_S = 5.0
PROOF_WARMUP_MAX_S = 10.0
WARM_REQUESTS_PER_WORKER = 100


def proof_warmup_s(rate: float, workers: int) -> float:
    """How long a replay at `rate` over `workers` workers warms up first."""
    wanted = WARM_REQUESTS_PER_WORKER * workers / rate if rate > 0 else PROOF_WARMUP_MAX_S
    return round(min(PROOF_WARMUP_MAX_S, max(PROOF_WARMUP_S, wanted)), 1)


def proof_cost_s(proof_s: float = PROOF_S, warmup_s: float = PROOF_WARMUP_S) -> float:
    """A launch, its verification, the warm-up, the replay and the load tool's start."""
    return 3.0 + 1 + warmup_s + proof_s + 1.0


@dataclass(frozen=True)
class Searched:
    """A candidate of the capacity search and its cell."""

    candidate: Candidate
    cell: Cell


def best_searched(
    session: TuneSession, searched: list[Searched], costs: Mapping[Candidate, Cost]
) -> tuple[Searched, list[float]] | None:
    """The answer as the run stands (tune_choice.choose: the cheapest candidate of the
    capacity Ranking's top tier), and its replicates' capacities."""
    by_key = {entry.cell.key: entry for entry in searched}
    held = {}
    for key, entry in by_key.items():
        if session.cells.failure_of(entry.cell) is not None:
            continue
        records = capacity.sustained(session.cells.capacities_of(entry.cell))
        values = [c.capacity_rps for c in records]
        if any(v > 0 for v in values):
            held[key] = values
    ranking = stored_ranking(session.store, session.run_id, session.run_options)
    cheapest = {key: costs.get(entry.candidate, ()) for key, entry in by_key.items()}
    choice = choose(ranking, cheapest, set(held))
    if choice is None:
        return None
    return by_key[choice.best], held[choice.best]


def proof_cell(
    candidate: Candidate, cores: CoreAssignment, rate: float, connections: int,
    proof_s: int = PROOF_S, tool: str = RATE_TOOL,
) -> Cell:  # fmt: skip
    """A replay of `candidate` at `rate` with the search's tool (vegeta; JMeter for a
    WebSocket echo) and connections."""
    threads = TOOLS[tool].threads_for(None, connections, len(cores.load))
    return Cell(
        stack=candidate.replay_stack, scenario=SCENARIO, tool=tool,
        connections=connections, threads=threads, duration=proof_s, timeout=2,
        workers=candidate.workers, server_threads=candidate.threads, mode=Mode.RATE, rate=rate,
        warmup_s=proof_warmup_s(rate, candidate.workers),
    )  # fmt: skip


@dataclass(frozen=True)
class Replayed:
    """One replay of a candidate's printed command at a rate: its trial and why it missed
    (None: it held), or why it has no trial."""

    trial: TrialRecord | None
    missed: str | None = None
    problem: str | None = None


def replay_at(
    session: TuneSession, measurer: Measurer, entry: Searched, rate: float,
    cores: CoreAssignment, connections: int, proof_s: int, step: int, extends_plan: bool,
) -> Replayed | None:  # fmt: skip
    """`entry`'s printed command replayed at `rate` and judged by the proof's rule, its
    judgement (as step `step` of its proof) stored in the replay cell's facts; None: the
    budget has no room for it. The plan counted one replay: each after it extends it."""
    cell = proof_cell(entry.candidate, cores, rate, connections, proof_s, entry.cell.tool)
    if session.clock.seconds_left() < proof_cost_s(proof_s, cell.warmup_s or 0.0):
        return None
    if extends_plan:
        session.extend_plan(1)
    session.cells.add([cell])
    measurer.measure([cell], 1)
    trials, failure = session.cells.trials_of(cell), session.cells.failure_of(cell)
    if failure is not None or not trials:
        return Replayed(None, problem=failure.reason if failure else "no trial")
    missed = capacity.proof_miss(trials[-1], session.objective())
    judged = ProofJudgement(
        of_cell=entry.cell.key, of=session.cells.label_of(entry.cell), step=step,
        held=missed is None, missed=missed, windows_p99_ms=tuple(trials[-1].windows_p99 or ()),
    )  # fmt: skip
    session.cells.add_facts(cell, judged.facts())
    return Replayed(trials[-1], missed)


def prove(
    session: TuneSession,
    measurer: Measurer,
    searched: list[Searched],
    cores: CoreAssignment,
    connections: int,
    say: Callable[[str], None],
    proof_s: int = PROOF_S,
    costs: Mapping[Candidate, Cost] | None = None,
) -> tuple[Searched, float | None] | None:
    """Replay the best candidate's printed command at the rate to run at; step down while
    it misses, within the budget. Each step's judgement is stored in its cell's facts.
    The best candidate and a rate it serves: the one its replay held, or (none held) the
    search's rate to run at; None: no candidate found a capacity."""
    best = best_searched(session, searched, costs or {})
    if best is None:
        return None
    entry, capacities = best
    held = _held_rate(session, measurer, entry, capacities, cores, connections, say, proof_s)
    return entry, held or capacity.rate_to_run_at(capacities)


def _held_rate(
    session: TuneSession, measurer: Measurer, entry: Searched, capacities: list[float],
    cores: CoreAssignment, connections: int, say: Callable[[str], None], proof_s: int,
) -> float | None:  # fmt: skip
    rate = capacity.rate_to_run_at(capacities)
    label = session.cells.label_of(entry.cell)
    for step in range(PROOF_STEPS):
        if rate is None or rate <= 0:
            return None
        replayed = replay_at(
            session, measurer, entry, rate, cores, connections, proof_s, step, extends_plan=step > 0
        )
        if replayed is None:
            say(f"proof of {label}: no budget left for a {proof_s}-s replay at {rate:,.0f} "
                f"{session.unit}")  # fmt: skip
            return None
        if replayed.trial is None:
            say(f"proof of {label}: {replayed.problem}")
            return None
        missed = replayed.missed
        if missed is None:
            held = held_text(replayed.trial.windows_p99, replayed.trial.latency_p99_ms)
            what = "its command as printed" if entry.candidate.replay else "it, as it runs,"
            say(f"proof of {label}: {what} held {rate:,.0f} {session.unit} for "
                f"{proof_s} s ({held})")  # fmt: skip
            return rate
        rate_before, rate = rate, capacity.step_down(rate, step + 1)
        say(f"proof of {label}: {rate_before:,.0f} {session.unit} missed over {proof_s} s "
            f"({missed})"
            + (f"; trying {rate:,.0f}" if step + 1 < PROOF_STEPS else ""))  # fmt: skip
    return None


def held_text(windows: list[float], p99_ms: float | None) -> str:
    if not windows:
        return f"p99 {p99_ms or 0.0:,.1f} ms"
    return (
        f"every one of its {len(windows)} windows under the target: p99 "
        f"{min(windows):,.1f}–{max(windows):,.1f} ms"
    )
