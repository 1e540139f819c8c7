"""The code's shape, held: no class over 300 lines, no function over 80 (signature and
docstring included), so that each stays readable in one sitting."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parent.parent / "src" / "benchlab"
MOST_CLASS_LINES = 300
MOST_FUNCTION_LINES = 80


def _definitions() -> list[tuple[str, ast.AST]]:
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((f"{path.relative_to(SOURCE)}:{node.lineno} {node.name}", node))
    return found


def _lines(node: ast.AST) -> int:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return (node.end_lineno or node.lineno) - first + 1


def test_no_class_is_over_300_lines_and_no_function_over_80() -> None:
    too_long = [
        f"{where}: {_lines(node)} lines"
        for where, node in _definitions()
        if _lines(node)
        > (MOST_CLASS_LINES if isinstance(node, ast.ClassDef) else MOST_FUNCTION_LINES)
    ]
    assert not too_long, "\n".join(too_long)


@pytest.mark.slow
def test_each_layer_imports_only_from_below_it() -> None:
    # The contract is in pyproject.toml ([tool.importlinter]); import-linter reads every
    # import, those inside functions included, so an arrow upward cannot hide in one.
    checked = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache", "--no-logo"],
        cwd=SOURCE.parent.parent, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]


def test_what_must_never_be_imported_is_forbidden_not_only_ordered() -> None:
    # Besides the layers' order, pyproject.toml forbids a report the runner and the live
    # catalogue (what it needs of the catalogue comes as data), and the store what makes its
    # records (recipes, load tools, monitors): lint-imports above holds them.
    declared = tomllib.loads((SOURCE.parent.parent / "pyproject.toml").read_text())
    contracts = {c["id"]: c for c in declared["tool"]["importlinter"]["contracts"]}
    report, store = contracts["report-reads-the-run"], contracts["store-keeps-records"]
    assert report["type"] == store["type"] == "forbidden"
    assert set(report["source_modules"]) >= {"benchlab.report", "benchlab.report.**"}
    assert set(report["forbidden_modules"]) >= {"benchlab.runner", "benchlab.stacks"}
    assert store["source_modules"] == ["benchlab.store"]
    assert set(store["forbidden_modules"]) == {
        "benchlab.recipe",
        "benchlab.load",
        "benchlab.measure",
    }
