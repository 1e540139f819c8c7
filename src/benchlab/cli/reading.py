"""The commands that read stored runs: report, runs, history, compare."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from benchlab.cli import formats, thresholds
from benchlab.cli.app import console
from benchlab.cli.options import (
    ResultsOption,
    RunArgument,
    ThresholdOption,
    store_from_environment,
)
from benchlab.core.errors import ExitCode, UserError
from benchlab.recipe import load_recipe
from benchlab.report import json_formats
from benchlab.stacks import CATALOGUE
from benchlab.store import DEFAULT_RESULTS, Store

if TYPE_CHECKING:
    from rich.console import Console

    from benchlab.analysis.history import History
    from benchlab.analysis.summary import RunSummary
    from benchlab.cli.formats import Destination
    from benchlab.report.comparison import Comparison


def history_of(stores: list[Path], recipe: str) -> History:
    """The history of `recipe` from every store (finished_runs)."""
    from benchlab.analysis.history import history

    return history(recipe, finished_runs(stores, recipe))


def finished_runs(stores: list[Path], recipe: str) -> list[RunSummary]:
    """The finished runs of `recipe` in every store, oldest first (by their start, then in
    the order a store holds them: starts are stored to the second), each once."""
    from benchlab.analysis.history import FINISHED
    from benchlab.analysis.summary import summarise

    found: dict[str, tuple[tuple[str, int, int], RunSummary]] = {}
    for store_index, path in enumerate(stores):
        store = Store(path, create=False)
        for position, run in enumerate(reversed(store.runs())):
            if run.recipe_name == recipe and run.status in FINISHED and run.id not in found:
                summary = summarise(store, run.id, catalogue=CATALOGUE)
                found[run.id] = ((run.started_at, store_index, position), summary)
    if not found:
        shown = ", ".join(str(p) for p in stores)
        raise UserError(
            f"--results {shown}: no finished run of recipe '{recipe}'; "
            "`benchlab runs` lists the runs a store holds"
        )
    return [summary for _, summary in sorted(found.values(), key=lambda f: f[0])]


def report(
    run_id: Annotated[str | None, typer.Argument(metavar="RUN", help=RunArgument)] = None,
    results: ResultsOption = DEFAULT_RESULTS,
    fmt: Annotated[str | None, formats.option(formats.REPORT_COMMAND)] = None,
    output: Annotated[Path | None, formats.output(formats.REPORT_COMMAND)] = None,
    wide: Annotated[
        bool,
        typer.Option(
            "--wide",
            metavar="",
            help="The table with every column, as wide as it needs (default: fits 100 columns).",
        ),
    ] = False,
    with_trials: Annotated[
        bool,
        typer.Option(
            "--trials",
            help="JSON only: each cell's trials too (trial_values: every stored value of each"
            " trial, its histogram left out).",
        ),
    ] = False,
    histogram: Annotated[
        str | None,
        typer.Option(
            "--histogram",
            metavar="CELL",
            help="One cell's latency histogram, for HdrHistogram's tools: hgrm (its trials'"
            " merged percentile distribution, the default) or hlog (its interval log, a trial a"
            " line). CELL: words of its name as the report shows it, e.g. 'gin plaintext'.",
        ),
    ] = None,
    threshold: ThresholdOption = None,
) -> None:
    """Report a stored run (the latest by default): the table, md, html, json or csv; or one
    cell's latency histogram (--histogram)."""
    from benchlab.analysis.summary import summarise
    from benchlab.report.exporters import EXPORTERS, HISTOGRAMS
    from benchlab.report.terminal import render_table

    if histogram is not None and fmt is None and output is None:
        fmt = HISTOGRAMS[0]  # a cell's histogram: on stdout as wrk2 --latency prints it
    where = formats.destination(fmt, output, formats.REPORT_COMMAND, reads=[results])
    if histogram is not None and where.format not in HISTOGRAMS:
        raise UserError(
            f"--histogram: one cell's histogram is written as {' or '.join(HISTOGRAMS)}, not "
            f"{where.format}; drop -f, or write to a file ending "
            f"{' or '.join(EXPORTERS[n].extensions[0] for n in HISTOGRAMS)}"
        )
    if where.format in HISTOGRAMS:
        from benchlab.report.histograms import histogram_document

        given = {"--threshold": threshold, "--trials": with_trials, "--wide": wide}
        whole = [option for option, value in given.items() if value]
        if whole:  # refused, never ignored
            raise UserError(
                f"{whole[0]} is for a whole run's report, not one cell's histogram: drop it, "
                "or drop --histogram"
            )

        store = Store(results, create=False)
        where.document(histogram_document(store, run_id, histogram, where.format))
        return
    if with_trials and where.format != "json":
        raise UserError(
            f"--trials: each trial's values are written in the JSON only, not {where.format}; "
            "add -f json (or -o FILE.json)"
        )
    bounds = thresholds.given(threshold)
    summary = summarise(Store(results, create=False), run_id, with_trials, CATALOGUE)
    summary = thresholds.judged(summary, bounds)
    if where.on_terminal_table:
        render_table(summary, console, wide)
    else:
        where.document(EXPORTERS[where.format].render(summary, wide))
    if thresholds.say_failed(summary):
        raise typer.Exit(ExitCode.THRESHOLD)


def runs(
    results: ResultsOption = DEFAULT_RESULTS,
    fmt: Annotated[str | None, formats.option(formats.RUNS)] = None,
    output: Annotated[Path | None, formats.output(formats.RUNS)] = None,
) -> None:
    """The runs in the store, latest first: id, recipe, status, time, machine, commit."""
    where = formats.destination(fmt, output, formats.RUNS, reads=[results])
    store = Store(results, create=False)
    rows = []
    for age, run in enumerate(store.runs()):
        machine = run.machine
        rows.append(
            {
                "id": run.id,
                "name": "latest" if age == 0 else f"latest~{age}",
                "recipe": run.recipe_name,
                "status": run.status,
                "started_at": run.started_at,
                "ended_at": run.ended_at,
                "machine": f"{machine.get('cpu', '?')}, {machine.get('cores', '?')} cores",
                "git_commit": run.git_commit,
                "cells": len(store.cells(run.id)),
            }
        )
    if where.format == "json":
        where.document(json_formats.RUNS.dumps({"runs": rows}))
        return
    if not rows:
        where.table(lambda out: out.print(f"no run in {results} yet; start one with: benchlab run"))
        return
    where.table(lambda out: _runs_table(rows, out))


# The runs table's columns a narrow terminal does without, first to last: id, name and
# status always stay, each whole (a name is what `report` and `compare` take).
RUNS_EXPENDABLE = ("machine", "commit", "started (UTC)", "recipe")


def _runs_table(rows: list[dict], out: Console) -> None:
    from benchlab.report.terminal import Layout, fitted_table

    layout = [
        Layout("id", wrap=False), Layout("name", wrap=False), Layout("recipe", wrap=False),
        Layout("status", wrap=False), Layout("started (UTC)", wrap=False), Layout("machine"),
        Layout("commit", wrap=False),
    ]  # fmt: skip
    lines = []
    for row in rows:
        commit = row["git_commit"] or "–"
        short = commit[:8] + ("+dirty" if commit.endswith("+dirty") else "")
        started = (row["started_at"] or "").replace("T", " ")[:16]
        lines.append(
            [row["id"], row["name"], row["recipe"], row["status"], started, row["machine"], short]
        )
    out.print(fitted_table(layout, lines, out.width, RUNS_EXPENDABLE))


def history(
    recipe: Annotated[
        str, typer.Argument(metavar="RECIPE", help="The recipe's name, or its file.")
    ],
    results: Annotated[
        list[Path] | None,
        typer.Option(
            "--results",
            metavar="FILE",
            help="A store to read (repeatable: a CI history and today's run, say; default: "
            "$BENCHLAB_RESULTS, else results/benchlab.db).",
        ),
    ] = None,
    fmt: Annotated[str | None, formats.option(formats.HISTORY)] = None,
    output: Annotated[Path | None, formats.output(formats.HISTORY)] = None,
    fail_on_change: Annotated[
        str | None,
        typer.Option(
            "--fail-on-change",
            metavar="slower|faster",
            help=f"Exit {ExitCode.REGRESSION:d} when a cell's latest move goes this way (with a "
            "sentinel: only a move of the stack's own, not the machine's).",
        ),
    ] = None,
    threshold: ThresholdOption = None,
) -> None:
    """Every run of RECIPE in the stores, as a series per cell, with the change points the
    evidence confirms (a run on another machine starts a new segment, never a change)."""
    from benchlab.analysis.history import history as analysis_history
    from benchlab.report import history as report

    stores = results or [store_from_environment()]
    where = formats.destination(fmt, output, formats.HISTORY, reads=stores)
    if fail_on_change not in (None, "slower", "faster"):
        raise UserError(f"--fail-on-change '{fail_on_change}': use slower or faster")
    if recipe.endswith(".toml") and Path(recipe).is_file():
        recipe = load_recipe(Path(recipe), CATALOGUE)[0].name
    bounds = thresholds.given(threshold)
    runs = finished_runs(stores, recipe)
    # The latest run, judged by its recipe's [thresholds] and --threshold.
    latest = thresholds.judged(runs[-1], bounds)
    found = dataclasses.replace(analysis_history(recipe, runs), latest_run=latest)
    if where.format == "html":
        from benchlab.report.history_html import render_history_html

        where.document(render_history_html(found))
    elif where.format == "md":
        where.document(report.render_markdown(found))
    elif where.format == "json":
        where.document(json_formats.HISTORY.dumps(found.as_json()))
    else:
        text = "\n".join(report.render_text(found)) + "\n"
        where.table(lambda out: out.print(text, markup=False, highlight=False, end=""))
    broken = thresholds.say_failed(latest)
    if fail_on_change is not None:
        failure = report.failure_text(found, fail_on_change)
        if failure is not None:
            print(failure, file=sys.stderr)
            if not broken:  # a failed threshold outranks it
                raise typer.Exit(ExitCode.REGRESSION)
    if broken:
        raise typer.Exit(ExitCode.THRESHOLD)


def _show_comparison(found: Comparison, where: Destination) -> None:
    from benchlab.report import comparison as report

    if where.format == "md":
        where.document(report.render_markdown(found))
    elif where.format == "json":
        where.document(report.render_json(found))
    elif where.format == "html":
        from benchlab.report.comparison_html import render_html

        where.document(render_html(found))
    else:
        where.table(lambda out: report.render_table(found, out))
    if not where.on_terminal_table:
        for warning in found.warnings():  # also where a CI log shows it
            print(f"warning: {warning}", file=sys.stderr)


def compare(
    run_a: Annotated[
        str, typer.Argument(metavar="RUN_A", help=f"The reference run: {RunArgument}.")
    ],
    run_b: Annotated[str, typer.Argument(metavar="RUN_B", help="The run compared with it.")],
    results: ResultsOption = DEFAULT_RESULTS,
    results_b: Annotated[
        Path | None,
        typer.Option(
            "--results-b",
            metavar="FILE",
            help="The store RUN_B is in, if not RUN_A's (e.g. a baseline store kept by CI).",
        ),
    ] = None,
    fmt: Annotated[str | None, formats.option(formats.COMPARE)] = None,
    output: Annotated[Path | None, formats.output(formats.COMPARE)] = None,
    fail_above: Annotated[
        float | None,
        typer.Option(
            "--fail-above",
            metavar="PCT",
            min=0,
            max=100,
            help=f"Exit {ExitCode.REGRESSION:d} if any cell is slower by more than PCT %, "
            "beyond the intervals (and not the machine's doing, when both runs measured a "
            "sentinel), or failed or missing in RUN_B.",
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            metavar="",
            help=f"Exit {ExitCode.NOT_COMPARABLE:d} if the two runs' machines or versions "
            "differ (they are always named), whatever --fail-above finds.",
        ),
    ] = False,
) -> None:
    """Per cell, RUN_B / RUN_A of the figure the cells are ranked by (throughput, capacity or
    p99), with its interval: faster, slower or no significant change."""
    from benchlab.analysis.summary import summarise
    from benchlab.report import comparison as report

    where = formats.destination(
        fmt, output, formats.COMPARE, reads=[results, *([results_b] if results_b else [])]
    )
    store_b_path = results_b or results
    before = summarise(Store(results, create=False), run_a, catalogue=CATALOGUE)
    after = summarise(Store(store_b_path, create=False), run_b, catalogue=CATALOGUE)
    found = report.compare_runs(before, after, results, store_b_path, fail_above)
    if not found.changes:
        raise UserError(
            f"runs '{run_a}' ({before.run.recipe_name}) and '{run_b}' "
            f"({after.run.recipe_name}) share no cell; compare runs of one recipe"
        )
    _show_comparison(found, where)
    say = console.print if where.on_terminal_table else _to_stderr
    verdict = report.threshold_line(found)
    if verdict is not None:
        say(verdict, style="red" if found.regressed else None)
    if strict and any(d.is_environment for d in found.differences):
        say("FAIL: --strict: the runs' machines or versions differ (named above)", style="red")
        raise typer.Exit(ExitCode.NOT_COMPARABLE)
    if found.regressed:
        raise typer.Exit(ExitCode.REGRESSION)


def _to_stderr(text: str, style: str | None = None) -> None:
    print(text, file=sys.stderr)
