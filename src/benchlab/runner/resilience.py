"""A run's resilience checks (recipe keys `drain` and `slow_clients`): after its rounds,
each stack is started once more as its first cell's launch starts it — its workers and
threads, behind nginx when the recipe puts nginx in front, over plain HTTP/1.1 — measured
with and without slow clients, then stopped under load. What each check found (or why it
could not check) is kept in the facts of every cell of the stack, as a conformance check's
is; the report and the verdicts read it there."""

from __future__ import annotations

import dataclasses
from typing import Any

from benchlab.recipe import Cell, Recipe
from benchlab.resilience.facts import CHECK_WORDS, DRAIN, SLOW_CLIENTS, NotChecked, attempted
from benchlab.resilience.slow_clients import READ_KB
from benchlab.runner.estimates import resilience_seconds
from benchlab.runner.executor import CheckedStack
from benchlab.runner.measurer import Measurer
from benchlab.runner.session import Session
from benchlab.system.safe_files import new_dir

START_STOP_S = 2.0  # the check launch's start and stop, beyond the checks themselves


def check_resilience(session: Session, measurer: Measurer) -> None:
    """Every measured stack's checks, once (a resumed run skips the stacks it checked)."""
    recipe = session.plan.recipe
    wanted = _asked(recipe)
    if not wanted:
        return
    firsts = _first_cells(session, measurer, wanted)
    for index, (name, first) in enumerate(firsts.items(), 1):
        seconds = resilience_seconds(recipe, session.catalogue[name])
        if session.clock.time_left(seconds + START_STOP_S):
            session.reporter.status(
                f"resilience checks [{index}/{len(firsts)}] {name}: "
                f"{' and '.join(CHECK_WORDS[key] for key in wanted)} (about {seconds:.0f} s)"
            )
            facts = _check_stack(session, measurer, first, index)
        else:
            unchecked = NotChecked("the budget ended before its check").to_json()
            facts = dict.fromkeys(wanted, unchecked)
        # What was checked is the stack as its first cell launches it: the cells of other
        # workers, threads or flavours are not said to share it.
        for cell in session.cells:
            if _setup(cell) == _setup(first):
                session.store.add_cell_facts(session.cells.ids[cell], facts)


def _setup(cell: Cell) -> tuple[object, ...]:
    """What a check's result depends on beside the stack: how it was launched."""
    return (cell.stack, cell.flavour, cell.workers, cell.server_threads, cell.launch_pool)


def _asked(recipe: Recipe) -> list[str]:
    """The checks the recipe asks for, in the order they run (drain stops the stack)."""
    return [SLOW_CLIENTS] * bool(recipe.slow_clients) + [DRAIN] * recipe.drain


def _first_cells(session: Session, measurer: Measurer, wanted: list[str]) -> dict[str, Cell]:
    """Each stack's first cell that was measured (by this process or, resumed, an earlier
    one), for the stacks not checked yet."""
    checked = {
        stored.stack
        for stored in session.store.cells(session.run_id)
        if all(key in (stored.facts or {}) for key in wanted)
    }
    firsts: dict[str, Cell] = {}
    for cell in session.cells:
        measured = cell in session.cells.measured or measurer.done_rounds(cell) > 0
        if measured and cell not in session.cells.failed and cell.stack not in checked:
            firsts.setdefault(cell.stack, cell)
    return firsts


def _check_stack(session: Session, measurer: Measurer, first: Cell, index: int) -> dict[str, Any]:
    recipe = session.plan.recipe
    executor = session.executor
    plain = dataclasses.replace(first, protocol="h1")
    workdir = new_dir(session.workroot / f"checks{index}", 0o711)
    facts: dict[str, Any] = {}
    with measurer.started(plain, workdir) as up:
        if up.problem is not None:
            problem = NotChecked(session.redacted(up.problem)).to_json()
            return dict.fromkeys(_asked(recipe), problem)
        stack = session.catalogue[first.stack]

        def checked(name: str) -> CheckedStack:
            files = new_dir(workdir / name, 0o700)
            load_cores = session.plan.cores.load
            serves = READ_KB in session.files.static_kb
            return CheckedStack(
                stack, up.server, session.server_address, up.port, files, load_cores,
                serves_read_file=serves,
            )  # fmt: skip

        if recipe.slow_clients:
            facts[SLOW_CLIENTS] = attempted(
                lambda: executor.measure.slow_clients(
                    session.registry, checked("slow"), list(recipe.slow_clients),
                    recipe.slow_client_rounds,
                ),
                session.redacted,
            )  # fmt: skip
        if recipe.drain and not up.server.alive():  # the slow clients' check ended it
            tail = up.server.log_tail() or "(empty)"
            facts[DRAIN] = NotChecked(
                session.redacted(f"it was not running after the slow clients; last log: {tail}")
            ).to_json()
        elif recipe.drain:  # last: it stops the stack
            facts[DRAIN] = attempted(
                lambda: executor.measure.drain(session.registry, checked("drain")), session.redacted
            )
    return facts
