"""The option aliases more than one command takes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from benchlab.core import environment
from benchlab.store import DEFAULT_RESULTS

ResultsOption = Annotated[
    Path,
    typer.Option(
        "--results", metavar="FILE", envvar=environment.RESULTS, show_envvar=False,
        help="The SQLite results store (default: $BENCHLAB_RESULTS, else results/benchlab.db).",
    ),
]  # fmt: skip
QuietOption = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", metavar="",
        help="No plan and no progress on stderr: only the results (and errors).",
    ),
]  # fmt: skip
AllowConcurrentOption = Annotated[
    bool,
    typer.Option(
        "--allow-concurrent",
        metavar="",
        help="Run even if another benchlab runs on this machine (results say so).",
    ),
]
ThresholdOption = Annotated[
    list[str] | None,
    typer.Option(
        "--threshold", metavar="'FIGURE<BOUND'",
        help="A bound every cell's figure must keep, judged with its interval (repeatable): "
        "'p99<200ms', 'errors<0.1%', 'rps>=500'; exit 7 when a cell's whole interval breaks "
        "it (one that straddles it is undecided, and said).",
    ),
]  # fmt: skip
PROGRESS_STYLES = ("auto", "lines", "json")
ProgressOption = Annotated[
    str,
    typer.Option(
        "--progress", metavar="|".join(PROGRESS_STYLES),
        help="How the run shows itself going: auto (a bar on a terminal, else a line per "
        "trial, on stderr), lines, or json (one JSON line per event on stdout, for a "
        "program; the table then goes to stderr: docs/results.md#the-stream).",
        autocompletion=lambda incomplete: [s for s in PROGRESS_STYLES if s.startswith(incomplete)],
    ),
]  # fmt: skip
ProgressFileOption = Annotated[
    Path | None,
    typer.Option(
        "--progress-file", metavar="FILE",
        help="Also write the run's events to FILE as they happen, one JSON line each (the "
        "stream --progress json writes), beside the progress shown.",
    ),
]  # fmt: skip
RunArgument = "a run id (or its first characters), latest, or latest~N (N runs before it)"


def store_from_environment() -> Path:
    """The store a command reads when no --results is given: $BENCHLAB_RESULTS, else the
    default (what ResultsOption's envvar does for a command with one store)."""
    return Path(os.environ.get(environment.RESULTS) or DEFAULT_RESULTS)
