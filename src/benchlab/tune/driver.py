"""benchlab tune, run: find the candidate that holds the most load under a latency target,
for the user's own subject: a Python app (each server and setting its environment offers),
a server started by --command over a --grid of its knobs, or an endpoint already running,
by its URL (docs/tune.md).

1. The subject is prepared first (prepare.py: an app probed in the user's interpreter, a
   command's template read, an endpoint's answers checked), and its plan made and shown
   with its estimate (plan.py); `--budget` bounds it.
2. Every candidate is launched once (an endpoint's: none, it runs already) and measured
   briefly: its latency alone (one connection) and its closed-loop throughput. Candidates
   far below the best are dropped: their capacity cannot come close.
3. The survivors get the capacity search of `benchlab run` ([slo]): replicates in
   interleaved rounds, as many as what the first pass left of the budget allows (six give
   a 95 % interval); then the answer's proof, and its check beside slow clients.

A tune run is a run: the same store, reports and HTML page, with the recommendation on top.
`--resume` continues an interrupted tune without measuring again what it kept.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from benchlab.analysis.noise_record import noise_facts
from benchlab.analysis.recommendation import CANDIDATE_SIZE
from benchlab.analysis.run_options import RunOptions
from benchlab.analysis.tune_choice import FirstPass, screen
from benchlab.analysis.tune_options import TuneOptions
from benchlab.core.errors import UserError
from benchlab.core.modes import Mode
from benchlab.core.service_kinds import named as service_named
from benchlab.core.text import MASK, one_line
from benchlab.hosts import machine
from benchlab.recipe import Cell, CoreAssignment, Plan, Recipe, default_cores, local_only
from benchlab.runner import (
    FailureKind,
    MeasureOptions,
    Measurer,
    Reporter,
    RunOutcome,
    SessionOptions,
)
from benchlab.store import RunInfo, Store
from benchlab.system.users import running_as
from benchlab.tune.app import AppInfo
from benchlab.tune.at_rate import cheapest_at, first_pass_cost
from benchlab.tune.candidates import SCENARIO, Candidate
from benchlab.tune.check_answer import prove_stored
from benchlab.tune.check_only import check_candidates
from benchlab.tune.plan import (
    TunePlan,
    TuneRequest,
    candidate_cell,
    coarse_cost,
    fit_search,
    load_tool,
    minutes,
    plan,
    recipe_text,
    replicate_overrun_s,
    tune_recipe,
    tune_scenario,
)
from benchlab.tune.prepare import PreparedTune, prepare_tune
from benchlab.tune.proof import Replayed, Searched, proof_cost_s, prove
from benchlab.tune.proxy_check import check_answer, check_cost_s, not_asked
from benchlab.tune.session import TuneSession
from benchlab.tune.setup_step import run_setup
from benchlab.tune.subject import PythonApp, Subject


def _resumable(store: Store, key: str) -> str | None:
    for run in store.runs():
        tune = RunOptions.of_run(run).tune
        if tune is not None and tune.key == key:
            return None if run.status == "complete" else run.id
    return None


def secrets_of(request: TuneRequest) -> tuple[str, ...]:
    """What no stored field or report may show: --env and --env-file values, --setup."""
    commands = tuple(c for c in (request.setup, request.reset_between) if c)
    return (*request.env.values(), *request.env_from_file.values(), *commands)


def service_env(request: TuneRequest, session: TuneSession) -> dict[str, str]:
    """The addresses of benchlab's services in the variables the user named."""
    addresses = {
        variable: session.services.dsn(service_named(name))
        for name, variable in request.with_services.items()
    }
    return {variable: dsn for variable, dsn in addresses.items() if dsn is not None}


@dataclass
class TuneResult:
    outcome: RunOutcome
    plan: TunePlan
    survivors: list[Candidate]
    checked: Replayed | None = None  # --check-answer: the stored answer's replay


def run_tune(
    request: TuneRequest,
    store: Store,
    reporter: Reporter,
    command: str,
    say: Callable[[str], None],
    resume: bool = False,
    shared: bool = False,
    prepared: PreparedTune | None = None,
) -> TuneResult:
    prepared = prepared or prepare_tune(request)
    subject, reserved = prepared.subject, prepared.reserved
    target = request.target
    cores = target.cores(request.cores or default_cores())
    # The machine's free memory bounds the workers tried; a target's limit is the kernel's
    # to enforce, on every candidate: one that does not fit is told, not skipped.
    memory_mb = None if target.memory_mb else psutil.virtual_memory().available / 2**20
    found = subject.candidates(target.worker_cores(len(cores.server)), memory_mb)
    tune_plan = plan(
        found, request.budget_min, request.quick, request.proof_s, request.rate,
        request.check_only, request.check_answer, tune_scenario(request),
        checks_for_a_proxy(request, subject),
    )  # fmt: skip
    # From the first line said and the run's first row: the user's secrets and the services'
    # passwords (a command may name an --env value itself).
    store.keep_out(*secrets_of(request), *(r.password for r in reserved.values()))
    subject.announce(lambda text: say(store.masked(text)), running_as(subject.owner))
    say(tune_plan.describe(request.budget_min))
    recipe = tune_recipe(request, subject, found)
    previous = _resumable(store, request.key()) if resume else None
    if resume and previous is None:
        say("nothing to resume for this tune in the store: starting afresh")
    coarse_cells = [
        candidate_cell(c, cores, Mode.CLOSED, request.connections, load_tool(request))
        for c in found
    ]
    runner_plan = Plan(
        recipe=recipe, path=Path(subject.described().given), text="", cores=cores,
        cells=tuple(coarse_cells), catalogue=subject.catalogue(target.limits),
        hosts=local_only(cores),
    )  # fmt: skip
    session = TuneSession(
        runner_plan, store, reporter,
        SessionOptions(
            command, resume=previous, deadline_s=request.budget_min * 60,
            scenarios={SCENARIO: tune_scenario(request)},
            secrets=secrets_of(request), run_as=subject.owner, reserved=reserved,
        ),
        _run_info(request, subject, recipe, cores, command, shared), subject.address,
    )  # fmt: skip
    app = subject.info if isinstance(subject, PythonApp) else None
    measurer = Measurer(
        session,
        MeasureOptions(
            measure_alone=True, extra_env=lambda: service_env(request, session),
            before_launch=lambda: _reset(request, app, session, say),
        ),
    )  # fmt: skip
    survivors: list[Candidate] = []  # an interrupted tune returns what it kept
    checked: Replayed | None = None
    planned = len(found) + tune_plan.survivors * tune_plan.replicates + min(1, tune_plan.proofs)
    if request.check_answer is not None:
        planned = 1  # the stored answer's replay, nothing else
    with session.running(0 if request.check_only else planned) as outcome:
        session.cells.add(coarse_cells)
        for candidate, cell in zip(found, coarse_cells, strict=True):  # what the cheapest reads
            session.cells.add_facts(cell, {CANDIDATE_SIZE: list(candidate.size)})
        session.prepare(coarse_cells)
        if request.setup and app is not None:
            _setup(request.setup, request, app, session, say)
        if request.check_answer is not None:
            checked = prove_stored(
                session, measurer, request.check_answer, found, coarse_cells, request, say
            )
        else:
            survivors = _measure(session, measurer, request, tune_plan, found, coarse_cells, say)
    return TuneResult(outcome, tune_plan, survivors, checked)


def _measure(
    session: TuneSession, measurer: Measurer, request: TuneRequest, tune_plan: TunePlan,
    found: list[Candidate], coarse_cells: list[Cell], say: Callable[[str], None],
) -> list[Candidate]:  # fmt: skip
    """The first pass (with --check-only, each candidate's answer checked instead), then the
    cheapest that holds --rate, or the capacity search and its proof; the candidates kept.
    With --check-answer, the stored answer's proof alone."""
    if request.check_only:
        check_candidates(session, measurer, coarse_cells, say)
        _refuse_if_every_check_failed(session, coarse_cells, request)
        failed = [f for c in coarse_cells if (f := session.cells.failure_of(c)) is not None]
        if failed and len(failed) == len(coarse_cells):  # none answered: nothing to deploy
            first = one_line(failed[0].reason)
            raise UserError(f"--check-only: no candidate answered; the first: {first}")
        return []
    began = session.clock.elapsed_s()
    measurer.measure(coarse_cells, 1)
    first_pass_s = session.clock.elapsed_s() - began
    _refuse_if_every_check_failed(session, coarse_cells, request)
    if request.quick:
        return []
    cores = session.plan.cores
    first_pass = [Searched(c, cell) for c, cell in zip(found, coarse_cells, strict=True)]
    if request.rate is not None:
        held = cheapest_at(
            session, measurer, first_pass, cores, request.connections, request.rate, say,
            request.proof_s,
        )  # fmt: skip
        if held is not None:
            _check_for_a_proxy(
                session, measurer, request, held, request.rate,
                _answer_s(session, first_pass, held.candidate), say, tune_plan.answer_checked,
            )  # fmt: skip
            return [held.candidate]
    fitted = _replan(session, tune_plan, request, first_pass_s, say)
    if fitted is None:
        return []
    return _search_and_prove(session, measurer, request, tune_plan, first_pass, fitted, say)


def _search_and_prove(
    session: TuneSession, measurer: Measurer, request: TuneRequest, tune_plan: TunePlan,
    first_pass: list[Searched], fitted: tuple[int, int, int, bool], say: Callable[[str], None],
) -> list[Candidate]:  # fmt: skip
    """The capacity search of the survivors of the first pass, then the proof of the best
    and its check beside slow clients."""
    most, replicates, proofs, check = fitted
    cores = session.plan.cores
    found = [entry.candidate for entry in first_pass]
    survivors = _survivors(session, first_pass, most)
    session.reporter.extend(
        len(survivors) * replicates - tune_plan.survivors * tune_plan.replicates
    )
    say(
        f"kept {len(survivors)} of {len(found)} for the capacity search: "
        + ", ".join(c.label for c in survivors)
    )
    search_cells = [
        candidate_cell(c, cores, Mode.SLO, request.connections, load_tool(request))
        for c in survivors
    ]
    session.cells.add(search_cells)
    session.prepare(search_cells)
    searched = [Searched(c, cell) for c, cell in zip(survivors, search_cells, strict=True)]
    measurer.cells.carried.update(_carried(session, first_pass, searched))
    # The search stops launching where the proof's time begins, less what a replicate
    # launched just before that takes (measured: 13 s over, and no room left for a step down).
    session.clock.set_deadline(
        request.budget_min * 60
        - proof_cost_s(request.proof_s) * proofs
        - (check_cost_s() if check else 0.0)
        - replicate_overrun_s(tune_plan.overhead_s)
    )
    measurer.measure(search_cells, replicates)
    session.clock.set_deadline(request.budget_min * 60)
    costs = {c: m.cost for c, m in _first_pass(session, first_pass).items()}
    proved = prove(
        session, measurer, searched, cores, request.connections, say, request.proof_s, costs
    )
    if proved is not None:
        _check_for_a_proxy(
            session, measurer, request, proved[0], proved[1],
            _answer_s(session, first_pass, proved[0].candidate), say, tune_plan.answer_checked,
        )  # fmt: skip
    return survivors


def checks_for_a_proxy(request: TuneRequest, subject: Subject) -> bool:
    """Whether the answer is checked for needing a proxy in front (HTTP parsing, slow
    clients): a server benchlab starts, over HTTP (slow clients are HTTP's), unless it is
    served behind one (--behind-proxy)."""
    return subject.checks_slow_clients and request.echo is None and not request.behind_proxy


def _check_for_a_proxy(
    session: TuneSession, measurer: Measurer, request: TuneRequest, answer: Searched,
    run_at: float | None, answer_s: float, say: Callable[[str], None], checks: bool,
) -> None:  # fmt: skip
    """The answer's check beside slow clients (it says so when the budget has no room left
    for it), or, behind a proxy, why there is none."""
    if checks:
        check_answer(
            session, measurer, answer, session.plan.cores, request.connections, run_at,
            answer_s, say,
        )  # fmt: skip
    elif request.behind_proxy:
        not_asked(session, answer, say)


def _carried(
    session: TuneSession, first_pass: list[Searched], searched: list[Searched]
) -> dict[Cell, float]:
    """What each searched candidate carried in its first pass's closed loop, at its own
    concurrency: its search's top where a closed loop at the search's connections carries
    less (capacity.search_top)."""
    coarse = {entry.candidate: entry.cell for entry in first_pass}
    carried = {}
    for entry in searched:
        trials = session.cells.trials_of(coarse[entry.candidate])
        rates = [t.successes / t.duration_s for t in trials if t.duration_s > 0]
        if rates:
            carried[entry.cell] = max(rates)
    return carried


def _answer_s(session: TuneSession, first_pass: list[Searched], candidate: Candidate) -> float:
    """How long `candidate` took to answer one request alone in the first pass (0: unknown)."""
    cell = next((e.cell for e in first_pass if e.candidate == candidate), None)
    alone = session.cells.trials_of(cell, probe="alone") if cell is not None else []
    return (alone[-1].latency_p50_ms or 0.0) / 1000 if alone else 0.0


def _setup(
    command: str, request: TuneRequest, info: AppInfo, session: TuneSession,
    say: Callable[[str], None],
) -> None:  # fmt: skip
    """--setup, once the services run: with their addresses, as the app's user."""
    run_setup(
        command, info, service_env(request, session), session.work_file("setup.log"), say,
        session.journal, session.stack_user(),
    )  # fmt: skip


def _reset(
    request: TuneRequest, info: AppInfo | None, session: TuneSession, say: Callable[[str], None]
) -> None:
    """--reset-between, before each candidate starts: as --setup runs, each time."""
    if request.reset_between and info is not None:
        run_setup(
            request.reset_between, info, service_env(request, session),
            session.work_file("reset.log"), lambda _: None, session.journal,
            session.stack_user(), option="--reset-between",
        )  # fmt: skip


def _replan(
    session: TuneSession, tune_plan: TunePlan, request: TuneRequest, took: float,
    say: Callable[[str], None],
) -> tuple[int, int, int, bool] | None:  # fmt: skip
    """The search (survivors, replicates), proof replays and check that still fit, now that the
    first pass (`took` seconds) has shown this machine's pace (a slower first pass shrinks
    them, a second replay going first; never grown past the plan shown)."""
    overhead = tune_plan.overhead_s
    planned = len(tune_plan.candidates) * coarse_cost(overhead)
    slower = max(1.0, took / planned) if planned > 0 else 1.0
    left = request.budget_min * 60 - session.clock.elapsed_s()
    proofs, check = tune_plan.proofs, tune_plan.check
    fitted = fit_search(
        tune_plan.survivors, left, proofs, slower, tune_plan.proof_s, check, overhead
    )
    full = (tune_plan.survivors, tune_plan.replicates)
    # The search first: the check, then a second replay, only in time it does not need.
    if check and (fitted is None or fitted < full):
        check = False
        say("the answer's check beside slow clients gives way to the search (it runs if time "
            "is left)")  # fmt: skip
        fitted = fit_search(
            tune_plan.survivors, left, proofs, slower, tune_plan.proof_s, overhead_s=overhead
        )
    if proofs > 1 and (fitted is None or fitted < full):
        proofs = 1
        fitted = fit_search(
            tune_plan.survivors, left, proofs, slower, tune_plan.proof_s, overhead_s=overhead
        )
    if fitted is None:
        say(
            f"the first pass took {minutes(took)} (planned {minutes(planned)}): "
            f"{minutes(max(left, 0))} of the budget left is too little for a capacity search; "
            "the answer is the first pass's (raise --budget for the load it holds under the SLO)"
        )
        return None
    survivors, replicates = min(fitted[0], tune_plan.survivors), fitted[1]
    if fitted[0] == tune_plan.survivors and replicates >= tune_plan.replicates:
        return tune_plan.survivors, tune_plan.replicates, proofs, check
    say(
        f"the first pass took {minutes(took)} (planned {minutes(planned)}): the search "
        f"shrinks to {survivors} candidate(s), {replicates} replicate(s) each, to fit the "
        f"{minutes(left)} left"
    )
    return survivors, replicates, proofs, check


def _run_info(
    request: TuneRequest, subject: Subject, recipe: Recipe, cores: CoreAssignment,
    command: str, shared: bool,
) -> RunInfo:  # fmt: skip
    """The tune's row in the store: what it tried, on which subject, with its own options."""
    described = subject.described()
    options = dataclasses.replace(
        RunOptions.from_recipe(recipe),
        tune=TuneOptions(
            key=request.key(), subject_kind=subject.kind, given=described.given,
            subject=described.subject, directory=described.directory,
            interface=described.interface, python=described.python,
            python_version=described.python_version, slo_p99_ms=request.slo_p99_ms,
            requests=tuple(request.shown_requests()), budget_min=request.budget_min,
            rate_unit=tune_scenario(request).rate_unit,
            missing_servers=described.missing_servers, quick=request.quick,
            check_only=request.check_only,
            # Whether a --setup command ran; the command itself may hold secrets.
            setup=MASK if request.setup else None,
            reset_between=MASK if request.reset_between else None,
            deploy_target=request.target, rate=request.rate,
            env=tuple(sorted(request.env)), env_file_keys=tuple(sorted(request.env_from_file)),
            app_commit=described.app_commit, app_versions=dict(described.app_versions),
            unmeasured=described.unmeasured,
        ),
    )  # fmt: skip
    return RunInfo(
        recipe_path=described.given, recipe_name=recipe.name, recipe_text=recipe_text(request),
        question=recipe.question, command=command, git_commit=machine.git_commit(),
        server_cores=cores.server, load_cores=cores.load,
        machine={
            **machine.describe(), "shared_with_another_run": shared,
            "stacks_run_as": running_as(subject.owner),
            # How far a second tune may move its answer reads this (selfcheck --noise).
            "noise": noise_facts(),
        },
        options=options.to_json(),
    )  # fmt: skip


def _refuse_if_every_check_failed(
    session: TuneSession, cells: list[Cell], request: TuneRequest
) -> None:
    """A check that no candidate passes is the request's fault, not the servers'."""
    failures = [session.cells.failure_of(cell) for cell in cells]
    if not all(f is not None and f.kind is FailureKind.VERIFICATION for f in failures):
        return
    shown = ", ".join(f"'{r}'" for r in request.shown_requests())
    first = failures[0]
    answer = (first.detail or one_line(first.reason)) if first is not None else ""
    fix = (
        "give the path of an endpoint that sends each text message back unchanged"
        if request.echo
        else "fix the request or its check (--check-status, --check-body)"
    )
    raise UserError(
        f"--request {shown}: the check failed on every candidate ({len(cells)}): {answer}; {fix}"
    )


def _first_pass(session: TuneSession, first_pass: list[Searched]) -> dict[Candidate, FirstPass]:
    """Each candidate the first pass measured (its closed loop and cost), by candidate."""
    measured = {}
    for entry in first_pass:
        trials = session.cells.trials_of(entry.cell)
        if trials and session.cells.failure_of(entry.cell) is None:
            trial = trials[-1]
            measured[entry.candidate] = FirstPass(
                entry.cell.key, trial.throughput_rps, first_pass_cost(entry.candidate, trial)
            )
    return measured


def _survivors(session: TuneSession, first_pass: list[Searched], most: int) -> list[Candidate]:
    """The candidates the first pass's screen keeps for the search (tune_choice.screen)."""
    measured = _first_pass(session, first_pass)
    by_key = {m.key: candidate for candidate, m in measured.items()}
    return [by_key[key] for key in screen(list(measured.values()), most, session.run_options)]
