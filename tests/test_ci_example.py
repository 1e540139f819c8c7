"""The CI example, end to end: its script measures a baseline, then a branch, compares them
across the two stores and fails on a slowdown injected into the branch, passing otherwise.

The stack measured is tests/apps/misbehaving.py in its slow mode (each answer costs
$BENCHLAB_SLOW_MS ms of busy work), so the slowdown is known: 1 ms a request on both sides
when nothing changed, 4 ms on the branch when it regressed (about a quarter of the
throughput)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SLOWABLE_RECIPE, write_recipe

SCRIPT = REPO / "examples" / "ci" / "benchmark.sh"
WORKFLOW = REPO / "examples" / "ci" / "benchmark.yml"
# As the example's recipe, a sentinel (one that the branch cannot slow); its A/A pair, which
# the example measures too, is tested in test_drift.py (here it would cost a launch a round).
RECIPE = SLOWABLE_RECIPE.format(name="ci-test").replace(
    "trials = 3\n", 'trials = 3\nsentinel = "steady"\n'
)


def _script(step: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), step],
        env={**os.environ, "COLUMNS": "100", **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.alone
@pytest.mark.slow
def test_the_ci_script_fails_on_an_injected_slowdown_and_passes_otherwise(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    out = tmp_path / "ci"
    env = {
        "BENCHLAB": f"{sys.executable} {REPO / 'tests' / 'apps' / 'ci_benchlab.py'}",
        "RECIPE": str(write_recipe(tmp_path, RECIPE)),
        "OUT": str(out),
        "FAIL_ABOVE": "10",
        "TMPDIR": str(isolated_tmp),
        "BENCHLAB_SLOW_MS": "1",
    }
    early = _script("check", env)
    assert early.returncode == 2 and "no baseline store" in early.stderr
    for _ in range(2):  # two runs on main: the baseline store is its history
        baseline = _script("baseline", env)
        assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    assert (out / "baseline.db").exists() and (out / "baseline.html").exists()
    assert "<svg" in (out / "history.html").read_text()
    history = (out / "history.md").read_text()
    assert "## History of ci-test (2 runs)" in history and "÷ sentinel" in history
    assert "÷ sentinel" in (out / "history.html").read_text()

    same = _script("check", env)
    assert same.returncode == 0, same.stdout + same.stderr
    report = (out / "compare.md").read_text()
    assert report == same.stdout
    assert "No cell slower by more than 10% beyond its interval." in report
    assert f"in {out / 'baseline.db'}" in report and f"in {out / 'branch.db'}" in report
    assert "not measured alike" not in report  # one machine, one environment
    # Where the branch's run falls against main's segment is judged by the evidence rule at
    # the recipe's 5 % threshold: an unchanged branch lands within it, unless its minute on
    # this VM moved all three of its trials past all of main's (a launch-to-launch 6-14 %
    # here), so the test asserts only that it is judged; the slowed check must be slower.
    assert "## History of ci-test (3 runs)" in report and "newest run: " in report

    slowed = _script("check", {**env, "BENCHLAB_SLOW_MS": "4"})
    assert slowed.returncode == 1, slowed.stdout + slowed.stderr
    report = (out / "compare.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| slowable"))
    assert "**slower**" in row
    ratio = float(row.split("|")[4])
    # 4 ms of work instead of 1: (1 + o) / (4 + o) of the throughput, o being what the server
    # adds to each request. Under 0.5 while o < 2 ms; 0.8 allows o up to 11 ms, far beyond
    # this server's on any machine, and still tells a slowdown from the noise (±15 %).
    assert ratio < 0.8, row
    assert "**FAIL:** slower by more than 10% (or failed, or missing): slowable" in report
    # Out of main's current segment, and the stack's own doing: the sentinel did not move.
    assert "newest run: slower" in report and "the stack's" in report, report
    assert list(isolated_tmp.iterdir()) == []


def test_the_workflow_runs_the_script_for_the_baseline_and_the_check() -> None:
    workflow = WORKFLOW.read_text()
    steps = re.findall(r"run: (examples/ci/benchmark\.sh \w+)", workflow)
    assert steps == ["examples/ci/benchmark.sh baseline", "examples/ci/benchmark.sh check"]
    assert "gh run download" in workflow and "--name benchlab-baseline" in workflow
    assert "name: benchlab-baseline" in workflow  # the artifact the check downloads
    assert "--body-file ci-results/compare.md" in workflow
    assert os.access(SCRIPT, os.X_OK)
