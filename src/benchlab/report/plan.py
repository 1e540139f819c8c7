"""A run's plan before it starts (`run --dry-run`), in the formats a run's answer takes: the
lines a run prints before it measures (table), and the same plan with every cell as
Markdown, JSON (benchlab-plan), CSV and a page. A tracker's format (bmf, gab-*) holds
measured figures only: a plan has none to give it."""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from pydantic import ConfigDict

from benchlab.core.errors import UserError
from benchlab.recipe import Cell, Plan, unserved
from benchlab.recipe.files import shown_source
from benchlab.report.json_formats import PLAN
from benchlab.stacks.base import Stack

# The formats a plan is written in, of a run's (cli/formats.py's REPORT).
FORMATS = ("table", "md", "json", "csv", "html")


@dataclass(frozen=True)
class PlannedCell:
    """One cell of the plan, as a run would measure it, and whether its stack runs here."""

    # The JSON's cells as json_schemas.py publishes them: closed, as its models are.
    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")
    stack: str
    stack_label: str  # with its launch's settings, as the tables will name it
    scenario: str
    tool: str
    connections: int
    duration_s: int
    workers: int
    mode: str
    rate: str  # a rate cell's: "2,000/s" or "60%"; empty otherwise
    point: str | None
    protocol: str
    keepalive: bool
    runs_here: bool
    why_not: str | None  # why its stack cannot run here, and the fix


@dataclass(frozen=True)
class PlannedRun:
    recipe: str
    source: str  # where the recipe came from: its path, or benchlab's own
    question: str
    lines: tuple[str, ...]  # what a run prints before it starts, word for word
    estimate_s: float  # the recipe's rounds and its checks (within --budget)
    cells: tuple[PlannedCell, ...]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "lines": list(self.lines), "cells": [asdict(c) for c in self.cells]}


def _cell(cell: Cell, stack: Stack) -> PlannedCell:
    available = stack.availability()
    return PlannedCell(
        stack=cell.stack, stack_label=stack.label(cell.workers, cell.flavour, cell.server_threads),
        scenario=cell.scenario, tool=cell.tool, connections=cell.connections,
        duration_s=cell.duration, workers=cell.workers, mode=str(cell.mode), rate=cell.rate_text,
        point=cell.point, protocol=cell.protocol, keepalive=cell.keepalive,
        runs_here=available.ok,
        why_not=None if available.ok else f"{available.reason}; fix: {available.fix}",
    )  # fmt: skip


def planned_run(plan: Plan, lines: Sequence[str], estimate_s: float) -> PlannedRun:
    """What `plan` will do: `lines`, what a run prints before it starts, and `estimate_s`, how
    long it will take, as the runner estimates them for its cells whose stacks run here (the
    caller gives them: a report reads no runner); the others are named with why not."""
    catalogue: Mapping[str, Stack] = plan.catalogue
    return PlannedRun(
        recipe=plan.recipe.name,
        source=shown_source(plan.path),
        question=plan.recipe.question,
        lines=(*lines, *unserved(plan.recipe, catalogue)),
        estimate_s=round(estimate_s, 1),
        cells=tuple(_cell(c, catalogue[c.stack]) for c in plan.cells),
    )


# The columns of the plan's table (Markdown, CSV's first ones, the page), in order.
COLUMNS = ("stack_label", "scenario", "tool", "connections", "mode", "rate", "runs_here")


def _row(cell: PlannedCell) -> list[str]:
    shown = {**asdict(cell), "runs_here": "yes" if cell.runs_here else f"no: {cell.why_not}"}
    return [str(shown[name] if shown[name] is not None else "") for name in COLUMNS]


def _title(found: PlannedRun) -> str:
    return f"Plan: recipe {found.recipe} ({found.source})"


def render_markdown(found: PlannedRun) -> str:
    from benchlab.report.markdown import table_lines

    out = [f"# {_title(found)}", ""]
    out += [f"> {found.question}", ""] if found.question else []
    out += [f"- {line}" for line in found.lines] + [""]
    out += table_lines(list(COLUMNS), [_row(c) for c in found.cells])
    return "\n".join(out) + "\n"


def render_json(found: PlannedRun) -> str:
    return PLAN.dumps(found.to_json())


def render_csv(found: PlannedRun) -> str:
    buffer = io.StringIO()
    fields = list(asdict(found.cells[0])) if found.cells else list(PlannedCell.__annotations__)
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for cell in found.cells:
        writer.writerow(asdict(cell))
    return buffer.getvalue()


def render_html(found: PlannedRun) -> str:
    """A page of its own: nothing to load, no script (its policy allows none)."""
    e = html.escape
    head = "".join(f"<th>{e(name)}</th>" for name in COLUMNS)
    rows = "".join(
        "<tr>" + "".join(f"<td>{e(value)}</td>" for value in _row(cell)) + "</tr>"
        for cell in found.cells
    )
    lines = "".join(f"<li>{e(line)}</li>" for line in found.lines)
    question = f"<p><i>{e(found.question)}</i></p>" if found.question else ""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        f"<title>{e(_title(found))}</title><style>body{{font-family:sans-serif;margin:1rem}}"
        "table{border-collapse:collapse}td,th{padding:.2rem .6rem;text-align:left}"
        ".scroll{overflow-x:auto}</style></head><body>"
        f"<h1>{e(_title(found))}</h1>{question}<ul>{lines}</ul>"
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody>'
        "</table></div></body></html>\n"
    )


RENDERERS = {"md": render_markdown, "json": render_json, "csv": render_csv, "html": render_html}


def check_format(fmt: str) -> None:
    """A dry run's format, refused in one line where a plan has nothing to write in it."""
    if fmt not in FORMATS:
        raise UserError(
            f"--dry-run: a plan holds no measured figure for {fmt} (a tracker's format); "
            f"write it as one of: {', '.join(FORMATS)}"
        )
