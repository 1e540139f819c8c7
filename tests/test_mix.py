"""A mixed API load: scenarios' requests interleaved by weight, every part verified by its own
rule, each part's share, errors and latency reported beside the whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.http.scenarios import SCENARIOS, MixPart, mix_name
from benchlab.stacks import CATALOGUE
from tests.conftest import benchlab, run_and_report, write_recipe
from tests.test_api_scenarios import _wrong_api

MIX = (
    'mix = [{scenario = "json", weight = 6}, {scenario = "queries", weight = 3},'
    ' {scenario = "updates", weight = 1}]'
)


def test_a_mix_is_named_by_all_it_holds_and_composed_from_its_parts() -> None:
    name = mix_name((MixPart("json", 6), MixPart("queries", 3, 20), MixPart("updates", 1, 5)))
    assert name == "mix:json*6+queries=20*3+updates=5*1"
    mix = SCENARIOS[name]
    assert mix.needs_database and mix.databases == ("postgres",)
    sent = [(e.describe(), e.weight) for e in mix.load_mix()]
    assert sent == [("GET /json", 6), ("GET /queries?n=20", 3), ("GET /updates?n=5", 1)]
    # Verification asks every part, each by its own rule.
    assert [e.answer for e in mix.expectations()] == ["exact", "worlds", "worlds"]
    assert name not in list(SCENARIOS) and "mix:nothing*1" not in SCENARIOS


@pytest.mark.alone
@pytest.mark.slow
def test_a_mixed_load_reports_each_part_and_a_wrong_part_fails_the_cell(
    tmp_path: Path, isolated_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalogue = {**CATALOGUE, "wrong-api": _wrong_api()}
    monkeypatch.setenv("TMPDIR", str(isolated_tmp))
    path = write_recipe(
        tmp_path,
        f"""
        name = "mixed"
        stacks = ["gin", "flask+gunicorn-gthread", "wrong-api"]
        trials = 1
        warmup = 0
        [params]
        queries = 5
        [[load]]
        tool = "vegeta"
        connections = 8
        duration = 2
        {MIX}
        [[load]]
        tool = "vegeta"
        duration = 2
        rate = 200
        {MIX}
        """,
    )
    report = run_and_report(path, tmp_path / "r.db", catalogue)
    cells = {(c["stack"], c["mode"]): c for c in report["cells"]}
    # The wrong server gets updates wrong (it answers without writing): the whole mix fails.
    wrong = cells[("wrong-api", "closed")]
    assert wrong["status"] == "failed" and "no row it answered was written" in wrong["reason"]
    for stack in ("gin", "flask+gunicorn-gthread"):
        for mode in ("closed", "rate"):
            cell = cells[(stack, mode)]
            assert cell["status"] == "ok", cell["reason"]
            parts = {p["part"]: p for p in cell["mix"]}
            assert list(parts) == ["json", "queries n=5", "updates n=5"]
            # vegeta goes round the weighted list in order: the shares are the weights.
            for part, share in (("json", 0.6), ("queries n=5", 0.3), ("updates n=5", 0.1)):
                assert abs(parts[part]["share"] - share) < 0.02, (stack, mode, parts)
                assert parts[part]["errors"] == 0 and parts[part]["p99_ms"] > 0
            total = sum(p["requests"] for p in parts.values())
            assert total == cell["requests"], (total, cell["requests"])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("load", "message"),
    [
        (f"[[load]]\n{MIX}", "key 'load[0].tool': a mix needs a tool that records each request"),
        (
            '[[load]]\ntool = "vegeta"\nmix = [{scenario = "jsn"}]',
            "key 'load[0].mix[0].scenario': unknown scenario 'jsn'",
        ),
    ],
)
def test_a_mix_a_tool_cannot_send_or_with_an_unknown_part_is_refused(
    tmp_path: Path, load: str, message: str
) -> None:
    path = write_recipe(tmp_path, f'name = "m"\nstacks = ["gin"]\n{load}\n')
    done = benchlab("run", str(path), "--dry-run")
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
