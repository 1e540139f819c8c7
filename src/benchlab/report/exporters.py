"""One exporter per report format: its name, the file extensions that imply it, and how it
renders a run. `report -o FILE` picks the format from the extension; a `--format` that
contradicts it is refused. Each renderer is imported when it renders: the command line reads
the registry's names when it starts."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchlab.core.errors import UserError

if TYPE_CHECKING:
    from rich.console import Console

    from benchlab.analysis.summary import RunSummary

# A table written to a file is laid out for a terminal of this width (as one that fits 100
# columns reads anywhere); --wide gives every column at its natural width.
FILE_WIDTH = 100


@dataclass(frozen=True)
class Exporter:
    name: str
    extensions: tuple[str, ...]  # the file extensions that imply it
    render: Callable[[RunSummary, bool], str]  # (summary, wide) -> the report's text
    written_as: tuple[str, ...] = ()  # other extensions it may be written to, when named


def file_text(draw: Callable[[Console], None]) -> str:
    """What `draw` prints on a console, as a file holds it: FILE_WIDTH columns, no colour."""
    from rich.console import Console

    buffer = io.StringIO()
    draw(Console(file=buffer, width=FILE_WIDTH, color_system=None))
    return buffer.getvalue()


def _table(summary: RunSummary, wide: bool) -> str:
    from benchlab.report.terminal import render_table

    return file_text(lambda console: render_table(summary, console, wide))


def _markdown(summary: RunSummary, wide: bool) -> str:
    from benchlab.report.markdown import render_markdown

    return render_markdown(summary)


def _html(summary: RunSummary, wide: bool) -> str:
    from benchlab.report.html import render_html  # matplotlib: only when charts are wanted

    return render_html(summary)


def _json(summary: RunSummary, wide: bool) -> str:
    from benchlab.report.jsonfile import render_json

    return render_json(summary)


def _bmf(summary: RunSummary, wide: bool) -> str:
    from benchlab.report.trackers import render_bmf

    return render_bmf(summary)


def _bigger(summary: RunSummary, wide: bool) -> str:
    from benchlab.report.trackers import render_bigger_is_better

    return render_bigger_is_better(summary)


def _smaller(summary: RunSummary, wide: bool) -> str:
    from benchlab.report.trackers import render_smaller_is_better

    return render_smaller_is_better(summary)


def _csv(summary: RunSummary, wide: bool) -> str:
    from benchlab.report.csvfile import render_csv

    return render_csv(summary)


def _one_cell(summary: RunSummary, wide: bool) -> str:
    # A histogram is one cell's: `report --histogram CELL` writes it (report/histograms.py).
    raise UserError("a histogram is one cell's: benchlab report --histogram CELL -o FILE")


EXPORTERS = {
    e.name: e
    for e in (
        Exporter("table", (".txt",), _table),
        Exporter("md", (".md", ".markdown"), _markdown),
        Exporter("html", (".html", ".htm"), _html),
        Exporter("json", (".json",), _json),
        Exporter("csv", (".csv",), _csv),
        # For trackers: Bencher's BMF, github-action-benchmark's two custom tools.
        Exporter("bmf", (), _bmf, (".json",)),
        Exporter("gab-bigger", (), _bigger, (".json",)),
        Exporter("gab-smaller", (), _smaller, (".json",)),
        # One cell's latency histogram, for HdrHistogram's tools (report --histogram CELL):
        # its percentile distribution, its interval log.
        Exporter("hgrm", (".hgrm",), _one_cell),
        Exporter("hlog", (".hlog",), _one_cell),
    )
}
FORMATS = tuple(EXPORTERS)
HISTOGRAMS = ("hgrm", "hlog")  # the formats of one cell's histogram, not of a whole run


def by_extension(path: Path) -> Exporter | None:
    suffix = path.suffix.lower()
    return next((e for e in EXPORTERS.values() if suffix in e.extensions), None)


def choose(fmt: str | None, output: Path | None, allowed: Sequence[str] = FORMATS) -> Exporter:
    """The exporter for `--format` and `-o`: the format named, else the one the file's
    extension implies, else the table. A format the command does not write, named or implied
    by the extension, and a mismatch between the two are mistakes to name."""
    if fmt is not None and fmt not in allowed:
        raise UserError(f"--format '{fmt}' is not known; use one of: {', '.join(allowed)}")
    implied = by_extension(output) if output is not None else None
    if fmt is None:
        if implied is not None and implied.name not in allowed:
            ways = ", ".join(f"{EXPORTERS[n].extensions[0]} ({n})" for n in allowed
                             if EXPORTERS[n].extensions)  # fmt: skip
            raise UserError(
                f"-o {output}: the extension says {implied.name}, which this command does not "
                f"write; give a file ending {ways}"
            )
        return implied or EXPORTERS["table"]
    if (
        output is not None
        and implied is not None
        and implied.name != fmt
        and output.suffix.lower() not in (EXPORTERS[fmt].written_as)
    ):
        wanted = (*EXPORTERS[fmt].extensions, *EXPORTERS[fmt].written_as)[0]
        raise UserError(
            f"-o {output}: the extension says {implied.name} but --format is {fmt}; drop "
            f"--format, or write to {output.with_suffix(wanted)}"
        )
    return EXPORTERS[fmt]
