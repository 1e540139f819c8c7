"""The results store: SQLite, one row per run, cell and trial, each written as it happens.
records.py declares the rows (one dataclass each: a column is added in one place);
database.py makes the tables from them, migrates older files and reads and writes them."""

from benchlab.store.database import (
    DEFAULT_RESULTS,
    SCHEMA_VERSION,
    TABLES,
    Store,
    now,
)
from benchlab.store.records import (
    CELL_CHECKED,
    CELL_SHOWN,
    LATENCY_KEYS,
    CapacityRecord,
    CellRecord,
    HostRecord,
    LoadShareRecord,
    RoundMeasured,
    RunInfo,
    RunRecord,
    TrialRecord,
)

__all__ = [
    "CELL_CHECKED", "CELL_SHOWN", "DEFAULT_RESULTS", "LATENCY_KEYS", "SCHEMA_VERSION", "TABLES",
    "CapacityRecord", "CellRecord", "HostRecord", "LoadShareRecord", "RoundMeasured", "RunInfo",
    "RunRecord", "Store", "TrialRecord", "now",
]  # fmt: skip
