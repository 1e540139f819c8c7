"""The results store: SQLite, one row per run, cell and trial, each written as it happens."""

from __future__ import annotations

import json
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchlab.errors import UserError
from benchlab.load.result import LoadResult
from benchlab.monitor import CoreSteal, TreeUsage
from benchlab.recipe import Cell

DEFAULT_RESULTS = Path("results/benchlab.db")

# Columns are only ever added, never changed: an older results file is brought up to date
# in place (missing columns added) and every run in it stays readable.
TABLES: dict[str, list[tuple[str, str]]] = {
    "runs": [
        ("id", "TEXT PRIMARY KEY"),
        ("recipe_path", "TEXT NOT NULL"),
        ("recipe_name", "TEXT NOT NULL"),
        ("recipe_text", "TEXT NOT NULL"),
        ("question", "TEXT NOT NULL"),
        ("command", "TEXT NOT NULL"),
        ("started_at", "TEXT NOT NULL"),
        ("ended_at", "TEXT"),
        ("status", "TEXT NOT NULL"),  # running, complete, partial, interrupted, failed
        ("status_reason", "TEXT"),
        ("git_commit", "TEXT"),
        ("server_cores", "TEXT NOT NULL"),
        ("load_cores", "TEXT NOT NULL"),
        ("machine", "TEXT NOT NULL"),  # JSON: cpu, cores, kernel, python, packages, tools
        ("services", "TEXT"),  # JSON: name -> port, dsn
        ("database", "TEXT"),  # postgres, mariadb or NULL
    ],
    "cells": [
        ("id", "INTEGER PRIMARY KEY"),
        ("run_id", "TEXT NOT NULL REFERENCES runs(id)"),
        ("position", "INTEGER NOT NULL"),
        ("key", "TEXT NOT NULL"),
        ("stack", "TEXT NOT NULL"),
        ("stack_label", "TEXT NOT NULL"),
        ("scenario", "TEXT NOT NULL"),
        ("tool", "TEXT NOT NULL"),
        ("connections", "INTEGER NOT NULL"),
        ("threads", "INTEGER NOT NULL"),
        ("duration_s", "REAL NOT NULL"),
        ("workers", "INTEGER NOT NULL"),
        ("status", "TEXT NOT NULL"),  # pending, ok, failed
        ("reason", "TEXT"),
        ("flavour", "TEXT"),
        ("server_threads", "INTEGER"),
        ("pool_size", "INTEGER"),
        ("ms", "INTEGER"),
        ("point", "TEXT"),  # the named grid point, when the recipe has points
        ("capacity", "INTEGER"),  # requests the launch can hold at once; NULL: no own limit
        ("db_pool_limit", "INTEGER"),  # database sessions the launch can use at most
    ],
    "trials": [
        ("id", "INTEGER PRIMARY KEY"),
        ("cell_id", "INTEGER NOT NULL REFERENCES cells(id)"),
        ("round", "INTEGER NOT NULL"),
        ("started_at", "TEXT NOT NULL"),
        ("requests", "INTEGER NOT NULL"),
        ("duration_s", "REAL NOT NULL"),
        ("throughput_rps", "REAL NOT NULL"),
        ("bytes", "INTEGER NOT NULL"),
        *(
            (f"latency_{k}_ms", "REAL")
            for k in ("min", "mean", "stdev", "p50", "p90", "p99", "p999", "max")
        ),
        ("latency_percentiles", "TEXT NOT NULL"),
        *(
            (f"errors_{k}", "INTEGER NOT NULL")
            for k in ("connect", "read", "write", "timeout", "non_2xx", "other")
        ),
        ("server_cpu_pct", "REAL"),
        ("server_rss_mb", "REAL"),
        ("server_processes", "INTEGER"),
        ("load_cpu_pct", "REAL"),
        ("server_steal_pct", "REAL"),
        ("load_steal_pct", "REAL"),
        ("db_sessions_peak", "INTEGER"),
        ("pool_active_peak", "INTEGER"),
        ("cache_hits", "INTEGER"),
        ("cache_misses", "INTEGER"),
    ],
}


def _migrate(db: sqlite3.Connection) -> None:
    for table, columns in TABLES.items():
        body = ", ".join(f"{name} {kind}" for name, kind in columns)
        db.execute(f"CREATE TABLE IF NOT EXISTS {table} ({body})")
        present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        for name, kind in columns:
            if name not in present:
                # SQLite cannot add a NOT NULL column without a default: added ones are nullable.
                db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind.replace(' NOT NULL', '')}")
    db.execute("CREATE UNIQUE INDEX IF NOT EXISTS cells_run_key ON cells (run_id, key)")


@dataclass(frozen=True)
class TrialExtras:
    """What some scenarios add to a trial: database sessions in use, cache hits."""

    db_sessions_peak: int | None = None
    pool_active_peak: int | None = None
    cache_hits: int | None = None
    cache_misses: int | None = None


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


class Store:
    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.path = path
        if not create and not path.exists():
            raise UserError(
                f"results store '{path}' does not exist; run 'benchlab run' first "
                "or pass --results PATH"
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # autocommit: each statement is durable when it returns (a crash loses nothing).
            self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA journal_mode=WAL")
            _migrate(self.db)
        except (sqlite3.Error, OSError) as exc:
            raise UserError(f"cannot open results store '{path}': {exc}") from None

    def close(self) -> None:
        self.db.close()

    # --- writing --------------------------------------------------------------------------

    def create_run(self, info: RunInfo) -> str:
        run_id = datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:4]
        self.db.execute(
            "INSERT INTO runs (id, recipe_path, recipe_name, recipe_text, question, command,"
            " started_at, status, git_commit, server_cores, load_cores, machine)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)",
            (
                run_id,
                info.recipe_path,
                info.recipe_name,
                info.recipe_text,
                info.question,
                info.command,
                now(),
                info.git_commit,
                json.dumps(info.server_cores),
                json.dumps(info.load_cores),
                json.dumps(info.machine),
            ),
        )
        return run_id

    def add_cell(
        self,
        run_id: str,
        position: int,
        cell: Cell,
        label: str,
        capacity: int | None = None,
        db_pool_limit: int | None = None,
    ) -> int:
        cursor = self.db.execute(
            "INSERT INTO cells (run_id, position, key, stack, stack_label, scenario, tool,"
            " connections, threads, duration_s, workers, status, flavour, server_threads,"
            " pool_size, ms, point, capacity, db_pool_limit)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                position,
                cell.key,
                cell.stack,
                label,
                cell.scenario,
                cell.tool,
                cell.connections,
                cell.threads,
                cell.duration,
                cell.workers,
                cell.flavour,
                cell.server_threads,
                cell.pool_size,
                cell.ms,
                cell.point,
                capacity,
                db_pool_limit,
            ),
        )
        return int(cursor.lastrowid or 0)

    def set_run_services(self, run_id: str, services: dict, database: str | None) -> None:
        self.db.execute(
            "UPDATE runs SET services = ?, database = ? WHERE id = ?",
            (json.dumps(services), database, run_id),
        )

    def mark_cell(self, cell_id: int, status: str, reason: str | None = None) -> None:
        self.db.execute(
            "UPDATE cells SET status = ?, reason = ? WHERE id = ?", (status, reason, cell_id)
        )

    def add_trial(
        self,
        cell_id: int,
        round_index: int,
        started_at: str,
        load: LoadResult,
        server: TreeUsage,
        steal: CoreSteal,
        extras: TrialExtras | None = None,
    ) -> None:
        extras = extras or TrialExtras()
        lat, err = load.latency, load.errors
        self.db.execute(
            "INSERT INTO trials (cell_id, round, started_at, requests, duration_s, throughput_rps,"
            " bytes, latency_min_ms, latency_mean_ms, latency_stdev_ms, latency_p50_ms,"
            " latency_p90_ms, latency_p99_ms, latency_p999_ms, latency_max_ms,"
            " latency_percentiles, errors_connect, errors_read, errors_write, errors_timeout,"
            " errors_non_2xx, errors_other, server_cpu_pct, server_rss_mb, server_processes,"
            " load_cpu_pct,"
            " server_steal_pct, load_steal_pct, db_sessions_peak, pool_active_peak, cache_hits,"
            " cache_misses)"
            f" VALUES ({', '.join('?' * 32)})",
            (
                cell_id,
                round_index,
                started_at,
                load.requests,
                load.duration_s,
                load.throughput_rps,
                load.bytes,
                lat.min,
                lat.mean,
                lat.stdev,
                lat.p50,
                lat.p90,
                lat.p99,
                lat.p999,
                lat.max,
                json.dumps(lat.percentiles),
                err.connect,
                err.read,
                err.write,
                err.timeout,
                err.non_2xx,
                err.other,
                server.cpu_pct,
                server.peak_rss_mb,
                server.processes,
                load.load_cpu_pct,
                steal.server_pct,
                steal.load_pct,
                extras.db_sessions_peak,
                extras.pool_active_peak,
                extras.cache_hits,
                extras.cache_misses,
            ),
        )

    def finish_run(self, run_id: str, status: str, reason: str | None = None) -> None:
        self.db.execute(
            "UPDATE runs SET status = ?, status_reason = ?, ended_at = ? WHERE id = ?",
            (status, reason, now(), run_id),
        )

    # --- reading --------------------------------------------------------------------------

    def run(self, run_id: str | None) -> sqlite3.Row:
        if run_id is None:
            row = self.db.execute(
                "SELECT * FROM runs ORDER BY started_at DESC, id DESC LIMIT 1"
            ).fetchone()
            if row is None:
                raise UserError(f"results store '{self.path}' holds no run yet; run 'benchlab run'")
            return row
        row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            matches = self.db.execute(
                "SELECT * FROM runs WHERE id LIKE ? ORDER BY id", (f"{run_id}%",)
            ).fetchall()
            if len(matches) == 1:
                return matches[0]
            recent = [r["id"] for r in self.runs()[:5]]
            raise UserError(
                f"no run '{run_id}' in '{self.path}'; recent runs: {', '.join(recent) or 'none'}"
            )
        return row

    def runs(self) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM runs ORDER BY started_at DESC, id DESC").fetchall()

    def cells(self, run_id: str) -> list[sqlite3.Row]:
        return self.db.execute(
            "SELECT * FROM cells WHERE run_id = ? ORDER BY position", (run_id,)
        ).fetchall()

    def trials(self, cell_id: int) -> list[sqlite3.Row]:
        return self.db.execute(
            "SELECT * FROM trials WHERE cell_id = ? ORDER BY round", (cell_id,)
        ).fetchall()
