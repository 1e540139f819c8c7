"""The results store: older files stay readable, newer ones are refused, reading writes
nothing, and a trial's histogram comes back as it went in."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from benchlab.core.errors import UserError
from benchlab.core.modes import Mode
from benchlab.core.request_errors import Errors
from benchlab.load import histogram
from benchlab.load.result import Latency, LoadResult
from benchlab.measure.monitor import CoreSteal, TreeUsage
from benchlab.recipe import Cell
from benchlab.runner.records import TrialExtras, cell_record, trial_record
from benchlab.store import (
    SCHEMA_VERSION,
    TABLES,
    CellRecord,
    RunInfo,
    RunRecord,
    Store,
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
    assert [r.id for r in reader.runs()] == ["old-run"]
    reader.close()

    store = Store(path)
    assert [r.id for r in store.runs()] == ["old-run"]
    run_id = store.create_run(
        RunInfo("r.toml", "r", "", "", "benchlab run", None, (0,), (1,), {"cpu": "x"})
    )
    cell_id = store.add_cell(
        cell_record(run_id, 0, Cell("gin", "json", "siege", 8, 1, 1, 5, 1), "gin w=1")
    )
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
    assert [c.concurrency_limit for c in reader.cells("old-run")] == [4]
    reader.close()
    store = Store(path)  # brought up to date: the new column filled from the old
    assert [c.concurrency_limit for c in store.cells("old-run")] == [4]
    store.close()


def _oldest_store(path: Path) -> None:
    """Runs and cells with only the columns every store has had (each column a later schema
    added is a field with a default), holding one run and one cell."""
    old = sqlite3.connect(path)
    for table, record in (("runs", RunRecord), ("cells", CellRecord)):
        kept = [
            f"{f.name} {kind}"
            for f, (_, kind) in zip(dataclasses.fields(record), TABLES[table], strict=True)
            if f.default is dataclasses.MISSING or f.name == "id"
        ]
        old.execute(f"CREATE TABLE {table} ({', '.join(kept)})")
    old.execute(
        "INSERT INTO runs (id, recipe_path, recipe_name, recipe_text, question, command,"
        " started_at, ended_at, status, status_reason, git_commit, server_cores, load_cores,"
        " machine) VALUES ('old-run', 'r.toml', 'r', 'name = \"r\"', '', 'benchlab run',"
        " '2026-01-01', NULL, 'complete', NULL, NULL, '[0, 1]', '[2]', '{\"cpu\": \"x\"}')"
    )
    old.execute(
        "INSERT INTO cells (run_id, position, key, stack, stack_label, scenario, tool,"
        " connections, threads, duration_s, workers, status)"
        " VALUES ('old-run', 0, 'k', 'flask+gunicorn', 'flask w=2', 'json', 'wrk', 8, 1, 5, 2,"
        " 'ok')"
    )
    old.commit()
    old.close()


def test_an_old_stores_rows_read_as_records_with_every_default(tmp_path: Path) -> None:
    """Columns an old store lacks (read-only) or holds NULL in (brought up to date) read as
    their defaults, in the one reader; JSON comes back decoded."""
    path = tmp_path / "old.db"
    _oldest_store(path)
    expected_run = RunRecord(
        id="old-run", recipe_path="r.toml", recipe_name="r", recipe_text='name = "r"',
        question="", command="benchlab run", started_at="2026-01-01", ended_at=None,
        status="complete", status_reason=None, git_commit=None, server_cores=(0, 1),
        load_cores=(2,), machine={"cpu": "x"},
    )  # fmt: skip
    reader = Store(path, create=False)
    (run,) = reader.runs()
    (cell,) = reader.cells("old-run")
    reader.close()
    assert run == expected_run
    assert (run.services, run.database, run.options, run.plan) == (None, None, None, None)
    assert cell.id == 1 and cell.duration_s == 5 and cell.reason is None
    assert (cell.mode, cell.keepalive, cell.protocol) == (Mode.CLOSED, True, "h1")
    assert cell.facts is None and cell.concurrency_limit is None and cell.negotiated is None
    store = Store(path)  # brought up to date: the columns added hold NULL
    assert store.runs() == [expected_run] and store.cells("old-run") == [cell]
    store.close()

    from benchlab.analysis.summary import summarise
    from benchlab.stacks import CATALOGUE

    summary = summarise(Store(path, create=False), "old-run", catalogue=CATALOGUE)
    (found,) = summary.cells
    record = found.record
    assert record.protocol == "h1" and record.keepalive and record.mode == Mode.CLOSED
    assert found.result.facts["server"]  # a cell stored before its facts: read from the catalogue
    assert (
        summary.run.to_json()["server_cores"] == [0, 1]
        and "options" not in summary.to_json()["run"]
    )


def test_a_cell_and_a_run_read_back_as_they_were_written(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    info = RunInfo(
        "r.toml", "r", "text", "q", "benchlab run r", "abc", (0, 1), (2,), {"cpu": "x"},
        options={"baseline": "gin"}, plan={"recipe": {"name": "r"}, "deadline_s": 60.0},
    )  # fmt: skip
    run_id = store.create_run(info)
    cell = Cell(
        "gin", "json", "vegeta", 8, 1, 5, 2, 1, point="p", mode=Mode.RATE, rate=100.0,
        keepalive=False, protocol="h2",
    )  # fmt: skip
    facts = {"framework": "gin", "server": "net/http"}
    cell_id = store.add_cell(cell_record(run_id, 0, cell, "gin w=1", 64, 4, facts))
    (back,) = store.cells(run_id)
    written = cell_record(run_id, 0, cell, "gin w=1", 64, 4, facts)
    assert back == dataclasses.replace(written, id=cell_id)
    assert (back.mode, back.keepalive, back.facts) == (Mode.RATE, False, facts)
    run = store.run(run_id)
    assert run == RunRecord.of(run_id, info, run.started_at)
    assert run.server_cores == (0, 1) and run.plan == info.plan


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
        assert reader.run(None).id == run_id
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
    cell_id = store.add_cell(
        cell_record(run_id, 0, Cell("gin", "json", "vegeta", 8, 1, 1, 5, 1), "gin")
    )
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

    from benchlab.core.figures import FIGURES, Combine
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
        mock.patch("benchlab.store.database.datetime", OneSecond),
        mock.patch("benchlab.store.database.uuid.uuid4", side_effect=[same, same, other]),
    ):
        first, second = store.create_run(info), store.create_run(info)
    assert (first, second) == ("20261126-000000-abcd", "20261126-000000-beef")
    assert sorted(run.id for run in store.runs()) == [first, second]
