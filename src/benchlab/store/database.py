"""The results store's database: SQLite, one row per run, cell and trial, each written as
it happens.

The tables, inserts and reads are made from the records (store/records.py), so a column is
added in one place. Columns are only ever added, never changed: an older
store is brought up to date in place when written to, and read as it is by `report` and
`compare`, which open it read-only; either way one reader (`_record`) gives a column it
lacks, or holds NULL in, its field's default. The store carries its schema version; a newer
one is refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import re
import sqlite3
import types
import typing
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from benchlab.core import environment
from benchlab.core.errors import StoreError, UserError
from benchlab.core.modes import Mode, mode_of
from benchlab.core.text import printable, redact
from benchlab.store.records import (
    CapacityRecord,
    CellRecord,
    HostRecord,
    LoadShareRecord,
    RunInfo,
    RunRecord,
    TrialRecord,
    plain,
)
from benchlab.system.outputs import check_store_place

DEFAULT_RESULTS = Path("results/benchlab.db")
# A run named by its age: the latest, or the Nth before it (git's notation).
LATEST = re.compile(r"latest(?:~(\d+))?")
# How long a write waits for a store another program has locked before the run stops.
LOCK_TIMEOUT_VARIABLE = environment.STORE_TIMEOUT
DEFAULT_LOCK_TIMEOUT_S = 30.0
# The columns of `runs` every benchlab store has had: a `runs` table without them is
# another program's.
RUN_COLUMNS = {"id", "recipe_name", "started_at", "status", "command"}


def lock_timeout_s() -> float:
    """BENCHLAB_STORE_TIMEOUT_S, read when a store is opened (a bad value is one line then,
    not a failure of every command at import)."""
    text = os.environ.get(LOCK_TIMEOUT_VARIABLE)
    if text is None:
        return DEFAULT_LOCK_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 86_400:
        raise UserError(
            f"{LOCK_TIMEOUT_VARIABLE}={text!r}: give the seconds a write may wait for a locked "
            f"store, between 0 and 86400 (default {DEFAULT_LOCK_TIMEOUT_S:g})"
        )
    return value


# 1: runs, cells, trials (no version recorded). 2: fixed-rate and capacity figures, trial
# histograms, exact CPU, the capacities table, this version in `meta`. 3: the hosts of a run
# (what ran where, one machine description per host) and each load host's share of a trial.
# 4: cells.concurrency_limit, the name of what schemas 1-3 called cells.capacity (requests a
# launch can hold at once; "capacity" is only req/s under the SLO). 5: runs.plan, the recipe
# as it ran (overrides applied) and its budget, from which `run --resume` continues it.
# 6: trials.gil_wait_us and trials.threads_busy_us, the server's own counters (granian's).
# 7: how the server's RSS moved during a trial. 8: the WebSocket trials' columns (ws_*).
# 9: trials.latency_timeline, a fixed-rate trial's latency over time (load/timeline.py).
SCHEMA_VERSION = 9
ID_ATTEMPTS = 5

Record = TypeVar(
    "Record", TrialRecord, CapacityRecord, LoadShareRecord, RunRecord, CellRecord, HostRecord
)

SQL_TYPES: dict[Any, str] = {int: "INTEGER", float: "REAL", str: "TEXT", bool: "INTEGER"}
JSON_TYPES = (dict, tuple, list)  # kept as JSON text
# How a stored value of a type is read back (one not named here: as it is stored).
READ: dict[Any, Callable[[Any], Any]] = {bool: bool, Mode: mode_of}


def _base(hint: Any) -> tuple[Any, bool]:
    """A field's type without None, and whether None is one of its values."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0], len(args) < len(typing.get_args(hint))
    return hint, False


def _kind(base: Any) -> Any:
    """The Python type a column is declared and read by: dict for dict[str, Any]."""
    return typing.get_origin(base) or base


def _sql_type(f: dataclasses.Field[Any], hint: Any) -> str:
    if "sql" in f.metadata:
        return str(f.metadata["sql"])
    base, nullable = _base(hint)
    kind = _kind(base)
    sql = "TEXT" if kind in JSON_TYPES or issubclass(kind, str) else SQL_TYPES[kind]
    # A column with a default came later: older rows hold NULL in it.
    later = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    return sql if nullable or later else f"{sql} NOT NULL"


def _columns(record: type) -> list[tuple[str, str]]:
    hints = typing.get_type_hints(record)
    return [(f.name, _sql_type(f, hints[f.name])) for f in dataclasses.fields(record)]


def _row(record: Any) -> dict[str, Any]:
    """A record as the values of its row: JSON fields as text, a flag as 0 or 1."""
    values = {}
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if isinstance(value, JSON_TYPES):
            value = json.dumps(plain(value))
        elif isinstance(value, bool):
            value = int(value)
        values[f.name] = value
    return values


# Columns are only ever added, never changed: an older results file is brought up to date
# in place (missing columns added) and every run in it stays readable.
TABLES: dict[str, list[tuple[str, str]]] = {
    "meta": [("key", "TEXT PRIMARY KEY"), ("value", "TEXT NOT NULL")],
    "runs": _columns(RunRecord),
    "cells": _columns(CellRecord),
    "trials": [
        ("id", "INTEGER PRIMARY KEY"),
        ("cell_id", "INTEGER NOT NULL REFERENCES cells(id)"),
        *_columns(TrialRecord),
    ],
    "capacities": [
        ("id", "INTEGER PRIMARY KEY"),
        ("cell_id", "INTEGER NOT NULL REFERENCES cells(id)"),
        *_columns(CapacityRecord),
    ],
    # Schema 3.
    "hosts": [
        ("id", "INTEGER PRIMARY KEY"),
        ("run_id", "TEXT NOT NULL REFERENCES runs(id)"),
        *_columns(HostRecord),
    ],
    "trial_loads": [
        ("id", "INTEGER PRIMARY KEY"),
        ("trial_id", "INTEGER NOT NULL REFERENCES trials(id)"),
        *_columns(LoadShareRecord),
    ],
}


# A column under a new name: (table, new name) -> the old name, which an older store keeps.
# Added to an older store, the new column is filled from the old; read-only, the old is read.
RENAMED = {("cells", "concurrency_limit"): "capacity"}


def _migrate(db: sqlite3.Connection, path: Path) -> None:
    _refuse_foreign(db, path)
    _refuse_newer(db, path)
    with _transaction(db):  # two benchlabs bringing one old store up to date: one does
        _bring_up_to_date(db)


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """Statements that stand or fall together (the store is otherwise in autocommit)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _bring_up_to_date(db: sqlite3.Connection) -> None:
    for table, columns in TABLES.items():
        body = ", ".join(f"{name} {kind}" for name, kind in columns)
        db.execute(f"CREATE TABLE IF NOT EXISTS {table} ({body})")
        present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        for name, kind in columns:
            if name not in present:
                # SQLite cannot add a NOT NULL column without a default: added ones are nullable.
                db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind.replace(' NOT NULL', '')}")
                old = RENAMED.get((table, name))
                if old in present:
                    db.execute(f"UPDATE {table} SET {name} = {old}")
    db.execute("CREATE UNIQUE INDEX IF NOT EXISTS cells_run_key ON cells (run_id, key)")
    db.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
        (str(SCHEMA_VERSION),),
    )


def _schema_version(db: sqlite3.Connection) -> int | None:
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "meta" not in tables:
        return 1 if "runs" in tables else None
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    try:
        return int(row[0]) if row else 1
    except (TypeError, ValueError):
        return -1  # not a version benchlab wrote: see _refuse_foreign


def _refuse_foreign(db: sqlite3.Connection, path: Path) -> None:
    """A SQLite file of another program's is neither read nor changed."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "runs" not in tables and "meta" not in tables:
        return  # empty: a new store
    columns = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    if not columns >= RUN_COLUMNS or _schema_version(db) == -1:
        raise UserError(
            f"'{path}' is not a benchlab results store (its tables are another program's); "
            "pass --results with the store 'benchlab run' wrote, or a new file"
        )


def _refuse_newer(db: sqlite3.Connection, path: Path) -> None:
    version = _schema_version(db)
    if version is not None and version > SCHEMA_VERSION:
        raise UserError(
            f"results store '{path}' was written by a newer benchlab (schema {version}; this "
            f"one reads up to {SCHEMA_VERSION}): update benchlab, or pass --results with "
            "another store"
        )


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


FIXES = {
    "disk is full": "free some disk space",
    "locked": "another program holds the store locked: close it",
    "readonly": "make it writable, or pass --results with another path",
}


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """A failed write ends the run with one line; what was stored before stays stored."""
    try:
        yield
    except sqlite3.Error as exc:
        fix = next((f for key, f in FIXES.items() if key in str(exc)), "check the file")
        raise StoreError(
            f"results store '{path}' could not be written ({exc}); the run stops here and "
            f"every trial stored before is kept; {fix}"
        ) from None


Method = TypeVar("Method", bound=Callable[..., Any])


def _writes(method: Method) -> Method:
    """A Store method that writes: its failures end the run with one line (see writing)."""

    @functools.wraps(method)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> Any:
        with writing(self.path):
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _insert(db: sqlite3.Connection, table: str, values: dict[str, Any]) -> int:
    names = ", ".join(values)
    marks = ", ".join("?" * len(values))
    cursor = db.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", tuple(values.values()))
    return int(cursor.lastrowid or 0)


def _record(kind: type[Record], row: sqlite3.Row, table: str = "") -> Record:
    """A row as its record: the one place an older store's rows are made whole. A column it
    lacks, or holds NULL in, reads as the field's default (None when it has none); one
    renamed since reads from its old name; JSON is decoded, a flag and a mode read as such."""
    present = set(row.keys())
    hints = typing.get_type_hints(kind)
    values = {}
    for f in dataclasses.fields(kind):
        name = f.name if f.name in present else RENAMED.get((table, f.name))
        stored = row[name] if name in present else None
        values[f.name] = _read(f, hints[f.name], stored)
    return kind(**values)


def _read(f: dataclasses.Field[Any], hint: Any, stored: Any) -> Any:
    kind = _kind(_base(hint)[0])
    if stored is None or (kind in JSON_TYPES and stored == ""):
        if f.default_factory is not dataclasses.MISSING:
            return f.default_factory()
        if f.default is dataclasses.MISSING:
            return kind() if kind in JSON_TYPES else None  # JSON that is always kept: empty
        return f.default
    if kind in JSON_TYPES:
        return kind(json.loads(stored))
    return READ.get(kind, lambda value: value)(stored)


class Store:
    def __init__(self, path: Path, *, create: bool = True) -> None:
        """`create`: open for writing (made if missing, brought up to date); otherwise
        read-only: nothing in the file or beside it is changed."""
        self.path = path
        self.writable = create
        self._secrets: set[str] = set()
        if not create and not path.exists():
            raise UserError(
                f"results store '{path}' does not exist; run 'benchlab run' first "
                "or pass --results PATH"
            )
        try:
            if create:
                check_store_place(path)
                path.parent.mkdir(parents=True, exist_ok=True)
                # autocommit: each statement is durable when it returns (a crash loses nothing).
                timeout = lock_timeout_s()
                self.db = sqlite3.connect(path, isolation_level=None, timeout=timeout)
                self.db.execute("PRAGMA journal_mode=WAL")
                _migrate(self.db, path)
            else:
                self.db = _open_read_only(path)
                _refuse_newer(self.db, path)
            self.db.row_factory = sqlite3.Row
        except sqlite3.DatabaseError as exc:
            raise UserError(f"cannot open results store '{path}': {exc}") from None
        except OSError as exc:
            raise UserError(f"cannot open results store '{path}': {exc.strerror}") from None

    def close(self) -> None:
        self.db.close()

    def keep_out(self, *secrets: str) -> None:
        """Values no field of the store may hold (tune's --env values and --setup, the
        services' passwords): masked, in every form (text.redact), in whatever is written
        from now on."""
        self._secrets.update(secret for secret in secrets if secret)

    def masked(self, text: str, *secrets: str) -> str:
        """`text` as the store keeps it: no secret it was told of (`secrets` now added)."""
        self.keep_out(*secrets)
        return redact(text, self._secrets) if self._secrets else text

    def masked_prose(self, text: str) -> str:
        """Prose the store keeps (a reason, a log's tail): no secret it was told of, nor any
        part of one FRAGMENT characters long (a shell's error line quoting --setup)."""
        return redact(text, self._secrets, fragments=True) if self._secrets else text

    def _masked_facts(self, facts: Any) -> Any:
        """Facts with every text in them masked as prose (their keys are benchlab's)."""
        if isinstance(facts, str):
            return self.masked_prose(facts)
        if isinstance(facts, dict):
            return {k: self._masked_facts(v) for k, v in facts.items()}
        if isinstance(facts, list):
            return [self._masked_facts(v) for v in facts]
        return facts

    def _masked_row(self, values: dict[str, Any]) -> dict[str, Any]:
        return {k: self.masked(v) if isinstance(v, str) else v for k, v in values.items()}

    # --- writing --------------------------------------------------------------------------

    @_writes
    def create_run(self, info: RunInfo) -> str:
        # An id people can read: its second and four random hex digits. Two runs of one
        # second may draw the same four: the second draws again.
        for attempt in range(ID_ATTEMPTS):
            run_id = datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:4]
            try:
                self._insert_run(run_id, info)
                return run_id
            except sqlite3.IntegrityError:
                if attempt == ID_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def _insert_run(self, run_id: str, info: RunInfo) -> None:
        _insert(self.db, "runs", self._masked_row(_row(RunRecord.of(run_id, info, now()))))

    @_writes
    def add_cell(self, record: CellRecord) -> int:
        """A planned cell (`runner/records.py`, `cell_record`), stored; its id."""
        values = self._masked_row(_row(record))
        del values["id"]  # SQLite gives the row its id
        return _insert(self.db, "cells", values)

    @_writes
    def set_run_services(self, run_id: str, services: dict[str, Any], database: str | None) -> None:
        self.db.execute(
            "UPDATE runs SET services = ?, database = ? WHERE id = ?",
            (self.masked(json.dumps(services)), database, run_id),
        )

    @_writes
    def mark_cell(self, cell_id: int, status: str, reason: str | None = None) -> None:
        # A reason quotes a server's log: stored without a control character, whatever reads it.
        shown = None if reason is None else printable(self.masked_prose(reason))
        self.db.execute(
            "UPDATE cells SET status = ?, reason = ? WHERE id = ?", (status, shown, cell_id)
        )

    @_writes
    def add_cell_facts(self, cell_id: int, more: dict[str, Any]) -> None:
        """Facts learnt once the cell was measured (a tune's proof: whether it held). Only
        the new facts' texts are masked as prose: the facts already kept were masked as they
        came, and a planned cell's (its deploy command) are its structure, whose paths a
        part of --setup may share."""
        row = self.db.execute("SELECT facts FROM cells WHERE id = ?", (cell_id,)).fetchone()
        facts = json.loads(row["facts"] or "{}") if row is not None else {}
        self.db.execute(
            "UPDATE cells SET facts = ? WHERE id = ?",
            (self.masked(json.dumps({**facts, **self._masked_facts(more)})), cell_id),
        )

    @_writes
    def set_cell_wire(
        self, cell_id: int, negotiated: str, compression_ratio: float | None = None
    ) -> None:
        """What verification's client got over the cell's protocol, and how much smaller a
        compressed answer came than the document."""
        self.db.execute(
            "UPDATE cells SET negotiated = ?, compression_ratio = ? WHERE id = ?",
            (negotiated, compression_ratio, cell_id),
        )

    @_writes
    def set_cell_rates(
        self, cell_id: int, target_rate: float | None, closed_capacity_rps: float | None
    ) -> None:
        """What the cell's closed-loop probe found, and the rate a share resolved to."""
        self.db.execute(
            "UPDATE cells SET target_rate = COALESCE(?, target_rate), closed_capacity_rps = ?"
            " WHERE id = ?",
            (target_rate, closed_capacity_rps, cell_id),
        )

    @_writes
    def add_trial(
        self, cell_id: int, record: TrialRecord, shares: Sequence[LoadShareRecord] = ()
    ) -> None:
        """The trial, then each load host's share of it."""
        with _transaction(self.db):
            trial_id = _insert(
                self.db, "trials", {"cell_id": cell_id, **dataclasses.asdict(record)}
            )
            for share in shares:
                values = dataclasses.asdict(share)
                _insert(self.db, "trial_loads", {"trial_id": trial_id, **values})

    @_writes
    def set_run_hosts(self, run_id: str, hosts: list[HostRecord]) -> None:
        """What ran where (a resumed run's, as it is now: once)."""
        self.db.execute("DELETE FROM hosts WHERE run_id = ?", (run_id,))
        for host in hosts:
            _insert(self.db, "hosts", {"run_id": run_id, **_row(host)})

    @_writes
    def add_capacity(self, cell_id: int, record: CapacityRecord) -> None:
        _insert(self.db, "capacities", {"cell_id": cell_id, **dataclasses.asdict(record)})

    @_writes
    def reopen_run(self, run_id: str) -> str:
        """Continue an earlier run (benchlab tune --resume): its finished work is kept."""
        row = self.run(run_id)
        self.db.execute(
            "UPDATE runs SET status = 'running', status_reason = NULL, ended_at = NULL"
            " WHERE id = ?",
            (row.id,),
        )
        return row.id

    @_writes
    def finish_run(self, run_id: str, status: str, reason: str | None = None) -> None:
        self.db.execute(
            "UPDATE runs SET status = ?, status_reason = ?, ended_at = ? WHERE id = ?",
            (
                status,
                None if reason is None else printable(self.masked_prose(reason)),
                now(),
                run_id,
            ),
        )

    # --- reading --------------------------------------------------------------------------

    def run(self, run_id: str | None) -> RunRecord:
        """A run by its id, a prefix of it, or by age: `latest` (also None), `latest~1` the one
        before it, and so on."""
        latest = LATEST.fullmatch(run_id or "latest")
        if latest:
            back = int(latest.group(1) or 0)
            runs = self.runs()
            if not runs:
                raise UserError(f"results store '{self.path}' holds no run yet; run 'benchlab run'")
            if back >= len(runs):
                oldest = "latest" if len(runs) == 1 else f"latest … latest~{len(runs) - 1}"
                raise UserError(
                    f"run '{run_id}': results store '{self.path}' holds {len(runs)} "
                    f"run{'s' if len(runs) > 1 else ''} ({oldest}); see benchlab runs"
                )
            return runs[back]
        row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            matches = self.db.execute(
                "SELECT * FROM runs WHERE id LIKE ? ORDER BY id", (f"{run_id}%",)
            ).fetchall()
            if len(matches) == 1:
                return _record(RunRecord, matches[0])
            recent = [r.id for r in self.runs()[:5]]
            raise UserError(
                f"no run '{run_id}' in '{self.path}'; recent runs: {', '.join(recent) or 'none'}"
            )
        return _record(RunRecord, row)

    def runs(self) -> list[RunRecord]:
        if not self._has_table("runs"):
            return []
        query = "SELECT * FROM runs ORDER BY started_at DESC, rowid DESC"
        return [_record(RunRecord, row) for row in self.db.execute(query).fetchall()]

    def cells(self, run_id: str) -> list[CellRecord]:
        rows = self.db.execute(
            "SELECT * FROM cells WHERE run_id = ? ORDER BY position", (run_id,)
        ).fetchall()
        return [_record(CellRecord, row, "cells") for row in rows]

    def trials(self, cell_id: int) -> list[TrialRecord]:
        rows = self.db.execute(
            "SELECT * FROM trials WHERE cell_id = ? ORDER BY round, id", (cell_id,)
        ).fetchall()
        return [_record(TrialRecord, row) for row in rows]

    def hosts(self, run_id: str) -> list[HostRecord]:
        """What ran where (runs before schema 3: none recorded)."""
        if not self._has_table("hosts"):
            return []
        rows = self.db.execute("SELECT * FROM hosts WHERE run_id = ? ORDER BY id", (run_id,))
        return [_record(HostRecord, row, "hosts") for row in rows.fetchall()]

    def load_shares(self, cell_id: int) -> dict[int, list[LoadShareRecord]]:
        """Each trial's load hosts' shares, by trial round."""
        if not self._has_table("trial_loads"):
            return {}
        rows = self.db.execute(
            "SELECT trial_loads.*, trials.round AS trial_round FROM trial_loads"
            " JOIN trials ON trials.id = trial_loads.trial_id"
            " WHERE trials.cell_id = ? AND trials.probe IS NULL ORDER BY trial_loads.id",
            (cell_id,),
        ).fetchall()
        out: dict[int, list[LoadShareRecord]] = {}
        for row in rows:
            out.setdefault(row["trial_round"], []).append(_record(LoadShareRecord, row))
        return out

    def capacities(self, cell_id: int) -> list[CapacityRecord]:
        if not self._has_table("capacities"):
            return []
        rows = self.db.execute(
            "SELECT * FROM capacities WHERE cell_id = ? ORDER BY round, id", (cell_id,)
        ).fetchall()
        return [_record(CapacityRecord, row) for row in rows]

    def _has_table(self, name: str) -> bool:
        query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        return self.db.execute(query, (name,)).fetchone() is not None


def _open_read_only(path: Path) -> sqlite3.Connection:
    """Read-only, and nothing written in the file or beside it. A store whose writer is
    still at work (its -wal file exists) is read through that writer's shared memory; a
    store nobody writes is opened immutable, so SQLite makes no -wal or -shm file for it
    (even as root, even in a directory it could write)."""
    uri = path.resolve().as_uri()
    active = Path(f"{path}-wal").exists() and Path(f"{path}-shm").exists()
    db = sqlite3.connect(f"{uri}?mode=ro" if active else f"{uri}?immutable=1", uri=True)
    try:
        is_store = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchone()
    except sqlite3.OperationalError:
        db.close()
        db = sqlite3.connect(f"{uri}?immutable=1", uri=True)
        is_store = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchone()
    if not is_store:
        db.close()
        raise UserError(
            f"'{path}' is not a benchlab results store (it has no runs table); pass --results "
            "with the store 'benchlab run' wrote"
        )
    try:
        _refuse_foreign(db, path)
    except UserError:
        db.close()
        raise
    return db
