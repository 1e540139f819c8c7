"""A run's resilience checks (recipe keys `drain` and `slow_clients`): after its rounds,
each stack is started once more as its first cell's launch starts it — its workers and
threads, behind nginx when the recipe puts nginx in front, over plain HTTP/1.1 — measured
with and without slow clients, then stopped under load. What each check found (or why it
could not check) is kept in the facts of every cell of the stack, as a conformance check's
is; the report and the verdicts read it there."""

from __future__ import annotations

import dataclasses
from typing import Any

from benchlab.estimates import resilience_seconds
from benchlab.recipe import Cell, Recipe
from benchlab.resilience.facts import DRAIN, SLOW_CLIENTS, NotChecked, attempted
from benchlab.resilience.slow_clients import READ_KB
from benchlab.runner.executor import Checked
from benchlab.runner.measurer import Measurer
from benchlab.runner.session import Session
from benchlab.safe_files import new_dir


def check_resilience(session: Session, measurer: Measurer) -> None:
    """Every measured stack's checks, once (a resumed run skips the stacks it checked)."""
    recipe = session.plan.recipe
    wanted = _asked(recipe)
    if not wanted:
        return
    firsts = _first_cells(session, measurer, wanted)
    for index, (name, first) in enumerate(firsts.items(), 1):
        seconds = resilience_seconds(recipe, name)
        if not session.time_left(seconds):
            return
        session.reporter.status(
            f"resilience checks [{index}/{len(firsts)}] {name}: "
            f"{' and '.join(WORDS[key] for key in wanted)} (about {seconds:.0f} s)"
        )
        facts = _check_stack(session, measurer, first, index)
        for cell in session.cells:
            if cell.stack == name:
                session.store.add_cell_facts(session.cell_ids[cell], facts)


WORDS = {SLOW_CLIENTS: "slow clients", DRAIN: "stop under load"}


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
        measured = cell in session.measured or measurer.done_rounds(cell) > 0
        if measured and cell not in session.failed and cell.stack not in checked:
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
            return {key: NotChecked(up.problem).to_json() for key in _asked(recipe)}
        stack = session.catalogue[first.stack]

        def checked(name: str) -> Checked:
            files = new_dir(workdir / name, 0o700)
            load_cores = session.plan.cores.load
            serves = READ_KB in session.files.static_kb
            return Checked(
                stack, up.server, session.server_address, up.port, files, load_cores,
                serves_read_file=serves,
            )  # fmt: skip

        if recipe.slow_clients:
            facts[SLOW_CLIENTS] = attempted(
                lambda: executor.slow_clients(
                    session.registry, checked("slow"), list(recipe.slow_clients),
                    recipe.slow_client_rounds,
                )
            )  # fmt: skip
        if recipe.drain:  # last: it stops the stack
            facts[DRAIN] = attempted(lambda: executor.drain(session.registry, checked("drain")))
    return facts
