"""The results store: an older file is brought up to date in place and stays readable."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from benchlab.load.result import Errors, Latency, LoadResult
from benchlab.monitor import CoreSteal, TreeUsage
from benchlab.recipe import Cell
from benchlab.store import TABLES, RunInfo, Store, TrialExtras


def test_an_older_store_gains_the_new_columns_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    for table, columns in TABLES.items():
        kept = [c for c in columns if c[0] not in {"errors_other", "services", "launch_pool", "ms"}]
        old.execute(f"CREATE TABLE {table} ({', '.join(f'{n} {k}' for n, k in kept)})")
    old.execute(
        "INSERT INTO runs (id, recipe_path, recipe_name, recipe_text, question, command,"
        " started_at, status, server_cores, load_cores, machine)"
        " VALUES ('old-run', 'r.toml', 'r', '', '', 'benchlab run', '2026-01-01', 'complete',"
        " '[0]', '[1]', '{}')"
    )
    old.commit()
    old.close()

    store = Store(path)
    assert [r["id"] for r in store.runs()] == ["old-run"]
    run_id = store.create_run(
        RunInfo("r.toml", "r", "", "", "benchlab run", None, (0,), (1,), {"cpu": "x"})
    )
    cell = Cell("gin", "json", "siege", 8, 1, 1, 5, 1)
    cell_id = store.add_cell(run_id, 0, cell, "gin w=1")
    result = LoadResult(
        tool="siege",
        requests=10,
        duration_s=1.0,
        bytes=100,
        latency=Latency(None, None, None, None, None, None, None, None),
        errors=Errors(other=3),
    )
    store.add_trial(
        cell_id, 0, "now", result, TreeUsage(50.0, 10.0, 1), CoreSteal(0, 0), TrialExtras()
    )
    row = store.trials(cell_id)[0]
    assert row["errors_other"] == 3 and row["latency_p50_ms"] is None
