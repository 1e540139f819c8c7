"""The report as one self-contained HTML page: header, charts (inline SVG), sortable table,
relative table, verdicts and failures. No script or style is fetched: it works offline."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import jinja2
from markupsafe import Markup

from benchlab.analysis.stats import METHOD, RATIO_METHOD
from benchlab.report.charts import all_charts, grid_labels, groups
from benchlab.report.formats import (
    _ms,
    flip_lines,
    interval_note,
    note_text,
    params_text,
    ratio_text,
    relative_groups,
    stack_facts,
    throughput_text,
)
from benchlab.report.summary import CellSummary, RunSummary


@dataclass(frozen=True)
class Column:
    title: str
    text: Callable[[CellSummary], str]
    sort: Callable[[CellSummary], float | str | None]
    numeric: bool = True
    hint: str = ""


def _optional(value: float | None, digits: int = 0) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def _throughput_sort(cell: CellSummary) -> float | None:
    return cell.throughput.median if cell.throughput else None


def _columns(summary: RunSummary) -> list[Column]:
    cells = summary.cells
    columns = [
        Column("stack", lambda c: c.stack_label, lambda c: c.stack_label, numeric=False),
        Column(
            "framework",
            lambda c: stack_facts(c.stack)[0],
            lambda c: stack_facts(c.stack)[0],
            numeric=False,
        ),
        Column(
            "server",
            lambda c: stack_facts(c.stack)[1],
            lambda c: stack_facts(c.stack)[1],
            numeric=False,
        ),
        Column("scenario", lambda c: c.scenario, lambda c: c.scenario, numeric=False),
    ]
    if any(params_text(c) for c in cells):
        columns.append(Column("params", params_text, params_text, numeric=False))
    columns += [
        Column("tool", lambda c: c.tool, lambda c: c.tool, numeric=False),
        Column("conns", lambda c: str(c.connections), lambda c: c.connections),
        Column("trials", lambda c: str(c.trials), lambda c: c.trials),
        Column("requests", lambda c: f"{c.requests:,}", lambda c: c.requests),
        Column(
            "throughput req/s",
            throughput_text,
            _throughput_sort,
            hint="median over trials [interval]",
        ),
    ]
    if any(c.relative for c in cells):
        columns.append(
            Column(
                f"vs {summary.baseline}",
                lambda c: ratio_text(c.relative),
                lambda c: c.relative.value if c.relative else None,
                hint="throughput ÷ the baseline's at the same grid point [interval]",
            )
        )
    if any(c.ceiling_fraction for c in cells):
        columns.append(
            Column(
                "of ceiling",
                lambda c: ratio_text(c.ceiling_fraction, percent=True),
                lambda c: c.ceiling_fraction.value if c.ceiling_fraction else None,
                hint="share of nginx-static's throughput at the same grid point",
            )
        )
    for name, key in (("avg ms", "mean"), ("p50 ms", "p50"), ("p99 ms", "p99")):
        columns.append(
            Column(
                name,
                lambda c, k=key: _ms(c.latency_ms[k]) if c.latency_ms[k] is not None else "",
                lambda c, k=key: c.latency_ms[k],
            )
        )
    columns += [
        Column(
            "max ms",
            lambda c: _ms(c.latency_ms["max"]) if c.latency_ms["max"] else "",
            lambda c: c.latency_ms["max"],
        ),
        Column(
            "errors",
            lambda c: f"{c.errors['total']:,}",
            lambda c: c.errors["total"],
            hint="connect, read, write, timeout, non-2xx and unclassified, summed",
        ),
        Column(
            "transfer MB", lambda c: f"{c.transfer_bytes / 2**20:,.1f}", lambda c: c.transfer_bytes
        ),
        Column(
            "server CPU %",
            lambda c: _optional(c.server_cpu_pct),
            lambda c: c.server_cpu_pct,
            hint="100 = one core busy for the whole trial",
        ),
        Column(
            "RSS MB",
            lambda c: _optional(c.server_rss_mb, 1),
            lambda c: c.server_rss_mb,
            hint="peak resident memory of the server's whole process tree",
        ),
    ]
    if any(c.db_sessions_peak is not None for c in cells):
        columns.append(
            Column(
                "#DB",
                lambda c: _optional(c.db_sessions_peak),
                lambda c: c.db_sessions_peak,
                hint="peak database sessions held by the server",
            )
        )
    if any(c.cache_hit_ratio is not None for c in cells):
        columns.append(
            Column(
                "cache hit %",
                lambda c: "" if c.cache_hit_ratio is None else f"{100 * c.cache_hit_ratio:.1f}",
                lambda c: c.cache_hit_ratio,
            )
        )
    columns.append(
        Column(
            "steal %",
            lambda c: _optional(c.server_steal_pct),
            lambda c: c.server_steal_pct,
            hint="CPU time the hypervisor took from the server's cores",
        )
    )
    return columns


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
    if cell.throughput is None:
        return [{"name": "not measured", "kind": "warn", "sentence": note_text(cell)}]
    if not cell.verdicts:
        return [{"name": "valid", "kind": "good", "sentence": "No verdict against this figure."}]
    return [{"name": v.name, "kind": "warn", "sentence": v.sentence} for v in cell.verdicts]


def _relative_tables(summary: RunSummary) -> list[dict]:
    tables = []
    for title, cells in relative_groups(summary):
        show_db = any(c.db_sessions_peak is not None for c in cells)
        rows = []
        for cell in cells:
            framework, server, model = stack_facts(cell.stack, cell.flavour)
            row = [
                framework,
                server,
                model,
                str(cell.workers),
                ratio_text(cell.relative),
                _ms(cell.latency_ms["p50"]),
                _ms(cell.latency_ms["p99"]),
            ]
            if show_db:
                row.append(_optional(cell.db_sessions_peak))
            rows.append(row)
        header = ["Framework", "Web Server", "Type", "Wrk", "Tput", "P50 ms", "P99 ms"]
        tables.append(
            {"title": title, "header": header + (["#DB"] if show_db else []), "rows": rows}
        )
    return tables


def _verdict_groups(summary: RunSummary) -> list[dict]:
    """Verdicts by name, so forty sentences read as a few kinds of trouble."""
    grouped: dict[str, list[dict[str, str]]] = {}
    for cell in summary.cells:
        for verdict in cell.verdicts:
            grouped.setdefault(verdict.name, []).append(
                {"where": _where(cell), "sentence": verdict.sentence}
            )
    return [{"name": name, "lines": lines} for name, lines in grouped.items()]


def _where(cell: CellSummary) -> str:
    params = params_text(cell)
    return f"{cell.stack_label} {cell.scenario} c={cell.connections}" + (
        f" {params}" if params else ""
    )


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
        "measured": sum(1 for c in summary.cells if c.throughput is not None),
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
            grid=grid_labels(list(grouped)),
            flips=flip_lines(summary),
            interval_note=interval_note(summary),
            method=METHOD,
            ratio_method=RATIO_METHOD,
            generated=datetime.now(UTC).isoformat(timespec="seconds"),
        )
    )
