"""`tune --check-only`: each candidate started once as its deploy command starts it, and its
answer to the app's requests checked, with nothing measured — whether tune can serve the
app at all, in seconds, before a search of minutes."""

from __future__ import annotations

from collections.abc import Callable

from benchlab.recipe import Cell
from benchlab.runner import FailureKind, Measurer
from benchlab.runner.cell import answer_problem
from benchlab.system.safe_files import new_dir
from benchlab.tune.session import TuneSession


def check_candidates(
    session: TuneSession, measurer: Measurer, cells: list[Cell], say: Callable[[str], None]
) -> None:
    """Each cell's stack started and its answer checked; a wrong answer or a start that
    failed fails the cell with the reason, a right one marks it checked."""
    for index, cell in enumerate(cells):
        label = session.cells.label_of(cell)
        workdir = new_dir(session.workroot / f"check-{index}", 0o711)
        with measurer.started(cell, workdir) as up:
            if up.problem is not None:
                session.cells.fail(cell, up.failed_as, up.problem)
                continue
            problem = answer_problem(session, cell, up.port)
        if problem:
            session.cells.fail(cell, FailureKind.VERIFICATION, problem)
            continue
        session.cells.mark_checked(cell)
        session.reporter.verified(cell, "")  # its answer only: what was negotiated, not asked
        say(f"{label}: answers right")
