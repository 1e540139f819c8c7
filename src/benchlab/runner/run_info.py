"""A run's row in the store as it starts, described from its plan: the recipe, the command
line, the machine (and its measured noise), the options the analysis reads, and what
`run --resume` needs to continue it."""

from __future__ import annotations

import json
from typing import Any

from benchlab.analysis.noise_record import noise_facts
from benchlab.analysis.run_options import RunOptions
from benchlab.recipe import Plan
from benchlab.store import RunInfo
from benchlab.system.users import running_as


def described_run(
    plan: Plan, command: str, facts: dict[str, Any], commit: str | None, shared_machine: bool,
    run_as: str | None, deadline_s: float | None,
) -> RunInfo:  # fmt: skip
    """The run's row in the store, described from its plan, the machine's `facts` and
    benchlab's `commit`."""
    noise = None if plan.recipe.hosts else noise_facts()  # measured here, not on the hosts
    return RunInfo(
        recipe_path=str(plan.path), recipe_name=plan.recipe.name, recipe_text=plan.text,
        question=plan.recipe.question, command=command,
        git_commit=commit, server_cores=plan.cores.server,
        load_cores=plan.cores.load,
        machine={
            **facts,
            "shared_with_another_run": shared_machine,
            "stacks_run_as": running_as(run_as),
            # Where this machine's variation comes from, if selfcheck --noise measured it.
            "noise": noise,
        },
        # Whether this machine's rounds move every stack together (selfcheck --noise).
        options=RunOptions.from_recipe(plan.recipe, bool(noise and noise["pairing_helps"]))
        .to_json(),
        plan={
            "recipe": json.loads(plan.recipe.model_dump_json()), "deadline_s": deadline_s
        },
    )  # fmt: skip
