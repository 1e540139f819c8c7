"""`benchlab compare`: two runs (from one store or two), cell by cell, as a terminal table,
Markdown (for a pull request), JSON (for a script) or a page (comparison_html.py), with what
differs between their machines and versions and which cells regressed beyond
`--fail-above`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchlab.analysis.compare import CellChange, Side, compare_cells
from benchlab.analysis.environment import SETTINGS, Difference, describe, differences
from benchlab.analysis.evidence import Judgement
from benchlab.analysis.series_key import Measurement, measured_otherwise, series_keys
from benchlab.analysis.stats import RATIO_METHOD
from benchlab.analysis.summary import RunSummary
from benchlab.core import figures as F
from benchlab.report.columns import params_text
from benchlab.report.json_formats import COMPARE

STYLES = {"faster": "green", "slower": "red", "failed in B": "red", "missing in B": "red"}


@dataclass(frozen=True)
class Comparison:
    a: RunSummary
    b: RunSummary
    a_store: Path
    b_store: Path
    changes: list[CellChange]
    differences: list[Difference]  # the machines', versions', conditions' and settings'
    fail_above: float | None = None

    @property
    def regressed(self) -> list[CellChange]:
        if self.fail_above is None:
            return []
        return [c for c in self.changes if c.regressed_beyond(self.fail_above)]

    @property
    def with_params(self) -> bool:
        return any(c.params for c in self.changes)

    @property
    def with_sentinel(self) -> bool:
        return any(c.evidence is not None for c in self.changes)

    def warnings(self) -> list[str]:
        """The machines or versions differ: the ratios measure that too; the cells were
        measured for another duration or number of trials: each is compared all the same.
        (The run's conditions, steal, are named in the footer: they differ on any shared
        machine.)"""
        found = []
        if environment := [d for d in self.differences if d.is_environment]:
            found.append(
                "the two runs were not measured alike, so the ratios include that difference: "
                + "; ".join(describe(environment))
            )
        if settings := [d for d in self.differences if d.kind == SETTINGS]:
            found.append(
                "B measured its cells otherwise than A (each cell is compared all the same): "
                + ", ".join(d.text() for d in settings)
            )
        return found

    def failure(self) -> str:
        names = ", ".join(c.key.name for c in self.regressed)
        return f"slower by more than {self.fail_above:g}% (or failed, or missing): {names}"


def _sides(summary: RunSummary, figure_key: str) -> list[Side]:
    """Its cells as compare sees them. Their samples lose their rounds: round 3 of one run
    has nothing to do with round 3 of another, so two runs are compared as independent."""
    keys = series_keys(summary.results, summary.options)
    sides = []
    for cell in summary.cells:
        sentinel = summary.sentinel_at(cell.result.point)
        sides.append(
            Side(
                keys[cell.record.key], Measurement.of(cell.record, summary.run),
                tuple(cell.samples.get(figure_key, ())), params_text(cell),
                tuple(cell.samples.get(F.TO_SENTINEL.key, ())),
                tuple(sentinel.samples.get(figure_key, ())) if sentinel else (),
            )
        )  # fmt: skip
    return sides


def compare_runs(
    a: RunSummary, b: RunSummary, a_store: Path, b_store: Path, fail_above: float | None
) -> Comparison:
    """B against A, cell by cell, by the figure A's cells are ranked by and A's evidence rule
    (its threshold raised to either run's A/A noise floor)."""
    figure = a.ranked_by
    changes = compare_cells(
        _sides(a, figure.key),
        _sides(b, figure.key),
        figure,
        a.options.evidence.with_noise_floor([a.aa_noise_pct, b.aa_noise_pct]),
    )
    found = differences(a.fingerprint, b.fingerprint)
    found += measured_otherwise([c.measured_otherwise for c in changes])
    return Comparison(a, b, a_store, b_store, changes, found, fail_above)


def _ratio(change: CellChange) -> tuple[str, str]:
    ratio = change.ratio
    if ratio is None:
        return "–", "–"
    if not ratio.has_interval:
        return f"{ratio.value:.3f}", "1 trial: none"
    return f"{ratio.value:.3f}", f"{ratio.low:.3f}–{ratio.high:.3f} ({ratio.confidence:.0%})"


def _sentinel_columns(change: CellChange) -> list[str]:
    """Its ratio to the sentinel, B / A with its interval, and whose change it is."""
    evidence = change.evidence
    if evidence is None or evidence.ratio is None or evidence.ratio.ratio is None:
        return ["–", "–"]
    ratio = evidence.ratio.ratio
    whose = change.attribution.value if change.attribution is not None else "–"
    return [f"{ratio.value:.3f} [{ratio.low:.3f}–{ratio.high:.3f}]", whose]


SENTINEL_COLUMNS = ["÷ sentinel B / A", "whose"]


def _verdict(change: CellChange) -> str:
    return change.verdict + (f" ({change.why})" if change.why else "")


def _run_line(summary: RunSummary, store: Path, side: str) -> str:
    run = summary.run
    machine = run.machine
    return (
        f"{side}: run {run.id} ({run.recipe_name}, {run.status}) in {store} · "
        f"{machine.get('cpu')}, {machine.get('cores')} cores · commit {run.git_commit}"
    )


def header(comparison: Comparison) -> list[str]:
    """The columns of the table every format shows, the sentinel's when either run has one."""
    columns = ["stack", "scenario", *(["params"] if comparison.with_params else [])]
    extra = SENTINEL_COLUMNS if comparison.with_sentinel else []
    return [*columns, "conns", "B / A", "interval", "verdict", *extra]


def rows(comparison: Comparison) -> list[tuple[list[str], CellChange]]:
    """Each cell's row (as `header` names its columns), with the change it shows."""
    found = []
    for change in comparison.changes:
        value, interval = _ratio(change)
        row = [change.label, change.scenario, *([change.params] if comparison.with_params else [])]
        row += [str(change.connections), value, interval, _verdict(change)]
        row += _sentinel_columns(change) if comparison.with_sentinel else []
        found.append((row, change))
    return found


def run_lines(comparison: Comparison) -> list[str]:
    return [
        _run_line(comparison.a, comparison.a_store, "A"),
        _run_line(comparison.b, comparison.b_store, "B"),
    ]


def threshold_line(comparison: Comparison) -> str | None:
    """What --fail-above found, when it was given."""
    if comparison.fail_above is None:
        return None
    if comparison.regressed:
        return f"FAIL: {comparison.failure()}"
    return f"No cell slower by more than {comparison.fail_above:g}% beyond its interval."


def footer(comparison: Comparison) -> list[str]:
    conditions = describe([d for d in comparison.differences if d.is_condition])
    return [
        f"Intervals: {RATIO_METHOD}.",
        f"Compared by {comparison.a.ranked_by.title}: {comparison.a.options.evidence.describe()}.",
        *(f"The runs' {line}." for line in conditions),
    ]


def render_table(comparison: Comparison, console: Console) -> None:
    for line in run_lines(comparison):
        console.print(line, markup=False, highlight=False)
    for warning in comparison.warnings():
        console.print(f"WARNING: {warning}", style="yellow", markup=False, highlight=False)
    table = Table(title="B / A per cell", title_justify="left")
    for column in header(comparison):
        numeric = column in ("conns", "B / A")
        table.add_column(
            column, justify="right" if numeric else "left", no_wrap=numeric or column == "interval"
        )
    for row, change in rows(comparison):
        table.add_row(*row, style=STYLES.get(change.verdict))
    console.print(table)
    for line in footer(comparison):
        console.print(line, style="dim", markup=False, highlight=False)


def render_markdown(comparison: Comparison) -> str:
    out = ["# benchlab compare", "", *(f"- {line}" for line in run_lines(comparison)), ""]
    out += [f"> **Warning:** {w}" for w in comparison.warnings()]
    if comparison.warnings():
        out.append("")
    columns = header(comparison)
    out += ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    verdict_at = columns.index("verdict")
    for row, change in rows(comparison):
        if STYLES.get(change.verdict) == "red":
            row[verdict_at] = f"**{row[verdict_at]}**"
        out.append("| " + " | ".join(v.replace("|", "\\|") for v in row) + " |")
    out.append("")
    if (found := threshold_line(comparison)) is not None:
        out += [found.replace("FAIL:", "**FAIL:**", 1), ""]
    out += [*footer(comparison), ""]
    return "\n".join(out)


def _run_json(summary: RunSummary, store: Path) -> dict[str, Any]:
    run = summary.run
    return {
        "id": run.id,
        "store": str(store),
        "recipe": run.recipe_name,
        "status": run.status,
        "git_commit": run.git_commit,
        "machine": run.machine,
    }


def _ratio_json(judged: Judgement | None) -> dict[str, Any] | None:
    if judged is None or judged.ratio is None:
        return None
    ratio = judged.ratio
    return {"value": ratio.value, "low": ratio.low, "high": ratio.high, "moved": judged.decided}


def render_json(comparison: Comparison) -> str:
    data = {
        "a": _run_json(comparison.a, comparison.a_store),
        "b": _run_json(comparison.b, comparison.b_store),
        "compared_by": comparison.a.ranked_by.key,
        "evidence": comparison.a.options.evidence.describe(),
        "ratio_method": RATIO_METHOD,
        "differences": [
            {"kind": d.kind, "name": d.name, "a": d.a, "b": d.b} for d in comparison.differences
        ],
        "fail_above_pct": comparison.fail_above,
        "regressed": [c.key.name for c in comparison.regressed],
        "cells": [
            {
                "stack": c.label,
                "scenario": c.scenario,
                "connections": c.connections,
                "params": c.params,
                "ratio": None
                if c.ratio is None
                else {
                    "value": c.ratio.value,
                    "low": c.ratio.low if c.ratio.has_interval else None,
                    "high": c.ratio.high if c.ratio.has_interval else None,
                    "confidence": c.ratio.confidence if c.ratio.has_interval else None,
                },
                "verdict": c.verdict,
                "why": c.why,
                "to_sentinel": _ratio_json(c.evidence.ratio if c.evidence else None),
                "attribution": c.attribution.value if c.attribution else None,
                "cell": c.key.as_json(),
                "measured_otherwise": [d.text() for d in c.measured_otherwise],
            }
            for c in comparison.changes
        ],
    }
    return COMPARE.dumps(data)
