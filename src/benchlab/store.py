"""The results store: SQLite, one row per run, cell and trial, each written as it happens.

A run is a `RunRecord`, a cell a `CellRecord`, a trial row a `TrialRecord` and a capacity
estimate a `CapacityRecord`: their tables, inserts and reads are made from those dataclasses,
so a column is added in one place. Columns are only ever added, never changed: an older
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
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from benchlab.core import environment
from benchlab.core.errors import StoreError, UserError
from benchlab.core.modes import Mode, mode_of
from benchlab.core.text import printable, redact
from benchlab.load.result import Errors, LoadResult, LoadShare
from benchlab.measure.monitor import CoreSteal, TreeUsage
from benchlab.recipe import Cell
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
SCHEMA_VERSION = 8
ID_ATTEMPTS = 5

# A cell's status once `tune --check-only` found its stack's answer right (nothing measured).
CELL_CHECKED = "checked"
ERROR_KINDS = ("connect", "read", "write", "timeout", "non_2xx", "other")
LATENCY_KEYS = ("min", "mean", "stdev", "p50", "p90", "p99", "p999", "max")
# The trial columns that hold JSON text (a trial's JSON gives them decoded).
TRIAL_JSON_COLUMNS = ("latency_percentiles", "window_p99_ms", "mix_parts", "ws_hold_steps")


@dataclass(frozen=True)
class TrialRecord:
    """One measured trial: a row of `trials`, in column order."""

    round: int
    started_at: str
    requests: int
    duration_s: float
    throughput_rps: float
    bytes: int
    latency_min_ms: float | None
    latency_mean_ms: float | None
    latency_stdev_ms: float | None
    latency_p50_ms: float | None
    latency_p90_ms: float | None
    latency_p99_ms: float | None
    latency_p999_ms: float | None
    latency_max_ms: float | None
    latency_percentiles: str  # JSON: quantile -> ms, as the tool reported them
    errors_connect: int
    errors_read: int
    errors_write: int
    errors_timeout: int
    errors_non_2xx: int
    errors_other: int
    server_cpu_pct: float | None
    server_rss_mb: float | None
    server_processes: int | None
    load_cpu_pct: float | None
    server_steal_pct: float | None
    load_steal_pct: float | None
    db_sessions_peak: int | None = None
    pool_active_peak: int | None = None
    cache_hits: int | None = None
    cache_misses: int | None = None
    # Schema 2: fixed-rate load, capacity searches, histograms, exact CPU.
    probe: str | None = None  # capacity search: closed, step, search; None: a plain trial
    target_rate: float | None = None
    sent_rate: float | None = None
    achieved_rps: float | None = None
    schedule_lag_ms: float | None = None
    latency_first_ms: float | None = None
    latency_last_ms: float | None = None
    server_cpu_s: float | None = None
    cpu_source: str | None = None
    latency_histogram: str | None = None
    window_p99_ms: str | None = None  # JSON list: p99 of each ~2-s window (before: each quarter)
    # JSON: a mix's requests by "METHOD path": requests, errors, p50_ms, p99_ms
    mix_parts: str | None = None
    # Schema 6: the server's own counters of its threads (granian's metrics), µs in the trial.
    gil_wait_us: int | None = None
    threads_busy_us: int | None = None
    # Schema 7: how the server's RSS moved during the trial (memory_trend.py).
    rss_growth_mb: float | None = None
    rss_slope_mb_min: float | None = None
    rss_slope_low_mb_min: float | None = None
    # Schema 8: a WebSocket trial (runner/websocket.py). The hold: connections held, the
    # server's RSS per 1,000 of them (a slope over the steps), why the steps stopped. The
    # echo: p50 and p99 from each message's due time, the share of messages sent over a
    # period late. The broadcast: p99 over rounds of the time from a post to its last
    # receiver. Each: the frames the tool sent, and the server's own counts in the trial.
    ws_connections_held: int | None = None
    ws_rss_per_1000_mb: float | None = None
    ws_hold_stop: str | None = None
    ws_hold_steps: str | None = None  # JSON: each step's asked, opened, refused, established, RSS
    ws_echo_p50_ms: float | None = None
    ws_echo_p99_ms: float | None = None
    ws_late_share: float | None = None
    ws_broadcast_p99_ms: float | None = None
    ws_tool_sent: int | None = None
    ws_server_frames_in: int | None = None
    ws_server_frames_out: int | None = None
    ws_server_deliveries: int | None = None

    @property
    def errors(self) -> Errors:
        return Errors(**{kind: getattr(self, f"errors_{kind}") or 0 for kind in ERROR_KINDS})

    def to_json(self) -> dict[str, Any]:
        """Every stored value of the trial, the columns kept as JSON text decoded; its
        latency histogram (HdrHistogram's encoding, kilobytes a trial) left out."""
        data = dataclasses.asdict(self)
        del data["latency_histogram"]
        for name in TRIAL_JSON_COLUMNS:
            if data[name] is not None:
                data[name] = json.loads(data[name])
        return data

    @property
    def successes(self) -> int:
        return max(self.requests - (self.errors_non_2xx or 0), 0)

    @property
    def cpu_us_per_request(self) -> float | None:
        if self.server_cpu_s is None or self.successes == 0:
            return None
        return 1e6 * self.server_cpu_s / self.successes

    @property
    def rate_ratio(self) -> float | None:
        if not self.target_rate or self.achieved_rps is None:
            return None
        return self.achieved_rps / self.target_rate

    @property
    def windows_p99(self) -> list[float]:
        return json.loads(self.window_p99_ms) if self.window_p99_ms else []

    @property
    def error_pct(self) -> float:
        attempts = self.requests + self.errors.socket
        return 100.0 * self.errors.total / attempts if attempts else 0.0


@dataclass(frozen=True)
class TrialExtras:
    """What some scenarios add to a trial: database sessions in use, cache hits."""

    db_sessions_peak: int | None = None
    pool_active_peak: int | None = None
    cache_hits: int | None = None
    cache_misses: int | None = None
    gil_wait_us: int | None = None  # the server's own count: its threads' wait for the GIL
    threads_busy_us: int | None = None  # ... and their time with a request (the wait included)


def trial_record(
    round_index: int,
    started_at: str,
    load: LoadResult,
    server: TreeUsage,
    steal: CoreSteal,
    extras: TrialExtras | None = None,
    probe: str | None = None,
) -> TrialRecord:
    lat = load.latency
    return TrialRecord(
        round=round_index,
        started_at=started_at,
        requests=load.requests,
        duration_s=load.duration_s,
        throughput_rps=load.throughput_rps,
        bytes=load.bytes,
        **{f"latency_{key}_ms": getattr(lat, key) for key in LATENCY_KEYS},
        latency_percentiles=json.dumps(lat.percentiles),
        **{f"errors_{kind}": getattr(load.errors, kind) for kind in ERROR_KINDS},
        server_cpu_pct=server.cpu_pct,
        server_rss_mb=server.peak_rss_mb,
        server_processes=server.processes,
        load_cpu_pct=load.load_cpu_pct,
        server_steal_pct=steal.server_pct,
        load_steal_pct=steal.load_pct,
        **dataclasses.asdict(extras or TrialExtras()),
        probe=probe,
        target_rate=load.target_rate,
        sent_rate=load.sent_rate,
        achieved_rps=load.achieved_rps,
        schedule_lag_ms=load.schedule_lag_ms,
        latency_first_ms=load.latency_first_ms,
        latency_last_ms=load.latency_last_ms,
        server_cpu_s=server.cpu_s,
        cpu_source=server.cpu_source,
        latency_histogram=load.histogram,
        window_p99_ms=json.dumps(list(load.window_p99_ms)) if load.window_p99_ms else None,
        mix_parts=json.dumps(load.parts) if load.parts else None,
        rss_growth_mb=server.memory.growth_mb if server.memory else None,
        rss_slope_mb_min=server.memory.slope_mb_min if server.memory else None,
        rss_slope_low_mb_min=server.memory.slope_low_mb_min if server.memory else None,
    )


@dataclass(frozen=True)
class CapacityRecord:
    """One replicate of a capacity search: the highest rate that held the SLO."""

    round: int
    capacity_rps: float  # 0 when no rate held
    bracket_low_rps: float | None  # the highest rate that held (None: none did)
    bracket_high_rps: float | None  # the lowest rate that did not (None: all held)
    probes: int
    # Why the search stopped: bracketed (narrower than the resolution), ceiling (held up to
    # what the connections carry), probes (out of probes), floor (not held at the lowest
    # rate worth sending), no-closed-loop (nothing to start from), unconfirmed (its highest
    # held rate missed the sustained window the [slo] asks, MAX_CONFIRMS times). None: an
    # older store.
    stop: str | None = None


@dataclass(frozen=True)
class LoadShareRecord:
    """One load host's part of a trial: a row of `trial_loads`."""

    host: str
    machine: str  # whose cores: hosts of one machine share them
    cores: str  # JSON list
    connections: int
    rate: float | None
    requests: int
    duration_s: float
    throughput_rps: float
    load_cpu_pct: float | None
    latency_p99_ms: float | None


def share_record(share: LoadShare) -> LoadShareRecord:
    result = share.result
    return LoadShareRecord(
        host=share.host,
        machine=share.machine,
        cores=json.dumps(list(share.cores)),
        connections=share.connections,
        rate=share.rate,
        requests=result.requests,
        duration_s=result.duration_s,
        throughput_rps=result.throughput_rps,
        load_cpu_pct=result.load_cpu_pct,
        latency_p99_ms=result.latency.p99,
    )


def _key(sql: str, default: Any = dataclasses.MISSING) -> Any:
    """A column whose SQL is declared (a key), not made from its field's type."""
    return dataclasses.field(default=default, metadata={"sql": sql})


@dataclass(frozen=True)
class HostRecord:
    """One host of a run with [hosts]: a row of `hosts` (schema 3)."""

    name: str
    at: str  # local, netns:NAME, ssh://user@addr
    roles: list[str]  # JSON: server, database, load
    address: str | None
    cores: dict[str, list[int]]  # JSON: role -> cores
    machine: dict[str, Any]  # JSON: as runs.machine, of that host

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One run: a row of `runs`, in column order. A field with a default is a column a later
    schema added: an older store lacks it (or holds NULL), and it reads as the default."""

    id: str = _key("TEXT PRIMARY KEY")
    recipe_path: str
    recipe_name: str
    recipe_text: str
    question: str
    command: str
    started_at: str
    ended_at: str | None
    status: str  # running, complete, partial, interrupted, failed (abandoned: found dead)
    status_reason: str | None
    git_commit: str | None
    server_cores: tuple[int, ...]  # JSON
    load_cores: tuple[int, ...]  # JSON
    machine: dict[str, Any]  # JSON: cpu, cores, kernel, python, packages, tools
    services: dict[str, Any] | None = None  # JSON: name -> port, dsn
    database: str | None = None  # postgres, mariadb or None
    # JSON: the recipe's analysis options (baseline, SLO, ...); None: stored before they
    # were (the analysis reads them from the recipe's text).
    options: dict[str, Any] | None = None
    # JSON: {"recipe": the recipe as run, "deadline_s": its budget}; None: nothing to resume
    plan: dict[str, Any] | None = None

    @classmethod
    def of(cls, run_id: str, info: RunInfo, started_at: str) -> RunRecord:
        """A run as it starts."""
        return cls(
            id=run_id, recipe_path=info.recipe_path, recipe_name=info.recipe_name,
            recipe_text=info.recipe_text, question=info.question, command=info.command,
            started_at=started_at, ended_at=None, status="running", status_reason=None,
            git_commit=info.git_commit, server_cores=tuple(info.server_cores),
            load_cores=tuple(info.load_cores), machine=info.machine, options=info.options,
            plan=info.plan,
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """What a report shows of the run: all but what the analysis reads (the recipe's
        text, its options, its plan)."""
        hidden = ("recipe_text", "options", "plan")
        shown = [f.name for f in dataclasses.fields(self) if f.name not in hidden]
        return {name: _plain(getattr(self, name)) for name in shown}


@dataclass(frozen=True, kw_only=True)
class CellRecord:
    """One cell of a run: a row of `cells`, in column order. A field with a default is a
    column a later schema added: an older store lacks it (or holds NULL), and it reads as
    the default."""

    id: int = _key("INTEGER PRIMARY KEY", default=0)  # the store's (0: not stored yet)
    run_id: str = _key("TEXT NOT NULL REFERENCES runs(id)")
    position: int
    key: str
    stack: str
    stack_label: str
    scenario: str
    tool: str
    connections: int
    threads: int
    duration_s: float
    workers: int
    status: str  # pending, ok, failed
    reason: str | None = None
    flavour: str | None = None
    server_threads: int | None = None
    pool_size: int | None = None
    ms: int | None = None
    point: str | None = None  # the named grid point, when the recipe has points
    # Requests the launch can hold at once; None: no limit of its own. Schema 4: the column
    # 'capacity' of older stores, which keep it (see RENAMED).
    concurrency_limit: int | None = None
    db_pool_limit: int | None = None  # database sessions the launch can use at most
    mode: Mode = Mode.CLOSED  # NULL in schema 1
    target_rate: float | None = None  # rate cells: the rate asked for (a share once resolved)
    rate_share: float | None = None  # rate cells given as a share of their own capacity, in %
    closed_capacity_rps: float | None = None  # the closed-loop probe of a share or a search
    timeout_s: int | None = None
    # JSON: framework, server, worker model (and a tune's command); None: stored before
    # cells kept them (the report reads them from the catalogue).
    facts: dict[str, Any] | None = None
    keepalive: bool = True  # False: a new connection for every request
    protocol: str = "h1"  # protocols.PROTOCOLS
    negotiated: str | None = None  # what verification got: "HTTP/2 over TLSv1.3"
    compression_ratio: float | None = None  # a compressed answer: its size ÷ compressed size
    copy: int = 1  # schema 7: 2 for the sentinel's second launch of an A/A pair

    @classmethod
    def of(
        cls,
        run_id: str,
        position: int,
        cell: Cell,
        label: str,
        concurrency_limit: int | None = None,
        db_pool_limit: int | None = None,
        facts: dict[str, Any] | None = None,
    ) -> CellRecord:
        """A planned cell as it is first stored: pending."""
        return cls(
            run_id=run_id, position=position, key=cell.key, stack=cell.stack,
            stack_label=label, scenario=cell.scenario, tool=cell.tool,
            connections=cell.connections, threads=cell.threads,
            duration_s=float(cell.duration), workers=cell.workers, status="pending",
            flavour=cell.flavour, server_threads=cell.server_threads,
            pool_size=cell.pool_size, ms=cell.ms, point=cell.point,
            concurrency_limit=concurrency_limit, db_pool_limit=db_pool_limit, mode=cell.mode,
            target_rate=cell.rate, rate_share=cell.rate_share, timeout_s=cell.timeout,
            facts=facts or {}, keepalive=cell.keepalive, protocol=cell.protocol,
            copy=cell.copy,
        )  # fmt: skip


def _plain(value: Any) -> Any:
    """A value as JSON has it (a tuple as a list)."""
    return list(value) if isinstance(value, tuple) else value


Record = TypeVar("Record", TrialRecord, CapacityRecord, LoadShareRecord, RunRecord, CellRecord)

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


def _sql_type(f: dataclasses.Field, hint: Any) -> str:
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
            value = json.dumps(_plain(value))
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


@dataclass(frozen=True)
class RunInfo:
    recipe_path: str
    recipe_name: str
    recipe_text: str
    question: str
    command: str
    git_commit: str | None
    server_cores: tuple[int, ...]
    load_cores: tuple[int, ...]
    machine: dict[str, Any]
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    # What `run --resume` needs to continue the run: the recipe as it ran, its budget.
    plan: dict[str, Any] | None = None


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


def _read(f: dataclasses.Field, hint: Any, stored: Any) -> Any:
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
    def add_cell(
        self,
        run_id: str,
        position: int,
        cell: Cell,
        label: str,
        concurrency_limit: int | None = None,
        db_pool_limit: int | None = None,
        facts: dict[str, Any] | None = None,
    ) -> int:
        record = CellRecord.of(
            run_id, position, cell, label, concurrency_limit, db_pool_limit, facts
        )
        values = self._masked_row(_row(record))
        del values["id"]  # SQLite gives the row its id
        return _insert(self.db, "cells", values)

    @_writes
    def set_run_services(self, run_id: str, services: dict, database: str | None) -> None:
        self.db.execute(
            "UPDATE runs SET services = ?, database = ? WHERE id = ?",
            (self.masked(json.dumps(services)), database, run_id),
        )

    @_writes
    def mark_cell(self, cell_id: int, status: str, reason: str | None = None) -> None:
        # A reason quotes a server's log: stored without a control character, whatever reads it.
        shown = None if reason is None else printable(self.masked(reason))
        self.db.execute(
            "UPDATE cells SET status = ?, reason = ? WHERE id = ?", (status, shown, cell_id)
        )

    @_writes
    def add_cell_facts(self, cell_id: int, more: dict[str, Any]) -> None:
        """Facts learnt once the cell was measured (a tune's proof: whether it held)."""
        row = self.db.execute("SELECT facts FROM cells WHERE id = ?", (cell_id,)).fetchone()
        facts = json.loads(row["facts"] or "{}") if row is not None else {}
        self.db.execute(
            "UPDATE cells SET facts = ? WHERE id = ?",
            (self.masked(json.dumps({**facts, **more})), cell_id),
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
        self, cell_id: int, record: TrialRecord, shares: Sequence[LoadShare] = ()
    ) -> None:
        """The trial, then each load host's share of it."""
        with _transaction(self.db):
            trial_id = _insert(
                self.db, "trials", {"cell_id": cell_id, **dataclasses.asdict(record)}
            )
            for share in shares:
                values = dataclasses.asdict(share_record(share))
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
            (status, None if reason is None else printable(self.masked(reason)), now(), run_id),
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
