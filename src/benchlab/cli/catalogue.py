"""What benchlab has: its recipes, the stacks' catalogue, and the builds they need."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from benchlab.cli import formats
from benchlab.cli.app import console
from benchlab.load import TOOLS
from benchlab.recipe import load_recipe
from benchlab.stacks import CATALOGUE, catalogue_markdown

if TYPE_CHECKING:
    from rich.console import Console

    from benchlab.recipe import Recipe


def recipes(
    fmt: Annotated[str | None, formats.option(formats.RECIPES)] = None,
    output: Annotated[Path | None, formats.output(formats.RECIPES)] = None,
) -> None:
    """benchlab's own recipes, by the name `run` takes, with the question each answers."""
    from benchlab.recipe.cells import scenario_names
    from benchlab.recipe.files import bundled_recipes

    where = formats.destination(fmt, output, formats.RECIPES, reads=())
    found = [(path.stem, load_recipe(path, CATALOGUE)[0]) for path in bundled_recipes()]
    if where.format == "json":
        from benchlab.report.json_formats import RECIPES

        where.document(RECIPES.dumps({"recipes": [
            {"name": name, "question": _question(recipe), "stacks": list(recipe.stacks),
             "scenarios": scenario_names(recipe)}
            for name, recipe in found
        ]}))  # fmt: skip
        return
    where.table(lambda out: _recipes_table(found, out))


def _question(recipe: Recipe) -> str:
    """The question a recipe asks, else what it measures (a recipe need not say)."""
    from benchlab.recipe.cells import scenario_names

    if recipe.question:
        return recipe.question
    stacks = list(recipe.stacks)
    verb = "does" if len(stacks) == 1 else "do"
    return f"How {verb} {_listed(stacks)} compare on {_listed(scenario_names(recipe))}?"


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _recipes_table(found: list[tuple[str, Recipe]], out: Console) -> None:
    for name, recipe in found:
        out.print(name, markup=False, highlight=False)
        for line in textwrap.wrap(_question(recipe), max(out.width - 4, 40)):
            out.print(f"    {line}", markup=False, highlight=False)
    out.print("run one: benchlab run NAME (a unique prefix is enough: seed-000)")


# The stacks table's columns a narrow terminal does without, first to last.
STACKS_EXPENDABLE = ("worker model", "framework · server", "scenarios")


def stacks(
    fmt: Annotated[str | None, formats.option(formats.STACKS)] = None,
    output: Annotated[Path | None, formats.output(formats.STACKS)] = None,
) -> None:
    """The catalogue: every stack, its scenarios, and whether it can run here."""
    where = formats.destination(fmt, output, formats.STACKS, reads=())
    if where.format == "md":
        where.document(catalogue_markdown())
    elif where.format == "json":
        where.document(_stacks_json())
    else:
        where.table(_stacks_table)


def _stacks_table(out: Console) -> None:
    from benchlab.report.terminal import Layout, fitted_table

    wide = out.width >= 140
    # A stack's name is what a recipe needs: never wrapped or cut.
    layout = [Layout("stack", wrap=False), Layout("framework · server")]
    layout += [Layout("worker model")] if wide else []
    layout += [Layout("scenarios"), Layout("status")]
    rows, styles, notes = [], [], []
    for stack in CATALOGUE.values():
        available = stack.availability()
        if available.ok:
            status = "available" + (f" ({stack.note})" if stack.note else "")
        else:
            notes.append(f"{stack.name}: {available.reason}; fix: {available.fix}")
            status = f"unavailable [{len(notes)}]"
        row = [stack.name, f"{stack.framework} · {stack.server}"]
        row += [stack.worker_model] if wide else []
        rows.append([*row, ", ".join(stack.scenarios), status])
        styles.append(None if available.ok else "red")
    out.print(fitted_table(layout, rows, out.width, STACKS_EXPENDABLE, styles))
    for number, note in enumerate(notes, 1):
        out.print(f"[{number}] {note}", markup=False, highlight=False)
    for line in _unserved_lines():
        out.print(line, markup=False, highlight=False)


def _stacks_json() -> str:
    from benchlab.report.json_formats import STACKS

    rows = []
    for stack in CATALOGUE.values():
        available = stack.availability()
        rows.append({
            "name": stack.name, "framework": stack.framework, "server": stack.server,
            "worker_model": stack.worker_model, "scenarios": list(stack.scenarios),
            "protocols": list(stack.protocols), "available": available.ok,
            "reason": available.reason or None, "fix": available.fix or None,
        })  # fmt: skip
    return STACKS.dumps({"stacks": rows})


def _unserved_lines() -> list[str]:
    """Which available stacks do not serve which scenarios, and why: a line per reason."""
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for stack in CATALOGUE.values():
        if not stack.availability().ok:
            continue
        for why, scenarios in stack.unserved_reasons().items():
            grouped.setdefault((why, tuple(scenarios)), []).append(stack.name)
    return [
        f"not {', '.join(scenarios)} on {', '.join(names)}: {why}"
        for (why, scenarios), names in grouped.items()
    ]


def build() -> None:
    """Build the Go stacks from the project's sources and the pinned load tools (cached);
    as root, make the stacks' account and, when it cannot run benchlab's own Python, the
    stacks' Python environment."""
    from benchlab.stacks import python_env
    from benchlab.system.users import stack_user

    python_env.for_user(stack_user())
    for stack in CATALOGUE.values():
        if stack.build is not None and stack.availability().ok:
            console.print(f"building {stack.name}")
            stack.build()
    for tool in TOOLS.values():
        if tool.build is not None and tool.executable() is None:
            console.print(f"building {tool.name}")
            tool.build()
