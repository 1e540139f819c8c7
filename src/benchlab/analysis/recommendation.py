"""The answer of a tune: the candidate that holds the most load under the SLO, the ones
that are as good within the noise (cheapest first), the command that deploys it, why (in
one sentence drawn from the measurements), and what the measurements show about the app."""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass, field
from typing import Any, TypeVar

from benchlab.analysis import tune_choice
from benchlab.analysis.capacity import (
    PROOF_HEADROOM,
    PROOF_SPIKE_WINDOWS,
    RUN_AT_MEDIAN_SHARE,
    rate_to_run_at,
)
from benchlab.analysis.cell_result import CellResult
from benchlab.analysis.noise import NoiseComponents
from benchlab.analysis.proof_record import ProofJudgement
from benchlab.analysis.repeat import Repeat, repeat_of
from benchlab.analysis.run_options import RunOptions
from benchlab.analysis.stats import Estimate
from benchlab.analysis.summary import CellSummary, RunSummary
from benchlab.analysis.tune_choice import FIRST_PASS_TIE, Choice, Cost, FirstPass, choose, cost
from benchlab.analysis.verdicts import BLOCKED, ERRORS
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.resilience.facts import ANSWER_CONFORMANCE, NotChecked
from benchlab.resilience.slow_clients import SlowClients
from benchlab.stacks.servers import KIND_BY_NAME, IoModel, PerWorker
from benchlab.store import CELL_CHECKED

# A candidate's cell fact: what it is given (tune_choice.cost), stored with its first pass.
CANDIDATE_SIZE = "candidate_size"

E = TypeVar("E", IoModel, PerWorker)


@dataclass(frozen=True)
class CandidateResult:
    label: str
    candidate: str  # its kind, as tune names it (gunicorn-gthread): what --check-answer reads
    server: str
    worker_class: str
    workers: int
    threads: int | None
    command: str
    # searched, dropped (far below the best in the first pass), failed, checked (its answer
    # right, nothing measured: tune --check-only)
    status: str
    closed_rps: float | None  # the first pass: closed-loop throughput
    capacity: Estimate | None
    p99_ms: float | None  # at the capacity
    cpu_us_per_request: float | None
    rss_mb: float | None
    alone_ms: float | None
    verdicts: dict[str, str] = field(default_factory=dict)  # both passes'
    at_capacity: dict[str, str] = field(default_factory=dict)  # the search's verdicts only
    reason: str | None = None
    one_at_a_time: bool = False
    concurrency: PerWorker | None = None
    # Its server's I/O model is known (a Python app's server kind); not for a command's or
    # an endpoint's server, of which nothing but its answers is known.
    served_known: bool = True
    bracketed: bool = True  # False: no rate the search tried missed; the capacity is a bound
    replicates: tuple[float, ...] = ()  # each search replicate's capacity
    key: str | None = None  # its search cell's key (a proof names the cell it replayed)
    first_key: str | None = None  # its first-pass cell's key (what a --rate replay names)
    # The server's own count in the first pass (a closed loop): its threads' wait for the
    # GIL ÷ their time with a request; None: its server keeps no such count.
    gil_wait_share: float | None = None
    # Its command beside slow clients, and its HTTP/1.1 parsing (conformance facts), both
    # checked for the answer only (tune/proxy_check.py).
    slow_clients: SlowClients | NotChecked | None = None
    parsing: dict[str, Any] | None = None
    # What it costs to run, as its first pass measured it (tune_choice.cost: cheapest first).
    first_cost: Cost = ()

    @property
    def first_pass(self) -> FirstPass | None:
        """Its first pass as the screen reads it (None: nothing measured)."""
        if self.first_key is None or not self.closed_rps or self.status == "failed":
            return None
        return FirstPass(self.first_key, self.closed_rps, self.first_cost)

    def to_json(self) -> dict[str, Any]:
        capacity = self.capacity
        return {
            "label": self.label,
            "candidate": self.candidate,
            "server": self.server,
            "worker_class": self.worker_class,
            "workers": self.workers,
            "threads": self.threads,
            "command": self.command,
            "status": self.status,
            "closed_loop_rps": self.closed_rps,
            "capacity_rps": None
            if capacity is None
            else {
                "median": capacity.median,
                "low": capacity.low if capacity.n > 1 else None,
                "high": capacity.high if capacity.n > 1 else None,
                "n": capacity.n,
                "bracketed": self.bracketed,
            },
            "p99_ms_at_capacity": self.p99_ms,
            "cpu_us_per_request": self.cpu_us_per_request,
            "rss_mb": self.rss_mb,
            "latency_alone_ms": self.alone_ms,
            "gil_wait_share": self.gil_wait_share,
            "verdicts": list(self.verdicts),
            "verdict_sentences": self.verdicts,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class ProofStep:
    """One sustained window of the printed command at a fixed rate."""

    rate: float
    p99_ms: float | None
    errors: int
    delivered: float | None  # achieved ÷ asked
    held: bool
    missed: str | None  # why not, when it did not hold
    duration_s: float
    windows_p99_ms: tuple[float, ...] = ()  # the p99 of each of its consecutive windows
    cell: str = ""  # the key of its replay's cell

    def to_json(self) -> dict[str, Any]:
        return {
            "rate": self.rate, "p99_ms": self.p99_ms, "errors": self.errors,
            "delivered": self.delivered, "held": self.held, "missed": self.missed,
            "duration_s": self.duration_s, "windows_p99_ms": list(self.windows_p99_ms),
        }  # fmt: skip


@dataclass(frozen=True)
class Proof:
    """The recommended command replayed as printed: its steps, from the rate to run at down."""

    steps: list[ProofStep]

    @property
    def final(self) -> ProofStep:
        """The step that held, or the last one tried."""
        return next((s for s in self.steps if s.held), self.steps[-1])

    def to_json(self) -> dict[str, Any]:
        return {**self.final.to_json(), "steps": [s.to_json() for s in self.steps]}


# How the rate to run at is chosen (capacity.proof_miss judges it).
_START = (
    f"the lowest replicate's capacity or {RUN_AT_MEDIAN_SHARE * 100:.0f} % of the median, "
    "whichever is lower"
)
RUN_AT_RULE = (
    "the highest rate whose replay of the printed command held the p99 target in every ~2-s "
    f"window, and {PROOF_HEADROOM:g}× under it in all but one in "
    f"{PROOF_SPIKE_WINDOWS}, down in steps from {_START}"
)
RUN_AT_UNPROVED = f"{_START} (no replay proved it)"


@dataclass(frozen=True)
class Recommendation:
    best: CandidateResult
    equals: list[CandidateResult]  # as good within the intervals, cheapest first
    reason: str
    findings: list[str]  # what the measurements show about the app itself
    # Why the answer is not final (what was not measured); None: it rests on the search.
    missing: str | None = None
    proof: Proof | None = None
    goal_rps: float | None = None  # --rate: the load asked for
    # This machine's measured noise, when selfcheck --noise measured it: how far a second
    # tune may move the answer (`repeat`).
    noise: NoiseComponents | None = None
    # What its rates count a second: the tune's own (tune_rate_unit; a WebSocket tune's
    # messages), else requests.
    rate_unit: str = F.REQ_S

    @property
    def provisional(self) -> bool:
        return self.missing is not None

    @property
    def holds_goal(self) -> bool:
        """--rate: this candidate's replay at the load asked for held."""
        final = self.proof.final if self.proof is not None else None
        return (
            self.goal_rps is not None
            and final is not None
            and final.held
            and (final.rate == self.goal_rps)
        )

    @property
    def short_pct(self) -> float | None:
        """--rate, when nothing held it: how far under it the most that holds is (None when
        the most that holds is at or above it: the search's best held more than was asked)."""
        if self.goal_rps is None or self.holds_goal:
            return None
        run_at = self.run_at or 0.0
        if run_at >= self.goal_rps:
            return None
        return 100.0 * (1.0 - run_at / self.goal_rps)

    @property
    def run_at(self) -> float | None:
        """The rate to run at: the one the proof held; without a proof, the one every
        replicate held; None when the proof held none of the rates it tried."""
        if self.proof is not None:
            return self.proof.final.rate if self.proof.final.held else None
        return rate_to_run_at(self.best.replicates)

    @property
    def repeat(self) -> Repeat | None:
        """Where a second tune's rate to run at would fall, 95 % of the time."""
        return repeat_of(self.run_at, self.best.replicates, self.noise)

    @property
    def margin_pct(self) -> float | None:
        """How far under the capacity's median the rate to run at is: what holding every
        window cost."""
        run_at, found = self.run_at, self.best.capacity
        if run_at is None or found is None or found.median <= 0:
            return None
        return 100.0 * (1.0 - run_at / found.median)

    def to_json(self) -> dict[str, Any]:
        best = self.best.to_json()
        held = [c for c in self.best.replicates if c > 0]
        return {
            **{
                k: best[k]
                for k in ("candidate", "server", "worker_class", "workers", "threads", "command")
            },
            "capacity_rps": best["capacity_rps"],
            "run_at_rps": self.run_at,
            "run_at_rule": RUN_AT_RULE if self.proof is not None else RUN_AT_UNPROVED,
            "run_at_margin_pct": self.margin_pct,
            "replicates_rps": {"low": min(held), "high": max(held)} if held else None,
            "repeat": repeat.to_json() if (repeat := self.repeat) is not None else None,
            "rate_goal": None
            if self.goal_rps is None
            else {
                "rps": self.goal_rps,
                "held": self.holds_goal or (self.run_at or 0.0) >= self.goal_rps,
                "short_pct": self.short_pct,
            },
            "proof": self.proof.to_json() if self.proof else None,
            "closed_loop_rps": best["closed_loop_rps"],
            "provisional": self.provisional,
            "missing": self.missing,
            "reason": self.reason,
            "equally_good": [c.to_json() for c in self.equals],
            "findings": self.findings,
            "slow_clients": _slow_clients_json(self.best.slow_clients),
            "parsing": self.best.parsing,
        }


def _slow_clients_json(found: SlowClients | NotChecked | None) -> dict[str, Any] | None:
    """The answer beside slow clients: the check's result and whether a proxy is needed."""
    if found is None:
        return None
    if isinstance(found, NotChecked):
        return {"checked": False, "problem": found.problem, "needs_proxy": None}
    return {"checked": True, **found.to_json(), "sentence": found.sentence()}


def _proof(summary: RunSummary, best: CandidateResult, of_first: bool = False) -> Proof | None:
    """The proof cells tune measured for this candidate (their facts say whom and how it went):
    those of its search cell, or with `of_first` its --rate replays (of its first pass)."""
    steps = []
    key = best.first_key if of_first else best.key
    for cell in summary.cells:
        judged = ProofJudgement.of_facts(cell.result.facts)
        if cell.record.mode != Mode.RATE or judged is None or not judged.proves(key, best.label):
            continue
        steps.append(
            (
                judged.step,
                ProofStep(
                    rate=cell.value(F.TARGET_RATE) or 0.0,
                    p99_ms=cell.value(F.P99),
                    errors=sum(cell.result.errors.values()),
                    delivered=cell.value(F.RATE_RATIO),
                    held=judged.held,
                    missed=judged.missed,
                    duration_s=cell.record.duration_s,
                    windows_p99_ms=judged.windows_p99_ms,
                    cell=cell.record.key,
                ),
            )
        )
    return Proof([step for _, step in sorted(steps, key=lambda s: s[0])]) if steps else None


@dataclass(frozen=True)
class ServedBy:
    server: str  # the server's name: gunicorn, uvicorn, ...
    io_model: IoModel | None
    concurrency: PerWorker | None


def _typed(enum: type[E], value: object) -> E | None:
    """The member of `enum` stored as `value`; None for none, or one this version lacks."""
    if not isinstance(value, str):
        return None
    try:
        return enum(value)
    except ValueError:
        return None


def served_by(result: CellResult) -> ServedBy:
    """A candidate's server, I/O model and concurrency per worker, as stored with its cell;
    for a run stored before they were, those of the server kind its stack is named after."""
    facts = result.facts
    if "server_name" in facts:
        return ServedBy(
            str(facts["server_name"]),
            _typed(IoModel, facts.get("io_model")),
            _typed(PerWorker, facts.get("per_worker")),
        )
    kind = KIND_BY_NAME.get(result.stack)
    if kind is None:
        return ServedBy("?", None, None)
    return ServedBy(kind.server.name, kind.io_model, kind.concurrency)


def _key(cell: CellSummary) -> tuple[str, int, int | None]:
    return (cell.record.stack, cell.record.workers, cell.record.server_threads)


def candidate_results(summary: RunSummary) -> list[CandidateResult]:
    """Every candidate, from its first-pass cell and (if it survived) its search cell."""
    coarse = {_key(c): c for c in summary.cells if c.record.mode == Mode.CLOSED}
    search = {_key(c): c for c in summary.cells if c.record.mode == Mode.SLO}
    results = []
    for key, first in coarse.items():
        found = search.get(key)
        measured = found if found is not None and found.estimate(F.CAPACITY) else None
        if first.result.status in ("failed", CELL_CHECKED):
            status = first.result.status
        elif measured is not None:
            status = "searched"
        else:
            status = "dropped" if found is None else "not finished"
        shown = measured or first
        facts = first.result.facts
        served = served_by(first.result)
        results.append(
            CandidateResult(
                label=first.record.stack_label,
                candidate=first.record.stack,
                server=served.server,
                worker_class=str(facts.get("worker_class", "?")),
                workers=first.record.workers,
                threads=first.record.server_threads,
                command=str(facts.get("command", "")),
                status=status,
                closed_rps=first.value(F.THROUGHPUT),
                capacity=measured.estimate(F.CAPACITY) if measured else None,
                bracketed=not (measured and measured.result.unbracketed),
                replicates=tuple(measured.samples.get(F.CAPACITY.key, ())) if measured else (),
                p99_ms=measured.value(F.P99) if measured else None,
                cpu_us_per_request=shown.value(F.CPU_PER_REQUEST),
                rss_mb=shown.value(F.SERVER_RSS),
                alone_ms=first.result.alone_ms,
                verdicts={v.name: v.sentence for c in (first, found) if c for v in c.verdicts},
                at_capacity={v.name: v.sentence for v in measured.verdicts} if measured else {},
                reason=(
                    found.record.reason
                    if found is not None and found.result.status == "failed"
                    else None
                )
                or first.record.reason,
                one_at_a_time=served.io_model is IoModel.PROCESSES,
                served_known=served.io_model is not None,
                concurrency=served.concurrency,
                key=found.record.key if found is not None else None,
                first_key=first.record.key,
                gil_wait_share=first.value(F.GIL_WAIT),
                slow_clients=(found.result.slow_clients if found is not None else None)
                or first.result.slow_clients,
                parsing=(found.result.facts.get(ANSWER_CONFORMANCE) if found is not None else None)
                or first.result.facts.get(ANSWER_CONFORMANCE),
                first_cost=cost(
                    _size(first), first.value(F.SERVER_RSS), first.value(F.CPU_PER_REQUEST)
                ),
            )
        )
    return results


def _size(cell: CellSummary) -> tuple[float, ...]:
    """What a candidate is given, as tune stored it with its first pass (CANDIDATE_SIZE);
    a run stored before it did: its workers."""
    stored = cell.result.facts.get(CANDIDATE_SIZE)
    if isinstance(stored, list):
        return tuple(float(v) for v in stored)
    return (float(cell.record.workers),)


def _searched(c: CandidateResult) -> Estimate:
    """The capacity of a candidate the search measured (its callers kept only those)."""
    assert c.capacity is not None, c.label
    return c.capacity


def _provisional(summary: RunSummary, results: list[CandidateResult]) -> Recommendation | None:
    """Without a capacity, the best first pass: what was measured, labelled as such."""
    first = _first_passes(results)
    order = first_pass_order(list(first), summary.options)
    if not order:
        return None
    measured = list(first.values())
    best = first[order[0]]
    quick = summary.options.tune is not None and summary.options.tune.quick
    held_none = any(c.capacity is not None for c in results)
    missing = (
        "no capacity search (--quick): ranked by the first pass's closed-loop throughput; "
        "run without --quick for the load it holds under the SLO"
        if quick
        else "the capacity search found no rate that held the SLO over a sustained window "
        "(rates held in short steps missed when sustained): ranked by the first pass's "
        "closed-loop throughput; the target may be out of this app's reach here"
        if held_none
        else "the capacity search did not finish within the budget: ranked by the first "
        "pass's closed-loop throughput; raise --budget (or --resume) for the load it holds "
        "under the SLO"
    )
    reason = (
        f"the highest closed-loop throughput of the {len(measured)} candidate(s) measured "
        f"({best.closed_rps:,.0f} {tune_rate_unit(summary)}, every connection busy: not a rate "
        "to run at)"
    )
    reason = _with_gil_wait(reason, best, results)
    return Recommendation(best, [], reason, _findings(results), missing)


def recommend(summary: RunSummary) -> tuple[Recommendation | None, list[CandidateResult]]:
    results = candidate_results(summary)
    goal = summary.options.tune.rate if summary.options.tune is not None else None
    if goal:
        cheapest = _cheapest_at(summary, results, float(goal))
        if cheapest is not None:
            return _with_noise(cheapest, summary), results
    found = _most(summary, results)
    if found is not None and goal:
        found = dataclasses.replace(found, goal_rps=float(goal))
    return _with_noise(found, summary), results


def _with_noise(found: Recommendation | None, summary: RunSummary) -> Recommendation | None:
    """With this machine's noise, and the tune's rate unit."""
    if found is None:
        return None
    noise = NoiseComponents.from_json(summary.run.machine.get("noise"))
    return dataclasses.replace(found, noise=noise, rate_unit=tune_rate_unit(summary))


def tune_rate_unit(summary: RunSummary) -> str:
    """What a tune's rates count a second, as its options say (a WebSocket tune stores
    msg/s), else requests: the one reader of it."""
    return summary.options.tune_rate_unit or F.REQ_S


def _cheapest_at(
    summary: RunSummary, results: list[CandidateResult], goal: float
) -> Recommendation | None:
    """--rate: the candidate whose replay at the goal held (tune stops at the first, which
    was the cheapest of those that could reach it), and the cheaper ones that missed."""
    proved = [(c, _proof(summary, c, of_first=True)) for c in results]
    tried = [(c, p) for c, p in proved if p is not None and p.final.rate == goal]
    held = [(c, p) for c, p in tried if p.final.held]
    if not held:
        return None
    best, proof = held[0]
    missed = [c.label for c, p in tried if not p.final.held]
    cheaper = f"; cheaper ones missed it ({', '.join(missed)})" if missed else ""
    reason = (
        f"the cheapest candidate that held {goal:,.0f} {tune_rate_unit(summary)} in every "
        f"window: {best.workers} "
        f"worker(s), {best.rss_mb or 0:,.0f} MB, {best.cpu_us_per_request or 0:,.0f} µs of CPU "
        f"per request in its first pass{cheaper}"
    )
    return Recommendation(best, [], reason, _findings(results), proof=proof, goal_rps=goal)


def _first_passes(results: list[CandidateResult]) -> dict[FirstPass, CandidateResult]:
    return {m: c for c in results if (m := c.first_pass) is not None}


def first_pass_order(measured: list[FirstPass], options: RunOptions) -> list[FirstPass]:
    return tune_choice.first_pass_order(measured, options)


def candidate_order(summary: RunSummary, results: list[CandidateResult]) -> list[CandidateResult]:
    """Every candidate as a table shows them: the searched in the capacity Ranking's order,
    then the rest in the first pass's, then those that measured nothing."""
    by_key = {c.key: c for c in results if c.key is not None}
    searched = [by_key[k] for k in tune_choice.capacity_order(summary.ranking) if k in by_key]
    first = _first_passes(results)
    rest = [first[m] for m in first_pass_order(list(first), summary.options)]
    shown: list[CandidateResult] = []
    for c in [*searched, *rest, *results]:
        if not any(c is known for known in shown):
            shown.append(c)
    return shown


def choice_of(summary: RunSummary, results: list[CandidateResult]) -> Choice | None:
    """The answer as tune_choice reads it off the run's Ranking (the one the tune's proof
    replayed while it ran)."""
    eligible = {
        c.key for c in results
        if c.key is not None and c.capacity is not None and c.capacity.median > 0
    }  # fmt: skip
    costs = {c.key: c.first_cost for c in results if c.key is not None}
    return choose(summary.ranking, costs, eligible)


def _most(summary: RunSummary, results: list[CandidateResult]) -> Recommendation | None:
    """The cheapest candidate of the capacity Ranking's top tier (tune_choice)."""
    choice = choice_of(summary, results)
    if choice is None:
        return _provisional(summary, results)
    by_key = {c.key: c for c in results if c.key is not None}
    best = by_key[choice.best]
    equals = [by_key[k] for k in choice.equals]
    unit = tune_rate_unit(summary)
    reason = _with_gil_wait(
        _reason(best, results, unit, choice, by_key, summary.options), best, results
    )
    findings = _findings(results) + _unsearched_ties(best, results, unit)
    return Recommendation(best, equals, reason, findings, proof=_proof(summary, best))


def _unsearched_ties(best: CandidateResult, results: list[CandidateResult], unit: str) -> list[str]:
    """Candidates the first pass could not tell from the answer that were not searched (the
    budget searched fewer): the answer is one of them, not the only one."""
    mine = best.first_pass
    if mine is None:
        return []
    first = _first_passes(results)
    searched = {m.key for m, c in first.items() if c.capacity is not None}
    ties = [first[m] for m in tune_choice.unsearched_ties(mine, list(first), searched)]
    if not ties:
        return []
    each = ", ".join(
        f"{c.label} ({c.closed_rps:,.0f} {unit}" + (f", {c.rss_mb:,.0f} MB)" if c.rss_mb else ")")
        for c in ties
    )
    return [
        f"as fast as {best.label} in the first pass ({best.closed_rps:,.0f} {unit}; within "
        f"{FIRST_PASS_TIE:.0%}, one closed-loop trial each) but not searched, the budget searched "
        f"fewer: {each}; tune searches the cheapest of such ties"
    ]


def _reason(
    best: CandidateResult, results: list[CandidateResult], unit: str, choice: Choice,
    by_key: dict[str, CandidateResult], options: RunOptions,
) -> str:  # fmt: skip
    capacity = _searched(best).median
    if _blocked(results) and best.concurrency is None and not best.one_at_a_time:
        alone = f" (each request takes {best.alone_ms:,.0f} ms alone)" if best.alone_ms else ""
        return (
            f"the app blocks its event loop{alone}, so only worker processes add capacity: "
            f"{best.label} holds {capacity:,.0f} {unit}; remove the blocking call (await it, or "
            "run it in a thread) to hold far more"
        )
    waits = _waits_on_io(best, results, unit, choice, options)
    if waits is not None:
        return waits
    # Each worker count's first in the capacity Ranking's order.
    by_workers: dict[int, CandidateResult] = {}
    for key in (p.key for p in choice.ranked.order):
        if key in by_key:
            by_workers.setdefault(by_key[key].workers, by_key[key])
    fewest = by_workers.get(min(by_workers)) if by_workers else None
    if (
        fewest is not None and best.key is not None and fewest.key is not None
        and best.workers == max(by_workers) and best.workers > fewest.workers
        and choice.ranked.beats(best.key, fewest.key) is not None
    ):  # fmt: skip
        return (
            f"the app is bound by CPU more than by waiting: capacity follows the worker "
            f"processes ({fewest.label}: {_searched(fewest).median:,.0f} {unit}; {best.label}: "
            f"{capacity:,.0f})"
        )
    if choice.equals:
        tier = [best, *(by_key[k] for k in choice.equals)]
        values = [_searched(c).median for c in tier]
        top = choice.ranked.tiers[0]
        why = (
            "too few replicates to separate them: the evidence rule needs "
            f"{choice.ranked.evidence.min_trials} a side"
            if any(step.too_few for step in top.within)
            else "the evidence rule cannot separate them"
        )
        return (
            f"{len(tier)} candidates hold the same load within the noise "
            f"({min(values):,.0f}–{max(values):,.0f} {unit}: {why}); {best.label} is the "
            f"cheapest of them ({_cost_text(best)})"
        )
    measured = len(choice.ranked.order)
    if measured == 1:
        return f"the only candidate searched ({capacity:,.0f} {unit} under the SLO)"
    return (
        f"it holds more than the other {measured - 1} candidate(s) searched, by the evidence "
        f"rule ({capacity:,.0f} {unit} under the SLO)"
    )


def _cost_text(c: CandidateResult) -> str:
    parts = [f"{c.workers} worker(s)"] if c.workers > 1 else []
    if c.rss_mb:
        parts.append(f"{c.rss_mb:,.0f} MB")
    if c.cpu_us_per_request:
        parts.append(f"{c.cpu_us_per_request:,.0f} µs CPU/req")
    return ", ".join(parts) or "the least it is given"


GIL_HIGH = 0.25  # a share of their busy time that threads waiting for the GIL are said to cost


def _with_gil_wait(reason: str, best: CandidateResult, results: list[CandidateResult]) -> str:
    waiting = _gil_wait(best, results)
    return f"{reason}; {waiting}" if waiting is not None else reason


def _gil_wait(best: CandidateResult, results: list[CandidateResult]) -> str | None:
    """What the best candidate's server counted of its own threads' wait for the GIL, across
    the thread counts its kind was tried with (same server, worker class and workers)."""
    if best.gil_wait_share is None:
        return None
    group = sorted(
        (
            c for c in results
            if (c.server, c.worker_class, c.workers) == (best.server, best.worker_class,
                                                         best.workers)
            and c.gil_wait_share is not None and c.threads
        ),
        key=lambda c: c.threads or 0,
    )  # fmt: skip
    if not group:
        return None
    shares = ", ".join(f"{100 * (c.gil_wait_share or 0):.0f} % at t={c.threads}" for c in group)
    counted = f"{best.server}'s own counters, in a closed loop: {shares}"
    high = next((c for c in group if (c.gil_wait_share or 0) >= GIL_HIGH), None)
    below = [c for c in group if high is not None and (c.threads or 0) < (high.threads or 0)]
    if high is not None and below:
        share = 100 * (high.gil_wait_share or 0)
        return (
            f"threads beyond {below[-1].threads} wait on the GIL: {share:.0f} % of their busy "
            f"time at t={high.threads} ({counted})"
        )
    return f"its threads waited on the GIL for part of their busy time ({counted})"


def _waits_on_io(
    best: CandidateResult, results: list[CandidateResult], unit: str, choice: Choice,
    options: RunOptions,
) -> str | None:  # fmt: skip
    """The app waits on I/O when threads, greenlets or an event loop hold more than sync
    workers of as many processes: said where the capacity Ranking's evidence puts the answer
    ahead of a searched sync candidate (its ratio), or where the first pass's screen left
    them behind (tune_choice.left_behind); each figure is one candidate's own."""
    if best.one_at_a_time or best.key is None:
        return None
    sync = [c for c in results if c.one_at_a_time and c.closed_rps]
    same_workers = [c for c in sync if c.workers == best.workers] or sync
    if not same_workers:
        return None
    what = best.concurrency.value if best.concurrency else "an event loop"
    capacity = _searched(best).median
    own = f"{best.label}: {capacity:,.0f} {unit}{_cpu_text(best)}"
    for other in same_workers:
        ratio = choice.ranked.beats(best.key, other.key) if other.key is not None else None
        if ratio is not None and ratio.low >= 2:
            return (
                f"the app waits on I/O: {what} hold {ratio.value:.0f}× (at least "
                f"{ratio.low:.1f}×) the capacity of sync workers, by the evidence rule ({own}; "
                f"{other.label}: {_searched(other).median:,.0f})"
            )
    measured = [m for c in results if (m := c.first_pass) is not None]
    behind = tune_choice.left_behind(measured, options)
    dropped = [c for c in same_workers if c.first_key in behind and c.capacity is None]
    if not dropped:
        return None
    other = dropped[0]
    return (
        f"the app waits on I/O: {what} hold what sync workers cannot ({own}; {other.label}, a "
        f"request at a time, served {other.closed_rps or 0:,.0f} even in a closed loop, under "
        f"{tune_choice.SURVIVE:.0%} of the first pass's best: not searched)"
    )


def _cpu_text(c: CandidateResult) -> str:
    """A candidate's own CPU per request, as its first pass measured it."""
    if not c.cpu_us_per_request:
        return ""
    return f", {c.cpu_us_per_request:,.0f} µs of CPU a request"


def _findings(results: list[CandidateResult]) -> list[str]:
    found = []
    blocked = _blocked(results)
    if blocked:
        found.append(
            f"something blocks where the server expects no wait: {blocked[0].label}: "
            f"{blocked[0].verdicts[BLOCKED.name]}"
        )
    errors = [c for c in results if ERRORS.name in c.at_capacity]
    if errors:
        first = errors[0]
        found.append(
            f"requests fail at a load it holds: {first.label}: {first.at_capacity[ERRORS.name]}"
        )
    slope = _memory_per_worker(results)
    if slope is not None:
        found.append(f"each worker process adds about {slope:,.0f} MB of memory (RSS)")
    return found


def _blocked(results: list[CandidateResult]) -> list[CandidateResult]:
    """Candidates flagged `blocked` where nothing but the app can block: an event loop,
    greenlets. (Threads left idle behind busy connections say something about the server.)"""
    return [
        c for c in results if BLOCKED.name in c.verdicts and c.served_known
        and c.concurrency in (None, PerWorker.GREENLETS) and not c.one_at_a_time
    ]  # fmt: skip


def _memory_per_worker(results: list[CandidateResult]) -> float | None:
    """The RSS added by each worker, from candidates of one kind that differ in workers."""
    slopes = []
    kinds: dict[tuple[str, str, int | None], list[tuple[int, float]]] = {}  # workers, RSS
    for c in results:
        if c.rss_mb:
            kinds.setdefault((c.server, c.worker_class, c.threads), []).append(
                (c.workers, c.rss_mb)
            )
    for group in kinds.values():
        group = sorted(group, key=lambda kept: kept[0])
        (fewest, fewest_mb), (most, most_mb) = group[0], group[-1]
        if len(group) > 1 and most > fewest:
            slopes.append((most_mb - fewest_mb) / (most - fewest))
    return statistics.median(slopes) if slopes else None
