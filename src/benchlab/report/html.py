"""The report as one self-contained HTML page: the question and its answer first (a takeaway
per grid point), then per grid point its charts with the settings beside them, how to read
the figures, every cell in a sortable table, verdicts, article 002's relative table, the
grid, and the run's machine and how to reproduce it. No script or style is fetched: it
works offline."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from benchlab.analysis.stats import METHOD, RATIO_METHOD
from benchlab.analysis.summary import CellSummary, RunSummary
from benchlab.recipe.files import shown_source
from benchlab.report.charts import Chart, all_charts, stack_colours
from benchlab.report.columns import (
    Column,
    badges,
    cell_columns,
    note_text,
)
from benchlab.report.sections import Format, Section, by_id, sections
from benchlab.report.takeaways import takeaways
from benchlab.report.tune_report import recommendation_context
from benchlab.report.wording import cell_name, host_lines, noise_line, stack_facts

VERDICTS = "verdicts"


def _columns(summary: RunSummary) -> list[Column]:
    """The cell table's columns: those of the brief terminal table first (the throughput is
    on screen without scrolling), then every other column of the Markdown report, with
    framework and server."""
    every = cell_columns(summary.cells, article=True, baseline=summary.baseline)
    brief = {c.title for c in cell_columns(summary.cells, brief=True)}
    first = [c for c in every if c.title in brief or c.identity]
    facts = [
        Column("framework", lambda c: stack_facts(c)[0], lambda c: stack_facts(c)[0],
               numeric=False),
        Column("server", lambda c: stack_facts(c)[1], lambda c: stack_facts(c)[1],
               numeric=False),
    ]  # fmt: skip
    rest = [c for c in every if c not in first]
    verdicts = Column(VERDICTS, lambda c: "", lambda c: "", numeric=False)
    return [*first, verdicts, *facts, *rest]


def _row(cell: CellSummary, columns: list[Column]) -> list[dict[str, Any]]:
    values = []
    for column in columns:
        if column.title == VERDICTS:
            shown = badges(cell)
            values.append(
                {
                    "badges": [b.__dict__ for b in shown],
                    "sort": " ".join(b.name for b in shown),
                    "numeric": False,
                }
            )
            continue
        sort = column.sort(cell)
        values.append(
            {
                "text": column.text(cell) or "–",
                "sort": "" if sort is None else sort,
                "numeric": column.numeric,
            }
        )
    return values


def _verdict_groups(section: Section | None) -> list[dict[str, Any]]:
    """Verdicts by name, so forty sentences read as a few kinds of trouble."""
    groups = section.groups if section else ()
    return [
        {
            "name": group.name,
            "lines": [{"where": cell_name(c), "sentence": text} for c, text in group.flagged],
        }
        for group in groups
    ]


def _versions(machine: dict[str, Any]) -> list[tuple[str, str]]:
    items = [("Python", machine.get("python") or "?")]
    items += sorted((machine.get("packages") or {}).items())
    items += [(name, v) for name, v in sorted((machine.get("tools") or {}).items()) if v]
    items += sorted((machine.get("debian") or {}).items())
    return items


def _chart(chart: Chart) -> dict[str, Any]:
    return {
        "key": chart.key,
        "kind": chart.kind,
        "title": chart.title,
        "svg": Markup(chart.svg),
        "caption": chart.caption,
    }


def _points(summary: RunSummary, charts: list[Chart]) -> list[dict[str, Any]]:
    """Per grid point: its takeaway, settings, notes and charts (bars, then latency)."""
    cards = []
    for index, takeaway in enumerate(takeaways(summary)):
        mine = [c for c in charts if c.point == takeaway.point and c.kind != "curve"]
        over_time = [c for c in mine if c.kind == "timeline"]
        cards.append(
            {
                "id": f"point-{index + 1}",
                "label": takeaway.label,
                "sentence": takeaway.sentence,
                "settings": takeaway.settings,
                "notes": takeaway.notes,
                "charts": [_chart(c) for c in mine if c not in over_time],
                # One small chart per fixed-rate cell, under one caption (they share it).
                "timelines": [_chart(c) for c in over_time],
                "timeline_caption": over_time[0].caption if over_time else "",
            }
        )
    return cards


def _legend(summary: RunSummary) -> list[dict[str, str]]:
    colours = stack_colours(summary)
    return [{"label": label, "colour": colour} for label, colour in colours.items()]


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("benchlab.report", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )


SORT_SCRIPT = (Path(__file__).parent / "templates" / "sort.js").read_text()


def _csp_hash(script: str) -> str:
    """The page's policy names its one script by its hash (no 'unsafe-inline')."""
    digest = hashlib.sha256(script.encode()).digest()
    return f"sha256-{base64.b64encode(digest).decode()}"


def render_html(summary: RunSummary) -> str:
    run = summary.run
    columns = _columns(summary)
    charts = all_charts(summary)
    failed = [c for c in summary.cells if c.result.status == "failed"]
    counts = {
        "cells": len(summary.cells),
        "measured": sum(1 for c in summary.cells if c.result.has_figure),
        "failed": len(failed),
        "flagged": sum(1 for c in summary.cells if c.verdicts),
    }
    commit = run.git_commit or ""
    reproduce = [run.command]
    if commit:  # in a clone: ./lab sets up what is missing, then runs the command
        lab = "./lab " + run.command.removeprefix("benchlab ")
        reproduce = [f"git checkout {commit.removesuffix('+dirty')}", lab]
    tune = recommendation_context(summary)
    points = [] if tune else _points(summary, charts)
    found = by_id(sections(summary, Format.HTML))
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            sort_script=SORT_SCRIPT,
            script_hash=_csp_hash(SORT_SCRIPT),
            run=run,
            title=f"benchlab · {run.recipe_name}",
            machine=run.machine,
            partial_note=summary.partial_note,
            dirty=commit.endswith("+dirty"),
            reproduce=reproduce,
            recipe_source=shown_source(run.recipe_path),
            versions=_versions(run.machine),
            counts=counts,
            points=points,
            legend=_legend(summary),
            curves=[_chart(c) for c in charts if c.kind == "curve"],
            grid_charts=[_chart(c) for c in charts if c.kind in ("heatmap", "ranks")],
            pareto=next((_chart(c) for c in charts if c.kind == "pareto"), None),
            columns=columns,
            rows=[
                {
                    "cell": cell,
                    "values": _row(cell, columns),
                    "note": note_text(cell),
                }
                for cell in summary.cells
            ],
            failed=failed,
            verdict_groups=_verdict_groups(found.get("verdicts")),
            recipe_text=summary.run.recipe_text,
            s=found,
            baseline=summary.baseline,
            noise=noise_line(run.machine),
            ranked_by=summary.ranked_by,
            tune=tune,
            host_lines=host_lines(summary),
            method=METHOD,
            ratio_method=RATIO_METHOD,
            ranking_ratio_method=summary.options.evidence.method.detail,
            generated=datetime.now(UTC).isoformat(timespec="seconds"),
        )
    )
