"""The time a WebSocket plan takes, as runner/estimates.py adds it up: the hold's steps
(each its ramp and settle in whole seconds), the echo's warm-up and duration, the
broadcast's joins and rounds, a JMeter start a load, and a capacity search's probes; checked
by hand against known costs, and against an in-process run's own clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.recipe import build_plan, load_recipe, resolve_recipe
from benchlab.runner.estimates import (
    FIRST_REPLICATE_PROBES,
    LATER_REPLICATE_PROBES,
    Costs,
    plan_seconds,
)
from benchlab.stacks import CATALOGUE
from tests.inprocess import JVM_START_S, START_S, FakeExecutor, FakeStack, run_inprocess
from tests.test_websocket_ranking import GO, HYPERCORN, UVICORN, _recipe

START, STOP, JVM, HOLD_JVM, VERIFY = 1.5, 0.5, 3.0, 5.0, 0.05
KNOWN = {
    "start": START, "stop": STOP, "overhead:jmeter": JVM, "overhead:jmeter:ws-hold": HOLD_JVM,
    "verify": VERIFY,
}  # fmt: skip


def _plan(text: str, tmp_path: Path):
    path = tmp_path / "recipe.toml"
    path.write_text(text)
    recipe, source = load_recipe(path, CATALOGUE)
    return build_plan(path, recipe, source, CATALOGUE)


def test_the_websocket_recipe_costs_its_steps_loads_and_jvm_starts(tmp_path: Path) -> None:
    # Its fixed-rate figures only: the [slo]'s search is costed in the next test.
    text = resolve_recipe("websocket").read_text()
    assert "\n[slo]\n" in text
    plan = _plan(text.split("\n[slo]\n")[0], tmp_path)
    recipe = plan.recipe
    ws = recipe.websocket
    assert (ws.hold_step, ws.hold_open_rate, ws.hold_settle_s, ws.hold_steps) == (1000, 500, 1, 4)
    hold = ws.hold_steps * (1000 / 500 + 1)  # each step: a 2-s ramp, a 1-s settle
    echo = recipe.warmup + recipe.load[0].duration
    broadcast = ws.receivers / 500 + (ws.rounds + recipe.warmup * 1000 / 25) * 0.025
    # Each load: its JMeter start (a hold's: and its stop) and a check before it; each cell:
    # two checks around it.
    checks = 3 * (VERIFY + 2 * VERIFY)
    per_launch = START + STOP + hold + HOLD_JVM + echo + JVM + broadcast + JVM + checks
    stacks = len(recipe.stacks)
    expected = stacks * recipe.trials * per_launch
    assert plan_seconds(list(plan.cells), recipe, plan.catalogue, Costs(KNOWN)) == pytest.approx(
        expected
    )
    assert expected > 8 * 60  # that run took about ten minutes here, not the 3m22 once planned


def test_an_echo_search_costs_its_probes_each_a_jmeter_run(tmp_path: Path) -> None:
    text = _recipe(trials=2, scenarios='"ws-echo"') + "\n    [slo]\n    p99_ms = 10\n"
    plan = _plan(text, tmp_path)
    load = 2.0  # the echo's duration; no warm-up
    rounds = [1 + FIRST_REPLICATE_PROBES, 1 + LATER_REPLICATE_PROBES]  # the fixed rate first
    per_launch = [START + STOP + loads * (load + JVM + VERIFY) + 2 * VERIFY for loads in rounds]
    expected = 3 * sum(per_launch)  # three stacks
    got = plan_seconds(list(plan.cells), plan.recipe, plan.catalogue, Costs(KNOWN))
    assert got == pytest.approx(expected)


def test_the_eta_of_a_websocket_run_is_its_own_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The in-process executor's clock: a start takes START_S, a load its own time and a JVM
    # start; nothing else. With those costs known the plan's time is the run's.
    monkeypatch.setenv("BENCHLAB_CACHE", str(tmp_path / "cache"))
    text = _recipe()
    jvm = JVM_START_S
    costs = Costs({
        "start": START_S, "stop": 0.0, "overhead:jmeter": jvm, "overhead:jmeter:ws-hold": jvm,
        "verify": 0.0,
    })  # fmt: skip
    plan = _plan(text, tmp_path)
    predicted = plan_seconds(list(plan.cells), plan.recipe, plan.catalogue, costs)
    executor = FakeExecutor({name: FakeStack() for name in (GO, UVICORN, HYPERCORN)})
    (tmp_path / "run").mkdir()
    run = run_inprocess(tmp_path / "run", text, executor)
    assert run.outcome.status == "complete"
    assert executor.now == pytest.approx(predicted)
