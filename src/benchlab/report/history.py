"""Every run of one recipe, across one or more stores, as a series per cell: the ranked
figure run by run with its interval, the commit and versions behind it, the machine it ran
on, and the change points the evidence confirms."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab import figures as F
from benchlab.analysis.changepoints import ChangePoint, SeriesPoint, change_points
from benchlab.analysis.environment import MACHINE_KEYS, differences
from benchlab.analysis.evidence import Evidence, Judgement
from benchlab.analysis.summary import RunSummary, summarise
from benchlab.errors import UserError
from benchlab.store import Store

FINISHED = ("complete", "partial")


@dataclass(frozen=True)
class HistoryPoint:
    run: str
    started_at: str
    commit: str | None
    median: float
    low: float
    high: float
    samples: tuple[float, ...]
    machine: dict[str, Any]  # the facts a segment is made of (cpu, cores, kernel, governor)
    versions: dict[str, Any]  # the whole machine record: python, packages, tools
    cell_versions: dict[str, str]  # the versions that define the cell (see _cell_versions)

    def as_json(self) -> dict[str, Any]:
        return {
            "run": self.run, "started_at": self.started_at, "commit": self.commit,
            "median": self.median, "low": self.low, "high": self.high, "machine": self.machine,
            "versions": self.cell_versions,
        }  # fmt: skip


@dataclass(frozen=True)
class FoundChange:
    change: ChangePoint
    point: HistoryPoint  # the first run after it
    versions_changed: list[str]  # "fastapi 0.115.0 → 0.116.0", between the runs either side

    def as_json(self, index: int) -> dict[str, Any]:
        ratio = self.change.ratio
        return {
            "run": self.point.run, "index": index, "commit": self.point.commit,
            "ratio": {"value": ratio.value, "low": ratio.low, "high": ratio.high},
            "direction": self.change.direction, "versions_changed": self.versions_changed,
        }  # fmt: skip


@dataclass(frozen=True)
class Latest:
    """The newest run against the segment it would continue (the runs since the last change
    point on its machine): in it, or out of it, slower or faster."""

    judged: Judgement
    segment_runs: int

    @property
    def in_segment(self) -> bool:
        return not self.judged.decided

    def direction(self, figure: F.Figure) -> str | None:
        if self.in_segment:
            return None
        return "faster" if self.judged.verdict == "a" else "slower"

    def as_json(self, figure: F.Figure) -> dict[str, Any]:
        ratio = self.judged.ratio
        return {
            "in_segment": self.in_segment, "segment_runs": self.segment_runs,
            "direction": self.direction(figure), "why": self.judged.why,
            "ratio": None if ratio is None else {
                "value": ratio.value, "low": ratio.low, "high": ratio.high,
            },
        }  # fmt: skip


@dataclass(frozen=True)
class CellSeries:
    key: str
    label: str
    figure: F.Figure
    points: list[HistoryPoint]
    changes: list[FoundChange] = field(default_factory=list)
    latest: Latest | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "figure": self.figure.key,
            "points": [p.as_json() for p in self.points],
            "change_points": [c.as_json(c.change.index) for c in self.changes],
            "latest": self.latest.as_json(self.figure) if self.latest else None,
        }

    def latest_direction(self) -> str | None:
        """How the figure moved last: the newest run out of its segment, else the last
        change point."""
        if self.latest is not None and not self.latest.in_segment:
            return self.latest.direction(self.figure)
        return self.changes[-1].change.direction if self.changes else None


@dataclass(frozen=True)
class History:
    recipe: str
    runs: int
    series: list[CellSeries]

    def as_json(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "runs": self.runs,
            "series": [s.as_json() for s in self.series],
        }

    def latest_change(self, direction: str) -> list[CellSeries]:
        """The series whose figure moved `direction` last."""
        return [s for s in self.series if s.latest_direction() == direction]


def _runs(stores: list[Path], recipe: str) -> list[RunSummary]:
    """The finished runs of `recipe` in every store, oldest first (by their start, then in
    the order a store holds them: starts are stored to the second), each once."""
    found: dict[str, tuple[tuple[str, int, int], RunSummary]] = {}
    for store_index, path in enumerate(stores):
        store = Store(path, create=False)
        for position, run in enumerate(reversed(store.runs())):
            if run.recipe_name == recipe and run.status in FINISHED and run.id not in found:
                order = (run.started_at, store_index, position)
                found[run.id] = (order, summarise(store, run.id))
    return [summary for _, summary in sorted(found.values(), key=lambda f: f[0])]


def _point(summary: RunSummary, key: str, figure: F.Figure) -> HistoryPoint | None:
    cell = next((c for c in summary.cells if c.key == key), None)
    if cell is None or cell.status == "failed":
        return None
    estimate, samples = cell.estimate(figure), cell.samples.get(figure.key, ())
    if estimate is None or not samples:
        return None
    machine = summary.run.machine
    tune = summary.options.tune or {}
    # The code under test: the app's for a tune (its commit, its environment's servers and
    # framework), benchlab's for its own stacks.
    commit = tune.get("app_commit") or summary.run.git_commit
    versions, tuned = machine, "app_versions" in tune
    if tuned:
        own = (machine.get("packages") or {}).get("benchlab")
        packages = {**({"benchlab": own} if own else {}), **tune["app_versions"]}
        versions = {**machine, "packages": packages}
    return HistoryPoint(
        run=summary.run.id, started_at=summary.run.started_at,
        commit=commit, median=estimate.median, low=estimate.low,
        high=estimate.high, samples=tuple(samples),
        machine={k: machine.get(k) for k in MACHINE_KEYS}, versions=versions,
        cell_versions=_cell_versions(versions.get("packages") or {}, cell.stack, tuned),
    )  # fmt: skip


def _cell_versions(packages: dict[str, str], stack: str, tuned: bool) -> dict[str, str]:
    """The versions that define a cell: for a tune, every version its app's environment gave
    (its servers and its framework, and benchlab's); else benchlab's and those of the packages
    its stack is named after (fastapi+gunicorn-uvicorn: fastapi, gunicorn, uvicorn)."""
    if tuned:
        return dict(packages)
    names = ["benchlab", *re.split(r"[+\-\[\]]", stack)]
    return {n: packages[n] for n in dict.fromkeys(names) if n in packages}


def _versions_changed(before: HistoryPoint, after: HistoryPoint) -> list[str]:
    return [d.text() for d in differences(before.versions, after.versions) if d.kind == "versions"]


def build_history(stores: list[Path], recipe: str) -> History:
    runs = _runs(stores, recipe)
    if not runs:
        shown = ", ".join(str(p) for p in stores)
        raise UserError(
            f"--results {shown}: no finished run of recipe '{recipe}'; "
            "`benchlab runs` lists the runs a store holds"
        )
    latest = runs[-1]
    evidence = latest.options.evidence
    series = []
    for cell in latest.cells:
        figure = cell.ranked_by
        points = [p for s in runs if (p := _point(s, cell.key, figure)) is not None]
        if not points:
            continue
        found = change_points(
            [SeriesPoint(p.run, p.samples, repr(sorted(p.machine.items()))) for p in points],
            figure, evidence,
        )  # fmt: skip
        changes = [
            FoundChange(c, points[c.index], _versions_changed(points[c.index - 1], points[c.index]))
            for c in found
        ]
        latest = _latest(points, changes, figure, evidence)
        series.append(CellSeries(cell.key, cell.stack_label, figure, points, changes, latest))
    return History(recipe, len(runs), series)


def _latest(
    points: list[HistoryPoint], changes: list[FoundChange], figure: F.Figure, evidence: Evidence
) -> Latest | None:
    """The newest point against the runs before it since the last change point or machine."""
    if len(points) < 2:
        return None
    newest = points[-1]
    start = max((c.change.index for c in changes if c.change.index < len(points) - 1), default=0)
    for i in range(len(points) - 2, start - 1, -1):
        if points[i].machine != newest.machine:
            start = i + 1
            break
    segment = points[start:-1]
    if not segment:
        return None
    before = [v for p in segment for v in p.samples]
    return Latest(evidence.judge(list(newest.samples), before, figure), len(segment))


# --- how it is written -------------------------------------------------------------------------


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


def _change_text(series: CellSeries, found: FoundChange) -> str:
    ratio = found.change.ratio
    commit = f", {found.point.commit[:8]}" if found.point.commit else ""
    versions = f"; {', '.join(found.versions_changed)}" if found.versions_changed else ""
    return (
        f"{_mark(series, found.change.index)} run {found.change.index + 1} "
        f"({found.point.run}{commit}): {ratio.value:.2f}× [{ratio.low:.2f}–{ratio.high:.2f}] "
        f"{found.change.direction}{versions}"
    )


def _latest_text(latest: Latest, figure: F.Figure) -> str:
    ratio = latest.judged.ratio
    shown = "" if ratio is None else f" {ratio.value:.2f}× [{ratio.low:.2f}–{ratio.high:.2f}]"
    where = f"the {latest.segment_runs} run(s) of its segment"
    if latest.in_segment:
        return f"newest run: within{shown} {where} ({latest.judged.why})"
    return f"newest run: {latest.direction(figure)}{shown} than {where}"


def render_text(history: History) -> list[str]:
    lines = [f"history of {history.recipe}: {history.runs} run(s), oldest first"]
    for series in history.series:
        unit = f" {series.figure.unit}" if series.figure.unit else ""
        lines.append(f"{series.label} · {series.key} ({series.figure.label}{unit})")
        lines.append(f"  {_series_line(series)}")
        lines += [f"  {_change_text(series, c)}" for c in series.changes]
        if series.latest is not None:
            lines.append(f"  {_latest_text(series.latest, series.figure)}")
    changed = sum(1 for s in history.series if s.changes)
    lines.append(f"{changed} of {len(history.series)} cell(s) changed")
    return lines


def render_markdown(history: History) -> str:
    out = [f"## History of {history.recipe} ({history.runs} runs)", ""]
    out += ["| cell | series (oldest first) | change points | newest run |", "|---|---|---|---|"]
    for series in history.series:
        changes = "<br>".join(_change_text(series, c) for c in series.changes) or "none"
        latest = _latest_text(series.latest, series.figure) if series.latest else "–"
        out.append(f"| {series.label} | {_series_line(series)} | {changes} | {latest} |")
    return "\n".join(out) + "\n"
