"""A recipe's history: its finished runs, oldest first, as a series per cell: the ranked
figure run by run with its interval, its ratio to the sentinel in the same rounds (when the
recipe measures one), the commit and versions behind it, the machine it ran on, the change
points the evidence confirms and whose they are (the stack's, the machine's, undecided),
and the newest run against where its segment predicts it. The runs come summarised (the
CLI opens the stores); report/history.py writes what this finds."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Any

from benchlab.analysis.attribution import Attribution, Evidence3
from benchlab.analysis.changepoints import (
    ChangePoint,
    SeriesPoint,
    change_points,
    machine_segments,
)
from benchlab.analysis.environment import MACHINE_KEYS, differences
from benchlab.analysis.evidence import Evidence, Judgement
from benchlab.analysis.prediction import PREDICTION_CONFIDENCE, predict
from benchlab.analysis.series_key import Measurement, SeriesKey, series_keys
from benchlab.analysis.stats import Ratio
from benchlab.analysis.summary import CellSummary, RunSummary
from benchlab.core import figures as F

# The statuses of a run a history takes.
FINISHED = ("complete", "partial")
# The newest run is judged by a prediction interval once its segment has this many runs.
PREDICTION_RUNS = 3


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
    versions: dict[str, Any]  # the whole fingerprint: machine record, steal of the run
    cell_versions: dict[str, str]  # the versions that define the cell (see _cell_versions)
    measurement: Measurement  # how long and how often this run measured the cell
    # Its ratio to the sentinel round by round, and the sentinel's own figure at its grid
    # point (empty: the run measured no sentinel there).
    to_sentinel: tuple[float, ...] = ()
    sentinel: tuple[float, ...] = ()
    aa_noise_pct: float | None = None  # the run's A/A noise floor, when it measured one

    @property
    def ratio_median(self) -> float | None:
        return statistics.median(self.to_sentinel) if self.to_sentinel else None

    def as_json(self) -> dict[str, Any]:
        return {
            "run": self.run, "started_at": self.started_at, "commit": self.commit,
            "median": self.median, "low": self.low, "high": self.high, "machine": self.machine,
            "versions": self.cell_versions, "to_sentinel": self.ratio_median,
            "sentinel": statistics.median(self.sentinel) if self.sentinel else None,
            "aa_noise_pct": self.aa_noise_pct, "duration_s": self.measurement.duration_s,
        }  # fmt: skip


def settings_changed(before: HistoryPoint, after: HistoryPoint) -> list[str]:
    """How `after`'s run measured the cell otherwise than `before`'s: "duration 2 s → 5 s"."""
    return [d.text() for d in before.measurement.differences(after.measurement)]


def _judgement_json(judged: Judgement | None) -> dict[str, Any] | None:
    if judged is None:
        return None
    ratio = judged.ratio
    return {
        "moved": judged.decided, "why": judged.why,
        "ratio": None if ratio is None else {
            "value": ratio.value, "low": ratio.low, "high": ratio.high,
        },
    }  # fmt: skip


def _evidence_json(evidence: Evidence3) -> dict[str, Any]:
    return {
        "own": _judgement_json(evidence.own),
        "to_sentinel": _judgement_json(evidence.ratio),
        "sentinel": _judgement_json(evidence.sentinel),
    }


def direction(judged: Judgement) -> str:
    return "faster" if judged.verdict == "a" else "slower"


@dataclass(frozen=True)
class FoundChange:
    change: ChangePoint
    point: HistoryPoint  # the first run after it
    versions_changed: list[str]  # "fastapi 0.115.0 → 0.116.0", between the runs either side
    evidence: Evidence3
    environment_changed: list[str] = field(default_factory=list)  # every fingerprint difference
    threshold_pct: float = 0.0  # the effect it had to beat (the A/A floor raises it)
    settings_changed: list[str] = field(default_factory=list)  # duration, trials, budget

    @property
    def attribution(self) -> Attribution:
        return self.evidence.attribution

    def as_json(self, index: int) -> dict[str, Any]:
        ratio = self.change.ratio
        return {
            "run": self.point.run, "index": index, "commit": self.point.commit,
            "ratio": {"value": ratio.value, "low": ratio.low, "high": ratio.high},
            "direction": self.change.direction, "versions_changed": self.versions_changed,
            "attribution": self.attribution.value,
            "evidence": _evidence_json(self.evidence),
            "environment_changed": self.environment_changed,
            "settings_changed": self.settings_changed,
            "threshold_pct": self.threshold_pct,
        }  # fmt: skip


@dataclass(frozen=True)
class Latest:
    """The newest run against where the runs of its segment (since the last change point on
    its machine) predict the next one: in it, or out of it, slower or faster, and whose."""

    evidence: Evidence3  # each judged against its prediction interval
    segment_runs: int
    threshold_pct: float
    settings_changed: list[str] = field(default_factory=list)  # since the run before it

    @property
    def in_segment(self) -> bool:
        return not self.evidence.moved

    def direction(self, figure: F.Figure) -> str | None:
        if self.in_segment:
            return None
        moved = self.evidence.own if self.evidence.own.decided else self.evidence.ratio
        return direction(moved) if moved is not None else None

    @property
    def attribution(self) -> Attribution | None:
        return None if self.in_segment else self.evidence.attribution

    def as_json(self, figure: F.Figure) -> dict[str, Any]:
        own = self.evidence.own
        ratio = own.ratio
        return {
            "in_segment": self.in_segment, "segment_runs": self.segment_runs,
            "direction": self.direction(figure), "why": own.why,
            "ratio": None if ratio is None else {
                "value": ratio.value, "low": ratio.low, "high": ratio.high,
            },
            "attribution": None if self.attribution is None else self.attribution.value,
            "evidence": _evidence_json(self.evidence),
            "threshold_pct": self.threshold_pct,
            "settings_changed": self.settings_changed,
        }  # fmt: skip


@dataclass(frozen=True)
class CellSeries:
    key: SeriesKey  # the cell, whatever each run's duration, trials or budget
    figure: F.Figure
    points: list[HistoryPoint]
    changes: list[FoundChange] = field(default_factory=list)
    latest: Latest | None = None

    @property
    def name(self) -> str:
        return self.key.name

    def as_json(self) -> dict[str, Any]:
        return {
            "cell": self.key.as_json(),
            "figure": self.figure.key,
            "points": [p.as_json() for p in self.points],
            "change_points": [c.as_json(c.change.index) for c in self.changes],
            "latest": self.latest.as_json(self.figure) if self.latest else None,
        }

    @property
    def has_sentinel(self) -> bool:
        return any(p.to_sentinel for p in self.points)

    def latest_move(self) -> tuple[str, Evidence3] | None:
        """How the figure moved last, and the evidence of whose move it was: the newest run
        out of its segment, else the last change point."""
        if self.latest is not None and not self.latest.in_segment:
            direction = self.latest.direction(self.figure)
            if direction is not None:
                return direction, self.latest.evidence
        if self.changes:
            return self.changes[-1].change.direction, self.changes[-1].evidence
        return None


@dataclass(frozen=True)
class History:
    recipe: str
    runs: int
    series: list[CellSeries]
    # The newest run, its thresholds judged (`history --threshold`, its recipe's [thresholds]).
    latest_run: RunSummary | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "runs": self.runs,
            "series": [s.as_json() for s in self.series],
            "thresholds": self._thresholds_json(),
        }

    def _thresholds_json(self) -> list[dict[str, Any]]:
        """The newest run's thresholds, each cell named as its series is (a run's own key of
        a cell means nothing across runs)."""
        run = self.latest_run
        if run is None:
            return []
        keys = series_keys(run.results, run.options)
        found = []
        for result in run.thresholds:
            data = result.to_json()
            data["cells"] = [{**c, "cell": keys[c["cell"]].name} for c in data["cells"]]
            found.append(data)
        return found

    def moved(self, direction: str) -> list[CellSeries]:
        """The series whose figure moved `direction` last, whoever's move it was."""
        return [
            series
            for series in self.series
            if (move := series.latest_move()) is not None and move[0] == direction
        ]

    def latest_change(self, direction: str) -> list[CellSeries]:
        """The series whose figure moved `direction` last: with a sentinel measured on both
        sides of the move, only when it was the stack's; without, always (it cannot tell).
        What `--fail-on-change` fails on, and what the history's last line counts."""
        found = []
        for series in self.moved(direction):
            move = series.latest_move()
            assert move is not None
            evidence = move[1]
            if evidence.ratio is not None and evidence.attribution is not Attribution.STACK:
                continue
            found.append(series)
        return found


def _point(summary: RunSummary, cell: CellSummary | None, figure: F.Figure) -> HistoryPoint | None:
    if cell is None or cell.result.status == "failed":
        return None
    estimate, samples = cell.estimate(figure), cell.samples.get(figure.key, ())
    if estimate is None or not samples:
        return None
    machine = summary.run.machine
    tune = summary.options.tune
    # The code under test: the app's for a tune (its commit, its environment's servers and
    # framework), benchlab's for its own stacks.
    commit = (tune.app_commit if tune is not None else None) or summary.run.git_commit
    versions, tuned = summary.fingerprint, tune is not None
    if tune is not None:
        own = (machine.get("packages") or {}).get("benchlab")
        packages = {**({"benchlab": own} if own else {}), **tune.app_versions}
        versions = {**versions, "packages": packages}
    sentinel = summary.sentinel_at(cell.result.point)
    return HistoryPoint(
        run=summary.run.id, started_at=summary.run.started_at,
        commit=commit, median=estimate.median, low=estimate.low,
        high=estimate.high, samples=tuple(samples),
        machine={k: machine.get(k) for k in MACHINE_KEYS}, versions=versions,
        cell_versions=_cell_versions(versions.get("packages") or {}, cell.record.stack, tuned),
        measurement=Measurement.of(cell.record, summary.run),
        to_sentinel=tuple(cell.samples.get(F.TO_SENTINEL.key, ())),
        sentinel=tuple(sentinel.samples.get(figure.key, ())) if sentinel else (),
        aa_noise_pct=summary.aa_noise_pct,
    )  # fmt: skip


def _cell_versions(packages: dict[str, str], stack: str, tuned: bool) -> dict[str, str]:
    """The versions that define a cell: for a tune, every version its app's environment gave
    (its servers and its framework, and benchlab's); else benchlab's and those of the packages
    its stack is named after (fastapi+gunicorn-uvicorn: fastapi, gunicorn, uvicorn)."""
    if tuned:
        return dict(packages)
    names = ["benchlab", *re.split(r"[+\-\[\]]", stack)]
    return {n: packages[n] for n in dict.fromkeys(names) if n in packages}


def _machine_key(point: HistoryPoint) -> str:
    return repr(sorted(point.machine.items()))


def _proposed(points: list[HistoryPoint], figure: F.Figure, evidence: Evidence) -> list[int]:
    """Where the stack's own series, or its ratio to the sentinel, changed (a ratio's change
    next to one of the figure's is the same change)."""
    own = [
        c.index
        for c in change_points(
            [SeriesPoint(p.run, p.samples, _machine_key(p)) for p in points], figure, evidence
        )
    ]
    with_ratio = [i for i, p in enumerate(points) if p.to_sentinel]
    ratio = [
        with_ratio[c.index]
        for c in change_points(
            [
                SeriesPoint(points[i].run, points[i].to_sentinel, _machine_key(points[i]))
                for i in with_ratio
            ],
            figure,
            evidence,
        )
    ]
    return sorted(set(own) | {i for i in ratio if all(abs(i - j) > 1 for j in own)})


def _judge_windows(
    before: list[HistoryPoint], after: list[HistoryPoint], figure: F.Figure, evidence: Evidence
) -> Evidence3:
    """The three series, after against before, by the evidence rule (their trials pooled)."""

    def pooled(points: list[HistoryPoint], attr: str) -> list[float]:
        return [v for p in points for v in getattr(p, attr)]

    own = evidence.judge(pooled(after, "samples"), pooled(before, "samples"), figure)
    # The runs that measured the sentinel (a history may have begun without one).
    before, after = [p for p in before if p.to_sentinel], [p for p in after if p.to_sentinel]
    if not before or not after:
        return Evidence3(own, None, None)
    ratio = evidence.judge(pooled(after, "to_sentinel"), pooled(before, "to_sentinel"), figure)
    sentinel = evidence.judge(pooled(after, "sentinel"), pooled(before, "sentinel"), figure)
    return Evidence3(own, ratio, sentinel)


def _changes(points: list[HistoryPoint], figure: F.Figure, evidence: Evidence) -> list[FoundChange]:
    """Each proposed change judged between the runs since the change before it and those up
    to the next (within its machine's segment); kept when the figure or its ratio moved."""
    proposed = _proposed(points, figure, evidence)
    segments = machine_segments(points)
    found = []
    for k, index in enumerate(proposed):
        segment = next(s for s in segments if index in s)
        start = max([segment.start, *(i for i in proposed[:k] if i in segment)])
        stop = min([segment.stop, *(i for i in proposed[k + 1 :] if i in segment)])
        before, after = points[start:index], points[index:stop]
        if not before or not after:
            continue
        judged_by = evidence.with_noise_floor(p.aa_noise_pct for p in before + after)
        judged = _judge_windows(before, after, figure, judged_by)
        if not judged.moved:
            continue
        moved = judged.own if judged.own.decided else judged.ratio
        assert moved is not None and moved.ratio is not None
        previous, first = points[index - 1], points[index]
        found.append(
            FoundChange(
                ChangePoint(index, moved.ratio, direction(moved)), first,
                _versions_changed(previous, first), judged,
                [d.text() for d in differences(previous.versions, first.versions)],
                judged_by.min_effect_pct, settings_changed(previous, first),
            )
        )  # fmt: skip
    return found


def _versions_changed(before: HistoryPoint, after: HistoryPoint) -> list[str]:
    return [d.text() for d in differences(before.versions, after.versions) if d.kind == "versions"]


def _by_series(summary: RunSummary) -> dict[SeriesKey, CellSummary]:
    keys = series_keys(summary.results, summary.options)
    return {keys[cell.record.key]: cell for cell in summary.cells}


def history(recipe: str, runs: list[RunSummary]) -> History:
    """The history of `recipe` from its finished runs (oldest first; at least one): a series
    per cell of the newest run, its cell in each run found by its series key (the stack, the
    scenario and its load, however long or often that run measured it)."""
    latest = runs[-1]
    evidence = latest.options.evidence
    cells = [_by_series(summary) for summary in runs]
    series = []
    for key, cell in cells[-1].items():
        figure = cell.result.figure
        points = [
            p
            for summary, found in zip(runs, cells, strict=True)
            if (p := _point(summary, found.get(key), figure)) is not None
        ]
        if not points:
            continue
        changes = _changes(points, figure, evidence)
        newest = _latest(points, changes, figure, evidence)
        series.append(CellSeries(key, figure, points, changes, newest))
    return History(recipe, len(runs), series)


def _newest_against(
    segment: list[HistoryPoint],
    newest: HistoryPoint,
    attr: str,
    figure: F.Figure,
    evidence: Evidence,
) -> Judgement:
    """The newest run's `attr` series (its trials, its per-round ratios or the sentinel's)
    against its segment: with PREDICTION_RUNS runs or more, by where they predict the next
    run's median to fall; with fewer (a prediction from two runs covers nearly anything),
    by the evidence rule between its trials and theirs."""
    before: list[tuple[float, ...]] = [getattr(p, attr) for p in segment]
    after: tuple[float, ...] = getattr(newest, attr)
    if len(segment) < PREDICTION_RUNS:
        return evidence.judge(list(after), [v for values in before for v in values], figure)
    prediction = predict([statistics.median(values) for values in before])
    assert prediction is not None
    value = statistics.median(after)
    ratio = Ratio(
        value / prediction.centre, value / prediction.high, value / prediction.low,
        PREDICTION_CONFIDENCE, prediction.runs,
    )  # fmt: skip
    if prediction.holds(value):
        return Judgement("tie", ratio, "inside the 95% prediction interval of the next run")
    return evidence.by_effect(ratio, figure)


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
    judged_by = evidence.with_noise_floor(p.aa_noise_pct for p in [*segment, newest])
    own = _newest_against(segment, newest, "samples", figure, judged_by)
    ratio = sentinel = None
    measured = [p for p in segment if p.to_sentinel]  # a history may have begun without one
    if newest.to_sentinel and measured:
        ratio = _newest_against(measured, newest, "to_sentinel", figure, judged_by)
        sentinel = _newest_against(measured, newest, "sentinel", figure, judged_by)
    return Latest(
        Evidence3(own, ratio, sentinel), len(segment), judged_by.min_effect_pct,
        settings_changed(segment[-1], newest),
    )  # fmt: skip
