"""What the numbers say, in sentences a reader can decide from: one takeaway per grid point,
the settings it was measured with, and a short guide to reading the figures.

A takeaway is the point's ranking (`analysis/ranking.py`) as one chain that names each stack
once, best first, with the ratio of each to the next and its interval ("gin 3.7× the next
[3.1–4.2] > sanic"): ">" where the evidence rule puts it ahead, "≈" where it does not, and
"undecided" exactly where the ranking is.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchlab.analysis.evidence import MIN_TRIALS
from benchlab.analysis.grid import GridPoint, short_labels
from benchlab.analysis.ranking import Call, PointRanking, Step, Tier
from benchlab.analysis.relative import CEILING_STACK, Ceiling, tool_limited
from benchlab.analysis.stats import Ratio
from benchlab.analysis.summary import CellSummary, RunSummary
from benchlab.analysis.verdicts import BLOCKED, CAUTIONS, CLIENT_BOUND, ERRORS
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.load.ws_requests import AT_LAST_STEP, DROPPED, MEMORY, REFUSED, STALLED
from benchlab.report.columns import ratio_text
from benchlab.report.wording import display_names, settings_text


@dataclass(frozen=True)
class Takeaway:
    point: GridPoint
    label: str  # the grid point in the words that tell it from the run's other points
    sentence: str
    settings: str  # how its cells were measured
    notes: tuple[str, ...] = ()  # what qualifies the figures (a ceiling that is not one)
    tiers: tuple[Tier, ...] = ()  # the point's order in tiers (JSON)

    def tiers_json(self) -> list[dict[str, Any]]:
        return [dataclasses.asdict(tier.as_json()) for tier in self.tiers]


def takeaways(summary: RunSummary) -> list[Takeaway]:
    points = list(summary.ranking.points.values())
    labels = dict(zip([p.point for p in points], short_labels([p.point for p in points]),
                      strict=True))  # fmt: skip
    cores = summary.run.server_cores
    found = []
    for ranked in points:
        point, cells = ranked.point, summary.cells_at(ranked.point)
        notes = tuple(n for n in (_ceiling_note(cells), _too_few(ranked), *_held(cells)) if n)
        # the tool and connections once: in the label when they tell points apart
        load = f"c={point.connections}" not in labels[point].split()
        settings = settings_text(cells, cores, load=load)
        if not load:
            settings = f"{point.tool} · {settings}" if point.tool not in labels[point] else settings
        sentence = chain(ranked, summary)
        found.append(Takeaway(point, labels[point], sentence, settings, notes, ranked.tiers))
    return found


# --- one grid point ---------------------------------------------------------------------------


def _decimals(value: float) -> int:
    """As many decimals as a ratio needs to be read: 1.08, 5.7, 12."""
    return 2 if value < 2 else 1 if value < 9.95 else 0


def times(value: float, decimals: int | None = None) -> str:
    if math.isinf(value):
        return "∞"  # a bound a confidence sequence has not reached yet
    return f"{value:.{_decimals(value) if decimals is None else decimals}f}"


def interval(ratio: Ratio) -> str:
    """The bounds written as precisely as the ratio itself."""
    digits = _decimals(ratio.value)
    return f"[{times(ratio.low, digits)}–{times(ratio.high, digits)}]"


def chain(ranked: PointRanking, summary: RunSummary) -> str:
    """The point's order in one sentence, each stack named once: 'By throughput, best first:
    gin 3.7× the next [3.1–4.2] > sanic 1.70× the next [1.32–2.03] > fastapi ≈ tornado.'
    Each ratio says whose it is (a stack's over the next's), so that read aloud, 'sanic 1.70×'
    is never heard as sanic against gin. A caution stands beside a stack's name."""
    figure, order = ranked.figure, ranked.order
    cells = {place.key: summary.cell(place.key) for place in order}
    if not order:
        return _nothing_ranked(summary.cells_at(ranked.point), figure)
    names = display_names(list(cells.values()))
    if len(order) == 1:
        value = F.compact_number(order[0].value)
        only = _named(cells[order[0].key], names)
        unit = cells[order[0].key].unit(figure)
        return f"{only}: {value} {unit} (the only stack ranked here)."
    lower = figure.better is F.Better.LOWER
    lead = f"By {figure.label}, " + ("lowest first: " if lower else "best first: ")
    parts = []
    for place, step in zip(order, ranked.steps, strict=False):
        at_least = not lower and step is ranked.steps[0] and _client_bound(cells[place.key])
        said = _step_text(step, at_least, summary, lower)
        parts.append(f"{_named(cells[place.key], names)} {said}")
    parts.append(_named(cells[order[-1].key], names))
    return lead + " ".join(parts) + "."


def _step_text(step: Step, at_least: bool, summary: RunSummary, lower: bool = False) -> str:
    """A stack's ratio to the next (`lower`: how many times lower), its interval, and the
    sign between them."""
    r = step.ratio
    if r is None:
        shown = "(nothing to compare)"
    else:
        bounds = interval(r) if r.has_interval else "(1 trial: no interval)"
        whose = "lower than the next" if lower else "the next"
        shown = f"{'at least ' if at_least else ''}{times(r.value)}× {whose} {bounds}"
    if step.call is Call.UNDECIDED:
        return f"{shown} (undecided: {step.would_decide}) ≈"
    if step.call is Call.TIE and step.too_few:
        return f"{shown} (too few to judge) ≈"
    if step.call is Call.TIE and r is not None and r.significant:
        threshold = summary.options.evidence.min_effect_pct
        return f"{shown} (under the {threshold:g}% threshold) ≈"
    return f"{shown} {'>' if step.call is Call.AHEAD else '≈'}"


def _named(cell: CellSummary, names: dict[str, str]) -> str:
    flagged = [v.name for v in cell.verdicts if v.name in CAUTIONS]
    return names[cell.record.key] + (f" ({', '.join(flagged)})" if flagged else "")


def _client_bound(cell: CellSummary) -> bool:
    return any(v.name == CLIENT_BOUND.name for v in cell.verdicts)


def _nothing_ranked(cells: Sequence[CellSummary], figure: F.Figure) -> str:
    """A point with no stack ranked: nothing measured, or only cells that are not ranked
    (the ceiling, the sentinel, a nonconformant stack)."""
    shown = [c for c in cells if c.value(figure) is not None]
    if shown:
        listed = ", ".join(
            f"{c.record.stack_label} {F.compact_number(c.value(figure) or 0.0)}" for c in shown
        )
        return f"No stack ranked here; measured: {listed} {shown[0].unit(figure)}."
    failed = [c for c in cells if c.result.status == "failed"]
    return f"Nothing measured here ({len(failed)} failed)." if failed else "Nothing measured."


def _too_few(ranked: PointRanking) -> str:
    """Why no difference can be declared at a point whose stacks have too few trials."""
    counts = [len(ranked.samples[place.key]) for place in ranked.order]
    if len(counts) < 2 or min(counts) >= MIN_TRIALS:
        return ""
    fewest = min(counts)
    return (
        f"No difference can be declared here: {fewest} trial{'s' if fewest > 1 else ''} on the "
        f"fewest side, and the evidence rule needs {MIN_TRIALS}."
    )


def _ceiling_note(cells: Sequence[CellSummary]) -> str:
    """How far below this machine's ceiling each stack sits (a recipe with nginx-static asks
    it): its throughput's share of nginx-static's at the point, with its interval. Where the
    ceiling cell was its load tool's limit, the ceiling is at least that figure, so each share
    is at most its median's."""
    ceiling = next(
        (c for c in cells if c.result.ceiling is Ceiling.MACHINE and c.result.has_figure), None
    )
    below = [
        c for c in cells
        if c.result.ceiling is not Ceiling.MACHINE and c.record.mode == Mode.CLOSED
        and c.value(F.THROUGHPUT)
    ]  # fmt: skip
    if ceiling is None or not below:
        return ""
    top = ceiling.value(F.THROUGHPUT) or 0.0
    shown = f"{F.compact_number(top)} {ceiling.unit(F.THROUGHPUT)}"
    names = display_names(cells)
    why = tool_limited(ceiling.verdicts)
    if why is None:
        shares = ", ".join(
            f"{names[c.record.key]} {ratio_text(c.ratio(F.CEILING), percent=True)}"
            for c in below if c.ratio(F.CEILING) is not None
        )  # fmt: skip
        return f"Of this machine's ceiling ({CEILING_STACK}, {shown}): {shares}." if shares else ""
    at_most = ", ".join(f"{names[c.record.key]} {100 * (c.value(F.THROUGHPUT) or 0) / top:.0f}%"
                        for c in below)  # fmt: skip
    return (
        f"Of this machine's ceiling, at most: {at_most} ({CEILING_STACK} was {why.name} here: "
        f"its {shown} is the load tool's limit, so the machine's is at least that)."
    )


# Why a WebSocket hold's steps ended (runner/ws_load.py's reasons), in words.
HOLD_STOPS = {
    AT_LAST_STEP: "held at the steps' last count, still holding (raise [websocket] hold_steps)",
    REFUSED: "held until the server refused an upgrade",
    STALLED: "held until opens stopped completing",
    DROPPED: "held until the server closed idle connections",
    MEMORY: "held up to the memory limit (rss_limit_mb)",
}


def _held(cells: Sequence[CellSummary]) -> list[str]:
    """At a hold's point, why each stack's steps ended (what its figure is the count at);
    a server that refused: the opens it refused by then (its finding, not errors)."""
    by_stop: dict[str, list[str]] = {}
    for cell in cells:
        if cell.result.hold_stop is not None:
            refused = (
                ""
                if cell.result.hold_refused is None
                else f" ({cell.result.hold_refused:,} refused)"
            )
            by_stop.setdefault(cell.result.hold_stop, []).append(cell.record.stack_label + refused)
    return [
        f"{HOLD_STOPS.get(stop, stop)}: {', '.join(labels)}" for stop, labels in by_stop.items()
    ]


# --- how to read this -------------------------------------------------------------------------


def _closed_example(summary: RunSummary) -> str:
    """Little's law on one of the run's own cells: p50 against connections ÷ throughput."""
    cells = [
        c for c in summary.cells
        if c.record.mode == Mode.CLOSED and c.value(F.THROUGHPUT) and c.value(F.P50)
        and c.result.ceiling is not Ceiling.MACHINE
    ]  # fmt: skip
    if not cells:
        return ""
    cell = next((c for c in cells if c.record.stack == summary.baseline), cells[0])
    throughput = cell.value(F.THROUGHPUT) or 1.0
    expected = 1000 * cell.record.connections / throughput
    return (
        f" Here {cell.record.stack_label}: {cell.record.connections} ÷ {throughput:,.0f} "
        f"{cell.unit(F.THROUGHPUT)} = "
        f"{F.ms_text(expected)} ms; its measured p50: {F.P50.format(cell.value(F.P50))} ms."
    )


def _workers(cells: Sequence[CellSummary]) -> str:
    workers = sorted({c.record.workers for c in cells})
    if workers == [1]:
        return "one worker process"
    return f"{workers[0]}–{workers[-1]} worker processes (w=N in its label)"


def _stack_notes(summary: RunSummary) -> list[str]:
    # a note says what it means, or nothing
    return [f"{n.stack} ({n.note}): {n.meaning}." for n in summary.stack_notes if n.meaning]


def reading_guide(summary: RunSummary) -> list[str]:
    """A few sentences on what the figures of this run mean and how far they can be trusted."""
    modes = {c.record.mode for c in summary.cells}
    run = summary.run
    lines = []
    if Mode.CLOSED in modes:
        lines.append(
            "Closed loop (throughput): each connection sends its next request as soon as the "
            "last one returns, so the server always has as many requests waiting as there are "
            "connections, and throughput is what it served. Latency then restates throughput: "
            "p50 ≈ connections ÷ throughput." + _closed_example(summary)
        )
    if modes & {Mode.RATE, Mode.SLO}:
        lines.append(
            "Fixed rate (latency): requests leave on a schedule whether or not earlier ones "
            "returned, and latency counts from each request's due time, so p50 and p99 are what "
            "a user would see at that rate."
        )
    if Mode.SLO in modes and summary.options.slo is not None:
        lines.append(
            f"Capacity: the highest fixed rate that held {summary.options.slo.describe()}, "
            "found by a search at each stack's own pace."
        )
    server, load = run.server_cores, run.load_cores
    if summary.cells:  # a run stopped before its first cell has none
        lines.append(
            f"Every stack ran {_workers(summary.cells)} on {len(server)} server "
            f"core{'s' if len(server) != 1 else ''} ({', '.join(map(str, server))}); the load tool "
            f"ran on core{'s' if len(load) != 1 else ''} {', '.join(map(str, load))}. These are "
            "this machine's figures: more cores or workers change them, and not in proportion."
        )
    estimates = [c.estimate(c.result.figure) for c in summary.cells]
    coverage = sorted({round(100 * e.confidence) for e in estimates if e and e.n > 1})
    if coverage:
        lines.append(
            "A figure is the median over trials with its interval [low–high], which covers the "
            f"true median with the probability shown ({', '.join(f'{c}%' for c in coverage)} "
            "here; with fewer than 6 trials it is the range of the trials). A stack is called "
            f"better only when {summary.options.evidence.describe()}: the sentences above say "
            "'tie' or 'within' otherwise."
        )
    lines.append(
        f"A verdict ({CLIENT_BOUND.name}, {BLOCKED.name}, {ERRORS.name}, …) flags a figure to "
        "check before trusting it; 'valid' means none applied."
    )
    return lines + _stack_notes(summary)
