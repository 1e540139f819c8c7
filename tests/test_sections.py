"""The report's sections are declared once (benchlab.report.sections): every title the
Markdown, terminal and HTML reports of a stored run show comes from that declaration, in
its order, and no renderer adds one of its own."""

from __future__ import annotations

import io
import re
from html import unescape

import pytest
from rich.console import Console

from benchlab.analysis.summary import RunSummary, summarise
from benchlab.analysis.thresholds import judged
from benchlab.core.thresholds import parse_thresholds
from benchlab.report.html import render_html
from benchlab.report.markdown import render_markdown
from benchlab.report.sections import NESTED, UNTITLED, Format, sections, titled
from benchlab.report.takeaways import takeaways
from benchlab.report.terminal import render_table
from benchlab.stacks import CATALOGUE
from benchlab.store import Store
from tests.stored_runs import write_run

BOLD = "\x1b[1m"


# A run as stored, and the same with thresholds judged (a section of their own everywhere).
GATES = [(), ("p99<1ms", "rps>=1")]


@pytest.fixture(scope="module", params=GATES, ids=["plain", "with-thresholds"])
def summary(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> RunSummary:
    path = tmp_path_factory.mktemp("sections") / "results.db"
    # as the CLI summarises a run: with the catalogue's notes, given as data
    stored = summarise(Store(path), write_run(path), catalogue=CATALOGUE)
    return judged(stored, parse_thresholds(request.param))


def test_thresholds_have_a_titled_section_in_every_format(summary) -> None:
    for fmt in Format:
        titles = _declared(summary, fmt)
        assert ("Thresholds" in titles) == bool(summary.thresholds), (fmt, titles)


def _declared(summary: RunSummary, fmt: Format) -> list[str]:
    return [title for _section, title in titled(summary, fmt)]


def _markdown_titles(text: str) -> list[str]:
    """'## Title' headings, and the titles of paragraphs: a line ending in ':' between blank
    lines (what comes before ' (' is the title; the rest, its gloss)."""
    lines = ["", *text.splitlines(), ""]
    found = []
    for index, line in enumerate(lines):
        if line.startswith("## "):
            found.append(line.removeprefix("## "))
        elif line.endswith(":") and not lines[index - 1] and not lines[index + 1]:
            found.append(re.sub(r"( \(.*\))?:$", "", line))
    return found


def _terminal_titles(summary: RunSummary, wide: bool) -> list[str]:
    """The bold lines that title a paragraph ('Title (gloss):'; a table's header and a grid
    point's label over its table are bold too)."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, force_terminal=True, color_system="standard")
    render_table(summary, console, wide)
    bold = [
        re.sub(r"\x1b\[[0-9;]*m", "", line)
        for line in buffer.getvalue().splitlines()
        if line.startswith(BOLD)
    ]
    return [re.sub(r"( \(.*\))?:$", "", t) for t in bold if t.endswith(":")]


def _html_titles(page: str) -> list[str]:
    """Every section heading of the page (h2, and the h3 of a section nested in another)."""
    found = re.findall(r"<(h[23])[^>]*>(.*?)</\1>", page, flags=re.S)
    return [unescape(re.sub(r"<[^>]+>", "", text)).strip() for _tag, text in found]


def test_markdown_titles_come_from_the_declaration_in_its_order(summary) -> None:
    expected = _declared(summary, Format.MARKDOWN)
    assert [t for t in expected if t != "Thresholds"][:3] == [
        "In short",
        "How to read this",
        "Every cell",
    ]
    # each point's order is its takeaway: said once, in "In short"
    assert not any(t.startswith("Rankings") for t in expected)
    assert _markdown_titles(render_markdown(summary)) == expected


@pytest.mark.parametrize("fmt", [Format.TERMINAL, Format.WIDE])
def test_terminal_titles_come_from_the_declaration_in_its_order(summary, fmt) -> None:
    expected = _declared(summary, fmt)
    assert _terminal_titles(summary, fmt is Format.WIDE) == expected
    # Each takeaway once: under its own table, or (--wide: one table of every cell) after it.
    assert expected.count("In short") == (fmt is Format.WIDE)


def test_html_titles_come_from_the_declaration_in_its_order(summary) -> None:
    """The page shows a section only where it has something to show (charts), so its titles
    are the declared ones that apply, in the declared order: a title of the page's own has
    no place among them."""
    declared = [s.page_heading() for s in sections(summary, Format.HTML)]
    declared = [t for t, s in zip(declared, sections(summary, Format.HTML), strict=True)
                if s.id not in UNTITLED[Format.HTML]]  # fmt: skip
    tables = [t.title for s in sections(summary, Format.HTML) for t in s.tables]
    points = [t.label for t in takeaways(summary)]  # each grid point's card
    shown = [t for t in _html_titles(render_html(summary)) if t not in tables + points]
    assert len(shown) >= 8
    remaining = iter(declared)
    for title in shown:
        assert title in remaining, f"{title!r}: not declared, or out of the declared order"


def test_every_format_orders_only_declared_sections() -> None:
    from benchlab.report.sections import BUILDERS, ORDER

    for fmt, order in ORDER.items():
        assert set(order) <= set(BUILDERS), fmt
        assert len(set(order)) == len(order), fmt
        assert UNTITLED[fmt] <= set(order), fmt
    assert set(NESTED) <= set(ORDER[Format.HTML])


def test_a_title_of_a_renderers_own_is_caught(summary) -> None:
    """The check above is not vacuous: a heading no section declares breaks the order."""
    page = render_html(summary).replace("</main>", "<h2>Extra</h2></main>")
    declared = [s.page_heading() for s in sections(summary, Format.HTML)]
    assert "Extra" in _html_titles(page) and "Extra" not in declared
    markdown = render_markdown(summary) + "\n\nExtra:\n\n- x\n"
    assert _markdown_titles(markdown) != _declared(summary, Format.MARKDOWN)


def test_the_guide_says_what_each_note_means_and_the_page_reproduces_with_commands_that_run(
    summary,
) -> None:
    """ "How to read this" ends with no bare "nginx-static (ceiling)." (every note a stack
    carries has its meaning), and "Reproduce this run" gives commands a fresh clone runs:
    `benchlab` is on no PATH after `./lab setup`, so it is ./lab's own command."""
    import typer.main

    from benchlab import cli
    from benchlab.report.takeaways import reading_guide
    from benchlab.stacks import CATALOGUE

    assert all(stack.note_meaning for stack in CATALOGUE.values() if stack.note)
    guide = reading_guide(summary)
    assert not [line for line in guide if re.fullmatch(r"\S+ \([^)]*\)\.", line)], guide
    assert any(line.startswith("nginx-static (ceiling): nginx answering") for line in guide)
    page = render_html(summary)
    block = re.search(r'<details id="reproduce".*?<pre>(.*?)</pre>', page, flags=re.S)
    assert block is not None
    steps = unescape(block[1]).splitlines()
    assert steps[0] == f"git checkout {summary.run.git_commit}", steps
    commands = typer.main.get_command(cli.app).commands
    for step in steps[1:]:
        assert step.split()[0] == "./lab" and step.split()[1] in commands, steps
