"""`benchlab run --resume`: an interrupted, abandoned or failed run continued where it
stopped. Its plan is the one it ran (the recipe with its overrides and its budget, stored
with it), not the recipe file as it is now; its finished trials are kept, and only the
rounds not done are measured, in the order an uninterrupted run would have taken them."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from benchlab.errors import UserError
from benchlab.recipe import Plan, build_plan
from benchlab.recipe.schema import Recipe
from benchlab.store import Store

RESUMABLE = ("interrupted", "abandoned", "failed")


@dataclass(frozen=True)
class Resumed:
    run_id: str
    plan: Plan
    deadline_s: float | None


def resumable(store: Store, wanted: str | None) -> Resumed:
    """The run to continue: `wanted` (an id or its prefix, latest~N, or a recipe's name: its
    latest unfinished run), or the latest unfinished run of the store."""
    row = _chosen(store, wanted)
    if row["status"] not in RESUMABLE:
        raise UserError(
            f"run {row['id']} is {row['status']}: only an interrupted, abandoned or failed run "
            "continues (benchlab runs lists them)"
        )
    stored = row["plan"] if "plan" in row.keys() else None  # noqa: SIM118 - a Row
    if not stored:
        raise UserError(
            f"run {row['id']} was stored by a benchlab that kept no plan to resume from; "
            "run its recipe again"
        )
    data = json.loads(stored)
    recipe = Recipe.model_validate_json(json.dumps(data["recipe"]))
    plan = build_plan(Path(row["recipe_path"]), recipe, row["recipe_text"])
    planned = {cell.key for cell in plan.cells}
    missing = [c["key"] for c in store.cells(row["id"]) if c["key"] not in planned]
    if missing:
        raise UserError(
            f"run {row['id']}: this machine would not plan the same cells (its cores differ?); "
            f"{len(missing)} of its cells would be lost, e.g. {missing[0]}: run the recipe again"
        )
    return Resumed(str(row["id"]), plan, data.get("deadline_s"))


def _chosen(store: Store, wanted: str | None) -> sqlite3.Row:
    runs = store.runs()
    if wanted is None:
        found = next((r for r in runs if r["status"] in RESUMABLE), None)
        if found is None:
            raise UserError(
                f"no interrupted, abandoned or failed run in '{store.path}' to resume; "
                "benchlab runs lists the runs"
            )
        return found
    by_recipe = [r for r in runs if r["recipe_name"] == wanted and r["status"] in RESUMABLE]
    try:
        return store.run(wanted)
    except UserError:
        if by_recipe:
            return by_recipe[0]
        raise
