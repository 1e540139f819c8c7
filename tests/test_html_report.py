"""The reports of a run of recipes/quick.toml (its stacks, scenarios and load; short
trials), run in process with figures this file sets: the HTML page as headless Chromium
renders it, on a laptop and a phone screen, and the Markdown as a Markdown parser reads it.
The page, not the figures: real runs write it in tests/test_failures.py and test_run.py."""

from __future__ import annotations

import json
import re

import pytest
from markdown_it import MarkdownIt

from benchlab.analysis.summary import summarise
from benchlab.report.html import render_html
from tests.browser import open_page
from tests.conftest import REPO, benchlab
from tests.inprocess import FakeExecutor, FakeStack, Figures, run_inprocess

ARTIFACTS = REPO / "test-artifacts"
PHONE_WIDTH = 390
# quick.toml has two grid points (plaintext, json): each its throughput and latency charts,
# then the grid's heat map and rank chart.
CHARTS = ("throughput", "latency", "throughput", "latency", "heatmap", "ranks")
COMMAND = "benchlab run recipes/quick.toml --duration 1 --trials 2 --warmup 0"
# Each stack's json throughput (plaintext: 1.5×) and p50; its launches alternate ±3 %.
FIGURES = {
    "nginx-static": (90_000.0, 0.6), "gin": (60_000.0, 0.9), "sanic": (30_000.0, 1.8),
    "fastapi+uvicorn": (12_000.0, 4.5), "tornado": (6_000.0, 9.0),
    "flask+gunicorn": (2_500.0, 20.0),
}  # fmt: skip


def _launches(rps: float, p50: float) -> list[Figures]:
    return [Figures(rps * 1.03, p50 * 0.97), Figures(rps * 0.97, p50 * 1.03)]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory):
    directory = tmp_path_factory.mktemp("quick")
    recipe = (REPO / "recipes" / "quick.toml").read_text()
    recipe = re.sub(r"(?m)^trials = 3$", "trials = 2", recipe)
    recipe = re.sub(r"(?m)^warmup = 1$", "warmup = 0", recipe)
    recipe = re.sub(r"(?m)^duration = 2$", "duration = 1", recipe)
    stacks = {
        stack: FakeStack({"json": _launches(rps, p50), "plaintext": _launches(1.5 * rps, p50)})
        for stack, (rps, p50) in FIGURES.items()
    }
    executor = FakeExecutor(stacks)
    with pytest.MonkeyPatch.context() as env:  # its step costs stay out of the machine's
        env.setenv("BENCHLAB_CACHE", str(directory / "cache"))
        run = run_inprocess(directory, recipe, executor, command=COMMAND)
    assert run.outcome.status == "complete", run.output
    results, page = run.store.path, directory / "quick.html"
    page.write_text(render_html(summarise(run.store, run.run_id)))
    report = json.loads(benchlab("report", "--results", str(results), "-f", "json").stdout)
    yield results, page, report


@pytest.mark.slow  # Chromium, or the report command the fixture runs
def test_the_page_renders_in_chromium_with_every_chart_and_cell(quick_run) -> None:
    _, page, report = quick_run
    with open_page(page) as browser:
        charts = browser.evaluate(
            """Array.from(document.querySelectorAll("figure.chart")).map(f => {
                 const svg = f.querySelector("svg"), box = svg ? svg.getBoundingClientRect() : null;
                 return {key: f.dataset.chart, width: box ? box.width : 0,
                         height: box ? box.height : 0,
                         marks: svg ? svg.querySelectorAll("path, rect, use, image").length : 0,
                         text: svg ? svg.textContent : ""};
               })"""
        )
        table = browser.evaluate(
            """(() => { const t = document.getElementById("summary-table");
                 return {header: Array.from(t.tHead.rows[0].cells).map(c => c.textContent.trim()),
                         rows: Array.from(t.tBodies[0].rows).map(r =>
                           Array.from(r.cells).map(c => c.textContent.trim()))}; })()"""
        )
        first_screen = browser.evaluate(
            """[document.querySelector("h1").textContent,
                document.querySelector("h1").getBoundingClientRect().top,
                document.getElementById("reproduce").textContent]"""
        )
        ARTIFACTS.mkdir(exist_ok=True)
        browser.screenshot(ARTIFACTS / "report-quick.png")
        errors = browser.console_errors()
    assert errors == []
    assert [c["key"] for c in charts] == list(CHARTS)
    for chart in charts:
        assert chart["width"] > 300 and chart["height"] > 100, chart["key"]
        assert chart["marks"] > 10, chart["key"]
    stacks = {c["stack_label"] for c in report["cells"]}
    for throughput in (c for c in charts if c["key"] == "throughput"):
        assert all(label.split(" w=")[0] in throughput["text"] for label in stacks), stacks
    # Every cell of the run is a row, and every row has every column.
    assert len(table["rows"]) == len(report["cells"]) == 12
    assert all(len(row) == len(table["header"]) for row in table["rows"])
    for header in ("stack", "scenario", "conns", "requests", "throughput req/s", "p50 ms",
                   "p99 ms", "max ms", "errors", "transfer MB", "server CPU %", "RSS MB",
                   "vs flask+gunicorn", "verdicts"):  # fmt: skip
        assert header in table["header"]
    # The share of the ceiling only from a ceiling that is one: nginx-static is client-bound
    # on a 2-core machine (wrk saturates its one core), and then no cell has a share.
    assert ("of ceiling %" in table["header"]) == _ceiling_is_one(report)
    rows = {(row[0], row[table["header"].index("scenario")]) for row in table["rows"]}
    assert rows == {(c["stack_label"], c["scenario"]) for c in report["cells"]}
    column = table["header"].index("requests")
    assert sorted(int(r[column].replace(",", "")) for r in table["rows"]) == sorted(
        c["requests"] for c in report["cells"]
    )
    question, top, reproduce = first_screen
    assert question.startswith("How do the core stacks compare") and top < 200
    # in a clone, ./lab sets up what is missing and runs it (benchlab is not on PATH there)
    assert COMMAND.replace("benchlab ", "./lab ", 1) in reproduce and "lab setup" not in reproduce
    assert (ARTIFACTS / "report-quick.png").stat().st_size > 50_000


def _ceiling_is_one(report: dict) -> bool:
    """Whether any of the run's nginx-static cells was not client-bound. A cell has a share of
    the ceiling exactly when the ceiling of its scenario was not client-bound."""
    free = {
        c["scenario"]: "client-bound" not in c["verdicts"]
        for c in report["cells"]
        if c["stack"] == "nginx-static"
    }
    for cell in report["cells"]:
        if cell["stack"] != "nginx-static":
            assert (cell["ceiling_fraction"] is not None) == free[cell["scenario"]], cell
    return any(free.values())


@pytest.mark.slow  # Chromium, or the report command the fixture runs
def test_the_table_sorts_by_a_clicked_column(quick_run) -> None:
    _, page, _ = quick_run
    with open_page(page) as browser:
        order = browser.evaluate(
            """(() => { const t = document.getElementById("summary-table");
                 const i = Array.from(t.tHead.rows[0].cells)
                   .findIndex(c => c.textContent.trim() === "throughput req/s");
                 const read = () => Array.from(t.tBodies[0].rows)
                   .map(r => parseFloat(r.cells[i].dataset.sort));
                 t.tHead.rows[0].cells[i].click(); const up = read();
                 t.tHead.rows[0].cells[i].click(); return [up, read()]; })()"""
        )
        assert browser.console_errors() == []
    ascending, descending = order
    assert ascending == sorted(ascending) and descending == sorted(ascending, reverse=True)


@pytest.mark.slow  # Chromium, or the report command the fixture runs
def test_the_page_fits_a_phone_screen(quick_run) -> None:
    _, page, _ = quick_run
    with open_page(page, width=PHONE_WIDTH, height=844) as browser:
        widths = browser.evaluate(
            """[document.documentElement.scrollWidth, window.innerWidth,
                Math.max(...Array.from(document.querySelectorAll("figure.chart svg"))
                  .map(s => s.getBoundingClientRect().width))]"""
        )
        browser.screenshot(ARTIFACTS / "report-quick-phone.png")
        assert browser.console_errors() == []
    page_width, screen, widest_chart = widths
    # A mobile layout viewport grows to fit wide content: compare with the device's width.
    assert page_width <= PHONE_WIDTH and screen <= PHONE_WIDTH, "the page scrolls sideways"
    assert 300 < widest_chart <= PHONE_WIDTH


@pytest.mark.slow  # Chromium, or the report command the fixture runs
def test_the_page_needs_no_network(quick_run) -> None:
    _, page, _ = quick_run
    html = page.read_text()
    assert "default-src 'none'" in html  # the browser itself refuses any fetch
    loads = re.findall(r"""(?:src|href)\s*=\s*["'](?!#|data:)[^"']*|@import|url\((?!#)""", html)
    assert loads == []


def _tables(markdown: str) -> list[tuple[list[str], list[list[str]]]]:
    """Each Markdown table as the parser reads it: header cells and body rows."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    tables, header, rows, row, part = [], [], [], [], None
    for token in tokens:
        if token.type == "thead_open":
            part, header = "head", []
        elif token.type == "tbody_open":
            part, rows = "body", []
        elif token.type == "tr_open":
            row = []
        elif token.type == "inline" and part is not None and token.map is not None:
            row.append(token.content)
        elif token.type == "tr_close":
            if part == "head":
                header = row
            else:
                rows.append(row)
        elif token.type == "table_close":
            tables.append((header, rows))
            part = None
    return tables


@pytest.mark.slow  # Chromium, or the report command the fixture runs
def test_markdown_report_parses_as_tables_with_the_expected_columns(quick_run) -> None:
    results, _, report = quick_run
    markdown = benchlab("report", "--results", str(results), "--format", "md").stdout
    tables = _tables(markdown)
    summary_header, summary_rows = tables[0]
    # The articles' columns: requests, avg/p50/p99/max latency, errors, transfer.
    assert summary_header[:12] == [
        "stack", "scenario", "conns", "trials", "requests", "throughput req/s", "avg ms",
        "p50 ms", "p99 ms", "max ms", "errors", "transfer MB",
    ]  # fmt: skip
    assert {"vs flask+gunicorn", "note"} <= set(summary_header)
    if _ceiling_is_one(report):
        assert "of ceiling %" in summary_header
    else:
        assert "of ceiling %" not in summary_header
        assert "(nginx-static was client-bound here: its " in markdown
    assert len(summary_rows) == len(report["cells"])
    # Article 002's table, once per grid point: plaintext and json.
    relative = tables[1:]
    assert len(relative) == 2
    for header, rows in relative:
        assert header == [
            "Framework", "Web Server", "Type", "Workers", "throughput ×", "P50 ms", "P99 ms"
        ]  # fmt: skip
        assert len(rows) == 6
        ratios = [float(r[4].split()[0]) for r in rows]
        assert ratios == sorted(ratios, reverse=True)
        assert ["Flask", "gunicorn (sync workers)", "Sync", "1", "1.00 (the baseline)"] in [
            r[:5] for r in rows
        ]


@pytest.mark.parametrize(
    "value", [2e-13, 1.9999999999999998e-13, 1.9999999999999997e-09, 0.3, 2.0, 937.0]
)
def test_a_bar_axis_floor_is_a_nice_step_at_or_below_half_the_least_value(value: float) -> None:
    """Where log10 rounds up across a decade (a tiny figure just under 2×10^k) the floor
    is still found; a siege run of the dev server crashed its page on one such value."""
    from benchlab.report.charts import nice_floor

    floor = nice_floor(value)
    assert 0 < floor <= value / 2
    assert floor * 10 > value / 2  # within a decade of half: the bars keep their length
