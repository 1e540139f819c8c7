"""A slower stack or a slower machine: history's attribution of each change point by the
sentinel measured in the same rounds, the A/A noise floor, the prediction interval of the
newest run, and the environment fingerprint's differences — on stored runs whose figures the
test sets (the rule is logic; the real slowdowns are in test_history.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.analysis.environment import differences
from benchlab.analysis.history import CellSeries
from benchlab.analysis.prediction import predict
from benchlab.analysis.run_options import RunOptions
from benchlab.cli.reading import history_of as build_history
from benchlab.core.errors import UserError
from benchlab.hosts.machine import describe
from benchlab.recipe import build_plan, load_recipe
from benchlab.recipe.schema import DEFAULT_SENTINEL
from benchlab.report.history import render_markdown, render_text
from benchlab.report.history_html import render_history_html
from benchlab.stacks import CATALOGUE
from tests.conftest import benchlab, write_recipe
from tests.stored_runs import MACHINE, with_machine, write_run

GIN, FLASK = 88_000.0, 4_020.0
WITH_SENTINEL = RunOptions(sentinel="gin")


def _runs(
    path: Path,
    gin: list[float],
    flask: list[float],
    options: RunOptions = WITH_SENTINEL,
    aa_spread: tuple[float, ...] | None = None,
    machines: list[dict] | None = None,
) -> None:
    for i, (g, f) in enumerate(zip(gin, flask, strict=True)):
        write_run(
            path, {"gin": {"json": g}, "flask+gunicorn": {"json": f}}, options=options,
            aa_spread=aa_spread, machine=(machines or [MACHINE] * len(gin))[i],
        )  # fmt: skip


def _flask(path: Path) -> CellSeries:
    history = build_history([path], "quick")
    return next(s for s in history.series if s.key.stack == "flask+gunicorn")


@pytest.mark.slow
def test_the_machine_slowing_from_the_fifth_run_is_the_machines_change_and_no_failure(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.db"
    _runs(path, [GIN] * 4 + [GIN * 0.6] * 4, [FLASK] * 4 + [FLASK * 0.6] * 4)
    flask = _flask(path)
    (change,) = flask.changes
    assert change.change.index == 4 and change.change.direction == "slower"
    assert change.attribution == "machine", render_text(build_history([path], "quick"))
    assert change.evidence.sentinel is not None and change.evidence.sentinel.decided
    assert change.evidence.ratio is not None and not change.evidence.ratio.decided
    done = benchlab("history", "quick", "--results", str(path), "--fail-on-change", "slower")
    assert done.returncode == 0, done.stderr
    assert "the machine's" in done.stdout and "÷ sentinel:" in done.stdout


@pytest.mark.slow
def test_only_the_stack_slowing_is_the_stacks_change_and_fails(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    _runs(path, [GIN] * 8, [FLASK] * 4 + [FLASK * 0.6] * 4)
    (change,) = _flask(path).changes
    assert change.change.index == 4 and change.attribution == "stack"
    done = benchlab("history", "quick", "--results", str(path), "--fail-on-change", "slower")
    assert done.returncode == 1 and "flask+gunicorn" in done.stderr


def test_a_stack_slower_on_a_faster_machine_is_found_by_its_ratio_and_left_undecided(
    tmp_path: Path,
) -> None:
    """The figure does not move (10 % slower code on a 10 % faster machine); the ratio and
    the sentinel do, as they would if only the sentinel had changed: found, not attributed."""
    path = tmp_path / "h.db"
    _runs(path, [GIN] * 4 + [GIN * 1.25] * 4, [FLASK] * 8)
    history = build_history([path], "quick")
    flask = next(s for s in history.series if s.key.stack == "flask+gunicorn")
    (change,) = flask.changes
    assert not change.evidence.own.decided and change.evidence.ratio.decided
    assert change.attribution == "undecided" and change.change.direction == "slower"


def test_an_aa_noise_floor_over_a_3_percent_change_calls_no_change(tmp_path: Path) -> None:
    """The same 3 % slowdown at a 1 % practical threshold: a change without A/A; with an A/A
    pair whose launches came out 5 % apart, no change."""
    options = RunOptions(sentinel="gin", min_effect_pct=1.0)
    flask = [FLASK] * 4 + [FLASK * 0.97] * 4
    plain, paired = tmp_path / "plain.db", tmp_path / "aa.db"
    _runs(plain, [GIN] * 8, flask, options)
    _runs(paired, [GIN] * 8, flask, RunOptions(sentinel="gin", min_effect_pct=1.0, aa=True),
          aa_spread=(1.04, 1.05, 1.06))  # fmt: skip
    (change,) = _flask(plain).changes
    assert change.attribution == "stack" and change.threshold_pct == 1.0
    found = _flask(paired)
    assert found.changes == [], render_text(build_history([paired], "quick"))
    assert all(p.aa_noise_pct == pytest.approx(5.0) for p in found.points)
    assert "A/A noise floor" in "\n".join(render_text(build_history([paired], "quick")))


def test_a_change_point_names_every_fingerprint_difference_at_it(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    before = with_machine(memory_mb=24_000, cpu_flags=["avx2", "sse4_2"])
    after = with_machine(memory_mb=16_000, cpu_flags=["sse4_2"], packages={"flask": "3.2.0"})
    _runs(path, [GIN] * 8, [FLASK] * 4 + [FLASK * 0.6] * 4, machines=[before] * 4 + [after] * 4)
    (change,) = _flask(path).changes
    assert change.versions_changed == ["flask 3.1.3 → 3.2.0"]
    for text in ("memory_mb 24000 → 16000", "cpu flags -avx2 → (none)", "flask 3.1.3 → 3.2.0"):
        assert text in change.environment_changed, change.environment_changed
    markdown = render_markdown(build_history([path], "quick"))
    assert "÷ sentinel" in markdown and "memory_mb 24000 → 16000" in markdown
    # A governor, like the CPU, cores and kernel, makes another machine: a new segment.
    assert differences(before, with_machine(governor="powersave"))[0].name == "governor"
    # The run's steal is named when it moved a point or more: a condition, not the machine.
    (steal,) = differences({**before, "steal_pct": 0.2}, {**before, "steal_pct": 3.5})
    assert (steal.kind, steal.text()) == ("conditions", "steal % 0.2 → 3.5")
    assert differences({**before, "steal_pct": 0.2}, {**before, "steal_pct": 0.9}) == []


@pytest.mark.slow
def test_the_fingerprint_records_what_a_run_depends_on() -> None:
    fingerprint = describe()
    for key in ("cpu", "cpu_flags", "cores", "allowed_cores", "memory_mb", "kernel",
                "governor", "python", "python_build", "packages", "tools", "debian"):  # fmt: skip
        assert key in fingerprint, key
    assert fingerprint["memory_mb"] > 0 and fingerprint["cpu_flags"]
    assert fingerprint["python"] in fingerprint["python_build"]


def test_the_newest_run_is_judged_by_a_prediction_interval_not_the_means_interval() -> None:
    """Runs 100, 104, 96, 102, 98: the 95 % interval of their mean is 96-104, where the next
    run should fall is 91-110 — a sixth run at 94 is within the segment, one at 88 is not."""
    prediction = predict([100, 104, 96, 102, 98])
    assert prediction is not None and prediction.holds(94) and not prediction.holds(88)
    assert 90 < prediction.low < 92 and 109 < prediction.high < 111
    assert predict([100]) is None


SENTINEL_RECIPE = """
name = "drift"
stacks = ["flask+gunicorn"]
scenarios = ["json"]
sentinel = true
aa = true
[[load]]
connections = 8
duration = 1
"""


def test_a_sentinel_is_measured_like_a_stack_and_its_aa_copy_in_a_launch_of_its_own(
    tmp_path: Path,
) -> None:
    path = write_recipe(tmp_path, SENTINEL_RECIPE)
    recipe, text = load_recipe(path, CATALOGUE)
    assert recipe.stacks == ["flask+gunicorn", DEFAULT_SENTINEL]
    plan = build_plan(path, recipe, text, CATALOGUE, cpu_count=2)
    sentinel = [c for c in plan.cells if c.stack == DEFAULT_SENTINEL]
    assert [c.copy for c in sentinel] == [1, 2]
    assert len({c.launch_key for c in sentinel}) == 2 and len({c.key for c in sentinel}) == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ('sentinel = "gni"', r"key 'sentinel': unknown stack 'gni' \(did you mean 'gin'"),
        ("sentinel = false", r"key 'aa': an A/A pair is the sentinel measured twice"),
        ('sentinel = ""', r"key 'sentinel': empty; name a stack, or set sentinel = true"),
        ('sentinel = "nginx-static"\nscenarios = ["queries"]\nstacks = ["gin"]',
         r"key 'sentinel': 'nginx-static' serves none of the recipe's scenarios \(queries\)"),
    ],
)  # fmt: skip
def test_a_wrong_sentinel_is_one_line_naming_the_key(
    tmp_path: Path, change: str, message: str
) -> None:
    body = SENTINEL_RECIPE.replace("sentinel = true", change)
    if "stacks = " in change:
        body = body.replace('stacks = ["flask+gunicorn"]\n', "").replace(
            'scenarios = ["json"]\n', ""
        )
    with pytest.raises(UserError, match=message):
        load_recipe(write_recipe(tmp_path, body), CATALOGUE)


@pytest.mark.slow
def test_compare_fails_on_the_stacks_slowdown_not_on_the_machines(tmp_path: Path) -> None:
    machine, stack = tmp_path / "machine.db", tmp_path / "stack.db"
    _runs(machine, [GIN, GIN * 0.6], [FLASK, FLASK * 0.6])
    _runs(stack, [GIN, GIN], [FLASK, FLASK * 0.6])
    for path, code, whose in ((machine, 0, "machine"), (stack, 1, "stack")):
        args = ["latest~1", "latest", "--results", str(path), "--fail-above", "10"]
        done = benchlab("compare", *args, "-f", "md")
        assert done.returncode == code, done.stdout + done.stderr
        row = next(line for line in done.stdout.splitlines() if line.startswith("| flask"))
        assert "**slower**" in row and row.rstrip(" |").endswith(whose), row


def test_the_history_page_shows_the_ratio_to_the_sentinel_and_whose_change(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.db"
    before, after = with_machine(memory_mb=24_000), with_machine(memory_mb=16_000)
    _runs(
        path, [GIN] * 4 + [GIN * 0.6] * 4, [FLASK] * 4 + [FLASK * 0.6] * 4,
        machines=[before] * 4 + [after] * 4,
    )  # fmt: skip
    page = render_history_html(build_history([path], "quick"))
    flask = next(part for part in page.split("<figure>") if "<figcaption>flask+gunicorn" in part)
    assert "÷ sentinel" in flask and "▼ machine" in flask
    assert "the machine&#x27;s" in page and "memory_mb 24000 → 16000" in page


@pytest.mark.slow
def test_a_history_that_began_without_a_sentinel_judges_by_the_runs_that_measured_one(
    tmp_path: Path,
) -> None:
    """Runs 1-4 without a sentinel, 5-8 with one, the stack slower from run 7: its change is
    judged against runs 5-6 for whose it was (the stack's), and --fail-on-change fails."""
    path = tmp_path / "h.db"
    _runs(path, [GIN] * 4, [FLASK] * 4, RunOptions())
    _runs(path, [GIN] * 4, [FLASK] * 2 + [FLASK * 0.6] * 2)
    (change,) = _flask(path).changes
    assert change.change.index == 6 and change.attribution == "stack"
    done = benchlab("history", "quick", "--results", str(path), "--fail-on-change", "slower")
    assert done.returncode == 1, done.stdout
