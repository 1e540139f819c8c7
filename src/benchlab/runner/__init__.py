"""Execute a plan. A Session is what one run shares and must undo (its row in the store, its
temp directory, hosts, services, cells, signals); a Measurer measures cells within it, in
interleaved rounds. A recipe measures all its cells at once (`run_recipe`); `benchlab tune`
measures in phases within one session, adding cells as it learns which are worth measuring.
"""

from __future__ import annotations

from benchlab.recipe import Plan
from benchlab.runner.estimates import checks_seconds
from benchlab.runner.failure import Failure, FailureKind
from benchlab.runner.launch import HOST, ServerPlace, pinned_to, start_answering, start_stack
from benchlab.runner.measurer import MeasureOptions, Measurer
from benchlab.runner.outcome import Reporter, RunOutcome
from benchlab.runner.resilience import check_resilience
from benchlab.runner.session import Session, SessionOptions
from benchlab.services.ports import free_port
from benchlab.store import Store

__all__ = [
    "HOST",
    "Failure",
    "FailureKind",
    "MeasureOptions",
    "Measurer",
    "Reporter",
    "RunOutcome",
    "ServerPlace",
    "Session",
    "SessionOptions",
    "free_port",
    "pinned_to",
    "run_recipe",
    "start_answering",
    "start_stack",
]


def run_recipe(plan: Plan, store: Store, reporter: Reporter, options: SessionOptions) -> RunOutcome:
    """Every cell of the plan: the recipe's rounds, then its adaptive ones, then the
    resilience checks it asks for."""
    recipe = plan.recipe
    session = Session(plan, store, reporter, options)
    with session.running(len(plan.cells) * recipe.trials) as outcome:
        session.cells.add(plan.cells)
        session.prepare(plan.cells)
        checks_s = checks_seconds(plan.cells, recipe, plan.catalogue, session.costs)
        measuring = MeasureOptions(launches_fit_deadline=True, then_s=lambda: checks_s)
        measurer = Measurer(session, measuring)
        # Within a budget, the rounds leave the checks their time.
        deadline = session.clock.deadline_s
        if deadline is not None and checks_s:
            session.clock.set_deadline(max(0.0, deadline - checks_s))
        measurer.measure(plan.cells, recipe.trials, recipe.max_trials)
        session.clock.set_deadline(deadline)
        check_resilience(session, measurer)
    return outcome
