"""What a reader gets from a stored run, without running load: every format at 100 columns
with numbers whole, takeaways that claim no more than the evidence rule allows, a ceiling
share only from a ceiling that is one, the HTML page measured in headless Chromium (the
throughput column on a laptop screen, chart text on a phone, bars on a log axis), and the
command line around it (runs, latest~N, -o by extension, -h, --version, a bare ./lab)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from benchlab.analysis.summary import summarise
from benchlab.core import figures as F
from benchlab.core.errors import ExitCode
from benchlab.report.columns import ratio_text
from benchlab.report.takeaways import takeaways
from benchlab.store import Store
from tests.browser import open_page
from tests.conftest import REPO, benchlab
from tests.stored_runs import QUICK_LIKE, write_run

WIDTH = 100
PHONE_WIDTH = 390


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("stored") / "results.db"
    return path, write_run(path)


def _lines(text: str) -> list[str]:
    return text.splitlines()


@pytest.mark.slow
def test_the_terminal_table_fits_100_columns_with_every_number_whole(stored) -> None:
    results, _ = stored
    shown = benchlab("report", "--results", str(results), env={"COLUMNS": str(WIDTH)})
    assert shown.returncode == 0, shown.stderr
    lines = _lines(shown.stdout)
    assert max(len(line) for line in lines) <= WIDTH
    report = json.loads(benchlab("report", "--results", str(results), "-f", "json").stdout)
    assert len(report["cells"]) == 12
    rows = [line for line in lines if re.match(r"^[a-z][\w+.-]* w=1", line)]
    assert len(rows) == 12, shown.stdout
    for cell in report["cells"]:
        row = next(r for r in rows if r.startswith(cell["stack"] + " ") and _in_block(
            lines, r, cell["scenario"]))  # fmt: skip
        p50 = cell["latency_ms"]["p50"]
        # The median, its ±, p50 and p99 on the row itself: nothing split over two lines.
        median = cell["throughput_rps"]["median"]
        assert re.search(r"\b(\d[\d,.]*k?) ±\d+%", row), row
        assert _number_near(row, median), (row, median)
        assert f"{p50:.2f}" in row or f"{p50:.1f}" in row, (row, p50)
    # Columns: stack, throughput with interval, p50, p99, CPU, errors, verdicts.
    header = " ".join(lines[lines.index(rows[0]) - 3 : lines.index(rows[0])])
    for word in ("stack", "throughput", "p50", "p99", "CPU/req", "errors", "verdicts"):
        assert word in header, header
    # Settings above each table, the scenario and connections in them; a takeaway below.
    assert "plaintext · wrk · 64 connections · 3 trials of 2 s" in shown.stdout
    assert "→ By throughput, best first: gin 5.2× the next [4.9–5.5] > fastapi+uvicorn" in " ".join(
        lines
    )


def _in_block(lines: list[str], row: str, scenario: str) -> bool:
    """Whether `row` sits in the table of `scenario` (the table's heading line names it)."""
    index = lines.index(row)
    heading = next(line for line in reversed(lines[:index]) if " · wrk · " in line)
    return heading.startswith(scenario + " ")


def _number_near(text: str, value: float) -> bool:
    """`value` written whole in `text`, as the brief table writes it (94k, 4,150, 18.2k)."""
    for token in re.findall(r"\d[\d,.]*k?", text):
        number = float(token.rstrip("k").replace(",", "")) * (1000 if token.endswith("k") else 1)
        if abs(number - value) <= 0.006 * value:
            return True
    return False


@pytest.mark.slow
def test_every_format_renders_at_100_columns_and_no_table_row_is_split(stored, tmp_path) -> None:
    results, run_id = stored
    env = {"COLUMNS": str(WIDTH)}
    for fmt in ("table", "md", "json", "csv", "html"):
        out = tmp_path / f"r.{'txt' if fmt == 'table' else fmt}"
        made = benchlab("report", run_id, "--results", str(results), "-o", str(out), env=env)
        assert made.returncode == 0 and made.stderr == f"wrote {out} ({fmt})\n", made.stderr
        text = out.read_text()
        if fmt == "table":
            assert max(len(line) for line in _lines(text)) <= WIDTH
        if fmt == "md":
            rows = [line for line in _lines(text) if line.startswith("| ") and " w=1" in line]
            assert len(rows) == 12 and all(line.endswith(" |") for line in rows)
        if fmt == "csv":
            assert len(_lines(text)) == 13
        if fmt == "json":
            sentence = json.loads(text)["takeaways"][0]["sentence"]
            assert sentence.startswith("By throughput, best first: gin 5.2× the next ["), sentence
        if fmt == "html":
            assert "<svg" in text and "best first: gin 5.2× the next [" in text
    wide = benchlab("report", "--results", str(results), "--wide", env=env)
    assert wide.returncode == 0 and "RSS" in wide.stdout and "steal" in wide.stdout
    assert max(len(line) for line in _lines(wide.stdout)) > WIDTH  # every column, unsqueezed
    listed = benchlab("runs", "--results", str(results), env=env)
    assert listed.returncode == 0 and max(len(line) for line in _lines(listed.stdout)) <= WIDTH
    for word in (run_id, "latest", "quick", "complete", "2026-", "AMD EPYC", "01234567"):
        assert word in listed.stdout, word


@pytest.mark.slow
def test_stacks_keeps_every_name_whole_on_one_line_at_80_columns() -> None:
    from benchlab.stacks import CATALOGUE

    shown = benchlab("stacks", env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    lines = _lines(shown.stdout)
    assert max(len(line) for line in lines) <= 80
    starts = {line.split(" ")[0] for line in lines}
    assert set(CATALOGUE) <= starts


def test_takeaways_claim_only_what_the_evidence_rule_declares(tmp_path: Path) -> None:
    # Three trials a side, 5x apart: a win, with its ratio and interval.
    decided = summarise(Store(tmp_path / "a.db"), write_run(tmp_path / "a.db"))
    sentences = {t.label: t.sentence for t in takeaways(decided)}
    # One chain, each stack named once with its ratio to the next and the interval.
    assert sentences["json"] == (
        "By throughput, best first: gin 5.5× the next [5.1–5.8] > fastapi+uvicorn 1.16× the "
        "next [1.09–1.23] > sanic 1.83× the next [1.72–1.94] > tornado 1.89× the next "
        "[1.78–2.01] > flask+gunicorn (sync: no keep-alive)."
    )
    # Two trials a side: the same medians, and no winner; a note says why.
    few = summarise(Store(tmp_path / "b.db"), write_run(tmp_path / "b.db", trials=2))
    for takeaway in takeaways(few):
        assert ">" not in takeaway.sentence and " ≈ " in takeaway.sentence
        assert takeaway.notes[-1].startswith("No difference can be declared here: 2 trials")
    # Three trials a side within 2% of each other: ties, never ">".
    close = {
        s: {"json": 10_000 * (1 + 0.01 * i)} for i, s in enumerate(("gin", "sanic", "tornado"))
    }
    tied = summarise(Store(tmp_path / "c.db"), write_run(tmp_path / "c.db", close))
    (only,) = takeaways(tied)
    assert only.sentence.startswith("By throughput, best first: tornado 1.01× the next [")
    assert ">" not in only.sentence and only.sentence.count(" ≈ ") == 2, only.sentence
    # Medians 43% and 2.3× apart whose trials overlap: no adjacent pair is told apart, so
    # the chain says "≈" with each ratio and its interval (which holds 1), never ">".
    apart = {"gin": {"json": 10_000}, "sanic": {"json": 7_000}, "tornado": {"json": 3_000}}
    wide = summarise(
        Store(tmp_path / "d.db"), write_run(tmp_path / "d.db", apart, spread=(0.6, 1.0, 1.5))
    )
    (only,) = takeaways(wide)
    assert only.sentence == (
        "By throughput, best first: gin (unstable) 1.43× the next [0.57–3.57] ≈ sanic (unstable) "
        "2.3× the next [0.9–5.8] ≈ tornado (unstable)."
    ), only.sentence


def test_the_ceiling_share_comes_only_from_a_ceiling_that_is_not_client_bound(
    tmp_path: Path,
) -> None:
    bound = summarise(Store(tmp_path / "a.db"), write_run(tmp_path / "a.db"))
    assert all(c.ratio(F.CEILING) is None for c in bound.cells)
    # The recipe's "how far below the ceiling" answered at the top all the same: a ceiling
    # that is the load tool's limit is a lower bound, so each share is at most its median's.
    for takeaway in takeaways(bound):
        (note,) = takeaway.notes
        assert note.startswith("Of this machine's ceiling, at most: gin "), note
        assert "(nginx-static was client-bound here: its " in note, note
    free = summarise(Store(tmp_path / "b.db"), write_run(tmp_path / "b.db", ceiling_load_cpu=50.0))
    gin = next(c for c in free.cells if c.record.stack == "gin" and c.record.scenario == "json")
    assert gin.ratio(F.CEILING).value == pytest.approx(88_000 / 205_000)
    (note,) = next(t for t in takeaways(free) if t.label == "json").notes
    share = ratio_text(gin.ratio(F.CEILING), percent=True)  # 43% [low–high]
    assert note.startswith(f"Of this machine's ceiling (nginx-static, 205k req/s): gin {share}, ")
    assert share.startswith("43% [") and "flask+gunicorn" in note, note


TEXT_SIZES = """Array.from(document.querySelectorAll("figure.chart svg")).map(svg => {
  const box = svg.getBoundingClientRect(), scale = box.width / svg.viewBox.baseVal.width;
  return {chart: svg.closest("figure").id, width: box.width,
          sizes: Array.from(svg.querySelectorAll("text"))
                   .map(t => parseFloat(getComputedStyle(t).fontSize) * scale)};
})"""
BARS = """Array.from(document.querySelectorAll("figure[data-chart=throughput] g[id*='-bar-']"))
  .map(g => ({id: g.id, width: g.getBoundingClientRect().width}))"""
THROUGHPUT_COLUMN = """(() => {
  const table = document.getElementById("summary-table");
  const th = Array.from(table.tHead.rows[0].cells)
    .find(c => c.textContent.trim() === "throughput req/s");
  table.scrollIntoView();
  const box = th.getBoundingClientRect(), frame = table.parentElement.getBoundingClientRect();
  return {right: box.right, frame: frame.right, screen: window.innerWidth,
          scrolled: table.parentElement.scrollLeft};
})()"""


def check_page(page: Path, artifacts: Path | None = None, name: str = "report") -> None:
    """On a laptop, the table's throughput column without scrolling; on a phone, chart text
    of 10 px or more and every throughput bar at least 8 px long."""
    with open_page(page, width=1280, height=900) as browser:
        column = browser.evaluate(THROUGHPUT_COLUMN)
        if artifacts is not None:
            browser.screenshot(artifacts / f"{name}.png")
        assert browser.console_errors() == []
    assert column["scrolled"] == 0
    assert column["right"] <= min(column["frame"], column["screen"]), column
    with open_page(page, width=PHONE_WIDTH, height=844) as browser:
        charts = browser.evaluate(TEXT_SIZES)
        bars = browser.evaluate(BARS)
        width = browser.evaluate("document.documentElement.scrollWidth")
        if artifacts is not None:
            browser.screenshot(artifacts / f"{name}-phone.png")
    assert width <= PHONE_WIDTH, "the page scrolls sideways on a phone"
    assert charts and all(chart["sizes"] for chart in charts)
    for chart in charts:
        assert min(chart["sizes"]) >= 10, (chart["chart"], min(chart["sizes"]))
    assert bars and min(bar["width"] for bar in bars) >= 8, bars


@pytest.mark.slow
def test_the_page_reads_on_a_laptop_and_a_phone(stored, tmp_path: Path) -> None:
    results, _ = stored
    page = tmp_path / "report.html"
    assert benchlab("report", "--results", str(results), "-o", str(page)).returncode == 0
    html = page.read_text()
    # The answer before everything else: the question, then one takeaway per grid point.
    answer = html.index('id="answer"')
    assert html.index('id="question"') < answer < html.index('id="results"')
    first = "best first: gin 5.2× the next ["
    assert html.index(first) < html.index('id="summary-table"')
    # Each takeaway once: in the answer, not again on its point's card.
    assert html.count(first) == 1
    spread = max(max(v.values()) for v in QUICK_LIKE.values()) / min(
        min(v.values()) for v in QUICK_LIKE.values()
    )
    assert spread > 50  # 4k to 220k req/s: on a linear axis the slowest bar is a sliver
    check_page(page)
    # One colour per stack on every chart: the legend once, each bar in its stack's colour.
    assert html.count('id="legend"') == 1
    assert "how to read this" in html.lower() and "p50 ≈ connections ÷ throughput" in html


@pytest.mark.slow
def test_report_picks_its_format_from_the_file_and_refuses_a_mismatch(stored, tmp_path) -> None:
    results, _ = stored
    page = tmp_path / "x.html"
    made = benchlab("report", "--results", str(results), "-o", str(page))
    assert made.returncode == 0 and page.read_text().startswith("<!doctype html>")
    wrong = benchlab("report", "--results", str(results), "-o", str(page), "--format", "md")
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr
    assert wrong.stderr.strip().count("\n") == 0
    assert f"-o {page}: the extension says html but --format is md" in wrong.stderr
    text = tmp_path / "x.out"
    assert benchlab("report", "--results", str(results), "-o", str(text)).returncode == 0
    assert "→ By throughput, best first: gin" in text.read_text()  # an unknown extension: the table


@pytest.mark.slow
def test_runs_are_named_by_age_and_a_run_too_old_is_refused(tmp_path: Path) -> None:
    results = tmp_path / "r.db"
    first = write_run(results)
    second = write_run(results)
    for name, expected in (("latest", second), ("latest~1", first)):
        shown = benchlab("report", name, "--results", str(results), "-f", "json")
        assert json.loads(shown.stdout)["run"]["id"] == expected
    old = benchlab("compare", "latest~5", "latest", "--results", str(results))
    assert old.returncode == 2 and "Traceback" not in old.stderr
    assert "run 'latest~5'" in old.stderr and "holds 2 runs (latest … latest~1)" in old.stderr


@pytest.mark.slow
def test_runs_and_stacks_at_80_and_60_columns_keep_every_name_and_word_whole(
    tmp_path: Path,
) -> None:
    """A narrow terminal loses columns (runs: machine, commit, started, recipe; stacks: the
    framework, the scenarios), never a letter of an id, a run's name or a word."""
    results = tmp_path / "r.db"
    ids = [write_run(results) for _ in range(3)]
    for width in (80, 60):
        shown = benchlab("runs", "--results", str(results), env={"COLUMNS": str(width)})
        lines = shown.stdout.splitlines()
        assert shown.returncode == 0 and max(len(line) for line in lines) <= width, lines
        rows = [line.split() for line in lines[2:]]
        assert [row[:2] for row in rows] == [
            [run_id, name] for run_id, name in zip(reversed(ids), ("latest", "latest~1",
                                                                    "latest~2"), strict=True)
        ], lines  # fmt: skip
        stacks = benchlab("stacks", env={"COLUMNS": str(width)}).stdout
        words = set(stacks.split())
        assert max(len(line) for line in stacks.splitlines()) <= width
        for name in ("nginx-static", "fastapi+uvicorn", "available"):
            assert name in words, (width, name)
        assert not any(w in words for w in ("reci", "quic", "framewor", "plaintex")), stacks


@pytest.mark.slow
def test_every_command_has_help_and_benchlab_its_version() -> None:
    from benchlab import __version__

    version = benchlab("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"benchlab {__version__}"
    for command in ("run", "tune", "report", "runs", "compare", "stacks", "doctor",
                    "selfcheck", "build", "services", "services up"):  # fmt: skip
        shown = benchlab(*command.split(), "-h")
        assert shown.returncode == 0 and "Usage:" in shown.stdout, command
        # No type placeholders: an option says what it takes (N, FILE, table|md).
        assert not re.search(r"<(bool|str|int|path|float)[^>]*>|\{[A-Z_]+\}", shown.stdout)


@pytest.mark.slow
def test_a_bare_lab_prints_help_and_starts_nothing() -> None:
    for args in ([], ["-h"], ["--help"]):
        shown = subprocess.run(
            ["./lab", *args], cwd=REPO, capture_output=True, text=True, timeout=30, check=False
        )
        assert (
            shown.returncode == 0 and "./lab run" in shown.stdout and "./lab test" in shown.stdout
        )
        assert "[lab]" not in shown.stderr  # nothing set up, nothing installed
    version = subprocess.run(
        ["./lab", "--version"], cwd=REPO, capture_output=True, text=True, timeout=30, check=False
    )
    assert re.fullmatch(r"benchlab \d+\.\d+\.\d+\n", version.stdout)


@pytest.mark.slow
def test_compare_reads_two_stores_in_md_and_json_and_names_what_differs(tmp_path: Path) -> None:
    from tests.stored_runs import with_machine

    baseline, branch = tmp_path / "baseline.db", tmp_path / "branch.db"
    write_run(baseline)
    slower = {s: {k: v * (0.7 if s == "fastapi+uvicorn" else 1.0) for k, v in by.items()}
              for s, by in QUICK_LIKE.items()}  # fmt: skip
    big = with_machine(cpu="Intel Xeon Platinum 8488C", cores=96, packages={"fastapi": "0.110.0"})
    write_run(branch, slower, machine=big)
    args = ["compare", "latest", "latest", "--results", str(baseline), "--results-b", str(branch)]
    md = benchlab(*args, "--format", "md", "--fail-above", "10")
    assert md.returncode == 1, md.stdout + md.stderr
    rows = [line for line in md.stdout.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| stack | scenario | conns | B / A | interval | verdict |")
    fastapi = [r for r in rows if r.startswith("| fastapi+uvicorn")]
    assert len(fastapi) == 2 and all("**slower**" in r for r in fastapi)
    assert sum("no significant change" in r for r in rows) == 10
    assert "**FAIL:** slower by more than 10%" in md.stdout
    # The machines and versions differ: named in the report and on stderr.
    for text in (md.stdout, md.stderr):
        assert "cpu AMD EPYC → Intel Xeon Platinum 8488C" in text
        assert "cores 2 → 96" in text and "fastapi 0.165.0 → 0.110.0" in text
    data = json.loads(benchlab(*args, "--format", "json").stdout)
    assert data["a"]["store"] == str(baseline) and data["b"]["store"] == str(branch)
    assert {d["name"] for d in data["differences"]} == {"cpu", "cores", "fastapi"}
    verdicts = {(c["stack"], c["scenario"]): c["verdict"] for c in data["cells"]}
    assert verdicts[("fastapi+uvicorn w=1", "json")] == "slower"
    ratio = next(
        c["ratio"]
        for c in data["cells"]
        if c["cell"]["name"] == "fastapi+uvicorn w=1 · json wrk c=64"
    )
    assert ratio["value"] == pytest.approx(0.7) and ratio["high"] < 0.8
    # --strict fails on the differences alone; the same machine passes.
    same = write_run(branch)
    strict = benchlab(*args, "--strict")
    assert strict.returncode == 0, strict.stdout
    write_run(branch, machine=big)
    strict = benchlab(*args, "--strict")
    assert strict.returncode == ExitCode.NOT_COMPARABLE and "FAIL: --strict" in strict.stdout
    # Machines that differ outrank a slower cell: the comparison itself does not hold.
    both = benchlab(*args, "--strict", "--fail-above", "1")
    assert both.returncode == ExitCode.NOT_COMPARABLE, both.stdout
    assert "WARNING: the two runs were not measured alike" in strict.stdout
    assert same
    fmt = benchlab(*args, "--format", "pdf")
    assert fmt.returncode == 2 and "--format 'pdf'" in fmt.stderr


def test_the_docs_stand_alone_without_files_outside_the_repository() -> None:
    """README and docs/ are read from a clone: no path outside it, and every recipe and
    document they name exists in it."""
    documents = [REPO / "README.md", REPO / "examples" / "README.md", *REPO.glob("docs/*.md")]
    assert REPO / "docs" / "articles.md" in documents
    for document in documents:
        text = document.read_text()
        assert "../shared" not in text and "/work/" not in text, document
        for named in re.findall(
            r"`((?:recipes|docs|examples)/[\w./-]+\.(?:toml|md|yml|sh))`", text
        ):
            assert (REPO / named).exists(), (document.name, named)
    articles = (REPO / "docs" / "articles.md").read_text()
    for number in ("000", "001", "002", "003", "004"):
        assert f"## {number} " in articles and f"recipes/seed-{number}-" in articles
    readme = (REPO / "README.md").read_text()
    first_screen = readme[: readme.index("## Choosing the load")]
    for words in ("./lab run", "./lab test", "What you get", "recipes/fastapi-flask-gin.toml"):
        assert words in first_screen, words
    for section in ("## Choosing the load", "## Reading the results", "## Using it in CI",
                    "## Your own app: `benchlab tune`", "## How long a run takes"):  # fmt: skip
        assert section in readme, section
    assert len(readme.splitlines()) <= 300  # the guide; the reference is docs/
    recipe = (REPO / "recipes" / "fastapi-flask-gin.toml").read_text()
    lines = [line for line in recipe.splitlines() if line and not line.startswith("#")]
    assert len(lines) == 5 and "\n".join(lines) in first_screen  # the recipe shown is the file


@pytest.mark.slow
def test_the_takeaway_gives_the_whole_order_in_tiers(tmp_path: Path) -> None:
    # Known separations: gin 5× sanic, sanic 1.6× the pair tornado/fastapi (1.7 % apart: a
    # tie by the rule), the pair 6× flask; every cell's trials within ±3 % of its median.
    medians = {
        "nginx-static": {"json": 200_000},
        "gin": {"json": 50_000},
        "sanic": {"json": 10_000},
        "tornado": {"json": 6_100},
        "fastapi+uvicorn": {"json": 6_000},
        "flask+gunicorn": {"json": 1_000},
    }
    summary = summarise(Store(tmp_path / "r.db"), write_run(tmp_path / "r.db", medians))
    (only,) = takeaways(summary)
    # The whole order in one chain, each stack once; the ceiling stands apart (it is the
    # load tool's limit, not a contender).
    assert only.sentence == (
        "By throughput, best first: gin 5.0× the next [4.7–5.3] > sanic 1.64× the next "
        "[1.54–1.74] > tornado 1.02× the next [0.96–1.08] ≈ fastapi+uvicorn 6.0× the next "
        "[5.7–6.4] > flask+gunicorn (sync: no keep-alive)."
    ), only.sentence
    stacks = [[place.stack for place in tier.places] for tier in only.tiers]
    assert stacks == [["gin"], ["sanic"], ["tornado", "fastapi+uvicorn"], ["flask+gunicorn"]]
    # A tier ends where an adjacent pair is ahead: the pair that separates it from the next.
    first = only.tiers[0].after
    assert first is not None and first.ratio is not None and first.ratio.low > 1
    (inside,) = only.tiers[2].within
    assert inside.ratio is not None and inside.ratio.low <= 1
    report = json.loads(
        benchlab("report", "--results", str(tmp_path / "r.db"), "-f", "json").stdout
    )
    assert [len(t["stacks"]) for t in report["takeaways"][0]["tiers"]] == [1, 1, 2, 1]


@pytest.mark.slow
def test_the_readmes_example_output_is_what_the_code_prints_for_its_stored_run() -> None:
    """README's "What you get" is a real run's JSON point (its store in tests/data), and
    stays in step with the code's wording: rendered again here, it must read the same."""
    readme = (REPO / "README.md").read_text()
    block = readme.split("## What you get", 1)[1].split("```\n", 2)[1]
    store = REPO / "tests" / "data" / "readme-quick.db"
    printed = benchlab(
        "report", "--results", str(store), env={"COLUMNS": "100", "NO_COLOR": "1"}
    ).stdout.splitlines()
    start = next(i for i, line in enumerate(printed) if line.startswith("json ·"))
    end = next(i for i in range(start, len(printed)) if not printed[i].strip())
    assert [line.rstrip() for line in printed[start:end]] == block.rstrip("\n").splitlines()


def test_a_recipe_that_came_with_benchlab_is_named_so_not_by_a_build_machines_path() -> None:
    from benchlab.recipe.files import shown_source
    from benchlab.report.wording import run_lines

    store = Store(REPO / "tests" / "data" / "readme-quick.db", create=False)
    summary = summarise(store, None)
    assert summary.run.recipe_path.startswith("/tmp/fresh10/")  # where it ran, stored as is
    assert run_lines(summary)[0] == (
        "run 20261126-092001-e794 · recipe quick (benchlab's own) · status complete"
    )
    assert shown_source("recipes/my.toml") == "recipes/my.toml"  # the user's own: as given
    assert shown_source("/srv/benchlab/recipes/mine.toml") == "/srv/benchlab/recipes/mine.toml"


def test_the_heat_maps_rows_are_the_rankings_order(tmp_path: Path) -> None:
    from benchlab.report.charts import heatmap_chart

    # The rows in the ranking's order (by their mean place over the points), not the
    # recipe's; the ceiling (not ranked) last.
    medians = {
        "nginx-static": {"plaintext": 200_000, "json": 190_000},
        "tornado": {"plaintext": 8_000, "json": 7_000},
        "gin": {"plaintext": 90_000, "json": 88_000},
        "fastapi+uvicorn": {"plaintext": 17_000, "json": 16_000},
        "sanic": {"plaintext": 16_000, "json": 13_000},
    }
    summary = summarise(Store(tmp_path / "r.db"), write_run(tmp_path / "r.db", medians))
    chart = heatmap_chart(summary)
    assert chart is not None
    labels = ["gin w=1", "fastapi+uvicorn w=1", "sanic w=1", "tornado w=1"]
    where = [chart.svg.index(f">{label}<") for label in labels]
    assert where == sorted(where), where
    assert chart.svg.index(">nginx-static w=1") > where[-1]
