"""The STACK... arguments of the commands that check catalogue stacks one by one (conform,
drain, slow-clients): each named stack must exist and run here; none named means all that
do."""

from __future__ import annotations

from benchlab.errors import UserError
from benchlab.stacks import CATALOGUE


def checked_stack_names(names: list[str] | None) -> list[str]:
    from benchlab.recipe.messages import did_you_mean

    if not names:
        return [name for name, stack in CATALOGUE.items() if stack.availability().ok]
    for name in names:
        if name not in CATALOGUE:
            raise UserError(
                f"stack '{name}' is not in the catalogue{did_you_mean(name, CATALOGUE)}; "
                "`benchlab stacks` lists them"
            )
        available = CATALOGUE[name].availability()
        if not available.ok:
            raise UserError(f"stack '{name}' cannot run here: {available.reason}; {available.fix}")
    return names
