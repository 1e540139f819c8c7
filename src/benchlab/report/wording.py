"""The words every report format shares: a cell named in words, its status and verdicts, the
run's header lines, the notes on intervals and method, rankings and flips, article 002's
relative table, and the settings a grid point was measured with."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from benchlab.analysis.grid import GridPoint, cell_words
from benchlab.analysis.stats import METHOD
from benchlab.analysis.summary import CellSummary, RunSummary
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.core.service_kinds import Service
from benchlab.http.scenarios import BROADCAST, HOLD, SCENARIOS
from benchlab.load import TOOLS, finer_than_timed
from benchlab.recipe.files import shown_source
from benchlab.report.columns import ratio_text
from benchlab.system.cpu_account import PROCESS_TREE

STEAL_WARNING_PCT = 5.0


def interval_note(summary: RunSummary) -> str:
    estimates = [c.estimate(c.result.figure) for c in summary.cells]
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


def _sentinel_note(summary: RunSummary) -> str:
    note = (
        f"Sentinel: {summary.options.sentinel}, measured in every round and not ranked; each "
        "cell's figure ÷ its in the same round is kept (÷ sentinel: JSON, CSV, history)."
    )
    noise = summary.aa_noise_pct
    if noise is not None:
        note += (
            f" A/A: its two launches came out {noise:.1f}% apart in this run; history and "
            "compare call no smaller change a change."
        )
    return note


def method_notes(summary: RunSummary) -> list[str]:
    """How the figures of this run were made, when it is not the plain closed loop."""
    notes = []
    modes = {c.record.mode for c in summary.cells}
    if Mode.RATE in modes or Mode.SLO in modes:
        notes.append(
            "Fixed-rate latency counts from each request's due time (coordinated omission "
            "corrected); percentiles come from the merged histogram of the trials."
        )
    if Mode.SLO in modes and summary.options.slo is not None:
        notes.append(
            f"Capacity: the highest fixed rate that held {summary.options.slo.describe()}, "
            "median over search replicates [interval]; latency and CPU shown at that rate."
        )
    coarse = sorted(
        {
            c.record.tool for c in summary.cells
            if c.record.mode == Mode.CLOSED and finer_than_timed(c.record.tool, c.value(F.LAT_MEAN))
        }
    )  # fmt: skip
    if coarse:
        notes.append(
            f"Not checked for tool-stalled: {', '.join(coarse)} cells whose mean latency is under "
            f"the tool's resolution ({_coarse_resolutions()})."
        )
    sources = {c.result.cpu_source for c in summary.cells if c.result.cpu_source}
    if sources:
        notes.append(f"Server CPU counted per trial ({', '.join(sorted(sources))}).")
    if summary.options.sentinel is not None:
        notes.append(_sentinel_note(summary))
    if PROCESS_TREE in sources:
        notes.append(
            "Where it was counted over the process tree, no control group could be made "
            "(benchlab was not root, or /sys/fs/cgroup is read-only): the CPU of a process "
            "that exits without being waited for (a worker replaced mid-trial) is missing "
            "from its figures."
        )
    return notes


def _coarse_resolutions() -> str:
    """The tools that time coarser than the finest, coarsest first: "siege times to 10 ms,
    hey to 0.1 ms"."""
    finest = min(tool.latency_resolution_ms for tool in TOOLS.values())
    coarse = sorted(
        (tool for tool in TOOLS.values() if tool.latency_resolution_ms > finest),
        key=lambda tool: -tool.latency_resolution_ms,
    )
    return ", ".join(
        f"{tool.name}{' times' if i == 0 else ''} to {tool.latency_resolution_ms:g} ms"
        for i, tool in enumerate(coarse)
    )


def cell_name(cell: CellSummary) -> str:
    """The cell in words (analysis/grid.py's cell_words: the one way a report names a cell)."""
    record = cell.record
    return cell_words(record.stack_label, record.pool_size, cell.result.point)


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
    facts = cell.result.facts
    if not facts:
        return cell.record.stack, "?", "?"
    kind = stack_type(str(facts.get("worker_model", "")), cell.record.flavour)
    return str(facts.get("framework", "?")), str(facts.get("server", "?")), kind


def relative_groups(summary: RunSummary) -> list[tuple[GridPoint, list[CellSummary]]]:
    """Article 002's table: per grid point, stacks by their figure relative to the baseline,
    best first."""
    groups = []
    for point in summary.ranking.points.values():
        # best first already: the ranking's order, by the figure each is divided by
        cells = [c for c in summary.cells_at(point.point) if c.ratio(F.RELATIVE) is not None]
        if cells:
            groups.append((point.point, cells))
    return groups


def relative_rows(
    summary: RunSummary,
) -> list[tuple[str, F.Figure, list[str], list[list[str]]]]:
    """Article 002's table, per grid point: (title, the figure divided, header, rows)."""
    tables = []
    for point, cells in relative_groups(summary):
        show_db = any(c.value(F.DB_SESSIONS) is not None for c in cells)
        figure = summary.ranking.points[point].figure
        header = ["Framework", "Web Server", "Type", "Workers", f"{figure.label} ×"]
        header += ["P50 ms", "P99 ms"] + (["#DB"] if show_db else [])
        rows = []
        for cell in cells:
            framework, server, kind = stack_facts(cell)
            row = [framework, server, kind, str(cell.record.workers),
                   ratio_text(cell.ratio(F.RELATIVE)), F.P50.format(cell.value(F.P50)),
                   F.P99.format(cell.value(F.P99))]  # fmt: skip
            row += [F.DB_SESSIONS.format(cell.value(F.DB_SESSIONS))] if show_db else []
            rows.append(row)
        tables.append((point.text(), figure, header, rows))
    return tables


def flip_lines(summary: RunSummary) -> list[str]:
    lines = []
    for flip in summary.flips:
        a = "; ".join(f"{w.point.text()} ×{ratio_text(w.ratio)}" for w in flip.a_wins)
        b = "; ".join(f"{w.point.text()} ×{ratio_text(w.ratio)}" for w in flip.b_wins)
        lines.append(f"{flip.a} vs {flip.b}: {flip.a} wins at {a}; {flip.b} wins at {b}")
    return lines


def run_lines(summary: RunSummary) -> list[str]:
    """The run in a few lines: what, where, which services, and any warning."""
    run = summary.run
    machine = run.machine
    lines = [
        f"run {run.id} · recipe {run.recipe_name} ({shown_source(run.recipe_path)}) · status "
        f"{run.status}",
        f"{machine.get('cpu')} · {machine.get('cores')} cores · kernel {machine.get('kernel')} · "
        f"server cores {list(run.server_cores)} · load cores {list(run.load_cores)}",
    ]
    services = run.services or {}
    if services:
        chain = " → ".join(
            f"{name} :{info['port']}" for name, info in services.items() if name != Service.REDIS
        )
        cache = (
            f" · {Service.REDIS} :{services[Service.REDIS]['port']}"
            if Service.REDIS in services
            else ""
        )
        where = "(loopback)" if not summary.hosts else "(on the database host)"
        lines.append(f"services {where}: {chain or 'none'}{cache}")
    lines += host_lines(summary)
    if summary.options.slo is not None:
        lines.append(f"SLO: {summary.options.slo.describe()}")
    if summary.partial_note:
        lines.append(f"NOTE: {summary.partial_note}")
    steals = [s for c in summary.cells if (s := c.value(F.STEAL)) is not None]
    if steals and max(steals) > STEAL_WARNING_PCT:
        lines.append(
            f"WARNING: the hypervisor took up to {max(steals):.0f}% of the server cores' time "
            "during trials (CPU steal): figures from this machine are noisy; compare only "
            "interleaved cells of one run, and prefer more trials"
        )
    return lines


def display_names(cells: Sequence[CellSummary]) -> dict[str, str]:
    """Stack labels by cell key, without the worker count when every cell shown has the same
    (the settings beside them say it)."""
    workers = {c.record.workers for c in cells}
    if len(workers) != 1:
        return {c.record.key: c.record.stack_label for c in cells}
    pattern = re.compile(rf" w={workers.pop()}\b")
    return {c.record.key: pattern.sub("", c.record.stack_label, count=1) for c in cells}


def _span(values: Sequence[float], unit: str) -> str:
    low, high = min(values), max(values)
    shown = f"{low:g}" if low == high else f"{low:g}–{high:g}"
    return f"{shown} {unit}"


def load_words(cell: CellSummary) -> str:
    """What loaded a cell, in words: its connections; a WebSocket cell's own load, from the
    run's [websocket]: a hold's steps, a broadcast's receivers and rounds, an echo's
    connections and its fixed rate."""
    ws, scenario = cell.result.websocket, SCENARIOS.get(cell.record.scenario)
    kind = scenario.websocket if scenario is not None else None
    if ws is None or kind is None:
        return f"{cell.record.connections} connections"
    if kind == HOLD:
        return f"{ws.hold_steps} steps of {ws.hold_step:,} connections"
    if kind == BROADCAST:
        return f"{ws.receivers:,} receivers · {ws.rounds:,} rounds"
    # the echo's fixed rate: its cells' own, or (an [slo]'s) the trial each round beside
    # the search
    rate = f"{F.rate_text(ws.rate)} {cell.result.rate_unit}"
    return f"{cell.record.connections} connections · fixed rate {rate}"


def _loads_text(cells: Sequence[CellSummary]) -> str:
    """The cells' loads in words: their connections, as a span where they differ (a
    WebSocket cell's own words, each once)."""
    if all(c.result.websocket is None for c in cells):
        connections = sorted({c.record.connections for c in cells})
        low, high = connections[0], connections[-1]
        return f"{low} connections" if low == high else f"{low}–{high} connections"
    return "; ".join(dict.fromkeys(load_words(c) for c in cells))


def settings_text(
    cells: Sequence[CellSummary], server_cores: Sequence[int] = (), load: bool = True
) -> str:
    """How cells were measured, in one line: tool and load (`load`: connections; a
    WebSocket cell's own), trials × duration, workers and the server's cores: what a chart or
    a table of them needs beside it."""
    if not cells:
        return ""
    tools = sorted({c.record.tool for c in cells})
    trials = [c.result.trials for c in cells if c.result.trials]
    workers = sorted({c.record.workers for c in cells})
    parts = []
    if load:
        parts.append(", ".join(tools))
        parts.append(_loads_text(cells))
    if trials:
        unit = "replicate" if any(c.record.mode == Mode.SLO for c in cells) else "trial"
        unit += "s" if max(trials) > 1 else ""
        parts.append(f"{_span(trials, unit)} of {_span([c.record.duration_s for c in cells], 's')}")
    parts.append(
        f"{workers[0]} worker{'s' if workers[0] > 1 else ''} per stack"
        if len(workers) == 1
        else f"{workers[0]}–{workers[-1]} workers per stack"
    )
    if server_cores:
        count = len(server_cores)
        parts.append(f"on {count} server core{'s' if count > 1 else ''}")
    return " · ".join(parts)


def host_lines(summary: RunSummary) -> list[str]:
    """What ran where, when the recipe had [hosts]: one line per host."""
    out = []
    for host in summary.hosts:
        machine = host.machine
        cores = " · ".join(f"{role} cores {c}" for role, c in host.cores.items())
        address = f" {host.address}" if host.address else ""
        out.append(
            f"host {host.name} ({host.at}{address}): {', '.join(host.roles)} · {cores}"
            f" · {machine.get('cpu')} · {machine.get('cores')} cores · kernel "
            f"{machine.get('kernel')}"
        )
    return out


def mix_lines(summary: RunSummary) -> list[str]:
    """Each mixed cell's parts on their own, beside the whole the table shows."""
    return [
        f"{cell_name(cell)}: " + " · ".join(m.text() for m in cell.result.mix)
        for cell in summary.cells
        if cell.result.mix
    ]


def load_host_lines(summary: RunSummary) -> list[str]:
    """Each load host's share of every cell loaded from several: the merged figures are the
    whole; these are the parts, with each generator's own CPU."""
    return [
        f"{cell_name(cell)}: " + " · ".join(h.text() for h in cell.result.load_hosts)
        for cell in summary.cells
        if cell.result.load_hosts
    ]


def noise_line(machine: dict[str, Any]) -> str | None:
    """The machine's measured noise, as the run found it stored (selfcheck --noise)."""
    noise = machine.get("noise")
    if not noise:
        return None
    parts = ", ".join(
        f"{name} {100 * noise[key]:.1f} %"
        for name, key in (
            ("within a launch", "within_launch"), ("between launches", "between_launches"),
            ("shared by a round", "shared_by_round"), ("a stack's own drift", "own_drift"),
        )
    )  # fmt: skip
    when = str(noise.get("measured_at") or "")[:10]
    return (
        f"{parts} (relative standard deviations: benchlab selfcheck --noise, "
        f"{noise.get('rounds')} rounds, {when})"
    )
