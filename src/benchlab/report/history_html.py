"""The history as an offline page: one timeline per cell, its interval as a band, change
points marked, each machine's segment shaded; no script, no font, no network."""

from __future__ import annotations

import html

from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from benchlab.analysis.changepoints import machine_segments
from benchlab.analysis.history import CellSeries, History
from benchlab.core import figures as F
from benchlab.report.charts import CEILING_COLOUR, PALETTE, STYLE, WIDTH_IN, _svg
from benchlab.report.history import render_text

SEGMENT_SHADES = ("#eef1f4", "#ffffff")
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 1rem auto; max-width: 52rem; padding: 0 1rem;
       color: #1d2733; }}
figure {{ margin: 1.5rem 0; }} figcaption {{ font-size: 0.9rem; color: #4a5562; }}
svg {{ width: 100%; height: auto; }}
pre {{ font-size: 0.8rem; overflow-x: auto; background: #f4f6f8; padding: 0.5rem; }}
</style></head><body>
<h1>{title}</h1>
<p>{runs} run(s), oldest first. A band is each run's interval of the median; ▼ marks a change
point where the figure got worse, ▲ where it got better (confirmed by the evidence rule between
the trials on either side), named for whose change it was when the recipe measures a sentinel
(stack, machine or undecided: the lower panel is the cell's figure ÷ the sentinel's in the
same rounds, flat when only the machine moved); a shaded stretch is one machine.</p>
{charts}
<h2>As text</h2>
<pre>{text}</pre>
</body></html>
"""


def timeline(series: CellSeries) -> str:
    """One cell's series as an SVG chart; with a sentinel, its ratio to it below."""
    xs = list(range(1, len(series.points) + 1))
    figure = Figure(figsize=(WIDTH_IN, 3.8 if series.has_sentinel else 2.4))
    with rc_context(STYLE):
        if series.has_sentinel:
            ax, below = figure.subplots(2, 1, sharex=True, height_ratios=(3, 2))
            _ratio_panel(below, series)
        else:
            ax = figure.add_subplot()
        segments = machine_segments(series.points)
        if len(segments) > 1:  # one machine's stretch shaded, the next not, and so on
            for number, segment in enumerate(segments):
                shade = SEGMENT_SHADES[number % 2]
                ax.axvspan(segment.start + 0.5, segment.stop + 0.5, color=shade, zorder=0)
        ax.fill_between(
            xs, [p.low for p in series.points], [p.high for p in series.points],
            color=PALETTE[0], alpha=0.2, linewidth=0,
        )  # fmt: skip
        ax.plot(xs, [p.median for p in series.points], marker="o", color=PALETTE[0])
        for change in series.changes:
            x = change.change.index + 1
            slower = change.change.direction == "slower"
            ax.axvline(x - 0.5, color=PALETTE[3] if slower else PALETTE[2], linestyle="--")
            whose = f" {change.attribution.value}" if series.has_sentinel else ""
            ax.annotate(
                ("▼" if slower else "▲") + whose, (x - 0.5, max(p.high for p in series.points)),
                ha="center", va="bottom", color=PALETTE[3] if slower else PALETTE[2],
            )  # fmt: skip
        ax.set_xticks(xs)
        if not series.has_sentinel:
            ax.set_xlabel("run")
        unit = f" ({series.figure.unit})" if series.figure.unit else ""
        ax.set_ylabel(f"{series.figure.label}{unit}", color=CEILING_COLOUR)
        ax.yaxis.set_major_formatter(lambda v, _: F.compact_number(v))
    return _svg(figure, f"{series.name}: {series.figure.label} run by run")


def _ratio_panel(ax: Axes, series: CellSeries) -> None:
    """The cell's figure ÷ the sentinel's, run by run: flat when only the machine moved."""
    known = [(i + 1, p.ratio_median) for i, p in enumerate(series.points) if p.ratio_median]
    ax.plot([x for x, _ in known], [r for _, r in known], marker="s", color=PALETTE[1])
    ax.axhline(1.0, color=CEILING_COLOUR, linewidth=0.5)
    ax.set_ylabel("÷ sentinel", color=CEILING_COLOUR)
    ax.set_xlabel("run")


def render_history_html(history: History) -> str:
    charts = "\n".join(
        f"<figure>{timeline(s)}<figcaption>{html.escape(s.name)}</figcaption></figure>"
        for s in history.series
    )
    return PAGE.format(
        title=html.escape(f"benchlab · history of {history.recipe}"), runs=history.runs,
        charts=charts, text=html.escape("\n".join(render_text(history))),
    )  # fmt: skip
