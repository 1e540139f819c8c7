"""The report's charts, drawn here with matplotlib as inline SVG: the page needs no script,
no font and no network to show them, and a chart is the same file on every screen."""

from __future__ import annotations

import dataclasses
import io
import math
import re
from dataclasses import dataclass

# Figures are made without pyplot: no global state, no display, no backend to choose.
import matplotlib
from matplotlib import rc_context
from matplotlib.colors import LinearSegmentedColormap, to_hex
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, NullFormatter

from benchlab import figures as F
from benchlab.analysis.grid import GridPoint, short_labels
from benchlab.analysis.relative import CEILING_STACK
from benchlab.report.formats import stack_facts
from benchlab.report.summary import CellSummary, RunSummary

STYLE = {
    "svg.fonttype": "none",  # text stays text: selectable, searchable, small
    "text.parse_math": False,  # a point named "$5" is a name, not mathematics
    "svg.hashsalt": "benchlab",  # the same run gives the same SVG
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
}
PALETTE = (
    "#2f6db3", "#d9822b", "#3d9a50", "#c23b3b", "#7d5ba6", "#8c6d31",
    "#d05fa8", "#5f6b78", "#b5a21a", "#1fa5b8",
)  # fmt: skip
CEILING_COLOUR = "#9aa5b1"
WIDTH_IN = 7.2
# Latency quantiles drawn, p50 to p99.9, at -log10(1 - q): each "nine" one step further right.
CURVE_QUANTILES = ("50", "75", "90", "95", "99", "99.9")
TICK_QUANTILES = ("50", "90", "99", "99.9")


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    svg: str
    caption: str = ""


def _svg(figure: Figure, label: str) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, count=1, flags=re.DOTALL)
    # The page sizes the chart (viewBox kept): it shrinks to a phone's width.
    text = re.sub(r'<svg([^>]*?) width="[^"]+" height="[^"]+"', r"<svg\1", text, count=1)
    return text.replace("<svg", f'<svg role="img" aria-label="{_attr(label)}"', 1)


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def compact(value: float) -> str:
    if value >= 10_000:
        return f"{value / 1000:,.0f}k"
    if value >= 1000:
        return f"{value / 1000:.1f}k"
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def groups(
    summary: RunSummary, modes: tuple[str, ...] = ("closed", "rate", "slo")
) -> dict[GridPoint, list[CellSummary]]:
    """Cells by grid point, in the order the recipe lists them."""
    grouped: dict[GridPoint, list[CellSummary]] = {}
    for cell in summary.cells:
        if cell.grid is not None and cell.mode in modes:
            grouped.setdefault(cell.grid, []).append(cell)
    return grouped


def _colours(summary: RunSummary) -> dict[str, str]:
    labels = list(dict.fromkeys(c.stack_label for c in summary.cells))
    if len(labels) <= len(PALETTE):
        return {label: PALETTE[i] for i, label in enumerate(labels)}
    many = matplotlib.colormaps["tab20"].colors
    return {label: to_hex(many[i % len(many)]) for i, label in enumerate(labels)}


# Bars are coloured by how the stack waits for I/O (article 002's 'Type').
TYPE_COLOURS = {
    "Sync": "#c0504d",
    "Sync / Threads": "#d9822b",
    "Async / Greenlet": "#3d9a50",
    "Async / Coroutine": "#2f6db3",
    "Async / Goroutine": "#7d5ba6",
}


def _type_of(cell: CellSummary) -> str:
    kind = stack_facts(cell)[2]
    return kind if kind in TYPE_COLOURS else "Sync"


def throughput_chart(summary: RunSummary) -> Chart | None:
    grouped = groups(summary, ("closed",))
    if not any(c.throughput for cells in grouped.values() for c in cells):
        return None
    labels = dict(zip(grouped, short_labels(list(grouped)), strict=True))
    heights = [0.55 + 0.3 * len(cells) for cells in grouped.values()]
    kinds = [k for k in TYPE_COLOURS if any(_type_of(c) == k for c in summary.cells)]
    with rc_context(STYLE):
        figure = Figure(figsize=(WIDTH_IN, sum(heights) + 0.6), layout="constrained")
        axes = figure.subplots(len(grouped), 1, squeeze=False, height_ratios=heights)[:, 0]
        for ax, (point, cells) in zip(axes, grouped.items(), strict=True):
            _throughput_panel(ax, labels[point], cells)
        legend = [Patch(color=TYPE_COLOURS[k], label=k) for k in kinds]
        if any(c.stack == CEILING_STACK for c in summary.cells):
            legend.append(Patch(color=CEILING_COLOUR, label="ceiling (nginx-static)"))
        figure.legend(handles=legend, loc="outside lower center", ncols=min(3, len(legend)))
        return Chart(
            "throughput",
            "Throughput by grid point",
            _svg(figure, "Throughput per stack, with intervals, by grid point"),
            "Bars: median req/s over trials; whiskers: its interval. The share of the "
            f"{CEILING_STACK} ceiling follows the figure when the run has one.",
        )


def _throughput_panel(ax, title: str, cells: list[CellSummary]) -> None:
    ordered = sorted(cells, key=lambda c: c.throughput.median if c.throughput else -1.0)
    top = max((c.throughput.high for c in cells if c.throughput), default=1.0)
    for y, cell in enumerate(ordered):
        t = cell.throughput
        if t is None:
            why = "failed" if cell.status == "failed" else "not measured"
            ax.text(0, y, f"  {why}", va="center", color="#c23b3b", fontsize=8)
            continue
        colour = CEILING_COLOUR if cell.stack == CEILING_STACK else TYPE_COLOURS[_type_of(cell)]
        ax.barh(y, t.median, color=colour, height=0.7)
        if t.n > 1:
            ax.errorbar(
                t.median, y, xerr=[[t.median - t.low], [t.high - t.median]],
                fmt="none", ecolor="#222", elinewidth=1, capsize=3,
            )  # fmt: skip
        text = f"{t.median:,.0f}"
        ceiling = cell.ratio(F.CEILING)
        if ceiling is not None:
            text += f" · {100 * ceiling.value:.0f}% of ceiling"
        ax.annotate(
            text, (max(t.high, t.median), y), xytext=(5, 0), textcoords="offset points",
            va="center", fontsize=8,
        )  # fmt: skip
    ax.set_yticks(range(len(ordered)), [c.stack_label for c in ordered])
    ax.set_xlim(0, top * 1.45)
    ax.set_ylim(-0.6, len(ordered) - 0.4)
    ax.set_title(title)
    ax.set_xlabel("requests per second")
    ax.grid(axis="x", alpha=0.3)


def latency_chart(summary: RunSummary) -> Chart | None:
    grouped = {
        point: [c for c in cells if _curve(c)]
        for point, cells in groups(summary).items()
        if any(_curve(c) for c in cells)
    }
    if not grouped:
        return None
    labels = dict(zip(grouped, short_labels(list(grouped)), strict=True))
    colours = _colours(summary)
    columns = 2 if len(grouped) > 1 else 1
    rows = math.ceil(len(grouped) / columns)
    with rc_context(STYLE):
        figure = Figure(figsize=(WIDTH_IN, 2.9 * rows + 0.6), layout="constrained")
        axes = figure.subplots(rows, columns, squeeze=False).ravel()
        for ax, (point, cells) in zip(axes, grouped.items(), strict=False):
            for cell in cells:
                qs, values = zip(*_curve(cell), strict=True)
                ax.plot(
                    [_nines(q) for q in qs], values, marker="o", markersize=3, linewidth=1.4,
                    color=CEILING_COLOUR if cell.stack == CEILING_STACK
                    else colours[cell.stack_label],
                    label=cell.stack_label,
                )  # fmt: skip
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(NullFormatter())
            ax.set_xticks([_nines(q) for q in TICK_QUANTILES], [f"p{q}" for q in TICK_QUANTILES])
            ax.set_title(labels[point])
            ax.set_ylabel("latency, ms (log)")
            ax.grid(which="both", alpha=0.25)
        for ax in axes[len(grouped) :]:
            ax.set_visible(False)
        handles, names = [], []
        for ax in axes[: len(grouped)]:
            for handle, name in zip(*ax.get_legend_handles_labels(), strict=True):
                if name not in names:
                    handles.append(handle)
                    names.append(name)
        figure.legend(handles, names, loc="outside lower center", ncols=min(3, len(names)))
        return Chart(
            "latency",
            "Latency percentiles",
            _svg(figure, "Latency percentile curves per stack, log scale"),
            "Median over trials of each percentile; the x axis spreads the nines (p90, p99, "
            "p99.9 one step apart), the y axis is logarithmic.",
        )


def _curve(cell: CellSummary) -> list[tuple[str, float]]:
    return [(q, cell.percentiles[q]) for q in CURVE_QUANTILES if cell.percentiles.get(q, 0) > 0]


def _nines(quantile: str) -> float:
    return -math.log10(1 - float(quantile) / 100)


def _ranked_points(summary: RunSummary) -> list[GridPoint]:
    return [point for point, order in summary.rankings.items() if len(order) > 1]


def heatmap_chart(summary: RunSummary) -> Chart | None:
    points = _ranked_points(summary)
    if len(points) < 2:
        return None
    stacks = list(dict.fromkeys(c.stack_label for c in summary.cells))
    by_key = {(c.stack_label, c.grid): c for c in summary.cells}
    best = {p: summary.rankings[p][0].value for p in points}  # rankings are best first
    shade = LinearSegmentedColormap.from_list("share", ["#f4f1e8", "#9cc59a", "#21663a"])
    figure = summary.ranked_by
    with rc_context(STYLE):
        chart = Figure(figsize=(WIDTH_IN, 0.9 + 0.36 * len(stacks)), layout="constrained")
        ax = chart.subplots()
        share = [
            [_share(by_key.get((stack, p)), best[p], figure) for p in points] for stack in stacks
        ]
        masked = [[math.nan if v is None else v for v in row] for row in share]
        # Vector squares, not a raster image: sharp at any zoom, and countable in the page.
        ax.pcolormesh(
            [x - 0.5 for x in range(len(points) + 1)],
            [y - 0.5 for y in range(len(stacks) + 1)],
            masked, cmap=shade, vmin=0, vmax=1, edgecolors="white", linewidth=1.5,
        )  # fmt: skip
        ax.invert_yaxis()
        for y, stack in enumerate(stacks):
            for x, point in enumerate(points):
                cell = by_key.get((stack, point))
                text, colour = _heat_text(cell, share[y][x], figure)
                ax.text(x, y, text, ha="center", va="center", fontsize=8, color=colour)
        ax.set_xticks(range(len(points)), short_labels(points), rotation=30, ha="right")
        ax.set_yticks(range(len(stacks)), stacks)
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
        return Chart(
            "heatmap",
            f"{figure.label.capitalize()} over the grid",
            _svg(chart, f"Heat map of {figure.label} per stack over the grid points"),
            f"Each square: the stack's median {figure.title} at that grid point; its shade is "
            "how close it comes to the best stack at that point (dark: the best).",
        )


def _share(cell: CellSummary | None, best: float, figure: F.Figure) -> float | None:
    """How close a cell comes to the best: value ÷ best (best ÷ value when lower wins)."""
    value = None if cell is None else cell.value(figure)
    if value is None or value <= 0 or best <= 0:
        return None
    return value / best if figure.better is F.Better.HIGHER else best / value


def _heat_text(cell: CellSummary | None, share: float | None, figure: F.Figure) -> tuple[str, str]:
    if cell is None:
        return "–", "#777"
    value = cell.value(figure)
    if value is None:
        return ("failed" if cell.status == "failed" else "not run"), "#c23b3b"
    text = compact(value) if figure.unit == "req/s" else figure.format(value)
    return text, "white" if share is not None and share > 0.6 else "#111"


def rank_chart(summary: RunSummary) -> Chart | None:
    points = _ranked_points(summary)
    if len(points) < 2:
        return None
    colours = _colours(summary)
    flipping = {label for flip in summary.flips for label in (flip.a, flip.b)}
    stacks = list(dict.fromkeys(placed.label for p in points for placed in summary.rankings[p]))
    with rc_context(STYLE):
        figure = Figure(figsize=(WIDTH_IN, 1.2 + 0.42 * len(stacks)), layout="constrained")
        ax = figure.subplots()
        for stack in stacks:
            xs, ranks = [], []
            for x, point in enumerate(points):
                order = [placed.label for placed in summary.rankings[point]]
                if stack in order:
                    xs.append(x)
                    ranks.append(order.index(stack) + 1)
            flips = stack in flipping
            ax.plot(
                xs, ranks, marker="o", markersize=7 if flips else 5,
                linewidth=2.6 if flips else 1.2, alpha=1.0 if flips else 0.55,
                color=colours.get(stack, CEILING_COLOUR), label=stack,
            )  # fmt: skip
            ax.annotate(
                stack, (xs[-1], ranks[-1]), xytext=(8, 0), textcoords="offset points",
                va="center", fontsize=8, color=colours.get(stack, "#333"),
            )  # fmt: skip
        ax.set_xticks(range(len(points)), short_labels(points), rotation=30, ha="right")
        ax.set_yticks(range(1, len(stacks) + 1))
        ax.set_ylim(len(stacks) + 0.5, 0.5)
        ax.set_xlim(-0.3, len(points) - 0.7)  # the labels after the last point widen the figure
        ax.set_ylabel(f"rank (1 = best {summary.ranked_by.label})")
        ax.grid(axis="y", alpha=0.25)
        caption = (
            "Bold lines: stacks in a significant flip (each beats the other somewhere, beyond "
            "both intervals); thin lines: order changes within the noise."
            if flipping
            else "No flip beyond the intervals: where lines cross, the two stacks are within "
            "each other's noise."
        )
        return Chart(
            "ranks",
            "Rankings across the grid",
            _svg(figure, "Rank of each stack at each grid point"),
            caption,
        )


def capacity_chart(summary: RunSummary) -> Chart | None:
    """Capacity at the SLO per stack and grid point, with its interval and its CPU cost."""
    grouped = {
        p: [c for c in cells if c.estimate(F.CAPACITY)]
        for p, cells in groups(summary, ("slo",)).items()
    }
    grouped = {p: cells for p, cells in grouped.items() if cells}
    if not grouped:
        return None
    labels = dict(zip(grouped, short_labels(list(grouped)), strict=True))
    heights = [0.55 + 0.3 * len(cells) for cells in grouped.values()]
    with rc_context(STYLE):
        chart = Figure(figsize=(WIDTH_IN, sum(heights) + 0.4), layout="constrained")
        axes = chart.subplots(len(grouped), 1, squeeze=False, height_ratios=heights)[:, 0]
        for ax, (point, cells) in zip(axes, grouped.items(), strict=True):
            ordered = sorted(cells, key=lambda c: c.value(F.CAPACITY) or 0)
            top = max(c.estimate(F.CAPACITY).high for c in cells) or 1.0
            for y, cell in enumerate(ordered):
                e = cell.estimate(F.CAPACITY)
                ax.barh(y, e.median, color=TYPE_COLOURS[_type_of(cell)], height=0.7)
                if e.n > 1:
                    ax.errorbar(
                        e.median, y, xerr=[[e.median - e.low], [e.high - e.median]],
                        fmt="none", ecolor="#222", elinewidth=1, capsize=3,
                    )  # fmt: skip
                cost = cell.value(F.CPU_PER_REQUEST)
                text = f"{e.median:,.0f}" + (f" · {cost:,.0f} µs CPU/req" if cost else "")
                ax.annotate(
                    text, (max(e.high, e.median), y), xytext=(5, 0), textcoords="offset points",
                    va="center", fontsize=8,
                )  # fmt: skip
            ax.set_yticks(range(len(ordered)), [c.stack_label for c in ordered])
            ax.set_xlim(0, top * 1.6)
            ax.set_title(labels[point])
            ax.set_xlabel("requests per second held within the SLO")
            ax.grid(axis="x", alpha=0.3)
        return Chart(
            "capacity",
            "Capacity under the SLO",
            _svg(chart, "Capacity at the SLO per stack, with intervals"),
            "Bars: the highest fixed rate that held the SLO, median over search replicates; "
            "whiskers: its interval; beside it, server CPU per request at that rate.",
        )


# offered rate, p50, p99, delivered, on the line (the staircase of a search, or a rate cell)
CurveLine = list[tuple[float, float | None, float, bool, bool]]


def _curve_point(cell: CellSummary) -> GridPoint | None:
    """The grid point a cell's curve belongs to: its load, the rate set aside."""
    return None if cell.grid is None else dataclasses.replace(cell.grid, rate="", mode="closed")


def _curves(summary: RunSummary) -> dict[GridPoint, dict[str, CurveLine]]:
    """Per grid point (fixed rates set aside), each stack's fixed-rate trials, by offered rate."""
    curves: dict[GridPoint, dict[str, CurveLine]] = {}
    for cell in summary.cells:
        point = _curve_point(cell)
        if point is None or cell.mode == "closed":
            continue
        line = curves.setdefault(point, {}).setdefault(cell.stack_label, [])
        if cell.mode == "slo":
            line += [
                (
                    p.target_rps, p.p50_ms, p.p99_ms, p.achieved_rps >= 0.95 * p.target_rps,
                    p.probe == "step",
                )
                for p in cell.curve
                if p.p99_ms
            ]  # fmt: skip
        elif cell.value(F.TARGET_RATE) and cell.value(F.P99):
            delivered = (cell.value(F.RATE_RATIO) or 0.0) >= 0.95
            rate, p50, p99 = (cell.value(f) for f in (F.TARGET_RATE, F.P50, F.P99))
            line.append((rate, p50, p99, delivered, True))
    return {p: {s: sorted(v) for s, v in lines.items() if v} for p, lines in curves.items()}


def curve_chart(summary: RunSummary) -> Chart | None:
    """The hockey stick: p50 and p99 against the rate achieved, the SLO as a line."""
    curves = {p: lines for p, lines in _curves(summary).items() if lines}
    if not curves:
        return None
    colours = _colours(summary)
    slo = summary.options.slo
    capacities = {
        (_curve_point(c), c.stack_label): c
        for c in summary.cells
        if c.mode == "slo" and c.estimate(F.CAPACITY)
    }
    columns = 2 if len(curves) > 1 else 1
    rows = math.ceil(len(curves) / columns)
    labels = dict(zip(curves, short_labels(list(curves)), strict=True))
    with rc_context(STYLE):
        chart = Figure(figsize=(WIDTH_IN, 3.2 * rows + 0.6), layout="constrained")
        axes = chart.subplots(rows, columns, squeeze=False).ravel()
        for ax, (point, lines) in zip(axes, curves.items(), strict=False):
            for stack, values in lines.items():
                colour = colours.get(stack, CEILING_COLOUR)
                stairs = [v for v in values if v[4]]
                xs = [v[0] for v in stairs]
                ax.plot(xs, [v[2] for v in stairs], linewidth=1.4, color=colour, label=stack)
                ax.plot(xs, [v[1] for v in stairs], linestyle=":", linewidth=1.0, color=colour)
                for delivered in (True, False):
                    dots = [v for v in values if v[3] is delivered]
                    ax.scatter(
                        [v[0] for v in dots], [v[2] for v in dots], s=14, zorder=3, alpha=0.8,
                        color=colour if delivered else "white", edgecolors=colour,
                    )  # fmt: skip
                cell = capacities.get((point, stack))
                if cell is not None:
                    ax.axvline(cell.value(F.CAPACITY), color=colour, linewidth=0.8, alpha=0.6)
            if slo is not None and slo.p99_ms is not None:
                ax.axhline(slo.p99_ms, color="#c23b3b", linewidth=1.2, linestyle="--")
                ax.annotate(
                    f"SLO p99 {slo.p99_ms:g} ms", (0, slo.p99_ms),
                    xycoords=("axes fraction", "data"), xytext=(4, 3),
                    textcoords="offset points", fontsize=8, color="#c23b3b",
                )  # fmt: skip
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel("offered rate, requests per second")
            ax.set_ylabel("latency, ms (log)")
            ax.set_title(labels[point])
            ax.grid(which="both", alpha=0.25)
        for ax in axes[len(curves) :]:
            ax.set_visible(False)
        handles, names = [], []
        for ax in axes[: len(curves)]:
            for handle, name in zip(*ax.get_legend_handles_labels(), strict=True):
                if name not in names:
                    handles.append(handle)
                    names.append(name)
        chart.legend(handles, names, loc="outside lower center", ncols=min(3, len(names)))
        return Chart(
            "curve",
            "Latency against load",
            _svg(chart, "p50 and p99 latency against the rate achieved, per stack"),
            "Each point a fixed-rate trial's p99 against the rate offered (hollow: under 95% of "
            "it delivered); the lines join the first search's steps (solid p99, dotted p50), the "
            "other points are its bisection probes. Dashed: the SLO; a thin vertical line: a "
            "stack's capacity. Latency counts from each request's due time.",
        )


def pareto_chart(summary: RunSummary) -> Chart | None:
    """A tune's candidates: capacity against memory, the Pareto front marked (nothing else
    holds more load for less memory)."""
    if summary.options.tune is None:
        return None
    from benchlab.tune.recommend import candidate_results

    points = [
        c for c in candidate_results(summary) if c.capacity is not None and c.rss_mb is not None
    ]
    if not points:
        return None
    front = []
    for c in sorted(points, key=lambda c: (c.rss_mb, -c.capacity.median)):
        if not front or c.capacity.median > front[-1].capacity.median:
            front.append(c)
    with rc_context(STYLE):
        chart = Figure(figsize=(WIDTH_IN, 3.6), layout="constrained")
        ax = chart.subplots()
        for c in points:
            e = c.capacity
            on_front = c in front
            ax.errorbar(
                c.rss_mb, e.median,
                yerr=[[e.median - e.low], [e.high - e.median]] if e.n > 1 else None,
                fmt="o", color=PALETTE[0] if on_front else "#9aa5b1", ecolor="#555",
                capsize=3, markersize=7 if on_front else 5,
            )  # fmt: skip
            ax.annotate(c.label, (c.rss_mb, e.median), xytext=(6, 4), textcoords="offset points",
                        fontsize=8)  # fmt: skip
        ax.step([c.rss_mb for c in front], [c.capacity.median for c in front], where="post",
                color=PALETTE[0], linewidth=1.2, alpha=0.7)  # fmt: skip
        ax.set_xlabel("peak memory of the server's processes, MB")
        ax.set_ylabel("capacity under the SLO, req/s")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        return Chart(
            "pareto",
            "Capacity against memory",
            _svg(chart, "Capacity under the SLO against memory per candidate"),
            "Each candidate searched: its capacity (whiskers: interval) against its peak RSS. "
            "The blue points and step line are the Pareto front: no other candidate holds more "
            "load in as little memory.",
        )


def all_charts(summary: RunSummary) -> list[Chart]:
    made = (
        pareto_chart(summary),
        capacity_chart(summary),
        curve_chart(summary),
        throughput_chart(summary),
        latency_chart(summary),
        heatmap_chart(summary),
        rank_chart(summary),
    )
    return [chart for chart in made if chart is not None]
