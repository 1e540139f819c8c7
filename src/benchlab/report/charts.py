"""The report's charts, drawn here with matplotlib as inline SVG: the page needs no script,
no font and no network to show them, and a chart is the same file on every screen.

One colour means one stack on every chart of a page (`stack_colours`; the page draws the
legend once). Charts are drawn narrow (WIDTH_IN) with text of at least MIN_TEXT points, so
that a phone shows them at close to their natural size with text of 10 px or more; the
page never shows them wider than that natural size. Bars are drawn on a log axis from a
floor at most half the smallest value, so a stack at 4k req/s beside one at 220k still has
a bar, whiskers and dots one can read; the axis says it is logarithmic.
"""

from __future__ import annotations

import dataclasses
import io
import math
import re
import statistics
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

# Figures are made without pyplot: no global state, no display, no backend to choose.
import matplotlib
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.colors import LinearSegmentedColormap, to_hex
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator

from benchlab.analysis.grid import GridPoint, short_labels
from benchlab.analysis.ranking import PointRanking
from benchlab.analysis.recommendation import CandidateResult, candidate_results, tune_rate_unit
from benchlab.analysis.relative import CEILING_STACK
from benchlab.analysis.stats import Estimate
from benchlab.analysis.summary import CellSummary, RunSummary
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.report.wording import display_names

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

MIN_TEXT = 10.5  # points of SVG text: 10 px or more on a 390 px screen (see the page's CSS)
STYLE: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",  # text stays text: selectable, searchable, small
    "text.parse_math": False,  # a point named "$5" is a name, not mathematics
    "svg.hashsalt": "benchlab",  # the same run gives the same SVG
    "font.family": "sans-serif",
    "font.size": MIN_TEXT,
    "xtick.labelsize": MIN_TEXT,
    "ytick.labelsize": MIN_TEXT,
    "legend.fontsize": MIN_TEXT,
    "axes.labelsize": MIN_TEXT,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.spines.top": False,
    "axes.spines.right": False,
}
PALETTE = (
    "#2f6db3", "#d9822b", "#3d9a50", "#c23b3b", "#7d5ba6", "#8c6d31",
    "#d05fa8", "#5f6b78", "#b5a21a", "#1fa5b8",
)  # fmt: skip
CEILING_COLOUR = "#9aa5b1"
WIDTH_IN = 4.8
# Latency quantiles drawn, p50 to p99.9, at -log10(1 - q): each "nine" one step further right.
CURVE_QUANTILES = ("50", "75", "90", "95", "99", "99.9")
TICK_QUANTILES = ("50", "90", "99", "99.9")


@dataclass(frozen=True)
class Chart:
    key: str  # unique on the page
    kind: str  # throughput, capacity, latency, curve, timeline, heatmap, ranks, pareto
    title: str
    svg: str
    caption: str = ""
    point: GridPoint | None = None  # the grid point it shows, if one


def _svg(figure: Figure, label: str) -> str:
    buffer = io.StringIO()
    with rc_context(STYLE):  # text stays text however the caller drew the figure
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, count=1, flags=re.DOTALL)
    # The page sizes the chart (viewBox kept): up to its natural width, shrinking to a phone's.
    width = re.search(r'<svg[^>]*? width="([\d.]+)pt"', text)
    natural = f' style="max-width: {float(width.group(1)) * 4 / 3:.0f}px"' if width else ""
    text = re.sub(r'<svg([^>]*?) width="[^"]+" height="[^"]+"', r"<svg\1", text, count=1)
    return text.replace("<svg", f'<svg role="img" aria-label="{_attr(label)}"{natural}', 1)


def _wrapped(label: str, width: int = 24) -> str:
    """A long stack label on two lines, so the bars keep the chart's width."""
    lines = textwrap.wrap(label, width, break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines) or label


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def stack_colours(summary: RunSummary) -> dict[str, str]:
    """Each stack label's colour, the same on every chart of the page (the ceiling grey)."""
    ceilings = {c.record.stack_label for c in summary.cells if c.result.ceiling is not None}
    labels = [
        label
        for label in dict.fromkeys(
            c.record.stack_label for c in summary.cells if c.result.has_figure
        )
        if label not in ceilings
    ]
    tab20 = matplotlib.colormaps["tab20"]
    many = [to_hex(tab20(i)) for i in range(tab20.N)]  # an index: its colour, as listed
    palette = PALETTE if len(labels) <= len(PALETTE) else many
    colours = {label: palette[i % len(palette)] for i, label in enumerate(labels)}
    colours |= dict.fromkeys(ceilings, CEILING_COLOUR)
    return colours


def groups(
    summary: RunSummary, modes: tuple[Mode, ...] = tuple(Mode)
) -> dict[GridPoint, list[CellSummary]]:
    """The ranking's grid points of these modes (in the recipe's order), each with its
    cells best first."""
    return {
        point: summary.cells_at(point) for point in summary.ranking.points if point.mode in modes
    }


# --- bars on a log axis -----------------------------------------------------------------------


def nice_floor(value: float) -> float:
    """The largest of 1, 2, 5 × 10^k at or below half of `value`: every bar is at least a
    doubling long on the log axis."""
    half = value / 2
    # log10 can round up across a decade (half = 0.99999…e-13 gives -13), so the decade
    # below is a candidate too.
    decade = math.floor(math.log10(half))
    steps = (step * 10.0**power for power in (decade - 1, decade) for step in (1, 2, 5))
    return max(step for step in steps if step <= half)


def tick_text(value: float) -> str:
    """An axis step in the fewest characters: 500, 1k, 30k, 1M."""
    if value >= 1e6:
        return f"{value / 1e6:g}M"
    return f"{value / 1e3:g}k" if value >= 1e3 else f"{value:g}"


def short_number(value: float) -> str:
    """Three significant digits in at most five characters, for a heat map's squares."""
    if value >= 1e6:
        return f"{value / 1e6:.3g}M"
    return f"{value / 1e3:.3g}k" if value >= 1e3 else f"{value:.3g}"


def _log_ticks(
    ax: Axes, axis: str, low: float, high: float, text: Callable[[float], str], snap: bool = False
) -> None:
    """Labelled steps of 1-2-5, 1-3 or 1 per decade, whichever the span leaves room for;
    `snap`: the axis ends on a labelled step at either side."""
    decades = math.log10(high / low)
    subs = (1.0,) if decades > 2.2 else (1.0, 3.0) if decades > 1.2 else (1.0, 2.0, 5.0)
    locator = LogLocator(base=10, subs=subs)
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(locator)
    target.set_major_formatter(FuncFormatter(lambda v, _: text(v)))
    target.set_minor_locator(NullLocator())
    target.set_minor_formatter(NullFormatter())
    if snap:
        ticks = sorted(locator.tick_values(low, high))
        low = max([t for t in ticks if t <= low] or [low])
        high = min([t for t in ticks if t >= high] or [high])
        (ax.set_xlim if axis == "x" else ax.set_ylim)(low, high)


def bar_chart(
    key: str,
    title: str,
    cells: Sequence[CellSummary],
    figure: F.Figure,
    colours: dict[str, str],
    caption: str,
    point: GridPoint | None = None,
) -> Chart | None:
    """One bar per stack, `cells` given best first and drawn so, the best at the top: the
    median on a log axis, whiskers for its interval, a dot per trial, the value (and its
    share of the ceiling) beside it."""
    # A log axis draws no zero: a capacity search whose every replicate held nothing has
    # no bar (its table row says 0), and the axis spans the values above zero.
    measured = [c for c in cells if (e := c.estimate(figure)) and e.high > 0]
    if not measured:
        return None
    ordered = list(reversed(cells))  # the axis counts up from the bottom
    values = [
        v for c in measured if (e := c.estimate(figure))
        for v in (e.low, e.high, *c.samples.get(figure.key, ()))
        if v > 0
    ]  # fmt: skip
    floor = nice_floor(min(values))
    right = max(values) * 5
    names = display_names(ordered)
    labels = [_wrapped(names[c.record.key]) for c in ordered]
    lines = max(label.count("\n") + 1 for label in labels)
    with rc_context(STYLE):
        row = 0.14 + 0.18 * lines  # inches: room for the longest label's lines
        chart = Figure(figsize=(WIDTH_IN, 0.75 + row * len(ordered)), layout="constrained")
        ax = chart.subplots()
        ax.set_xscale("log")
        for y, cell in enumerate(ordered):
            _bar(ax, y, cell, figure, floor, colours, f"{key}-bar-{y}")
        ax.set_yticks(range(len(ordered)), labels)
        ax.set_xlim(floor, right)
        ax.set_ylim(-0.6, len(ordered) - 0.4)
        _log_ticks(ax, "x", floor, right, tick_text)
        ax.set_xlabel(f"{figure.label}, {measured[0].unit(figure)} (log scale)")
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(axis="y", length=0)
        svg = _svg(chart, f"{title}: {figure.label} per stack")
        return Chart(key, "bars", title, svg, caption, point)


def _bar(
    ax: Axes, y: int, cell: CellSummary, figure: F.Figure, floor: float, colours: dict[str, str],
    gid: str,
) -> None:  # fmt: skip
    e = cell.estimate(figure)
    if e is None or e.median <= 0:
        why = "failed" if cell.result.status == "failed" else "not measured" if e is None else "0"
        ax.text(floor, y, f" {why}", va="center", color="#c23b3b", fontsize=MIN_TEXT)
        return
    colour = colours.get(cell.record.stack_label, CEILING_COLOUR)
    (bar,) = ax.barh(y, e.median - floor, left=floor, color=colour, height=0.62)
    bar.set_gid(gid)
    if e.n > 1:
        ax.errorbar(
            e.median, y, xerr=[[e.median - e.low], [e.high - e.median]],
            fmt="none", ecolor="#222", elinewidth=1.1, capsize=3,
        )  # fmt: skip
    samples = cell.samples.get(figure.key) or ()
    if len(samples) > 1:
        offsets = [0.2 * (i / (len(samples) - 1) - 0.5) for i in range(len(samples))]
        ax.scatter(
            samples, [y + o for o in offsets], s=10, color="white", edgecolors="#222",
            linewidths=0.8, zorder=3,
        )  # fmt: skip
    text = F.compact_number(e.median)
    ceiling = cell.ratio(F.CEILING)
    if ceiling is not None and figure is F.THROUGHPUT:
        text += f" · {100 * ceiling.value:.0f}%"
    ax.annotate(
        text, (max(e.high, e.median, *samples), y), xytext=(4, 0), textcoords="offset points",
        va="center", fontsize=MIN_TEXT,
    )  # fmt: skip


def _bar_figure(summary: RunSummary, point: GridPoint) -> F.Figure | None:
    """What a point's bars show: a WebSocket point's own figure (held connections, echo or
    broadcast p99), else throughput (closed loop) or capacity (a search); None: no bars (a
    fixed rate's p99 is one value per cell, drawn as its latency curve)."""
    own = summary.ranking.points[point].figure
    if own in F.WEBSOCKET_FIGURES:
        return own
    return {Mode.SLO: F.CAPACITY, Mode.CLOSED: F.THROUGHPUT}.get(point.mode)


def point_bar_charts(summary: RunSummary, colours: dict[str, str]) -> list[Chart]:
    """Per grid point, throughput (closed loop), capacity (a search) or a WebSocket
    scenario's own figure, as bars."""
    charts = []
    points = list(groups(summary))
    labels = dict(zip(points, short_labels(points), strict=True))
    for index, (point, cells) in enumerate(groups(summary).items()):
        figure = _bar_figure(summary, point)
        if figure is None:
            continue
        if figure in F.WEBSOCKET_FIGURES:
            caption = (
                f"Bar: {figure.description} (log scale; best at the top); whiskers: its "
                "interval; dots: the trials."
            )
        elif figure is F.THROUGHPUT:
            caption = (
                f"Bar: median {summary.options.rate_unit_of(point.scenario)} over trials (log "
                "scale: equal steps are equal ratios); whiskers: its interval; dots: the trials."
            )
            if any(c.ratio(F.CEILING) for c in cells):
                caption += f" The % after a value: its share of {CEILING_STACK}'s, the ceiling."
        else:
            caption = (
                "Bar: the highest fixed rate that held the SLO, median over search replicates "
                "(log scale); whiskers: its interval; dots: the replicates."
            )
        chart = bar_chart(
            f"{figure.key}-{index}", labels[point], cells, figure, colours, caption, point
        )
        if chart is not None:
            kind = {F.THROUGHPUT: "throughput", F.CAPACITY: "capacity"}.get(figure, figure.key)
            charts.append(dataclasses.replace(chart, kind=kind, title=figure.label))
    return charts


# --- latency percentiles ----------------------------------------------------------------------


def _curve(cell: CellSummary) -> list[tuple[str, float]]:
    return [
        (q, cell.result.percentiles[q])
        for q in CURVE_QUANTILES
        if cell.result.percentiles.get(q, 0) > 0
    ]


def _nines(quantile: str) -> float:
    return -math.log10(1 - float(quantile) / 100)


def latency_charts(summary: RunSummary, colours: dict[str, str]) -> list[Chart]:
    """Per grid point, each stack's latency percentiles, p50 to p99.9."""
    charts = []
    points = list(groups(summary))
    labels = dict(zip(points, short_labels(points), strict=True))
    for index, (point, cells) in enumerate(groups(summary, (Mode.CLOSED, Mode.RATE)).items()):
        drawn = [c for c in cells if _curve(c)]
        if not drawn:
            continue
        values = [v for c in drawn for _, v in _curve(c)]
        with rc_context(STYLE):
            chart = Figure(figsize=(WIDTH_IN, 2.9), layout="constrained")
            ax = chart.subplots()
            for cell in drawn:
                qs, ys = zip(*_curve(cell), strict=True)
                ax.plot(
                    [_nines(q) for q in qs], ys, marker="o", markersize=3.5, linewidth=1.5,
                    color=colours.get(cell.record.stack_label, CEILING_COLOUR),
                    label=cell.record.stack_label,
                )  # fmt: skip
            ax.set_yscale("log")
            _log_ticks(ax, "y", min(values) / 1.1, max(values) * 1.1, lambda v: f"{v:g}", snap=True)
            ax.set_xticks([_nines(q) for q in TICK_QUANTILES], [f"p{q}" for q in TICK_QUANTILES])
            ax.set_ylabel("latency, ms (log scale)")
            ax.grid(which="major", alpha=0.25)
        closed = point.mode == Mode.CLOSED
        caption = (
            "Each line a stack: its latency at each percentile (the x axis spreads the nines: "
            "p90, p99, p99.9 one step apart)."
            + (
                " Under a closed loop these restate throughput (p50 ≈ connections ÷ "
                f"{summary.options.rate_unit_of(point.scenario)}): "
                "read them for the tail's shape, not as a user's wait."
                if closed
                else " Counted from each request's due time at the fixed rate."
            )
        )
        svg = _svg(chart, f"{labels[point]}: latency percentiles per stack")
        charts.append(
            Chart(f"latency-{index}", "latency", "latency percentiles", svg, caption, point)
        )
    return charts


# --- across the grid --------------------------------------------------------------------------


def _ranked_points(summary: RunSummary) -> list[PointRanking]:
    """The points ranked by the run's figure (a chart has one scale), with two stacks or more."""
    return [
        point
        for point in summary.ranking.points.values()
        if len(point.order) > 1 and point.figure == summary.ranked_by
    ]


def _rows(summary: RunSummary, points: list[PointRanking]) -> list[str]:
    """The stacks (labels) as the ranking puts them: by their mean place over the points
    they are ranked at, then those no point ranks (the ceiling, the sentinel)."""
    places: dict[str, list[int]] = {}
    for point in points:
        for rank, place in enumerate(point.order, start=1):
            places.setdefault(place.label, []).append(rank)
    ranked = sorted(places, key=lambda label: statistics.fmean(places[label]))
    rest = [c.record.stack_label for p in points for c in summary.cells_at(p.point)]
    return ranked + [label for label in dict.fromkeys(rest) if label not in places]


def heatmap_chart(summary: RunSummary) -> Chart | None:
    ranked = _ranked_points(summary)
    if len(ranked) < 2:
        return None
    points = [point.point for point in ranked]
    stacks = _rows(summary, ranked)
    by_key = {(c.record.stack_label, c.result.point): c for c in summary.cells}
    best = {p.point: p.order[0].value for p in ranked}  # the order is best first
    shade = LinearSegmentedColormap.from_list("share", ["#f4f1e8", "#9cc59a", "#21663a"])
    figure = summary.ranked_by
    with rc_context(STYLE):
        lines = max(_wrapped(stack).count("\n") + 1 for stack in stacks)
        chart = Figure(
            figsize=(
                max(WIDTH_IN, 1.9 + 0.8 * len(points)),
                1.1 + (0.14 + 0.18 * lines) * len(stacks),
            ),
            layout="constrained",
        )
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
                ax.text(x, y, text, ha="center", va="center", fontsize=MIN_TEXT, color=colour)
        ax.set_xticks(range(len(points)), short_labels(points), rotation=30, ha="right")
        ax.set_yticks(range(len(stacks)), [_wrapped(stack) for stack in stacks])
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
        return Chart(
            "heatmap",
            "heatmap",
            f"{figure.label.capitalize()} over the grid",
            _svg(chart, f"Heat map of {figure.label} per stack over the grid points"),
            f"Each square: the stack's median {_title(figure, summary.cells)} at that grid point; "
            "its shade is "
            "how close it comes to the best stack at that point (dark: the best). Rows in the "
            "ranking's order (by their mean place), the stacks not ranked last.",
        )


def _share(cell: CellSummary | None, best: float, figure: F.Figure) -> float | None:
    """How close a cell comes to the best: value ÷ best (best ÷ value when lower wins)."""
    value = None if cell is None else cell.value(figure)
    if value is None or value <= 0 or best <= 0:
        return None
    return value / best if figure.better is F.Better.HIGHER else best / value


def _title(figure: F.Figure, cells: Sequence[CellSummary]) -> str:
    """The figure with its unit in the cells that have it (several: each named)."""
    units = sorted({c.unit(figure) for c in cells if c.value(figure) is not None})
    return figure.title_in(units[0]) if len(units) == 1 else f"{figure.label} ({', '.join(units)})"


def _heat_text(cell: CellSummary | None, share: float | None, figure: F.Figure) -> tuple[str, str]:
    if cell is None:
        return "–", "#777"
    value = cell.value(figure)
    if value is None:
        return ("failed" if cell.result.status == "failed" else "not run"), "#c23b3b"
    text = short_number(value) if figure.is_rate else figure.format(value)
    return text, "white" if share is not None and share > 0.6 else "#111"


def rank_chart(summary: RunSummary, colours: dict[str, str]) -> Chart | None:
    ranked = _ranked_points(summary)
    if len(ranked) < 2:
        return None
    points = [point.point for point in ranked]
    flipping = {label for flip in summary.flips for label in (flip.a, flip.b)}
    stacks = [label for label in _rows(summary, ranked) if any(
        place.label == label for p in ranked for place in p.order
    )]  # fmt: skip
    with rc_context(STYLE):
        figure = Figure(figsize=(WIDTH_IN, 1.3 + 0.34 * len(stacks)), layout="constrained")
        ax = figure.subplots()
        for stack in stacks:
            xs, ranks = [], []
            for x, point in enumerate(ranked):
                order = [place.label for place in point.order]
                if stack in order:
                    xs.append(x)
                    ranks.append(order.index(stack) + 1)
            flips = stack in flipping
            ax.plot(
                xs, ranks, marker="o", markersize=6 if flips else 4,
                linewidth=2.6 if flips else 1.2, alpha=1.0 if flips else 0.55,
                color=colours.get(stack, CEILING_COLOUR), label=stack,
            )  # fmt: skip
        ax.set_xticks(range(len(points)), short_labels(points), rotation=30, ha="right")
        ax.set_yticks(range(1, len(stacks) + 1))
        ax.set_ylim(len(stacks) + 0.5, 0.5)
        ax.set_ylabel(f"rank (1 = best {summary.ranked_by.label})")
        ax.grid(axis="y", alpha=0.25)
        caption = (
            "Each line a stack (colours as in the legend): its rank at each grid point. Bold: "
            "stacks in a significant flip (each beats the other somewhere, beyond both "
            "intervals); thin lines: order changes within the noise."
            if flipping
            else "Each line a stack (colours as in the legend). No flip beyond the intervals: "
            "where lines cross, the two stacks are within each other's noise."
        )
        return Chart(
            "ranks",
            "ranks",
            "Rankings across the grid",
            _svg(figure, "Rank of each stack at each grid point"),
            caption,
        )


# --- fixed rates: latency against load --------------------------------------------------------

# offered rate, p50, p99, delivered, on the line (the staircase of a search, or a rate cell)
CurveLine = list[tuple[float, float | None, float, bool, bool]]


def _curve_point(cell: CellSummary) -> GridPoint:
    """The grid point a cell's curve belongs to: its load, the rate set aside."""
    return dataclasses.replace(cell.result.point, rate="", mode=Mode.CLOSED)


def _curves(summary: RunSummary) -> dict[GridPoint, dict[str, CurveLine]]:
    """Per grid point (fixed rates set aside), each stack's fixed-rate trials, by offered rate."""
    curves: dict[GridPoint, dict[str, CurveLine]] = {}
    for cell in summary.cells:
        point = _curve_point(cell)
        if cell.record.mode == Mode.CLOSED:
            continue
        line = curves.setdefault(point, {}).setdefault(cell.record.stack_label, [])
        if cell.record.mode == Mode.SLO:
            line += [
                (
                    p.target_rps, p.p50_ms, p.p99_ms,
                    F.RATE_RATIO.reaches(p.achieved_rps, of=p.target_rps), p.probe == "step",
                )
                for p in cell.result.curve
                if p.p99_ms
            ]  # fmt: skip
        elif (rate := cell.value(F.TARGET_RATE)) and (p99 := cell.value(F.P99)):
            delivered = F.RATE_RATIO.reaches(cell.value(F.RATE_RATIO) or 0.0)
            line.append((rate, cell.value(F.P50), p99, delivered, True))
    return {p: {s: sorted(v) for s, v in lines.items() if v} for p, lines in curves.items()}


def curve_charts(summary: RunSummary, colours: dict[str, str]) -> list[Chart]:
    """The hockey stick per load: p50 and p99 against the rate offered, the SLO as a line."""
    curves = {p: lines for p, lines in _curves(summary).items() if lines}
    slo = summary.options.slo
    capacities = {
        (_curve_point(c), c.record.stack_label): e
        for c in summary.cells
        if c.record.mode == Mode.SLO and (e := c.estimate(F.CAPACITY))
    }
    labels = dict(zip(curves, short_labels(list(curves)), strict=True))
    charts = []
    for index, (point, lines) in enumerate(curves.items()):
        with rc_context(STYLE):
            chart = Figure(figsize=(WIDTH_IN, 3.2), layout="constrained")
            ax = chart.subplots()
            values = []
            for stack, points in lines.items():
                colour = colours.get(stack, CEILING_COLOUR)
                stairs = [v for v in points if v[4]]
                xs = [v[0] for v in stairs]
                ax.plot(xs, [v[2] for v in stairs], linewidth=1.5, color=colour, label=stack)
                p50s = [math.nan if v[1] is None else v[1] for v in stairs]  # no p50: no dot
                ax.plot(xs, p50s, linestyle=":", linewidth=1.1, color=colour)
                for delivered in (True, False):
                    dots = [v for v in points if v[3] is delivered]
                    ax.scatter(
                        [v[0] for v in dots], [v[2] for v in dots], s=14, zorder=3, alpha=0.8,
                        color=colour if delivered else "white", edgecolors=colour,
                    )  # fmt: skip
                values += [v[2] for v in points] + [v[1] for v in points if v[1]]
                capacity = capacities.get((point, stack))
                if capacity is not None:
                    ax.axvline(capacity.median, color=colour, linewidth=0.9, alpha=0.6)
            if slo is not None and slo.p99_ms is not None:
                values.append(slo.p99_ms)
                ax.axhline(slo.p99_ms, color="#c23b3b", linewidth=1.2, linestyle="--")
                ax.annotate(
                    f"SLO p99 {slo.p99_ms:g} ms", (0, slo.p99_ms),
                    xycoords=("axes fraction", "data"), xytext=(4, 3),
                    textcoords="offset points", fontsize=MIN_TEXT, color="#c23b3b",
                )  # fmt: skip
            ax.set_yscale("log")
            _log_ticks(ax, "y", min(values) / 1.1, max(values) * 1.1, lambda v: f"{v:g}", snap=True)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: tick_text(v)))
            ax.set_xlabel(f"offered rate, {summary.options.rate_unit_of(point.scenario)}")
            ax.set_ylabel("latency, ms (log scale)")
            ax.grid(which="major", alpha=0.25)
        svg = _svg(chart, f"{labels[point]}: p50 and p99 latency against the rate offered")
        caption = (
            "Each point a fixed-rate trial's p99 against the rate offered (hollow: under 95% of "
            "it delivered); the lines join the first search's steps (solid p99, dotted p50), the "
            "other points are its bisection probes. Dashed: the SLO; a thin vertical line: a "
            "stack's capacity. Latency counts from each request's due time."
        )
        charts.append(Chart(f"curve-{index}", "curve", labels[point], svg, caption, point))
    return charts


# --- fixed rates: latency over time -----------------------------------------------------------

TIMELINE_CAPTION = (
    "Each second of each trial (a line per trial): the p99 (solid) and p50 (dotted) of the "
    "requests sent in it, from their due time; below, the successful answers that came back "
    "in it per second (dashed: the rate asked){errors}. A pause shows as a second whose p99 "
    "stands out; a queue, as a p99 that climbs while the answers stay under the rate asked."
)


def _steps(
    t_s: Sequence[int], step_s: int, values: Sequence[float | None]
) -> tuple[list[int], list[float]]:
    """A step's value held over its whole second (a step plot's points): gaps where none."""
    xs = [*t_s, t_s[-1] + step_s]
    ys = [math.nan if v is None else v for v in values]
    return xs, [*ys, ys[-1]]


def timeline_chart(
    key: str, cell: CellSummary, colour: str, title: str, point: GridPoint | None = None
) -> Chart | None:
    """One fixed-rate cell's latency over time (every trial of it, overlaid), and below it
    the answers per second against the rate asked; failures in red when there are any."""
    timelines = [t for t in cell.result.timelines if t.timeline.p99_ms]
    latencies = [
        v for t in timelines for v in (*t.timeline.p50_ms, *t.timeline.p99_ms) if v is not None
    ]
    if not latencies:
        return None
    failed = any(any(t.timeline.errors) for t in timelines)
    rows = [3.0, 1.3] + ([0.8] if failed else [])
    with rc_context(STYLE):
        chart = Figure(figsize=(WIDTH_IN, 1.2 + 0.5 * sum(rows)), layout="constrained")
        axes = chart.subplots(len(rows), 1, sharex=True, height_ratios=rows)
        latency_ax, rate_ax = axes[0], axes[1]
        for trial in timelines:
            line = trial.timeline
            xs, p99 = _steps(line.t_s, line.step_s, line.p99_ms)
            _, p50 = _steps(line.t_s, line.step_s, line.p50_ms)
            _, answered = _steps(line.t_s, line.step_s, line.achieved_rps)
            latency_ax.step(xs, p99, where="post", color=colour, linewidth=1.3, alpha=0.85)
            latency_ax.step(xs, p50, where="post", color=colour, linewidth=1.0, linestyle=":")
            rate_ax.step(xs, answered, where="post", color=colour, linewidth=1.1, alpha=0.85)
            if failed:
                axes[2].bar(
                    [t + line.step_s / 2 for t in line.t_s], line.errors, width=line.step_s,
                    color="#c23b3b", alpha=0.6,
                )  # fmt: skip
        latency_ax.set_yscale("log")
        low, high = min(latencies), max(latencies)
        _log_ticks(latency_ax, "y", low / 1.2, high * 1.2, lambda v: f"{v:g}", snap=True)
        latency_ax.set_ylabel("ms (log)")
        latency_ax.grid(which="major", alpha=0.25)
        asked = {t.target_rate for t in timelines if t.target_rate}
        for rate in asked:
            rate_ax.axhline(rate, color="#5f6b78", linewidth=0.9, linestyle="--")
        top = max([*asked, *(v for t in timelines for v in t.timeline.achieved_rps)])
        rate_ax.set_ylim(0, top * 1.15 or 1)
        rate_ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: tick_text(v)))
        if len(asked) == 1:
            rate_ax.set_yticks([0, *asked])  # the rate asked, labelled
        else:
            rate_ax.yaxis.set_major_locator(MaxNLocator(2))
        rate_ax.set_ylabel(cell.result.rate_unit)
        rate_ax.grid(axis="y", alpha=0.25)
        if failed:
            axes[2].set_ylabel("failed")
            axes[2].yaxis.set_major_locator(MaxNLocator(2, integer=True))
        axes[-1].set_xlabel("seconds into the trial")
        axes[-1].set_xlim(0, max(t.timeline.t_s[-1] + t.timeline.step_s for t in timelines))
        svg = _svg(chart, f"{title}: latency, answers and failures per second of each trial")
    caption = TIMELINE_CAPTION.format(errors="; red, the failures per second" if failed else "")
    return Chart(key, "timeline", title, svg, caption, point)


def timeline_charts(summary: RunSummary, colours: dict[str, str]) -> list[Chart]:
    """Per fixed-rate grid point, one small chart per cell: its latency over time."""
    charts = []
    for index, (point, cells) in enumerate(groups(summary, (Mode.RATE,)).items()):
        names = display_names(cells)
        for position, cell in enumerate(cells):
            colour = colours.get(cell.record.stack_label, CEILING_COLOUR)
            title = f"{names[cell.record.key]}: latency over time"
            chart = timeline_chart(f"timeline-{index}-{position}", cell, colour, title, point)
            if chart is not None:
                charts.append(chart)
    return charts


def pareto_chart(summary: RunSummary) -> Chart | None:
    """A tune's candidates: capacity against memory, the Pareto front marked (nothing else
    holds more load for less memory)."""
    if summary.options.tune is None:
        return None
    # Each candidate with its capacity and its memory, both known.
    points = [
        (c, e, mb)
        for c in candidate_results(summary)
        if (e := c.capacity) is not None and (mb := c.rss_mb) is not None
    ]
    if not points:
        return None
    front: list[tuple[CandidateResult, Estimate, float]] = []
    for point in sorted(points, key=lambda p: (p[2], -p[1].median)):
        if not front or point[1].median > front[-1][1].median:
            front.append(point)
    on_the_front = [c for c, _, _ in front]
    with rc_context(STYLE):
        chart = Figure(figsize=(WIDTH_IN, 3.6), layout="constrained")
        ax = chart.subplots()
        for c, e, mb in points:
            on_front = c in on_the_front
            ax.errorbar(
                mb, e.median,
                yerr=[[e.median - e.low], [e.high - e.median]] if e.n > 1 else None,
                fmt="o", color=PALETTE[0] if on_front else "#9aa5b1", ecolor="#555",
                capsize=3, markersize=7 if on_front else 5,
            )  # fmt: skip
            ax.annotate(c.label, (mb, e.median), xytext=(6, 4), textcoords="offset points",
                        fontsize=MIN_TEXT)  # fmt: skip
        ax.step([mb for _, _, mb in front], [e.median for _, e, _ in front], where="post",
                color=PALETTE[0], linewidth=1.2, alpha=0.7)  # fmt: skip
        ax.set_xlabel("peak memory of the server's processes, MB")
        ax.set_ylabel(f"capacity under the SLO, {tune_rate_unit(summary)}")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        return Chart(
            "pareto",
            "pareto",
            "Capacity against memory",
            _svg(chart, "Capacity under the SLO against memory per candidate"),
            "Each candidate searched: its capacity (whiskers: interval) against its peak RSS. "
            "The blue points and step line are the Pareto front: no other candidate holds more "
            "load in as little memory.",
        )


def all_charts(summary: RunSummary) -> list[Chart]:
    colours = stack_colours(summary)
    made = [
        pareto_chart(summary),
        *point_bar_charts(summary, colours),
        *latency_charts(summary, colours),
        *curve_charts(summary, colours),
        *timeline_charts(summary, colours),
        heatmap_chart(summary),
        rank_chart(summary, colours),
    ]
    return [chart for chart in made if chart is not None]
