"""The results store: older files stay readable, newer ones are refused, reading writes
nothing, and a trial's histogram comes back as it went in."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from benchlab.errors import UserError
from benchlab.load import histogram
from benchlab.load.result import Errors, Latency, LoadResult
from benchlab.monitor import CoreSteal, TreeUsage
from benchlab.recipe import Cell
from benchlab.store import (
    SCHEMA_VERSION,
    TABLES,
    RunInfo,
    Store,
    TrialExtras,
    concurrency_limit,
    trial_record,
)

# The columns of schema 1 (before fixed-rate load and the capacities table) that later
# schemas added to: an old store lacks them.
ADDED = {
    "errors_other", "services", "options", "mode", "target_rate", "rate_share",
    "closed_capacity_rps", "timeout_s", "probe", "sent_rate", "achieved_rps",
    "schedule_lag_ms", "latency_first_ms", "latency_last_ms", "server_cpu_s", "cpu_source",
    "latency_histogram",
}  # fmt: skip


def _old_store(path: Path) -> None:
    old = sqlite3.connect(path)
    for table, columns in TABLES.items():
        if table in ("meta", "capacities"):
            continue
        kept = [c for c in columns if c[0] not in ADDED]
        old.execute(f"CREATE TABLE {table} ({', '.join(f'{n} {k}' for n, k in kept)})")
    old.execute(
        "INSERT INTO runs (id, recipe_path, recipe_name, recipe_text, question, command,"
        " started_at, status, server_cores, load_cores, machine)"
        " VALUES ('old-run', 'r.toml', 'r', '', '', 'benchlab run', '2026-01-01', 'complete',"
        " '[0]', '[1]', '{}')"
    )
    old.commit()
    old.close()


def _result(latencies_us: list[int]) -> LoadResult:
    hist = histogram.from_counts((v, 1) for v in latencies_us)
    return LoadResult(
        tool="vegeta",
        requests=len(latencies_us),
        duration_s=1.0,
        bytes=100,
        latency=Latency(None, None, None, None, None, None, None, None),
        errors=Errors(other=3),
        histogram=histogram.encode(hist),
    )


def _add_trial(store: Store, cell_id: int, latencies_us: list[int]) -> None:
    usage = TreeUsage(50.0, 10.0, 1, 0.5, "process tree")
    record = trial_record(0, "now", _result(latencies_us), usage, CoreSteal(0, 0), TrialExtras())
    store.add_trial(cell_id, record)


def test_an_older_store_gains_the_new_columns_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_store(path)
    reader = Store(path, create=False)
    assert [r["id"] for r in reader.runs()] == ["old-run"]
    reader.close()

    store = Store(path)
    assert [r["id"] for r in store.runs()] == ["old-run"]
    run_id = store.create_run(
        RunInfo("r.toml", "r", "", "", "benchlab run", None, (0,), (1,), {"cpu": "x"})
    )
    cell_id = store.add_cell(run_id, 0, Cell("gin", "json", "siege", 8, 1, 1, 5, 1), "gin w=1")
    _add_trial(store, cell_id, [1000, 2000])
    (trial,) = store.trials(cell_id)
    assert trial.errors_other == 3 and trial.server_cpu_s == 0.5
    assert trial.cpu_us_per_request == pytest.approx(1e6 * 0.5 / 2)


def test_a_cell_stored_as_capacity_keeps_its_concurrency_limit(tmp_path: Path) -> None:
    """Schemas 1-3 called a launch's concurrency limit cells.capacity."""
    path = tmp_path / "old.db"
    _old_store(path)
    old = sqlite3.connect(path)
    old.execute("ALTER TABLE cells RENAME COLUMN concurrency_limit TO capacity")
    old.execute(
        "INSERT INTO cells (run_id, position, key, stack, stack_label, scenario, tool,"
        " connections, threads, duration_s, workers, status, capacity)"
        " VALUES ('old-run', 0, 'k', 'flask', 'flask', 'json', 'wrk', 8, 1, 5, 2, 'ok', 4)"
    )
    old.commit()
    old.close()
    reader = Store(path, create=False)
    assert [concurrency_limit(c) for c in reader.cells("old-run")] == [4]
    reader.close()
    store = Store(path)  # brought up to date: the new column filled from the old
    assert [c["concurrency_limit"] for c in store.cells("old-run")] == [4]
    store.close()


def test_a_store_from_a_newer_benchlab_is_refused_naming_both_versions(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    for create in (True, False):
        with pytest.raises(
            UserError, match=rf"schema {SCHEMA_VERSION + 1}; this one reads up to {SCHEMA_VERSION}"
        ):
            Store(path, create=create)


def test_reading_a_read_only_store_changes_no_byte(tmp_path: Path) -> None:
    directory = tmp_path / "ro"
    directory.mkdir()
    path = directory / "results.db"
    store = Store(path)
    run_id = store.create_run(RunInfo("r.toml", "r", "", "", "b", None, (0,), (1,), {}))
    store.close()
    path.chmod(0o444)
    directory.chmod(0o555)
    before = hashlib.sha256(path.read_bytes()).hexdigest(), sorted(os.listdir(directory))
    try:
        reader = Store(path, create=False)
        assert reader.run(None)["id"] == run_id
        reader.close()
        after = hashlib.sha256(path.read_bytes()).hexdigest(), sorted(os.listdir(directory))
    finally:
        directory.chmod(0o755)
    assert before == after


def test_a_file_that_is_not_a_store_is_refused_with_a_message(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    with pytest.raises(UserError, match="not a benchlab results store"):
        Store(other, create=False)
    assert [r[0] for r in sqlite3.connect(other).execute("SELECT name FROM sqlite_master")] == ["t"]


def test_a_histogram_round_trips_through_the_store(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.db")
    run_id = store.create_run(RunInfo("r.toml", "r", "", "", "b", None, (0,), (1,), {}))
    cell_id = store.add_cell(run_id, 0, Cell("gin", "json", "vegeta", 8, 1, 1, 5, 1), "gin")
    latencies = [100 + 37 * i for i in range(5000)]
    _add_trial(store, cell_id, latencies)
    (trial,) = store.trials(cell_id)
    back = histogram.decode(trial.latency_histogram)
    original = histogram.from_counts((v, 1) for v in latencies)
    assert back.get_total_count() == 5000
    for q in (50, 90, 99, 99.9, 100):
        assert back.get_value_at_percentile(q) == original.get_value_at_percentile(q)


def test_every_figure_reads_what_the_store_keeps() -> None:
    """A figure's source names a trial column or derivation (a replicate's, a cell's)."""
    import dataclasses

    from benchlab.figures import FIGURES, Combine
    from benchlab.store import CapacityRecord, TrialRecord

    def attributes(record: type) -> set[str]:
        derived = {name for name, v in vars(record).items() if isinstance(v, property)}
        return {f.name for f in dataclasses.fields(record)} | derived

    kept = {
        Combine.REPLICATES: attributes(CapacityRecord),
        Combine.CELL: {name for name, _ in TABLES["cells"]},
    }
    for figure in FIGURES.values():
        if figure.source is not None and figure.source.attr is not None:
            where = kept.get(figure.source.combine, attributes(TrialRecord))
            assert figure.source.attr in where, figure.key


def test_two_runs_of_one_second_drawing_the_same_id_both_get_stored(tmp_path: Path) -> None:
    """A run's id is its second and four random hex digits: a second draw settles a clash."""
    import uuid
    from datetime import UTC, datetime
    from unittest import mock

    class OneSecond(datetime):
        @classmethod
        def now(cls, tz=None):  # type: ignore[override]
            return datetime(2026, 11, 26, tzinfo=UTC)

    store = Store(tmp_path / "s.db")
    info = RunInfo("p", "n", "t", "q", "c", None, (0,), (1,), {})
    same, other = uuid.UUID("abcd" + "0" * 28), uuid.UUID("beef" + "0" * 28)
    with (
        mock.patch("benchlab.store.datetime", OneSecond),
        mock.patch("benchlab.store.uuid.uuid4", side_effect=[same, same, other]),
    ):
        first, second = store.create_run(info), store.create_run(info)
    assert (first, second) == ("20261126-000000-abcd", "20261126-000000-beef")
    assert sorted(row["id"] for row in store.runs()) == [first, second]
