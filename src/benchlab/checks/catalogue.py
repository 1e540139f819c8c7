"""Each stack of the catalogue started as a run starts it, checked for conformance, and
stopped (stack_checks.py): nothing is left behind."""

from __future__ import annotations

from collections.abc import Callable

from benchlab.checks.one_stack import StackCheck, check_each
from benchlab.conformance.check import Conformance, check_server
from benchlab.resilience.target import CheckTarget

StackConformance = StackCheck[Conformance]


def conform_stacks(
    names: list[str], cores: tuple[int, ...], progress: Callable[[str], None]
) -> list[StackConformance]:
    """Every stack in turn, one worker on `cores`; the checks run one request at a time."""

    def check(target: CheckTarget) -> Conformance:
        return check_server(
            target.address, target.port, progress=lambda line: progress(f"  {line}")
        )

    return check_each(names, cores, progress, check)
