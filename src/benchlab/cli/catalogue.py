"""What benchlab has: its recipes, the stacks' catalogue, and the builds they need."""

from __future__ import annotations

import sys
import textwrap
from typing import Annotated

from benchlab.cli import formats
from benchlab.cli.app import console
from benchlab.load import TOOLS
from benchlab.recipe import load_recipe
from benchlab.stacks import CATALOGUE, catalogue_markdown


def recipes() -> None:
    """benchlab's own recipes, by the name `run` takes, with the question each answers."""
    from benchlab.recipe.files import bundled_recipes

    for path in bundled_recipes():
        recipe, _ = load_recipe(path, CATALOGUE)
        console.print(path.stem, markup=False, highlight=False)
        question = recipe.question or "(no question: see the file)"
        for line in textwrap.wrap(question, max(console.width - 4, 40)):
            console.print(f"    {line}", markup=False, highlight=False)
    console.print("run one: benchlab run NAME (a unique prefix is enough: seed-000)")


def stacks(
    fmt: Annotated[
        str,
        formats.option(formats.STACKS, "How to write it."),
    ] = "table",
) -> None:
    """The catalogue: every stack, its scenarios, and whether it can run here."""
    if fmt == "md":
        sys.stdout.write(catalogue_markdown())
        return
    formats.check_one_of(fmt, formats.STACKS)
    if fmt == "json":
        sys.stdout.write(_stacks_json())
        return
    from benchlab.report.terminal import Layout, fit_widths, text_table

    wide = console.width >= 140
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
    console.print(text_table(layout, rows, fit_widths(layout, rows, console.width), styles))
    for number, note in enumerate(notes, 1):
        console.print(f"[{number}] {note}", markup=False, highlight=False)
    for line in _unserved_lines():
        console.print(line, markup=False, highlight=False)


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
    """Build the Go stacks from the project's sources and the pinned load tools (cached)."""
    for stack in CATALOGUE.values():
        if stack.build is not None and stack.availability().ok:
            console.print(f"building {stack.name}")
            stack.build()
    for tool in TOOLS.values():
        if tool.build is not None and tool.executable() is None:
            console.print(f"building {tool.name}")
            tool.build()
