"""Thresholds: one grammar (core/thresholds.py) over the figure registry, a judge that reads a
cell's figure with its interval (analysis/thresholds.py), the recipe's [thresholds] stored
with the run, and every format naming the outcome. The commands' --threshold and its exit
code: test_cli_contract (every command that takes it) and test_threshold_run (a real run)."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path

import pytest

from benchlab.analysis.run_options import RunOptions
from benchlab.analysis.summary import RunSummary, summarise
from benchlab.analysis.thresholds import Outcome, Spread, judge, judged, spread_of
from benchlab.core import figures as F
from benchlab.core.errors import UserError
from benchlab.core.modes import Mode
from benchlab.core.thresholds import (
    Comparison,
    Threshold,
    check_measured,
    figure_names,
    parse_threshold,
    parse_thresholds,
)
from benchlab.recipe import load_recipe
from benchlab.report.csvfile import render_csv
from benchlab.report.jsonfile import render_json
from benchlab.report.markdown import render_markdown
from benchlab.report.thresholds import failure_lines, threshold_lines
from benchlab.stacks import CATALOGUE
from benchlab.store import Store
from tests.conftest import REPO, check_against_schema, write_recipe
from tests.stored_runs import write_run

README_RUN = REPO / "tests" / "data" / "readme-quick.db"


@pytest.mark.parametrize(
    ("text", "figure", "comparison", "bound", "unit"),
    [
        ("p99<200ms", F.P99, "<", 200.0, "ms"),
        ("p99 <= 0.2 s", F.P99, "<=", 200.0, "ms"),
        ("p50<500us", F.P50, "<", 0.5, "ms"),
        ("p99<200", F.P99, "<", 200.0, "ms"),  # a bare number: the figure's own unit
        ("errors<0.1%", F.ERROR_RATE, "<", 0.1, "%"),
        ("rps>=500", F.THROUGHPUT, ">=", 500.0, F.REQ_S),
        ("throughput_rps>1e3", F.THROUGHPUT, ">", 1000.0, F.REQ_S),
        ("cpu<1ms", F.CPU_PER_REQUEST, "<", 1000.0, "µs"),
        ("rss<1GB", F.SERVER_RSS, "<", 1024.0, "MB"),
        ("p99.9<5ms", F.P999, "<", 5.0, "ms"),
        ("cache_hit_ratio>=90%", F.CACHE_HITS, ">=", 90.0, "%"),  # a share: bounded in %
        ("capacity>=1000", F.CAPACITY, ">=", 1000.0, F.REQ_S),
    ],
)
def test_a_threshold_reads_a_figure_a_comparison_and_a_bound_in_the_figures_unit(
    text: str, figure: F.Figure, comparison: str, bound: float, unit: str
) -> None:
    found = parse_threshold(text)
    assert (found.figure, found.comparison.value, found.bound, found.unit) == (
        figure, comparison, bound, unit
    )  # fmt: skip
    # Its text reads back as itself (what a report names, --threshold takes).
    again = parse_threshold(found.text)
    assert (again.figure, again.comparison, again.bound) == (figure, found.comparison, bound)


def test_every_figure_is_named_by_its_key_and_no_name_means_two_figures() -> None:
    names = figure_names()
    assert all(names[f.key] is f for f in F.FIGURES.values())
    spelled = [n.lower() for f in F.FIGURES.values() for n in (f.key, *f.names)]
    assert len(spelled) == len(set(spelled)), "a threshold's name would be ambiguous"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("p98<200ms", "--threshold 'p98<200ms': no figure is called 'p98' (did you mean 'p99'?)"),
        ("p99<abc", "--threshold 'p99<abc': 'abc' is not a number; write one after '<', like"),
        ("p99<200MB", "--threshold 'p99<200MB': p99 is in ms, not 'MB'; write it in ms, s, us"),
        ("p99", "--threshold 'p99': write a figure, a comparison (<, <=, >, >=) and a number"),
        ("requests>10ms", "requests is in no unit, not 'ms'"),
        ("erors<1%", "no figure is called 'erors' (did you mean 'errors'?)"),
    ],
)
def test_a_bad_threshold_is_one_line_that_says_how_it_is_written(text: str, said: str) -> None:
    with pytest.raises(UserError) as refused:
        parse_threshold(text)
    assert said in str(refused.value) and "\n" not in str(refused.value)


def test_a_threshold_on_a_figure_no_cell_measures_is_refused_before_it_could_judge() -> None:
    check_measured(parse_thresholds(["capacity>=100"]), {Mode.SLO, Mode.CLOSED})
    with pytest.raises(UserError) as refused:
        check_measured(parse_thresholds(["capacity>=100"]), {Mode.CLOSED})
    assert "capacity is measured by capacity-search cells only" in str(refused.value)


def _bound(text: str) -> Threshold:
    return parse_threshold(text)


@pytest.mark.parametrize(
    ("text", "spread", "outcome"),
    [
        # below the bound: the whole interval, part of it, none of it
        ("p99<10ms", Spread(8.0, 7.0, 9.0, 3), Outcome.KEPT),
        ("p99<10ms", Spread(9.0, 8.0, 11.0, 3), Outcome.UNDECIDED),
        ("p99<10ms", Spread(12.0, 10.0, 13.0, 3), Outcome.FAILED),  # 10 is not below 10
        ("p99<=10ms", Spread(12.0, 10.0, 13.0, 3), Outcome.UNDECIDED),  # 10 is at most 10
        # a lower bound: the interval's low end decides a keep
        ("rps>=500", Spread(600.0, 510.0, 700.0, 5), Outcome.KEPT),
        ("rps>=500", Spread(520.0, 480.0, 700.0, 5), Outcome.UNDECIDED),
        ("rps>=500", Spread(400.0, 300.0, 499.0, 5), Outcome.FAILED),
        # no interval (a peak, one trial): the value decides, and the sentence says so
        ("rss<100MB", Spread(116.8), Outcome.FAILED),
        ("rss<200MB", Spread(116.8), Outcome.KEPT),
        ("p99<10ms", None, Outcome.NOT_MEASURED),
    ],
)
def test_the_judge_fails_only_what_the_whole_interval_breaks(
    text: str, spread: Spread | None, outcome: Outcome
) -> None:
    found, sentence = judge(_bound(text), spread)
    assert found is outcome, sentence
    if outcome is Outcome.UNDECIDED:
        assert "straddles" in sentence and "more rounds would narrow it" in sentence
    if spread is not None and spread.low is None:
        assert "no interval" in sentence


@pytest.fixture(scope="module")
def readme_run() -> RunSummary:
    return summarise(Store(README_RUN, create=False), None)


def test_a_percentiles_interval_is_the_trials_own_beside_the_merged_figure(
    readme_run: RunSummary,
) -> None:
    """p50 and p99 (of the merged histogram) carry the interval of the trials' own p50 and
    p99; CPU/req its own; RSS, a peak, none."""
    gin = next(
        c for c in readme_run.cells if c.record.stack == "gin" and c.record.scenario == "json"
    )
    p99, over = gin.value(F.P99), gin.result.latency_intervals[F.P99.key]
    assert p99 is not None and over is not None and over.n == 3
    spread = spread_of(gin, F.P99)
    assert spread == Spread(p99, over.low, over.high, 3)
    cpu = gin.estimate(F.CPU_PER_REQUEST)
    assert cpu is not None and spread_of(gin, F.CPU_PER_REQUEST) == Spread(
        cpu.median, cpu.low, cpu.high, cpu.n
    )
    assert spread_of(gin, F.SERVER_RSS) == Spread(gin.value(F.SERVER_RSS) or 0.0)


def test_the_wide_markdown_and_csv_tables_show_the_intervals_of_p50_p99_and_cpu(
    readme_run: RunSummary,
) -> None:
    gin = next(
        c for c in readme_run.cells if c.record.stack == "gin" and c.record.scenario == "json"
    )
    p99 = gin.interval(F.P99)
    assert p99 is not None
    shown = f"{F.P99.format(gin.value(F.P99))} [{F.P99.format(p99.low)}–{F.P99.format(p99.high)}]"
    markdown = render_markdown(readme_run)
    row = next(line for line in markdown.splitlines() if line.startswith("| gin w=1 | json"))
    assert shown in row, row
    cpu = gin.estimate(F.CPU_PER_REQUEST)
    assert cpu is not None and f"{cpu.median:,.0f} [{cpu.low:,.0f}–{cpu.high:,.0f}]" in row
    rows = list(csv.DictReader(io.StringIO(render_csv(readme_run))))
    mine = next(r for r in rows if r["key"] == gin.record.key)
    assert float(mine["latency_ms_p99_low"]) == p99.low
    assert float(mine["latency_ms_p99_high"]) == p99.high


def test_every_format_names_each_threshold_and_its_outcome(readme_run: RunSummary) -> None:
    given = parse_thresholds(["p99<1ms", "p99<1000ms", "rps>=5000"])
    summary = judged(readme_run, given)
    failed, kept, mixed = summary.thresholds
    assert failed.outcome is Outcome.FAILED and len(failed.judged) == len(readme_run.cells)
    assert kept.outcome is Outcome.KEPT and not kept.failed
    # fastapi's throughput interval straddles 5,000 req/s in both scenarios: undecided.
    undecided = {
        readme_run.cell(j.cell).record.stack for j in mixed.with_outcome(Outcome.UNDECIDED)
    }
    assert undecided == {"fastapi+uvicorn"}
    lines = threshold_lines(summary)
    assert "p99<1 ms: FAILED in 12 of 12 cells" in lines
    assert "p99<1000 ms: kept by all 12 cells measured" in lines
    assert "rps>=5000 req/s: FAILED in 4 of 12 cells (2 undecided)" in lines
    assert failure_lines(summary)[0].startswith("FAIL: threshold p99<1 ms broken by 12 cells: ")
    document = render_json(summary)
    check_against_schema(document)
    found = json.loads(document)["thresholds"]
    assert [t["outcome"] for t in found] == ["failed", "kept", "failed"]
    assert {c["outcome"] for c in found[2]["cells"]} == {"kept", "failed", "undecided"}
    assert "## Thresholds" not in render_markdown(summary)  # a paragraph, titled as such
    assert "Thresholds (each cell's interval against the bound):" in render_markdown(summary)
    rows = list(csv.DictReader(io.StringIO(render_csv(summary))))
    assert all("p99<1 ms failed" in r["thresholds"] for r in rows)


def _gated(directory: Path, thresholds: str) -> Path:
    """A recipe of closed-loop cells with this [thresholds] table."""
    body = 'name = "gated"\nstacks = ["gin"]\nscenarios = ["json"]\n[[load]]\ntool = "wrk"\n'
    return write_recipe(directory, f"{body}[thresholds]\n{thresholds}\n")


def test_the_recipes_thresholds_are_stored_with_the_run_and_judged_on_its_reports(
    tmp_path: Path,
) -> None:
    recipe = _gated(tmp_path, 'p99 = "<1ms"\nrps = [">=1000", ">=10"]')
    loaded, _ = load_recipe(recipe, CATALOGUE)
    options = RunOptions.from_recipe(loaded)
    assert [t.text for t in options.thresholds] == ["p99<1 ms", "rps>=1000 req/s", "rps>=10 req/s"]
    assert RunOptions.from_json(json.loads(json.dumps(options.to_json()))) == options
    path = tmp_path / "r.db"
    write_run(path, options=dataclasses.replace(options, baseline="flask+gunicorn"))
    summary = judged(summarise(Store(path, create=False), None))
    assert [r.threshold.text for r in summary.thresholds] == [t.text for t in options.thresholds]
    assert [r.outcome for r in summary.thresholds] == [Outcome.FAILED, Outcome.KEPT, Outcome.KEPT]
    # --threshold adds to them; one given twice is judged once.
    again = judged(summarise(Store(path, create=False), None), parse_thresholds(["p99<1ms"]))
    assert len(again.thresholds) == 3


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('p98 = "<200ms"', "key 'thresholds.p98': no figure is called 'p98' (did you mean 'p99'?)"),
        ('p99 = "<abc"', "key 'thresholds.p99': 'abc' is not a number"),
        (
            'capacity = ">=100"',
            "key 'thresholds.capacity': capacity is measured by capacity-search",
        ),
        (
            'p99 = "200ms"',
            "key 'thresholds.p99': '200ms' has no comparison; write <, <=, > or >= before the "
            'bound, like p99 = "<200ms"',
        ),
    ],
)
def test_a_recipes_bad_threshold_is_one_line_naming_the_file_and_key(
    tmp_path: Path, table: str, said: str
) -> None:
    recipe = _gated(tmp_path, table)
    with pytest.raises(UserError) as refused:
        load_recipe(recipe, CATALOGUE)
    assert f"{recipe}: {said}" in str(refused.value), refused.value


def test_a_tunes_thresholds_are_judged_on_the_replay_that_proved_its_answer(
    tmp_path: Path,
) -> None:
    """The proof held 978 req/s (p99 35 ms) over windows of 12, 15, 260 and 14 ms: p99<100ms
    is undecided by its windows, p99<300ms kept, p99<10ms failed; one cell, the replay's."""
    from tests.test_tune_proof import _tune_run

    path = tmp_path / "tune.db"
    _tune_run(path)
    summary = summarise(Store(path, create=False), None)
    given = parse_thresholds(["p99<100ms", "p99<300ms", "p99<10ms", "rps>=900"])
    results = judged(summary, given).thresholds
    assert [r.outcome for r in results] == [
        Outcome.UNDECIDED, Outcome.KEPT, Outcome.FAILED, Outcome.KEPT
    ]  # fmt: skip
    (answer,) = results[0].judged
    replay = summary.cell(answer.cell)
    assert replay.value(F.TARGET_RATE) == 978.0 and answer.spread is not None
    assert (answer.spread.low, answer.spread.high) == (12.0, 260.0)
    assert "its 4 windows' p99" in answer.sentence


def test_comparisons_are_declared_once_and_read_longest_first() -> None:
    assert parse_threshold("p99<=5ms").comparison is Comparison.AT_MOST
    assert parse_threshold("rps>=5").comparison is Comparison.AT_LEAST
    assert [c.value for c in Comparison] == ["<=", ">=", "<", ">"]


def test_a_tune_without_a_replay_of_its_answer_judges_nothing_and_says_why(
    tmp_path: Path,
) -> None:
    from tests.test_tune_proof import _tune_run

    path = tmp_path / "tune.db"
    _tune_run(path, steps=())
    summary = judged(summarise(Store(path, create=False), None), parse_thresholds(["p99<10ms"]))
    (result,) = summary.thresholds
    assert result.judged == () and result.outcome is Outcome.NOT_MEASURED
    assert threshold_lines(summary) == [
        "p99<10 ms: not judged: no replay of the answer ran (the budget ended first)"
    ]
    assert failure_lines(summary) == []
