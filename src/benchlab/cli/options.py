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
RunArgument = "a run id (or its first characters), latest, or latest~N (N runs before it)"


def store_from_environment() -> Path:
    """The store a command reads when no --results is given: $BENCHLAB_RESULTS, else the
    default (what ResultsOption's envvar does for a command with one store)."""
    return Path(os.environ.get(environment.RESULTS) or DEFAULT_RESULTS)
