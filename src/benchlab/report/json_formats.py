"""What each JSON output is, declared once: its `format` name and `format_version`, written
first in every JSON benchlab prints or saves, so a program reading one knows what it holds
and which version of it. A version changes when a field is removed, renamed or changes
meaning; fields may be added within a version (readers ignore what they do not know)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JsonFormat:
    name: str
    version: int
    holds: str  # what one document of it is, for the docs

    def stamp(self, data: dict[str, Any]) -> dict[str, Any]:
        """`data` with this format's name and version first."""
        return {"format": self.name, "format_version": self.version, **data}

    def dumps(self, data: dict[str, Any]) -> str:
        return json.dumps(self.stamp(data), indent=2) + "\n"


# 2: the rankings hold the ranked stacks only (not the ceiling), each with the evidence
# against the one before and the pairs left undecided; tiers are cut where an adjacent pair
# is ahead; a flip's ratio is how many times better the winner was.
RUN = JsonFormat("benchlab-run", 2, "one run: its cells and figures, rankings, flips, takeaways")
TUNE = JsonFormat("benchlab-tune", 2, "one tune: the recommendation, its proof, every candidate")
# 2 (compare, history): a cell is matched across runs by the stack, the scenario and its
# load, not by the run's own key (which held the duration and the trials' tool threads): the
# key is gone, `cell` names it ({name, stack, point, target, twin}).
COMPARE = JsonFormat("benchlab-compare", 2, "two runs cell by cell: ratios and verdicts")
HISTORY = JsonFormat("benchlab-history", 2, "a recipe's runs over time: series, change points")
RUNS = JsonFormat("benchlab-runs", 1, "the runs of a results store, newest first")
STACKS = JsonFormat("benchlab-stacks", 1, "the catalogue: every stack and whether it runs here")
CONFORM = JsonFormat(
    "benchlab-conform", 1, "each stack's conformance: every request shape, whole and split"
)
DRAIN = JsonFormat(
    "benchlab-drain", 1, "each stack stopped under load: what it answered, dropped and refused"
)
SLOW_CLIENTS = JsonFormat(
    "benchlab-slow-clients", 1, "what slow clients cost each stack's other requests"
)
RECIPES = JsonFormat("benchlab-recipes", 1, "benchlab's own recipes: each name and its question")
DOCTOR = JsonFormat(
    "benchlab-doctor", 1, "this machine's checks (and its hosts'): what is ready, what is missing"
)
SELFCHECK = JsonFormat(
    "benchlab-selfcheck", 1, "the harness's own cost, or where this machine's noise comes from"
)
PLAN = JsonFormat(
    "benchlab-plan", 1, "a run's plan before it starts (run --dry-run): its cells and its time"
)
# A stream, not one document: every line of it is one event, stamped with this format.
STREAM = JsonFormat(
    "benchlab-stream", 1, "a run as it goes (--progress json): one JSON line per event"
)
FORMATS = (
    RUN, TUNE, COMPARE, HISTORY, RUNS, STACKS, CONFORM, DRAIN, SLOW_CLIENTS, RECIPES, DOCTOR,
    SELFCHECK, PLAN, STREAM,
)  # fmt: skip
