"""Report formats: terminal table, Markdown, JSON, CSV — all from one RunSummary, with the
columns of `report.columns` and the figures of `benchlab.figures`."""

from __future__ import annotations

import csv
import io
import json

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from benchlab import figures as F
from benchlab.analysis.grid import GridPoint
from benchlab.analysis.stats import METHOD, Estimate, Ratio
from benchlab.report.columns import cell_columns, params_text, ratio_text
from benchlab.report.summary import CellSummary, RunSummary

FORMATS = ("table", "md", "html", "json", "csv")


def note_text(cell: CellSummary, footnote: int | None = None) -> str:
    ref = f" [{footnote}]" if footnote is not None else ""
    if cell.status == "failed":
        return f"failed{ref}"
    if cell.status == "pending":
        return "not measured: run stopped first"
    if cell.status == "incomplete":
        return "incomplete: run stopped early"
    return ""


def footnotes(summary: RunSummary) -> list[tuple[int, CellSummary]]:
    """Failed cells, numbered, so long reasons go under the table instead of inside it."""
    failed = [c for c in summary.cells if c.status == "failed"]
    return [(i + 1, c) for i, c in enumerate(failed)]


def interval_note(summary: RunSummary) -> str:
    estimates = [c.estimate(c.ranked_by) for c in summary.cells]
    measured = [e for e in estimates if e is not None and e.n > 1]
    rule = f" Rankings and flips: {summary.options.evidence.describe()}."
    if not measured:
        return f"Intervals: {METHOD}; a cell with 1 trial has no interval.{rule}"
    levels = sorted({round(e.confidence * 100) for e in measured})
    text = ", ".join(f"{level}%" for level in levels)
    note = f"Medians over trials with their interval (coverage {text}); {METHOD}."
    if levels[0] < 95:
        note += (
            " Fewer than 6 trials cannot reach 95%: the interval is min–max with its real coverage."
        )
    return note + rule


def method_notes(summary: RunSummary) -> list[str]:
    """How the figures of this run were made, when it is not the plain closed loop."""
    notes = []
    modes = {c.mode for c in summary.cells}
    if "rate" in modes or "slo" in modes:
        notes.append(
            "Fixed-rate latency counts from each request's due time (coordinated omission "
            "corrected); percentiles come from the merged histogram of the trials."
        )
    if "slo" in modes and summary.options.slo is not None:
        notes.append(
            f"Capacity: the highest fixed rate that held {summary.options.slo.describe()}, "
            "median over search replicates [interval]; latency and CPU shown at that rate."
        )
    from benchlab.load import TOOLS

    coarse = sorted(
        {
            c.tool for c in summary.cells
            if c.mode == "closed" and c.tool in TOOLS and c.value(F.LAT_MEAN) is not None
            and c.value(F.LAT_MEAN) < TOOLS[c.tool].latency_resolution_ms
        }
    )  # fmt: skip
    if coarse:
        notes.append(
            f"Not checked for tool-stalled: {', '.join(coarse)} cells whose mean latency is under "
            "the tool's resolution (siege times to 10 ms, hey to 0.1 ms)."
        )
    sources = {c.cpu_source for c in summary.cells if c.cpu_source}
    if sources:
        notes.append(f"Server CPU counted per trial ({', '.join(sorted(sources))}).")
    return notes


def cell_name(cell: CellSummary) -> str:
    """The cell in words: stack, scenario, tool, connections, load and parameters."""
    params = params_text(cell)
    load = {"slo": " capacity", "rate": f" rate {cell.rate_text}"}.get(cell.mode, "")
    return (
        f"{cell.stack_label} {cell.scenario} {cell.tool} c={cell.connections}{load}"
        f"{' ' + params if params else ''}"
    )


def verdict_lines(summary: RunSummary) -> list[str]:
    """One sentence per verdict, naming its cell."""
    return [
        f"{cell_name(cell)} — {v.name}: {v.sentence}"
        for cell in summary.cells
        for v in cell.verdicts
    ]


def stack_type(worker_model: str, flavour: str | None) -> str:
    """Article 002's 'Type': how a stack waits for I/O."""
    model = worker_model.lower()
    if "greenlet" in model and "block" not in model:
        kind = "Async / Greenlet"
    elif "goroutine" in model:
        kind = "Async / Goroutine"
    elif "event loop" in model or "coroutine" in model:
        kind = "Async / Coroutine"
    elif "thread" in model:
        kind = "Sync / Threads"
    else:
        kind = "Sync"
    if flavour == "sync" and kind == "Async / Coroutine":
        kind += " (sync endpoints in threads)"
    return kind


def stack_facts(cell: CellSummary) -> tuple[str, str, str]:
    """Framework, server and type of a cell's stack, as stored with it ('?' if unknown)."""
    facts = cell.facts
    if not facts:
        return cell.stack, "?", "?"
    kind = stack_type(str(facts.get("worker_model", "")), cell.flavour)
    return str(facts.get("framework", "?")), str(facts.get("server", "?")), kind


def relative_groups(summary: RunSummary) -> list[tuple[str, list[CellSummary]]]:
    """Article 002's table: per grid point, stacks by their figure relative to the baseline,
    best first."""
    grouped: dict[GridPoint, list[CellSummary]] = {}
    for cell in summary.cells:
        if cell.ratio(F.RELATIVE) is not None and cell.grid is not None:
            grouped.setdefault(cell.grid, []).append(cell)
    best_first = -1 if summary.ranked_by.wins(2.0) else 1
    return [
        (point.text(), sorted(cells, key=lambda c: best_first * c.value(F.RELATIVE)))
        for point, cells in grouped.items()
    ]


def relative_rows(summary: RunSummary) -> list[tuple[str, list[str], list[list[str]]]]:
    """Article 002's table, per grid point: (title, header, rows)."""
    tables = []
    for title, cells in relative_groups(summary):
        show_db = any(c.value(F.DB_SESSIONS) is not None for c in cells)
        header = ["Framework", "Web Server", "Type", "Workers", f"{summary.ranked_by.label} ×"]
        header += ["P50 ms", "P99 ms"] + (["#DB"] if show_db else [])
        rows = []
        for cell in cells:
            framework, server, kind = stack_facts(cell)
            row = [framework, server, kind, str(cell.workers), ratio_text(cell.ratio(F.RELATIVE)),
                   F.P50.format(cell.value(F.P50)), F.P99.format(cell.value(F.P99))]  # fmt: skip
            row += [F.DB_SESSIONS.format(cell.value(F.DB_SESSIONS))] if show_db else []
            rows.append(row)
        tables.append((title, header, rows))
    return tables


def relative_markdown(summary: RunSummary) -> list[str]:
    out = []
    for title, header, rows in relative_rows(summary):
        out += ["", f"{summary.ranked_by.label} relative to {summary.baseline} · {title}:", ""]
        out += ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        out += ["| " + " | ".join(v.replace("|", "\\|") for v in row) + " |" for row in rows]
    return out


def ranking_lines(summary: RunSummary) -> list[str]:
    """Per grid point with more than one stack, the stacks best first: '>' where one is
    ahead of the next by the evidence rule, '≈' where they tie."""
    figure = summary.ranked_by
    lines = []
    for point, order in summary.rankings.items():
        if len(order) < 2:
            continue
        text = f"{order[0].label} ({figure.format(order[0].value)})"
        for placed in order[1:]:
            text += (
                f" {'>' if placed.behind else '≈'} {placed.label} ({figure.format(placed.value)})"
            )
        lines.append(f"{point.text()}: {text}")
    return lines


def flip_lines(summary: RunSummary) -> list[str]:
    lines = []
    for flip in summary.flips:
        a = "; ".join(f"{w.point.text()} ×{ratio_text(w.ratio)}" for w in flip.a_wins)
        b = "; ".join(f"{w.point.text()} ×{ratio_text(w.ratio)}" for w in flip.b_wins)
        lines.append(f"{flip.a} vs {flip.b}: {flip.a} wins at {a}; {flip.b} wins at {b}")
    return lines


STEAL_WARNING_PCT = 5.0


def _rows(summary: RunSummary, article: bool = False) -> tuple[list[str], list[list[str]]]:
    numbers = {id(cell): n for n, cell in footnotes(summary)}
    columns = cell_columns(summary.cells, article=article, baseline=summary.baseline)
    header = [c.title for c in columns] + ["note"]
    rows = [
        [column.text(cell) or "–" for column in columns] + [note_text(cell, numbers.get(id(cell)))]
        for cell in summary.cells
    ]
    return header, rows


def _run_lines(summary: RunSummary) -> list[str]:
    run = summary.run
    machine = run["machine"]
    lines = [
        f"run {run['id']} · recipe {run['recipe_name']} ({run['recipe_path']})"
        f" · status {run['status']}",
        f"{machine.get('cpu')} · {machine.get('cores')} cores · kernel {machine.get('kernel')} · "
        f"server cores {run['server_cores']} · load cores {run['load_cores']}",
    ]
    services = run.get("services") or {}
    if services:
        chain = " → ".join(
            f"{name} :{info['port']}" for name, info in services.items() if name != "redis"
        )
        cache = f" · redis :{services['redis']['port']}" if "redis" in services else ""
        where = "(loopback)" if not summary.hosts else "(on the database host)"
        lines.append(f"services {where}: {chain or 'none'}{cache}")
    lines += host_lines(summary)
    if summary.options.slo is not None:
        lines.append(f"SLO: {summary.options.slo.describe()}")
    if summary.partial_note:
        lines.append(f"NOTE: {summary.partial_note}")
    steals = [c.value(F.STEAL) for c in summary.cells if c.value(F.STEAL) is not None]
    if steals and max(steals) > STEAL_WARNING_PCT:
        lines.append(
            f"WARNING: the hypervisor took up to {max(steals):.0f}% of the server cores' time "
            "during trials (CPU steal): figures from this machine are noisy; compare only "
            "interleaved cells of one run, and prefer more trials"
        )
    return lines


def host_lines(summary: RunSummary) -> list[str]:
    """What ran where, when the recipe had [hosts]: one line per host."""
    out = []
    for host in summary.hosts:
        machine = host.get("machine") or {}
        cores = " · ".join(f"{role} cores {c}" for role, c in (host.get("cores") or {}).items())
        address = f" {host['address']}" if host.get("address") else ""
        out.append(
            f"host {host['name']} ({host['at']}{address}): {', '.join(host['roles'])} · {cores}"
            f" · {machine.get('cpu')} · {machine.get('cores')} cores · kernel "
            f"{machine.get('kernel')}"
        )
    return out


def load_host_lines(summary: RunSummary) -> list[str]:
    """Each load host's share of every cell loaded from several: the merged figures above
    are the whole; these are the parts, with each generator's own CPU."""
    return [
        f"{cell_name(cell)}: " + " · ".join(h.text() for h in cell.load_hosts)
        for cell in summary.cells
        if cell.load_hosts
    ]


def _render_tune(summary: RunSummary, console: Console) -> None:
    from benchlab.report.tune_report import CANDIDATE_HEADER, candidate_rows, recommendation_lines

    for line in _run_lines(summary):
        console.print(line, markup=False, highlight=False)
    table = Table(title=f"benchlab · {summary.run['recipe_name']}", title_justify="left")
    for name in CANDIDATE_HEADER:
        left = name in ("candidate", "status", "verdicts")
        table.add_column(name, justify="left" if left else "right", overflow="fold")
    for row in candidate_rows(summary):
        table.add_row(*(escape(v) for v in row))
    console.print(table)
    for line in verdict_lines(summary):
        console.print(line, style="yellow", markup=False, highlight=False)
    for line in recommendation_lines(summary):
        console.print(line, style="bold" if not line.startswith(" ") else None, markup=False,
                      highlight=False)  # fmt: skip
    for line in [interval_note(summary), *method_notes(summary)]:
        console.print(line, style="dim", markup=False, highlight=False)


def render_table(summary: RunSummary, console: Console) -> None:
    if summary.options.tune is not None:
        _render_tune(summary, console)
        return
    table = Table(title=f"benchlab · {summary.run['recipe_name']}", title_justify="left")
    columns = cell_columns(summary.cells, baseline=summary.baseline)
    for column in columns:
        table.add_column(
            column.title, justify="right" if column.numeric else "left", overflow="fold"
        )
    table.add_column("note", justify="left", overflow="fold")
    _, rows = _rows(summary)
    for cell, row in zip(summary.cells, rows, strict=True):
        style = "red" if cell.status == "failed" else "yellow" if cell.status != "ok" else None
        table.add_row(*(escape(value) for value in row), style=style)
    for line in _run_lines(summary):
        console.print(line, markup=False, highlight=False)
    console.print(table)
    for number, cell in footnotes(summary):
        console.print(
            f"[{number}] {cell_name(cell)}: {cell.reason}",
            style="red",
            markup=False,
            highlight=False,
        )
    for line in verdict_lines(summary):
        console.print(line, style="yellow", markup=False, highlight=False)
    shares = load_host_lines(summary)
    if shares:
        console.print("Load hosts (each one's share of the merged figures):", style="bold")
        for line in shares:
            console.print(f"  {line}", markup=False, highlight=False)
    if summary.tool_agreement:
        console.print("Load tools compared (the same cell under each):", style="bold")
        for line in summary.tool_agreement:
            console.print(f"  {line}", markup=False, highlight=False)
    rankings = ranking_lines(summary)
    if len(rankings) > 1:
        console.print(f"Rankings by grid point ({summary.ranked_by.title}):", style="bold")
        for line in rankings:
            console.print(f"  {line}", markup=False, highlight=False)
    flips = flip_lines(summary)
    if flips:
        console.print("Rank flips (each win by the evidence rule below):", style="bold")
        for line in flips:
            console.print(f"  {line}", markup=False, highlight=False)
    for line in [interval_note(summary), *method_notes(summary)]:
        console.print(line, style="dim", markup=False, highlight=False)


def render_markdown(summary: RunSummary) -> str:
    out = [f"# benchlab run {summary.run['id']}", ""]
    if summary.run.get("question"):
        out += [f"> {summary.run['question']}", ""]
    out += [f"- {line}" for line in _run_lines(summary)]
    if summary.options.tune is not None:
        from benchlab.report.tune_report import tune_markdown

        out += ["", *tune_markdown(summary), "## Every cell measured"]
    header, rows = _rows(summary, article=True)
    out += ["", "| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        out.append("| " + " | ".join(v.replace("|", "\\|") for v in row) + " |")
    notes = footnotes(summary)
    if notes:
        out.append("")
        out += [f"{n}. {cell_name(c)}: {c.reason}" for n, c in notes]
    sentences = verdict_lines(summary)
    if sentences:
        out += ["", "Verdicts:", ""] + [f"- {line}" for line in sentences]
    shares = load_host_lines(summary)
    if shares:
        out += ["", "Load hosts (each one's share of the merged figures):", ""]
        out += [f"- {line}" for line in shares]
    if summary.tool_agreement:
        out += ["", "Load tools compared (the same cell under each):", ""]
        out += [f"- {line}" for line in summary.tool_agreement]
    out += relative_markdown(summary)
    rankings = ranking_lines(summary)
    if len(rankings) > 1:
        out += ["", f"Rankings by grid point ({summary.ranked_by.title}):", ""]
        out += [f"- {x}" for x in rankings]
    flips = flip_lines(summary)
    if flips:
        out += ["", "Rank flips (each win by the evidence rule below):", ""]
        out += [f"- {x}" for x in flips]
    out += [
        "",
        interval_note(summary),
        *(["", *method_notes(summary)] if method_notes(summary) else []),
        "",
    ]
    return "\n".join(out)


def render_json(summary: RunSummary) -> str:
    data = summary.to_json()
    if summary.options.tune is not None:
        from benchlab.report.tune_report import tune_json

        data = {**tune_json(summary), **data}
    return json.dumps(data, indent=2) + "\n"


# --- CSV: one row per cell, every figure of the registry flattened ----------------------------

IDENTITY_FIELDS = (
    "key", "stack", "stack_label", "scenario", "tool", "mode", "connections", "threads",
    "duration_s", "workers", "flavour", "pool_size", "ms", "point_name", "rate_share", "trials",
)  # fmt: skip


def _csv_name(figure: F.Figure) -> str:
    return f"{figure.group}_{figure.key}" if figure.group else figure.key


def csv_fields() -> list[str]:
    names = list(IDENTITY_FIELDS)
    for figure in F.FIGURES.values():
        name = _csv_name(figure)
        if figure.kind is F.Kind.ESTIMATE:
            names += [f"{name}_median", f"{name}_low", f"{name}_high", f"{name}_confidence"]
        elif figure.kind is F.Kind.RATIO:
            names += [name, f"{name}_low", f"{name}_high"]
        else:
            names.append(name)
    return [*names, "errors", *(f"errors_{k}" for k in ("connect", "read", "write", "timeout",
            "non_2xx", "other")), "verdicts", "status", "reason"]  # fmt: skip


def _csv_values(cell: CellSummary) -> dict[str, object]:
    row: dict[str, object] = {name: getattr(cell, name) for name in IDENTITY_FIELDS}
    for figure in F.FIGURES.values():
        name, value = _csv_name(figure), cell.figures.get(figure.key)
        if isinstance(value, Estimate):
            interval = value.n > 1
            row |= {
                f"{name}_median": value.median,
                f"{name}_low": value.low if interval else None,
                f"{name}_high": value.high if interval else None,
                f"{name}_confidence": value.confidence if interval else None,
            }
        elif isinstance(value, Ratio):
            row |= {name: value.value, f"{name}_low": value.low, f"{name}_high": value.high}
        elif figure.kind is F.Kind.VALUE:
            row[name] = value
    row |= {"errors": cell.errors["total"], **{f"errors_{k}": v for k, v in cell.errors.items()
            if k != "total"}}  # fmt: skip
    row |= {
        "verdicts": " | ".join(f"{v.name}: {v.sentence}" for v in cell.verdicts),
        "status": cell.status,
        "reason": cell.reason,
    }
    return row


def render_csv(summary: RunSummary) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=csv_fields())
    writer.writeheader()
    for cell in summary.cells:
        writer.writerow(_csv_values(cell))
    return buffer.getvalue()
