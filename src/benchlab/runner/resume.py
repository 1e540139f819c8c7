"""`benchlab run --resume`: an interrupted, abandoned or failed run continued where it
stopped. Its plan is the one it ran (the recipe with its overrides and its budget, stored
with it), not the recipe file as it is now; its finished trials are kept, and only the
rounds not done are measured, in the order an uninterrupted run would have taken them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from benchlab.core.errors import UserError
from benchlab.recipe import Plan, build_plan
from benchlab.recipe.schema import Recipe
from benchlab.stacks import Stack
from benchlab.store import RunRecord, Store

RESUMABLE = ("interrupted", "abandoned", "failed")


@dataclass(frozen=True)
class Resumed:
    run_id: str
    plan: Plan
    deadline_s: float | None


def resumable(store: Store, wanted: str | None, catalogue: Mapping[str, Stack]) -> Resumed:
    """The run to continue: `wanted` (an id or its prefix, latest~N, or a recipe's name: its
    latest unfinished run), or the latest unfinished run of the store; planned again of
    `catalogue`'s stacks."""
    run = _chosen(store, wanted)
    if run.status not in RESUMABLE:
        raise UserError(
            f"run {run.id} is {run.status}: only an interrupted, abandoned or failed run "
            "continues (benchlab runs lists them)"
        )
    if not run.plan:
        raise UserError(
            f"run {run.id} was stored by a benchlab that kept no plan to resume from; "
            "run its recipe again"
        )
    recipe = Recipe.model_validate_json(json.dumps(run.plan["recipe"]))
    plan = build_plan(Path(run.recipe_path), recipe, run.recipe_text, catalogue)
    planned = {cell.key for cell in plan.cells}
    missing = [c.key for c in store.cells(run.id) if c.key not in planned]
    if missing:
        raise UserError(
            f"run {run.id}: this machine would not plan the same cells (its cores differ?); "
            f"{len(missing)} of its cells would be lost, e.g. {missing[0]}: run the recipe again"
        )
    return Resumed(run.id, plan, run.plan.get("deadline_s"))


def _chosen(store: Store, wanted: str | None) -> RunRecord:
    runs = store.runs()
    if wanted is None:
        found = next((r for r in runs if r.status in RESUMABLE), None)
        if found is None:
            raise UserError(
                f"no interrupted, abandoned or failed run in '{store.path}' to resume; "
                "benchlab runs lists the runs"
            )
        return found
    by_recipe = [r for r in runs if r.recipe_name == wanted and r.status in RESUMABLE]
    try:
        return store.run(wanted)
    except UserError:
        if by_recipe:
            return by_recipe[0]
        raise
