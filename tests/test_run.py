"""Whole runs through the real CLI: every core stack measured and stored, and reports of it."""

from __future__ import annotations

import csv
import io
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import ALL_CORE_STACKS, benchlab, short_tmp, write_recipe

# Every test here reads the one real run of its module fixture: one at a time (tests/alone.py).
pytestmark = pytest.mark.alone

RECIPE = f"""
name = "all-core-stacks"
question = "Does every core stack serve and measure?"
stacks = {json.dumps(ALL_CORE_STACKS)}
scenarios = ["plaintext", "json"]
trials = 1
warmup = 0

[cores]
server = [0]
load = [1]

[[load]]
connections = 16
duration = 1
"""


@pytest.fixture(scope="module")
def all_stacks(tmp_path_factory: pytest.TempPathFactory):
    directory = tmp_path_factory.mktemp("all-stacks")
    tmp = short_tmp()
    recipe = write_recipe(directory, RECIPE)
    results = directory / "results.db"
    result = benchlab("run", str(recipe), "--results", str(results), env={"TMPDIR": str(tmp)})
    yield result, results, tmp
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.slow
def test_every_core_stack_is_verified_measured_and_stored(all_stacks) -> None:
    result, results, tmp = all_stacks
    assert result.returncode == 0, result.stdout + result.stderr
    db = sqlite3.connect(results)
    db.row_factory = sqlite3.Row
    run = db.execute("SELECT * FROM runs").fetchone()
    assert run["status"] == "complete", result.stdout
    machine = json.loads(run["machine"])
    assert machine["cores"] >= 2 and machine["cpu"] and machine["packages"]["fastapi"]
    cells = db.execute("SELECT * FROM cells").fetchall()
    assert {(c["stack"], c["scenario"]) for c in cells} == {
        (s, sc) for s in ALL_CORE_STACKS for sc in ("plaintext", "json")
    }
    for cell in cells:
        assert cell["status"] == "ok", (cell["stack"], cell["reason"])
        trials = db.execute("SELECT * FROM trials WHERE cell_id = ?", (cell["id"],)).fetchall()
        assert len(trials) == 1, cell["stack"]
        trial = trials[0]
        assert trial["requests"] > 50, cell["stack"]
        assert trial["errors_connect"] + trial["errors_read"] + trial["errors_non_2xx"] == 0
        assert trial["server_cpu_pct"] > 5, cell["stack"]
        assert trial["server_rss_mb"] > 1, cell["stack"]
        assert trial["load_cpu_pct"] > 0, cell["stack"]
        assert 0 <= trial["server_steal_pct"] <= 100 and 0 <= trial["load_steal_pct"] <= 100
        assert trial["latency_p50_ms"] <= trial["latency_p99_ms"]
    assert f"w={1}" in cells[0]["stack_label"]
    assert list(tmp.iterdir()) == [], "the run left a temp directory behind"


@pytest.mark.slow
def test_run_prints_the_table_and_the_run_id(all_stacks) -> None:
    result, _, _ = all_stacks
    assert "run id: " in result.stdout
    for stack in ALL_CORE_STACKS:
        assert stack in result.stdout
    # Progress lines (not on a terminal) on stderr; stdout holds the results alone.
    assert "round 1/1" in result.stderr and "round 1/1" not in result.stdout


@pytest.mark.slow
def test_json_report_is_the_stable_interface(all_stacks) -> None:
    _, results, _ = all_stacks
    report = benchlab("report", "--results", str(results), "--format", "json")
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert data["run"]["status"] == "complete"
    assert len(data["cells"]) == 2 * len(ALL_CORE_STACKS)
    for cell in data["cells"]:
        for key in ("stack", "scenario", "connections", "throughput_rps", "latency_ms", "errors",
                    "server_cpu_pct", "server_rss_mb", "status", "reason"):  # fmt: skip
            assert key in cell
        assert set(cell["throughput_rps"]) >= {"median", "low", "high", "n"}
        assert set(cell["latency_ms"]) >= {"p50", "p90", "p99", "p999", "max"}
        # One trial has no interval: no bounds, never a zero-width one.
        assert cell["throughput_rps"]["n"] == 1 and cell["throughput_rps"]["low"] is None
        assert cell["mode"] == "closed" and cell["capacity_rps"] is None
        assert cell["latency_source"] == "merged histogram"  # wrk gives its buckets
        assert cell["cpu_us_per_request"]["median"] > 0
        assert cell["status"] == "ok" and cell["reason"] is None


@pytest.mark.slow
def test_csv_and_markdown_reports(all_stacks, tmp_path: Path) -> None:
    _, results, _ = all_stacks
    out = tmp_path / "r.csv"
    assert (
        benchlab("report", "--results", str(results), "-f", "csv", "-o", str(out)).returncode == 0
    )
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == 2 * len(ALL_CORE_STACKS)
    assert all(float(r["throughput_rps_median"]) > 0 for r in rows)
    md = benchlab("report", "--results", str(results), "--format", "md").stdout
    table = [line for line in md.splitlines() if line.startswith("|")]
    header = [c.strip() for c in table[0].strip("|").split("|")]
    assert header[:6] == ["stack", "scenario", "conns", "trials", "requests", "throughput req/s"]
    assert set(table[1].replace("|", "")) == {"-"}
    assert len(table) == 2 + 2 * len(ALL_CORE_STACKS)
    assert all(len(line.strip("|").split(" | ")) == len(header) for line in table[2:])


@pytest.mark.slow
def test_report_errors_are_one_line(all_stacks, tmp_path: Path) -> None:
    _, results, _ = all_stacks
    unknown = benchlab("report", "no-such-run", "--results", str(results))
    assert unknown.returncode == 2 and "no run 'no-such-run'" in unknown.stderr
    fmt = benchlab("report", "--results", str(results), "--format", "pdf")
    assert fmt.returncode == 2 and "table, md, html, json, csv" in fmt.stderr
    (tmp_path / "a-file").write_text("")
    nowhere = tmp_path / "a-file" / "r.html"
    unwritable = benchlab("report", "--results", str(results), "-f", "html", "-o", str(nowhere))
    assert unwritable.returncode == 2 and f"-o {nowhere}: " in unwritable.stderr
    assert "is not a directory" in unwritable.stderr
    missing = benchlab("report", "--results", str(tmp_path / "none.db"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    for result in (unknown, fmt, missing, unwritable):
        assert "Traceback" not in result.stderr
