"""The report as one self-contained HTML page: header, charts (inline SVG), sortable table,
relative table, verdicts and failures. No script or style is fetched: it works offline."""

from __future__ import annotations

from datetime import UTC, datetime

import jinja2
from markupsafe import Markup

from benchlab.analysis.grid import short_labels
from benchlab.analysis.stats import METHOD, RATIO_METHOD
from benchlab.report.charts import all_charts, groups
from benchlab.report.columns import Column, cell_columns
from benchlab.report.formats import (
    cell_name,
    flip_lines,
    host_lines,
    interval_note,
    load_host_lines,
    method_notes,
    note_text,
    relative_rows,
    stack_facts,
)
from benchlab.report.summary import CellSummary, RunSummary
from benchlab.report.tune_report import recommendation_context


def _columns(summary: RunSummary) -> list[Column]:
    """The cell table's columns (those of Markdown), with framework and server beside the
    stack."""
    columns = cell_columns(summary.cells, article=True, baseline=summary.baseline)
    facts = [
        Column("framework", lambda c: stack_facts(c)[0], lambda c: stack_facts(c)[0],
               numeric=False),
        Column("server", lambda c: stack_facts(c)[1], lambda c: stack_facts(c)[1],
               numeric=False),
    ]  # fmt: skip
    return [columns[0], *facts, *columns[1:]]


def _row(cell: CellSummary, columns: list[Column]) -> list[dict]:
    values = []
    for column in columns:
        sort = column.sort(cell)
        values.append(
            {
                "text": column.text(cell) or "–",
                "sort": "" if sort is None else sort,
                "numeric": column.numeric,
            }
        )
    return values


def _verdict_badges(cell: CellSummary) -> list[dict[str, str]]:
    if cell.status == "failed":
        return [{"name": "failed", "kind": "bad", "sentence": cell.reason or "failed"}]
    if not cell.measured:
        return [{"name": "not measured", "kind": "warn", "sentence": note_text(cell)}]
    if not cell.verdicts:
        return [{"name": "valid", "kind": "good", "sentence": "No verdict against this figure."}]
    return [{"name": v.name, "kind": "warn", "sentence": v.sentence} for v in cell.verdicts]


def _relative_tables(summary: RunSummary) -> list[dict]:
    return [
        {"title": title, "header": header, "rows": rows}
        for title, header, rows in relative_rows(summary)
    ]


def _verdict_groups(summary: RunSummary) -> list[dict]:
    """Verdicts by name, so forty sentences read as a few kinds of trouble."""
    grouped: dict[str, list[dict[str, str]]] = {}
    for cell in summary.cells:
        for verdict in cell.verdicts:
            grouped.setdefault(verdict.name, []).append(
                {"where": cell_name(cell), "sentence": verdict.sentence}
            )
    return [{"name": name, "lines": lines} for name, lines in grouped.items()]


def _versions(machine: dict) -> list[tuple[str, str]]:
    items = [("Python", machine.get("python") or "?")]
    items += sorted((machine.get("packages") or {}).items())
    items += [(name, v) for name, v in sorted((machine.get("tools") or {}).items()) if v]
    items += sorted((machine.get("debian") or {}).items())
    return items


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("benchlab.report", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )


def render_html(summary: RunSummary) -> str:
    run = summary.run
    columns = _columns(summary)
    charts = all_charts(summary)
    grouped = groups(summary)
    failed = [c for c in summary.cells if c.status == "failed"]
    counts = {
        "cells": len(summary.cells),
        "measured": sum(1 for c in summary.cells if c.measured),
        "failed": len(failed),
        "flagged": sum(1 for c in summary.cells if c.verdicts),
    }
    commit = run.get("git_commit") or ""
    reproduce = [run["command"]]
    if commit:
        reproduce = [f"git checkout {commit.removesuffix('+dirty')}", "./lab setup", *reproduce]
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            run=run,
            title=f"benchlab · {run['recipe_name']}",
            machine=run.get("machine") or {},
            partial_note=summary.partial_note,
            dirty=commit.endswith("+dirty"),
            reproduce=reproduce,
            versions=_versions(run.get("machine") or {}),
            counts=counts,
            charts={
                c.key: {"title": c.title, "svg": Markup(c.svg), "caption": c.caption, "key": c.key}
                for c in charts
            },
            columns=columns,
            rows=[
                {
                    "cell": cell,
                    "values": _row(cell, columns),
                    "badges": _verdict_badges(cell),
                    "note": note_text(cell),
                }
                for cell in summary.cells
            ],
            failed=failed,
            verdict_groups=_verdict_groups(summary),
            recipe_text=summary.recipe_text,
            relative_tables=_relative_tables(summary),
            baseline=summary.baseline,
            grid=short_labels(list(grouped)),
            flips=flip_lines(summary),
            interval_note=interval_note(summary),
            method_notes=method_notes(summary),
            ranked_by=summary.ranked_by,
            tune=recommendation_context(summary),
            tool_agreement=summary.tool_agreement,
            host_lines=host_lines(summary),
            load_host_lines=load_host_lines(summary),
            slo=summary.options.slo.describe() if summary.options.slo else None,
            method=METHOD,
            ratio_method=RATIO_METHOD,
            generated=datetime.now(UTC).isoformat(timespec="seconds"),
        )
    )
