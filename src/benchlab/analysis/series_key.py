"""What makes cells of two runs the same cell, declared once for history, compare and the
trackers' exports: the stack as launched (flavour, workers, threads, pool, which launch of
the sentinel), the scenario and its load (the grid point: the named point, the tool, the
connections, the scenario's parameter, a rate or a share, keep-alive, the protocol) and, for
a capacity, the target it was searched under. Not how long or how often it was measured
(--duration, --trials, --budget, --warmup, the load tool's threads): that is its
`Measurement`, which history and compare name when it differs between runs and the trackers
leave out of a benchmark's name.

Within one run a cell is known by its key (recipe/cells.py's `Cell.key`, stored as
`cells.key`): `run --resume` and the store find a cell of the same run by it. It holds the
duration and the tool's threads, so across runs it is never the identity; a `SeriesKey` is.
Every field is one a stored cell has had since its first schema, or reads as its default in
an older store, so runs made by older versions are matched as their cells are read."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from benchlab.analysis.cell_result import CellResult
from benchlab.analysis.environment import SETTINGS, Difference
from benchlab.analysis.grid import GridPoint, cell_words, stack_words
from benchlab.analysis.run_options import RunOptions
from benchlab.core.modes import Mode
from benchlab.store import CellRecord, RunRecord


@dataclass(frozen=True)
class SeriesKey:
    """A cell as the user compares it across runs (equal keys: the same series)."""

    stack: str
    flavour: str | None
    workers: int
    server_threads: int | None
    pool_size: int | None
    copy: int  # 2: the sentinel's A/A copy
    point: GridPoint  # the scenario and its load
    target: str = ""  # a capacity's target ("p99 ≤ 50 ms, errors ≤ 0.1%")
    # Only for cells of one run this key would not tell apart (two load profiles that
    # differ only in their duration): what their measurement says of them ("5 s").
    twin: str = ""
    # The stack as the reports label it ("gin w=1", "nginx-static w=1 (ceiling)"): shown,
    # never compared (its wording may change between versions; the fields above do not).
    label: str = field(default="", compare=False)

    @classmethod
    def of(cls, result: CellResult, options: RunOptions) -> SeriesKey:
        """The key of a cell's result: its record's stack and the grid point it was built
        with (analysis/cell_result.py)."""
        record = result.record
        slo = options.slo if record.mode is Mode.SLO else None
        return cls(
            stack=record.stack, flavour=record.flavour, workers=record.workers,
            server_threads=record.server_threads, pool_size=record.pool_size, copy=record.copy,
            point=result.point, target=slo.describe() if slo is not None else "",
            label=record.stack_label,
        )  # fmt: skip

    @property
    def stack_text(self) -> str:
        """The stack as shown, with its pool when the point does not say it."""
        return stack_words(self.label, self.pool_size, self.point)

    @property
    def load_text(self) -> str:
        """The scenario and its load: "json wrk c=64", "[slow] db-delay vegeta c=64
        capacity (p99 ≤ 50 ms, errors ≤ 0.1%)"."""
        return self.point.text() + (f" ({self.target})" if self.target else "")

    @property
    def name(self) -> str:
        """The cell in words, each stack once with its scenario: "gin w=1 · json wrk c=64"."""
        target = f" ({self.target})" if self.target else ""
        twin = f" · {self.twin}" if self.twin else ""
        return cell_words(self.label, self.pool_size, self.point) + target + twin

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "stack": self.stack_text,
            "point": self.point.as_json(),
            "target": self.target or None,
            "twin": self.twin or None,
        }


def series_keys(results: Sequence[CellResult], options: RunOptions) -> dict[str, SeriesKey]:
    """Each cell's series key, by its key within the run. Cells of one run that the key would
    not tell apart (load profiles that differ only in how long or with how many tool threads
    they load) each get what tells them apart (`twin`)."""
    keys = {result.key: SeriesKey.of(result, options) for result in results}
    records = [result.record for result in results]
    groups: dict[SeriesKey, list[CellRecord]] = defaultdict(list)
    for record in records:
        groups[keys[record.key]].append(record)
    for key, twins in groups.items():
        if len(twins) < 2:
            continue
        durations = {r.duration_s for r in twins}
        for record in twins:
            twin = f"{record.duration_s:g} s"
            if len(durations) < len(twins):
                twin += f", {record.threads} tool thread(s)"
            keys[record.key] = replace(key, twin=twin)
    return keys


@dataclass(frozen=True)
class RunSettings:
    """How often a run measured its cells, as it ran (its overrides applied)."""

    trials: int
    max_trials: int | None
    warmup_s: int
    budget_min: float | None  # None: no --budget

    @classmethod
    def of(cls, run: RunRecord) -> RunSettings | None:
        """The run's settings from its stored plan; None where it stored none (a store older
        than the plan, a tune): its cells' durations are known all the same."""
        recipe = (run.plan or {}).get("recipe")
        if not isinstance(recipe, dict):
            return None
        deadline_s = (run.plan or {}).get("deadline_s")
        return cls(
            trials=int(recipe.get("trials", 3)),
            max_trials=recipe.get("max_trials"),
            warmup_s=int(recipe.get("warmup", 1)),
            budget_min=None if deadline_s is None else deadline_s / 60,
        )


def _minutes(value: float | None) -> str | None:
    return None if value is None else f"{value:g} min"


@dataclass(frozen=True)
class Measurement:
    """How long and how often a cell was measured: what may change between runs without
    making it another cell."""

    duration_s: float
    tool_threads: int
    run: RunSettings | None = None  # None: not recorded

    @classmethod
    def of(cls, record: CellRecord, run: RunRecord) -> Measurement:
        return cls(record.duration_s, record.threads, RunSettings.of(run))

    def differences(self, other: Measurement) -> list[Difference]:
        """What `other` (the later run's) measured otherwise: a setting one side did not
        record is not a difference."""
        pairs: list[tuple[str, Any, Any]] = [
            ("duration", f"{self.duration_s:g} s", f"{other.duration_s:g} s"),
            ("load-tool threads", self.tool_threads, other.tool_threads),
        ]
        if self.run is not None and other.run is not None:
            a, b = self.run, other.run
            pairs += [
                ("trials", a.trials, b.trials),
                ("max trials", a.max_trials, b.max_trials),
                ("warm-up", f"{a.warmup_s} s", f"{b.warmup_s} s"),
                ("budget", _minutes(a.budget_min), _minutes(b.budget_min)),
            ]
        return [Difference(SETTINGS, name, x, y) for name, x, y in pairs if x != y]


def measured_otherwise(pairs: Sequence[Sequence[Difference]]) -> list[Difference]:
    """The settings differences of many cells, each once (in their first order)."""
    return list(dict.fromkeys(d for found in pairs for d in found))
