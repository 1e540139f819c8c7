"""Report formats: terminal table, Markdown, JSON, CSV — all from one RunSummary."""

from __future__ import annotations

import csv
import io
import json

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from benchlab.analysis.stats import METHOD, Ratio
from benchlab.report.summary import CellSummary, RunSummary

FORMATS = ("table", "md", "html", "json", "csv")


def _num(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 100 else f"{value:,.0f}"


def throughput_text(cell: CellSummary) -> str:
    t = cell.throughput
    if t is None:
        return "–"
    if t.n == 1:
        return f"{t.median:,.0f} (1 trial)"
    return f"{t.median:,.0f} [{t.low:,.0f}–{t.high:,.0f}]"


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
    measured = [c.throughput for c in summary.cells if c.throughput and c.throughput.n > 1]
    if not measured:
        return f"Intervals: {METHOD}."
    levels = sorted({round(t.confidence * 100) for t in measured})
    text = ", ".join(f"{level}%" for level in levels)
    note = f"Throughput: median over trials with its interval (coverage {text}); {METHOD}."
    if levels[0] < 95:
        note += (
            " Fewer than 6 trials cannot reach 95%: the interval is min–max with its real coverage."
        )
    return note


BASE_COLUMNS = (
    "stack", "scenario", "conns", "trials", "throughput req/s", "p50 ms", "p99 ms",
    "errors", "server CPU %", "server RSS MB", "steal %",
)  # fmt: skip
# The articles' own columns beside those, in the Markdown meant for a post.
ARTICLE_COLUMNS = ("requests", "avg ms", "max ms", "transfer MB")


def params_text(cell: CellSummary) -> str:
    parts = [f"[{cell.point_name}]"] if cell.point_name else []
    if cell.pool_size is not None:
        parts.append(f"pool={cell.pool_size}")
    if cell.ms is not None:
        parts.append(f"{'delay' if cell.scenario == 'db-delay' else 'sleep'}={cell.ms}ms")
    return " ".join(parts)


def ratio_text(ratio: Ratio | None, percent: bool = False) -> str:
    if ratio is None:
        return ""
    if percent:
        return f"{100 * ratio.value:.0f}% [{100 * ratio.low:.0f}–{100 * ratio.high:.0f}]"
    return f"{ratio.value:.2f} [{ratio.low:.2f}–{ratio.high:.2f}]"


# Optional columns: shown only when some cell has a value for them.
OPTIONAL_COLUMNS = (
    ("params", params_text),
    ("vs baseline", lambda c: ratio_text(c.relative)),
    ("of ceiling", lambda c: ratio_text(c.ceiling_fraction, percent=True)),
    ("#DB", lambda c: "" if c.db_sessions_peak is None else str(c.db_sessions_peak)),
    ("pool active", lambda c: "" if c.pool_active_peak is None else str(c.pool_active_peak)),
    (
        "cache hit %",
        lambda c: "" if c.cache_hit_ratio is None else f"{100 * c.cache_hit_ratio:.1f}",
    ),
)


def columns(summary: RunSummary, article: bool = False) -> list[str]:
    """The table's columns; `article`: with the articles' own (requests, avg and max latency,
    transfer), for the Markdown meant for a post."""
    shown = [name for name, value in OPTIONAL_COLUMNS if any(value(c) for c in summary.cells)]
    params = [name for name in shown if name == "params"]
    others = [name for name in shown if name != "params"]
    # A cell measured by several tools shows which row is whose (article 001's question).
    tool = ["tool"] if len({c.tool for c in summary.cells}) > 1 else []
    if article:
        load = ["conns", "trials", "requests", "throughput req/s"]
        latency = ["avg ms", "p50 ms", "p99 ms", "max ms"]
        errors = ["errors", "transfer MB"]
    else:
        load = ["conns", "trials", "throughput req/s"]
        latency = ["p50 ms", "p99 ms"]
        errors = ["errors"]
    server = ["server CPU %", "server RSS MB", "steal %"]
    return [
        "stack", "scenario", *tool, *params, *load, *latency, *errors, *server, *others, "note"
    ]  # fmt: skip


def cell_name(cell: CellSummary) -> str:
    """The cell in words: stack, scenario, tool, connections and parameters."""
    params = params_text(cell)
    return (
        f"{cell.stack_label} {cell.scenario} {cell.tool} c={cell.connections}"
        f"{' ' + params if params else ''}"
    )


def verdict_lines(summary: RunSummary) -> list[str]:
    """One sentence per verdict, naming its cell."""
    return [
        f"{cell_name(cell)} — {v.name}: {v.sentence}"
        for cell in summary.cells
        for v in cell.verdicts
    ]


def point_text(point: tuple) -> str:
    name, scenario, tool, connections, ms, *pool = point
    parts = [f"[{name}]"] if name else []
    parts += [scenario, f"{tool} c={connections}"]
    if ms is not None:
        parts.append(f"{ms} ms")
    if pool and pool[0] is not None:
        parts.append(f"pool={pool[0]}")
    return " ".join(parts)


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


def stack_facts(stack: str, flavour: str | None = None) -> tuple[str, str, str]:
    """Framework, server and type of a stack, from the catalogue ('?' if it left it)."""
    from benchlab.stacks import CATALOGUE

    entry = CATALOGUE.get(stack)
    if entry is None:
        return stack, "?", "?"
    return entry.framework, entry.server, stack_type(entry.worker_model, flavour)


def relative_groups(summary: RunSummary) -> list[tuple[str, list[CellSummary]]]:
    """Article 002's table: per grid point, stacks by throughput relative to the baseline."""
    grouped: dict[tuple, list[CellSummary]] = {}
    for cell in summary.cells:
        if cell.relative is not None:
            grouped.setdefault(cell.grid, []).append(cell)
    return [
        (point_text(point), sorted(cells, key=lambda c: -c.relative.value))
        for point, cells in grouped.items()
    ]


def relative_markdown(summary: RunSummary) -> list[str]:
    out = []
    for title, cells in relative_groups(summary):
        show_db = any(c.db_sessions_peak is not None for c in cells)
        header = ["Framework", "Web Server", "Type", "Wrk", "Tput", "P50 ms", "P99 ms"]
        header += ["#DB"] if show_db else []
        out += ["", f"Throughput relative to {summary.baseline} · {title}:", ""]
        out += ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        for cell in cells:
            framework, server, kind = stack_facts(cell.stack, cell.flavour)
            row = [framework, server, kind, str(cell.workers), ratio_text(cell.relative),
                   _ms(cell.latency_ms["p50"]), _ms(cell.latency_ms["p99"])]  # fmt: skip
            row += [_num(cell.db_sessions_peak)] if show_db else []
            out.append("| " + " | ".join(v.replace("|", "\\|") for v in row) + " |")
    return out


def ranking_lines(summary: RunSummary) -> list[str]:
    """Per grid point with more than one stack, the stacks best first."""
    return [
        f"{point_text(point)}: " + " > ".join(f"{label} ({rps:,.0f})" for label, rps in order)
        for point, order in summary.rankings.items()
        if len(order) > 1
    ]


def flip_lines(summary: RunSummary) -> list[str]:
    lines = []
    for flip in summary.flips:
        a = "; ".join(f"{point_text(w.point)} ×{ratio_text(w.ratio)}" for w in flip.a_wins)
        b = "; ".join(f"{point_text(w.point)} ×{ratio_text(w.ratio)}" for w in flip.b_wins)
        lines.append(f"{flip.a} vs {flip.b}: {flip.a} wins at {a}; {flip.b} wins at {b}")
    return lines


STEAL_WARNING_PCT = 5.0


def _rows(summary: RunSummary, article: bool = False) -> list[list[str]]:
    numbers = {id(cell): n for n, cell in footnotes(summary)}
    shown = columns(summary, article)
    optional = dict(OPTIONAL_COLUMNS)
    rows = []
    for cell in summary.cells:
        values = dict(zip(BASE_COLUMNS, _base_values(cell), strict=True))
        values.update(zip(ARTICLE_COLUMNS, _article_values(cell), strict=True))
        values["tool"] = cell.tool
        values.update({name: optional[name](cell) for name in shown if name in optional})
        values["note"] = note_text(cell, numbers.get(id(cell)))
        rows.append([values[name] for name in shown])
    return rows


def _base_values(cell: CellSummary) -> list[str]:
    return [
        cell.stack_label,
        cell.scenario,
        str(cell.connections),
        str(cell.trials),
        throughput_text(cell),
        _ms(cell.latency_ms["p50"]),
        _ms(cell.latency_ms["p99"]),
        f"{cell.errors['total']:,}",
        _num(cell.server_cpu_pct),
        _num(cell.server_rss_mb, 1),
        _num(cell.server_steal_pct),
    ]


def _article_values(cell: CellSummary) -> list[str]:
    return [
        f"{cell.requests:,}",
        _ms(cell.latency_ms["mean"]),
        _ms(cell.latency_ms["max"]),
        f"{cell.transfer_bytes / 2**20:,.1f}",
    ]


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
        lines.append(f"services (loopback): {chain or 'none'}{cache}")
    if summary.partial_note:
        lines.append(f"NOTE: {summary.partial_note}")
    steals = [c.server_steal_pct for c in summary.cells if c.server_steal_pct is not None]
    if steals and max(steals) > STEAL_WARNING_PCT:
        lines.append(
            f"WARNING: the hypervisor took up to {max(steals):.0f}% of the server cores' time "
            "during trials (CPU steal): figures from this machine are noisy; compare only "
            "interleaved cells of one run, and prefer more trials"
        )
    return lines


def render_table(summary: RunSummary, console: Console) -> None:
    table = Table(title=f"benchlab · {summary.run['recipe_name']}", title_justify="left")
    for name in columns(summary):
        left = name in ("stack", "scenario", "params", "note")
        table.add_column(name, justify="left" if left else "right", overflow="fold")
    for cell, row in zip(summary.cells, _rows(summary), strict=True):
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
    rankings = ranking_lines(summary)
    if len(rankings) > 1:
        console.print("Rankings by grid point (median req/s):", style="bold")
        for line in rankings:
            console.print(f"  {line}", markup=False, highlight=False)
    flips = flip_lines(summary)
    if flips:
        console.print("Rank flips (each win beyond both intervals):", style="bold")
        for line in flips:
            console.print(f"  {line}", markup=False, highlight=False)
    console.print(interval_note(summary), style="dim", markup=False, highlight=False)


def render_markdown(summary: RunSummary) -> str:
    out = [f"# benchlab run {summary.run['id']}", ""]
    if summary.run.get("question"):
        out += [f"> {summary.run['question']}", ""]
    out += [f"- {line}" for line in _run_lines(summary)]
    names = columns(summary, article=True)
    out += ["", "| " + " | ".join(names) + " |", "|" + "|".join("---" for _ in names) + "|"]
    for row in _rows(summary, article=True):
        out.append("| " + " | ".join(v.replace("|", "\\|") for v in row) + " |")
    notes = footnotes(summary)
    if notes:
        out.append("")
        out += [f"{n}. {cell_name(c)}: {c.reason}" for n, c in notes]
    sentences = verdict_lines(summary)
    if sentences:
        out += ["", "Verdicts:", ""] + [f"- {line}" for line in sentences]
    out += relative_markdown(summary)
    rankings = ranking_lines(summary)
    if len(rankings) > 1:
        out += ["", "Rankings by grid point (median req/s):", ""] + [f"- {x}" for x in rankings]
    flips = flip_lines(summary)
    if flips:
        out += ["", "Rank flips (each win beyond both intervals):", ""] + [f"- {x}" for x in flips]
    out += ["", interval_note(summary), ""]
    return "\n".join(out)


def render_json(summary: RunSummary) -> str:
    return json.dumps(summary.to_json(), indent=2) + "\n"


CSV_FIELDS = (
    "stack", "stack_label", "scenario", "tool", "connections", "threads", "duration_s",
    "workers", "flavour", "pool_size", "ms", "trials", "requests", "throughput_median",
    "throughput_low", "throughput_high",
    "throughput_confidence", "latency_p50_ms", "latency_p90_ms", "latency_p99_ms",
    "latency_p999_ms", "latency_max_ms", "errors", "errors_connect", "errors_read",
    "errors_write", "errors_timeout", "errors_non_2xx", "errors_other", "server_cpu_pct",
    "server_rss_mb",
    "load_cpu_pct", "server_steal_pct", "db_sessions_peak", "pool_active_peak",
    "cache_hit_ratio", "relative", "relative_low", "relative_high", "ceiling_fraction",
    "rps_per_cpu_s", "verdicts", "status", "reason",
)  # fmt: skip


def render_csv(summary: RunSummary) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS)
    writer.writeheader()
    for cell in summary.cells:
        t = cell.throughput
        writer.writerow(
            {
                **{k: getattr(cell, k) for k in CSV_FIELDS[:13]},
                "throughput_median": t and t.median,
                "throughput_low": t and t.low,
                "throughput_high": t and t.high,
                "throughput_confidence": t and t.confidence,
                **{
                    f"latency_{k}_ms": cell.latency_ms[k]
                    for k in ("p50", "p90", "p99", "p999", "max")
                },
                "errors": cell.errors["total"],
                **{
                    f"errors_{k}": cell.errors[k]
                    for k in ("connect", "read", "write", "timeout", "non_2xx", "other")
                },
                "server_cpu_pct": cell.server_cpu_pct,
                "server_rss_mb": cell.server_rss_mb,
                "load_cpu_pct": cell.load_cpu_pct,
                "server_steal_pct": cell.server_steal_pct,
                "db_sessions_peak": cell.db_sessions_peak,
                "pool_active_peak": cell.pool_active_peak,
                "cache_hit_ratio": cell.cache_hit_ratio,
                "relative": cell.relative and cell.relative.value,
                "relative_low": cell.relative and cell.relative.low,
                "relative_high": cell.relative and cell.relative.high,
                "ceiling_fraction": cell.ceiling_fraction and cell.ceiling_fraction.value,
                "rps_per_cpu_s": cell.rps_per_cpu_s,
                "verdicts": " | ".join(f"{v.name}: {v.sentence}" for v in cell.verdicts),
                "status": cell.status,
                "reason": cell.reason,
            }
        )
    return buffer.getvalue()
