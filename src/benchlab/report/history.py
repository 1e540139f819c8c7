"""A recipe's history in words: each cell's series, its change points and whose they are,
and the newest run against its segment (analysis/history.py finds them), as text lines for
the terminal and as a Markdown table."""

from __future__ import annotations

from benchlab.analysis.attribution import Attribution, Evidence3
from benchlab.analysis.evidence import Judgement
from benchlab.analysis.history import (
    PREDICTION_RUNS,
    CellSeries,
    FoundChange,
    History,
    Latest,
    direction,
)
from benchlab.analysis.stats import Ratio
from benchlab.core import figures as F
from benchlab.report.thresholds import threshold_lines

# --- how it is written -------------------------------------------------------------------------

WHOSE = {
    Attribution.STACK: "the stack's (its ratio to the sentinel moved too)",
    Attribution.MACHINE: "the machine's (the sentinel moved alike; the ratio did not)",
    Attribution.UNDECIDED: "undecided",
}


def _mark(series: CellSeries, index: int) -> str:
    change = next((c for c in series.changes if c.change.index == index), None)
    if change is None:
        return ""
    return "▼" if change.change.direction == "slower" else "▲"


def _series_line(series: CellSeries) -> str:
    """The medians in order; ▲▼ before a change point, | where the machine changed."""
    parts = []
    for i, point in enumerate(series.points):
        if i and point.machine != series.points[i - 1].machine:
            parts.append("|")
        parts.append(f"{_mark(series, i)}{F.compact_number(point.median)}")
    return " ".join(parts)


def _ratio_line(series: CellSeries) -> str:
    """Its ratio to the sentinel run by run (– where a run measured none)."""
    return " ".join(
        "–" if p.ratio_median is None else f"{p.ratio_median:.3f}" for p in series.points
    )


def _ratio_text(ratio: Ratio | None) -> str:
    return "" if ratio is None else f"{ratio.value:.2f}× [{ratio.low:.2f}–{ratio.high:.2f}]"


def _judged_text(name: str, judged: Judgement | None) -> str:
    if judged is None:
        return f"{name}: not measured on both sides"
    moved = direction(judged) if judged.decided else f"no change ({judged.why})"
    return f"{name} {_ratio_text(judged.ratio)} {moved}".replace("  ", " ")


def _whose(evidence: Evidence3) -> str:
    """Whose move it was, and the evidence: '— the machine's (÷ sentinel 1.01× […] no
    change (…); sentinel 0.50× […] slower)'."""
    if evidence.ratio is None:
        return ""
    why = "; ".join(
        _judged_text(name, judged) for name, judged in evidence.lines() if name != "own"
    )
    return f" — {WHOSE[evidence.attribution]}: {why}"


def _change_text(series: CellSeries, found: FoundChange) -> str:
    ratio = found.change.ratio
    commit = f", {found.point.commit[:8]}" if found.point.commit else ""
    return (
        f"{_mark(series, found.change.index)} run {found.change.index + 1} "
        f"({found.point.run}{commit}): {_ratio_text(ratio)} "
        f"{found.change.direction}{_whose(found.evidence)}"
    )


def _environment_text(found: FoundChange) -> str | None:
    """What else changed between the runs either side: how they measured the cell (duration,
    trials, budget), the machine, the versions."""
    changed = found.settings_changed + found.environment_changed
    return f"changed there: {', '.join(changed)}" if changed else None


def _settings_text(latest: Latest) -> str | None:
    if not latest.settings_changed:
        return None
    return f"measured otherwise than the run before: {', '.join(latest.settings_changed)}"


def moves_text(history: History) -> str:
    """How each cell last moved (its newest run out of its segment, else its last change
    point), counted as `--fail-on-change` judges: only the stack's own moves where a sentinel
    says whose."""
    slower, faster = history.latest_change("slower"), history.latest_change("faster")
    others = len(history.moved("slower")) + len(history.moved("faster")) - len(slower + faster)
    text = f"{len(slower)} of {len(history.series)} cell(s) last moved slower, {len(faster)} faster"
    if others:
        text += f"; {others} other move(s) not the stack's own (the machine's, or undecided)"
    return text


def failure_text(history: History, direction: str) -> str | None:
    """`--fail-on-change`'s finding: each cell that last moved `direction`, by its name."""
    hit = history.latest_change(direction)
    if not hit:
        return None
    names = ", ".join(series.name for series in hit)
    return f"FAIL: {len(hit)} of {len(history.series)} cell(s) last moved {direction}: {names}"


def _latest_text(latest: Latest, figure: F.Figure) -> str:
    if latest.evidence.own.ratio is None:
        return f"newest run: {latest.evidence.own.why}"
    shown = _ratio_text(latest.evidence.own.ratio)
    runs = latest.segment_runs
    predicted = runs >= PREDICTION_RUNS
    where = f"its segment ({runs} runs)" if predicted else f"the trials of its {runs} run(s)"
    if latest.in_segment:
        return f"newest run: {shown} within {where}: {latest.evidence.own.why}"
    return (
        f"newest run: {latest.direction(figure)} {shown} than {where}"
        f"{' predicts' if predicted else ''}{_whose(latest.evidence)}"
    )


def render_text(history: History) -> list[str]:
    lines = [f"history of {history.recipe}: {history.runs} run(s), oldest first"]
    for series in history.series:
        unit = f" {series.figure.unit}" if series.figure.unit else ""
        lines.append(f"{series.name} ({series.figure.label}{unit})")
        lines.append(f"  {_series_line(series)}")
        if series.has_sentinel:
            lines.append(f"  ÷ sentinel: {_ratio_line(series)}")
        for found in series.changes:
            lines.append(f"  {_change_text(series, found)}")
            if (environment := _environment_text(found)) is not None:
                lines.append(f"    {environment}")
        if series.latest is not None:
            lines.append(f"  {_latest_text(series.latest, series.figure)}")
            if (settings := _settings_text(series.latest)) is not None:
                lines.append(f"    {settings}")
    lines.append(moves_text(history))
    floors = sorted({p.aa_noise_pct for s in history.series for p in s.points if p.aa_noise_pct})
    if floors:
        lines.append(
            f"A/A noise floor of the runs: {floors[0]:.1f}–{floors[-1]:.1f}% "
            "(a smaller change is never called one)"
        )
    return lines + _thresholds(history)


def _thresholds(history: History) -> list[str]:
    """The newest run's thresholds, judged (the page shows these lines too)."""
    judged = threshold_lines(history.latest_run) if history.latest_run is not None else []
    return ["thresholds on the newest run:", *(f"  {line}" for line in judged)] if judged else []


def render_markdown(history: History) -> str:
    out = [f"## History of {history.recipe} ({history.runs} runs)", ""]
    sentinel = any(s.has_sentinel for s in history.series)
    extra = " ÷ sentinel |" if sentinel else ""
    out += [
        f"| cell | series (oldest first) |{extra} change points | newest run |",
        "|---|---|" + ("---|" if sentinel else "") + "---|---|",
    ]
    for series in history.series:
        texts = []
        for found in series.changes:
            environment = _environment_text(found)
            texts.append(_change_text(series, found) + (f"; {environment}" if environment else ""))
        changes = "<br>".join(texts) or "none"
        latest = _latest_text(series.latest, series.figure) if series.latest else "–"
        if series.latest is not None and (settings := _settings_text(series.latest)):
            latest += f"; {settings}"
        ratio = f" {_ratio_line(series)} |" if sentinel else ""
        out.append(f"| {series.name} | {_series_line(series)} |{ratio} {changes} | {latest} |")
    out += ["", moves_text(history)]
    judged = _thresholds(history)
    if judged:
        out += ["", f"{judged[0].capitalize()}", "", *(f"- {line.strip()}" for line in judged[1:])]
    return "\n".join(out) + "\n"
