"""What the numbers say, in sentences a reader can decide from: one takeaway per grid point,
the settings it was measured with, and a short guide to reading the figures.

Every comparison in a takeaway is judged by the evidence rule (`analysis.evidence`): a
stack is said to beat another only when the rule declares it; otherwise the sentence says
that they tie, or how far apart their medians are ("within 8% of each other"), which
claims no winner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchlab.analysis.evidence import MIN_TRIALS, Evidence
from benchlab.analysis.grid import GridPoint, short_labels
from benchlab.analysis.relative import CEILING_STACK, is_ceiling
from benchlab.analysis.stats import Ratio
from benchlab.analysis.summary import CellSummary, RunSummary
from benchlab.analysis.verdicts import BLOCKED, CAUTIONS, CLIENT_BOUND, ERRORS
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.report.tiers import Tier, better_by, interval, order_sentence, tiers, times
from benchlab.report.wording import display_names, settings_text
from benchlab.stacks import CATALOGUE


@dataclass(frozen=True)
class Takeaway:
    point: GridPoint
    label: str  # the grid point in the words that tell it from the run's other points
    sentence: str
    settings: str  # how its cells were measured
    notes: tuple[str, ...] = ()  # what qualifies the figures (a ceiling that is not one)
    tiers: tuple[Tier, ...] = ()  # the whole order, when there is more than one tier


def grid_points(summary: RunSummary) -> dict[GridPoint, list[CellSummary]]:
    """Cells by grid point, in the order the recipe lists them."""
    grouped: dict[GridPoint, list[CellSummary]] = {}
    for cell in summary.cells:
        if cell.grid is not None:
            grouped.setdefault(cell.grid, []).append(cell)
    return grouped


def takeaways(summary: RunSummary) -> list[Takeaway]:
    grouped = grid_points(summary)
    labels = dict(zip(grouped, short_labels(list(grouped)), strict=True))
    cores = summary.run.server_cores
    found = []
    for point, cells in grouped.items():
        figure, evidence = summary.figure_at(point), summary.options.evidence
        order = _tiers(cells, figure, evidence)
        sentence = point_sentence(cells, figure, evidence, others=not order)
        if order:
            names = display_names([c for tier in order for c in tier.cells])
            if len(order[0].cells) == 1 and order[0].ahead is not None and len(order) > 2:
                # The headline said the first step (the leader over the next): the order
                # goes on from there instead of saying it again.
                named = frozenset({order[0].cells[0].key, order[1].cells[0].key})
                rest = order_sentence(order[1:], figure, names, lead="then ", named=named)
                sentence = f"{sentence.removesuffix('.')}; {rest}"
            elif len(order) > 2 or len(order[0].cells) > 1:
                sentence += " " + order_sentence(order, figure, names)
        notes = tuple(n for n in (_ceiling_note(cells),) if n)
        # the tool and connections once: in the label when they tell points apart
        load = f"c={point.connections}" not in labels[point].split()
        settings = settings_text(cells, cores, load=load)
        if not load:
            settings = f"{point.tool} · {settings}" if point.tool not in labels[point] else settings
        found.append(Takeaway(point, labels[point], sentence, settings, notes, tuple(order)))
    return found


# --- one grid point ---------------------------------------------------------------------------


def _spread(cells: Sequence[CellSummary], figure: F.Figure) -> str:
    values = [c.value(figure) or 0.0 for c in cells]
    low, high = min(values), max(values)
    if low <= 0:
        return "far apart"
    ratio = high / low
    if ratio < 1.5:
        return f"within {max(1, round(100 * (ratio - 1)))}% of each other"
    return f"within {times(ratio)}× of each other"


def _listed(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _win(a: str, b: str, ratio: Ratio, figure: F.Figure, at_least: bool) -> str:
    x = ("at least " if at_least else "") + times(ratio.value) + "×"
    where = interval(ratio)
    if figure is F.THROUGHPUT:
        return f"{a} served {x} {b}'s throughput {where}"
    if figure is F.CAPACITY:
        return f"{a} held {x} {b}'s capacity under the SLO {where}"
    if figure is F.CPU_PER_REQUEST:
        return f"{a} used {x} less CPU per request than {b} {where}"
    if figure.better is F.Better.LOWER:
        return f"{a}'s {figure.label} was {x} lower than {b}'s {where}"
    return f"{a} had {x} {b}'s {figure.label} {where}"


def _cautions(cells: Sequence[CellSummary], names: dict[str, str], skip: str = "") -> str:
    flagged = [
        f"{names[c.key]} {v.name}"
        for c in cells for v in c.verdicts
        if v.name in CAUTIONS and f"{c.key}|{v.name}" != skip
    ]  # fmt: skip
    return f" (flagged: {', '.join(flagged)})" if flagged else ""


def _tied_lead(
    top: Sequence[CellSummary],
    names: dict[str, str],
    figure: F.Figure,
    evidence: Evidence,
    pending: str | None = None,
) -> str:
    """The stacks the evidence rule cannot separate from the first. Close medians make a tie
    plain; far-apart ones (wide intervals) say that the rule, not the medians, ties them. A
    run that stopped before deciding them (`pending`: what would) says so: not a tie."""
    values = [c.value(figure) or 0.0 for c in top]
    low, high = min(values), max(values)
    close = low > 0 and 100 * (high / low - 1) <= evidence.min_effect_pct
    first = names[top[0].key]
    who = f"{len(top)} stacks" if len(top) > 3 else _listed([names[c.key] for c in top])
    if pending:
        return (
            f"{who} lead, undecided among them ({first} first, medians "
            f"{_spread(top, figure)}; {pending}); "
        )
    if close:
        where = f"{_spread(top, figure)}, {first} first" if len(top) > 3 else _spread(top, figure)
        return f"{who} tie at the top ({where}); "
    return (
        f"{who} tie at the top ({first} first, medians {_spread(top, figure)}, "
        "but too noisy to separate); "
    )


def _ranked(cells: Sequence[CellSummary], figure: F.Figure) -> list[CellSummary]:
    """The contenders measured by `figure`, best first (the ceiling and the sentinel apart)."""
    contenders = [c for c in cells if c.contender] or [c for c in cells if not c.is_sentinel]
    measured = [c for c in contenders if c.samples.get(figure.key)]
    order = -1 if figure.better is F.Better.HIGHER else 1
    return sorted(measured, key=lambda c: order * (c.value(figure) or 0.0))


def _tiers(cells: Sequence[CellSummary], figure: F.Figure, evidence: Evidence) -> list[Tier]:
    """The whole order, where the headline sentence leaves some of it out: three stacks or
    more, in more than one tier."""
    ranked = _ranked(cells, figure)
    found = tiers(ranked, figure, evidence) if len(ranked) >= 3 else []
    return found if len(found) > 1 else []


def point_sentence(
    cells: Sequence[CellSummary], figure: F.Figure, evidence: Evidence, others: bool = True
) -> str:
    """The takeaway of one grid point: who leads and by how much by the evidence rule, or
    that nobody does, and (`others`) how far apart the others are."""
    ranked = _ranked(cells, figure)
    if not ranked:
        contenders = [c for c in cells if c.contender] or list(cells)
        failed = [c for c in contenders if c.status == "failed"]
        return f"Nothing measured here ({len(failed)} failed)." if failed else "Nothing measured."
    names = display_names(ranked)
    best = ranked[0]
    if len(ranked) == 1:
        value = F.compact_number(best.value(figure) or 0.0)
        return f"{names[best.key]}: {value} {figure.unit} (the only stack measured here)."
    samples = {c.key: c.samples[figure.key] for c in ranked}
    judged = {c.key: evidence.judge(samples[best.key], samples[c.key], figure) for c in ranked}
    # The lead is the first tier: the stacks the rule cannot tell from the best, taken in
    # order until one is told apart (as the order sentence and the adaptive rounds do).
    top = list(tiers(ranked, figure, evidence)[0].cells)
    rest = [c for c in ranked if c not in top]
    if not rest:
        fewest = min(len(s) for s in samples.values())
        if fewest < MIN_TRIALS:
            low, high = ranked[-1], ranked[0]
            return (
                f"No difference can be declared: {fewest} trial{'s' if fewest > 1 else ''} on "
                f"the fewest side, and the evidence rule needs {MIN_TRIALS}; medians run from "
                f"{names[low.key]} ({F.compact_number(low.value(figure) or 0)}) to "
                f"{names[high.key]} ({F.compact_number(high.value(figure) or 0)}) {figure.unit}."
            )
        who = (
            _listed([names[c.key] for c in ranked])
            if len(ranked) <= 3
            else f"All {len(ranked)} stacks"
        )
        pending = next((judged[c.key].pending for c in ranked if judged[c.key].pending), None)
        if pending:
            low, high = ranked[-1], ranked[0]
            return (
                f"Undecided: the run stopped before the evidence rule could order these "
                f"stacks (medians from {names[low.key]}, "
                f"{F.compact_number(low.value(figure) or 0)}, to {names[high.key]}, "
                f"{F.compact_number(high.value(figure) or 0)} {figure.unit}); for "
                f"{names[high.key]} against the next, {pending}{_cautions(ranked, names)}."
            )
        return (
            f"{who} are {_spread(ranked, figure)}: a tie by the evidence rule"
            f"{_cautions(ranked, names)}."
        )
    runner = rest[0]
    ratio = better_by(judged[runner.key].ratio, figure)
    client_bound = figure.better is F.Better.HIGHER and any(
        v.name == CLIENT_BOUND.name for v in best.verdicts
    )
    win = _win(names[best.key], names[runner.key], ratio, figure, client_bound)
    pending = next((judged[c.key].pending for c in top if judged[c.key].pending), None)
    lead = _tied_lead(top, names, figure, evidence, pending) if len(top) > 1 else ""
    tail = ""
    if len(rest) > 1 and others:
        listed = (
            _listed([names[c.key] for c in rest])
            if len(rest) <= 3
            else f"the other {len(rest)} stacks"
        )
        tail = f"; {listed} are {_spread(rest, figure)}"
    skip = f"{best.key}|{CLIENT_BOUND.name}" if client_bound else ""
    caution = _cautions([best, runner], names, skip)
    return f"{lead}{win}{caution}{tail}."


def _ceiling_note(cells: Sequence[CellSummary]) -> str:
    """Why a grid point shows no share of the ceiling, when its ceiling cell is not one."""
    for cell in cells:
        if cell.stack != CEILING_STACK or not cell.measured:
            continue
        names = [v.name for v in cell.verdicts]
        if is_ceiling(cell.stack, names):
            return ""
        why = next(v for v in cell.verdicts if not is_ceiling(cell.stack, [v.name]))
        return (
            f"No share of the ceiling: {CEILING_STACK} was {why.name} here, so its "
            f"{F.compact_number(cell.value(F.THROUGHPUT) or 0)} req/s is the load tool's limit, "
            "not the machine's."
        )
    return ""


# --- how to read this -------------------------------------------------------------------------


def _closed_example(summary: RunSummary) -> str:
    """Little's law on one of the run's own cells: p50 against connections ÷ throughput."""
    cells = [
        c for c in summary.cells
        if c.mode == Mode.CLOSED and c.value(F.THROUGHPUT) and c.value(F.P50)
        and c.stack != CEILING_STACK
    ]  # fmt: skip
    if not cells:
        return ""
    cell = next((c for c in cells if c.stack == summary.baseline), cells[0])
    throughput = cell.value(F.THROUGHPUT) or 1.0
    expected = 1000 * cell.connections / throughput
    return (
        f" Here {cell.stack_label}: {cell.connections} ÷ {throughput:,.0f} req/s = "
        f"{F.ms_text(expected)} ms; its measured p50: {F.P50.format(cell.value(F.P50))} ms."
    )


def _workers(cells: Sequence[CellSummary]) -> str:
    workers = sorted({c.workers for c in cells})
    if workers == [1]:
        return "one worker process"
    return f"{workers[0]}–{workers[-1]} worker processes (w=N in its label)"


def _stack_notes(summary: RunSummary) -> list[str]:
    notes = []
    for stack in dict.fromkeys(c.stack for c in summary.cells):
        entry = CATALOGUE.get(stack)
        if entry is None or not entry.note:
            continue
        why = f": {entry.note_meaning}" if entry.note_meaning else ""
        notes.append(f"{stack} ({entry.note}){why}.")
    return notes


def reading_guide(summary: RunSummary) -> list[str]:
    """A few sentences on what the figures of this run mean and how far they can be trusted."""
    modes = {c.mode for c in summary.cells}
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
    estimates = [c.estimate(c.ranked_by) for c in summary.cells]
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
