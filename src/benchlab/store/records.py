"""The results store's records: a run (`RunRecord`), a cell (`CellRecord`), a trial row
(`TrialRecord`), a capacity estimate (`CapacityRecord`), a load host's share of a trial and a
host of a run, each a dataclass whose fields are its table's columns (store/database.py makes
the tables, inserts and reads from them), so a column is added in one place."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from benchlab.core.latency_timeline import Timeline
from benchlab.core.modes import Mode
from benchlab.core.request_errors import ERROR_KINDS, Errors

# A cell's status once `tune --check-only` found its stack's answer right (nothing measured).
CELL_CHECKED = "checked"
LATENCY_KEYS = ("min", "mean", "stdev", "p50", "p90", "p99", "p999", "max")
# The trial columns that hold JSON text (a trial's JSON gives them decoded).
TRIAL_JSON_COLUMNS = (
    "latency_percentiles", "window_p99_ms", "mix_parts", "ws_hold_steps", "latency_timeline",
)  # fmt: skip


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
    # Schema 9: a fixed-rate trial's latency over time (vegeta's), Timeline.stored: JSON of its
    # step, then per step p50, p99, achieved rate and errors (about 1.3 KB for 60 s).
    latency_timeline: str | None = None

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
        if (timeline := self.timeline) is not None:
            data["latency_timeline"] = timeline.to_json()  # with its steps' starts
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
    def timeline(self) -> Timeline | None:
        """Its latency over time; None: not a fixed-rate trial read request by request, or
        stored before schema 9."""
        return (
            Timeline.from_json(json.loads(self.latency_timeline)) if self.latency_timeline else None
        )

    @property
    def windows_p99(self) -> list[float]:
        return json.loads(self.window_p99_ms) if self.window_p99_ms else []

    @property
    def error_pct(self) -> float:
        attempts = self.requests + self.errors.socket
        return 100.0 * self.errors.total / attempts if attempts else 0.0


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
class RoundMeasured:
    """What one round of a cell stored, as the store keeps it: its trials that are no step
    of something else (a WebSocket echo's fixed-rate trial beside its search), a capacity
    search's replicate; with the figure the cell is ranked by (a registry key) and what its
    rates count (req/s, msg/s), for whoever shows the round."""

    trials: tuple[TrialRecord, ...]
    replicate: CapacityRecord | None
    ranked_by: str
    rate_unit: str


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


def _key(sql: str, default: Any = dataclasses.MISSING) -> Any:
    """A column whose SQL is declared (a key), not made from its field's type."""
    return dataclasses.field(default=default, metadata={"sql": sql})


def _shown(default: Any = dataclasses.MISSING, *, as_: str = "", doc: str = "") -> Any:
    """A cell's field every report shows (its JSON and that JSON's schema, the CSV, the run
    summary's accessors), under its own name or `as_` (the one rename map: `SHOWN`)."""
    return dataclasses.field(default=default, metadata={"shown": as_ or True, "doc": doc})


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
        return {name: plain(getattr(self, name)) for name in shown}


@dataclass(frozen=True, kw_only=True)
class CellRecord:
    """One cell of a run: a row of `cells`, in column order. A field with a default is a
    column a later schema added: an older store lacks it (or holds NULL), and it reads as
    the default."""

    id: int = _key("INTEGER PRIMARY KEY", default=0)  # the store's (0: not stored yet)
    run_id: str = _key("TEXT NOT NULL REFERENCES runs(id)")
    position: int
    key: str = _shown(doc="The cell's identity within its run: scenario, load and parameters.")
    stack: str = _shown()
    stack_label: str = _shown(
        doc="The stack with its launch's settings (workers, threads), as reports name it."
    )
    scenario: str = _shown()
    tool: str = _shown()
    connections: int = _shown()
    threads: int = _shown()
    duration_s: float = _shown()
    workers: int = _shown()
    status: str  # pending, ok, failed
    reason: str | None = _shown(None, doc="Why it failed (null: it did not).")
    flavour: str | None = _shown(None)
    server_threads: int | None = _shown(None)
    pool_size: int | None = _shown(None)
    # The scenario's parameter: db-delay's or sleep's ms, cpu's µs, rows, KiB.
    ms: int | None = _shown(None)
    point: str | None = _shown(None, doc="The recipe's named grid point, if any.")
    # Requests the launch can hold at once; None: no limit of its own. Schema 4: the column
    # 'capacity' of older stores, which keep it (see RENAMED).
    concurrency_limit: int | None = _shown(None)
    # Database sessions the launch can use at most.
    db_pool_limit: int | None = _shown(None)
    mode: Mode = _shown(Mode.CLOSED)  # noqa: RUF009 (a field's declaration); NULL in schema 1
    target_rate: float | None = None  # rate cells: the rate asked for (a share once resolved)
    # Rate cells given as a share of their own closed-loop figure, in %.
    rate_share: float | None = _shown(None, as_="rate_share_pct")
    closed_capacity_rps: float | None = None  # the closed-loop probe of a share or a search
    timeout_s: int | None = None
    # JSON: framework, server, worker model (and a tune's command); None: stored before
    # cells kept them (the report reads them from the catalogue).
    facts: dict[str, Any] | None = None
    # False: a new connection for every request.
    keepalive: bool = _shown(True)
    protocol: str = _shown("h1")  # protocols.PROTOCOLS
    # What verification got: "HTTP/2 over TLSv1.3"; null in a store written before it.
    negotiated: str | None = _shown(None)
    compression_ratio: float | None = None  # a compressed answer: its size ÷ compressed size
    copy: int = 1  # schema 7: 2 for the sentinel's second launch of an A/A pair


# What every report shows of a stored cell: field name -> the name it is shown by (JSON key,
# CSV column, the run summary's accessor), in the record's order. Made from CellRecord's own
# declaration (its `_shown` fields); the JSON writer, its schema, the CSV and the summary's
# accessors read it.
CELL_SHOWN: dict[str, str] = {
    f.name: f.name if f.metadata["shown"] is True else f.metadata["shown"]
    for f in dataclasses.fields(CellRecord)
    if "shown" in f.metadata
}


def plain(value: Any) -> Any:
    """A value as JSON has it (a tuple as a list)."""
    return list(value) if isinstance(value, tuple) else value


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
