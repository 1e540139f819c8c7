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
    ERROR_KINDS,
    CapacityRecord,
    CellRecord,
    HostRecord,
    LoadShareRecord,
    RoundMeasured,
    RunInfo,
    RunRecord,
    TrialExtras,
    TrialRecord,
    trial_record,
)

__all__ = [
    "CELL_CHECKED", "CELL_SHOWN", "DEFAULT_RESULTS", "ERROR_KINDS", "SCHEMA_VERSION", "TABLES",
    "CapacityRecord", "CellRecord", "HostRecord", "LoadShareRecord", "RoundMeasured", "RunInfo",
    "RunRecord", "Store", "TrialExtras", "TrialRecord", "now", "trial_record",
]  # fmt: skip
