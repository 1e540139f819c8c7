"""What a cell's rates count a second (req/s, or a WebSocket echo's msg/s) has one door: a
run's options (`RunOptions.rate_unit_of`), which know a tune's own load before the catalogue's
scenario. A report that asked the catalogue itself would call a tune's echo "req/s". This reads
the source for every reader of the catalogue's answer."""

from __future__ import annotations

import ast

from tests.conftest import REPO

SOURCE = REPO / "src" / "benchlab"
CATALOGUE_MODULE = "benchlab.http.scenarios"
CATALOGUE_READER = "rate_unit_of"
THE_DOOR = {"analysis/run_options.py"}


def _readers() -> set[str]:
    found = set()
    for path in SOURCE.rglob("*.py"):
        where = path.relative_to(SOURCE).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            imported = isinstance(node, ast.ImportFrom) and node.module == CATALOGUE_MODULE
            if imported and any(alias.name == CATALOGUE_READER for alias in node.names):
                found.add(where)
            if isinstance(node, ast.Attribute) and node.attr == CATALOGUE_READER:
                owner = node.value
                if isinstance(owner, ast.Name) and owner.id == "scenarios":
                    found.add(where)
    return found


def test_only_the_run_options_ask_the_catalogue_what_a_rate_counts() -> None:
    assert _readers() == THE_DOOR, (
        "read a cell's rate unit from its run's options (summary.options.rate_unit_of, "
        "CellSummary.rate_unit), not from the catalogue's scenarios"
    )
