"""Every figure benchlab reports, defined once: its name, unit, which direction is better,
how it is written, where a cell summary keeps it, and where its value comes from (`Source`:
the trial column or derivation it reads, and how a cell's trials combine into one figure).

A source names a trial attribute of the store's `TrialRecord` (a column, or a derivation of
columns such as `rate_ratio`); `analysis.combine` makes every cell's figures by these sources,
and the summary, the verdicts, the JSON, CSV, Markdown and terminal tables, the HTML page and
the charts read the figures by this registry; none of them spells a figure out again.
A figure is one of three kinds:

- an estimate: a median over a cell's trials with its interval (throughput, capacity, CPU);
- a value: one number per cell (a percentile of the merged histogram, peak memory, a count);
- a ratio: a ratio of two cells' estimates with its interval (relative to the baseline).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from benchlab.core.modes import Mode


class Better(Enum):
    HIGHER = "higher"
    LOWER = "lower"
    NEITHER = "neither"


# What a rate counts a second: an HTTP scenario's requests, a WebSocket scenario's messages
# (http/scenarios.py, Scenario.rate_unit, says which a scenario's is). A rate figure declares
# REQ_S, the HTTP unit, and is shown in the unit of its cell's scenario (Figure.unit_in).
REQ_S, MSG_S = "req/s", "msg/s"


class Kind(Enum):
    ESTIMATE = "estimate"
    VALUE = "value"
    RATIO = "ratio"


def _grouped(digits: int) -> Callable[[float], str]:
    return lambda value: f"{value:,.{digits}f}"


WHOLE = _grouped(0)


def ms_text(value: float) -> str:
    """Milliseconds with about three significant digits."""
    if value < 10:
        return f"{value:.2f}"
    return f"{value:.1f}" if value < 100 else f"{value:,.0f}"


def rate_text(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def compact_number(value: float) -> str:
    """About three significant digits, thousands as k and millions as M: 4,123 · 94.1k · 217k;
    for narrow tables and chart labels, where the interval is wider than the digits dropped."""
    size = abs(value)
    if size >= 1e6:
        return f"{value / 1e6:.3g}M"
    if size >= 1e4:
        return f"{value / 1e3:.3g}k"
    if size >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


class Combine(Enum):
    """How a cell's trials make one figure."""

    MEDIAN = "median over the trials, with its interval"
    PEAK = "the highest of the trials"
    SUM = "the sum over the trials"
    # The trials' histograms merged; a tool without histograms: the trials' own percentiles
    # combined by the source's `fallback`.
    HISTOGRAM = "from the merged histogram of the trials"
    REPLICATES = "median over the capacity search's replicates, with its interval"
    CELL = "stored once for the cell"
    DERIVED = "derived from the trials or from the cell's other figures"


# (the cell's trials, the figures combined before this one) -> the figure
Derive = Callable[[Sequence[Any], Mapping[str, Any]], float | None]
FIXED_RATE = frozenset(m for m in Mode if m.fixed_rate)


@dataclass(frozen=True)
class Source:
    """Where a figure's value comes from."""

    combine: Combine
    # The TrialRecord attribute (CapacityRecord's for REPLICATES, the cells column for CELL).
    attr: str | None = None
    modes: frozenset[Mode] | None = None  # the modes whose cells have it; None: every mode
    per: int | None = None  # SUM: the total divided by this (bytes into MB)
    fallback: Combine | None = None  # HISTOGRAM without histograms: MEDIAN or PEAK
    derive: Derive | None = None  # DERIVED
    # From the cell's fixed-rate trials whatever its mode: ws-echo runs one each round beside
    # an [slo]'s search, whose trials at the capacity are the cell's others.
    fixed_rate: bool = False

    def applies(self, mode: Mode) -> bool:
        return self.modes is None or mode in self.modes


def _median(attr: str, modes: frozenset[Mode] | None = None) -> Source:
    return Source(Combine.MEDIAN, attr, modes)


def _peak(attr: str, modes: frozenset[Mode] | None = None) -> Source:
    return Source(Combine.PEAK, attr, modes)


@dataclass(frozen=True)
class Figure:
    key: str  # the name in code, the JSON key (within `group`), the CSV column stem
    label: str  # the column title in tables
    unit: str
    better: Better
    kind: Kind
    description: str  # one line: what it is, for table hints and "how to read this"
    text: Callable[[float], str] = WHOLE
    group: str | None = None  # JSON: nested under this key (latency_ms: {p50: ...})
    brief: bool = False  # one of the few columns of the default terminal table
    # The least a value must be (better: higher) for what it measures to count: the rate
    # ratio's 0.95 ("delivered"). None: the figure has no such line.
    threshold: float | None = None
    # None: made across cells (a ratio to another cell's, in `analysis.relative`).
    source: Source | None = None
    # Its interval shown in the brief table even where the cells are not ranked by it.
    spread: bool = False
    # Other names a threshold may call it by (`--threshold 'rps>=500'`), beside its key.
    names: tuple[str, ...] = ()
    # A share of 1 shown as a percentage (its text multiplies by 100): a threshold's "%" too.
    share: bool = False

    @property
    def is_rate(self) -> bool:
        """A count a second: shown in its scenario's rate unit (requests or messages)."""
        return self.unit == REQ_S

    def unit_in(self, rate_unit: str) -> str:
        """Its unit in a scenario whose rates count `rate_unit` (Scenario.rate_unit)."""
        return rate_unit if self.is_rate else self.unit

    def title_in(self, rate_unit: str) -> str:
        return f"{self.label} {self.unit_in(rate_unit)}".strip()

    def format(self, value: float | None) -> str:
        return "–" if value is None else self.text(value)

    @property
    def title(self) -> str:
        return self.title_in(REQ_S)

    def reaches(self, value: float, of: float = 1.0) -> bool:
        """Whether `value` reaches the threshold (times `of`: a share of a whole)."""
        if self.threshold is None or self.better is not Better.HIGHER:
            raise ValueError(f"{self.key} has no threshold to reach")
        return value >= self.threshold * of

    def within(self, value: float) -> bool:
        """Whether a lower-is-better `value` stays within the threshold (a count gap)."""
        if self.threshold is None or self.better is not Better.LOWER:
            raise ValueError(f"{self.key} has no threshold to stay within")
        return value <= self.threshold

    def wins(self, ratio: float) -> bool:
        """Whether a/b = `ratio` means a is better than b."""
        return ratio > 1 if self.better is Better.HIGHER else ratio < 1


def _figure(
    key: str,
    label: str,
    unit: str,
    better: Better,
    kind: Kind,
    description: str,
    text: Callable[[float], str] = WHOLE,
    group: str | None = None,
    brief: bool = False,
    threshold: float | None = None,
    source: Source | None = None,
    spread: bool = False,
    names: tuple[str, ...] = (),
    share: bool = False,
) -> Figure:
    figure = Figure(
        key,
        label,
        unit,
        better,
        kind,
        description,
        text,
        group,
        brief,
        threshold,
        source,
        spread,
        names,
        share,
    )
    FIGURES[key] = figure
    return figure


FIGURES: dict[str, Figure] = {}
E, V, R = Kind.ESTIMATE, Kind.VALUE, Kind.RATIO
UP, DOWN, FLAT = Better.HIGHER, Better.LOWER, Better.NEITHER

# --- derivations (Source.derive): from a cell's trials, or its figures combined before ------


def _requests_per_cpu_second(trials: Sequence[Any], figures: Mapping[str, Any]) -> float | None:
    """From the CPU per request; a run without counted CPU: from the sampled CPU share."""
    cpu, throughput, server = (
        figures.get(f.key) for f in (CPU_PER_REQUEST, THROUGHPUT, SERVER_CPU)
    )
    if cpu and cpu.median > 0:
        return float(1e6 / cpu.median)
    if throughput and server and server.median > 0:
        return float(throughput.median / (server.median / 100))
    return None


def _hit_share(trials: Sequence[Any], figures: Mapping[str, Any]) -> float | None:
    """Hits ÷ lookups over every trial (None: the scenario uses no cache)."""
    if all(t.cache_hits is None for t in trials):
        return None
    hits = sum(t.cache_hits or 0 for t in trials)
    misses = sum(t.cache_misses or 0 for t in trials)
    return hits / (hits + misses) if hits + misses else None


def _gil_wait_share(trials: Sequence[Any], figures: Mapping[str, Any]) -> float | None:
    """The server's own count over every trial: its threads' wait for the GIL ÷ their time
    with a request (None: a server that keeps no such count)."""
    counted = [t for t in trials if t.threads_busy_us is not None and t.gil_wait_us is not None]
    busy = sum(t.threads_busy_us for t in counted)
    return sum(t.gil_wait_us for t in counted) / busy if busy > 0 else None


def _bytes_per_response(trials: Sequence[Any], figures: Mapping[str, Any]) -> float | None:
    """Bytes received ÷ responses, over every trial: what one answer costs the network."""
    requests = sum(t.requests or 0 for t in trials)
    received = sum(t.bytes or 0 for t in trials)
    return received / requests if requests and received else None


# --- load and what it achieved ---------------------------------------------------------------
THROUGHPUT = _figure(
    "throughput_rps", "throughput", REQ_S, UP, E,
    "responses per second: median over trials [interval]", rate_text, brief=True,
    source=_median("throughput_rps"), names=("rps", "throughput"),
)  # fmt: skip
TARGET_RATE = _figure(
    "target_rate", "target", REQ_S, FLAT, V,
    "the fixed rate requests were sent at (rate cells)", rate_text,
    source=Source(Combine.CELL, "target_rate", FIXED_RATE),
)  # fmt: skip
ACHIEVED = _figure(
    "achieved_rps", "achieved", REQ_S, UP, E,
    "successful responses per second at the fixed rate", rate_text,
    source=_median("achieved_rps", FIXED_RATE),
)  # fmt: skip
_DELIVERED = 0.95  # a fixed rate below this share of its target did not get its load
RATE_RATIO = _figure(
    "rate_ratio", "rate ratio", "", UP, E,
    f"achieved ÷ target: under {_DELIVERED} the offered load was not delivered", _grouped(2),
    threshold=_DELIVERED, source=_median("rate_ratio", FIXED_RATE),
)  # fmt: skip
SENT_RATE = _figure(
    "sent_rate", "sent", REQ_S, FLAT, E,
    "requests the generator actually sent per second", rate_text,
    source=_median("sent_rate", FIXED_RATE),
)  # fmt: skip
SCHEDULE_LAG = _figure(
    "schedule_lag_ms", "lag", "ms", DOWN, V,
    "the most a request was sent after it was due (added to its latency)", ms_text,
    source=_peak("schedule_lag_ms", FIXED_RATE),
)  # fmt: skip
CAPACITY = _figure(
    "capacity_rps", "capacity", REQ_S, UP, E,
    "the highest fixed rate that held the SLO: median over search replicates [interval]",
    rate_text, brief=True,
    source=Source(Combine.REPLICATES, "capacity_rps", frozenset({Mode.SLO})),
    names=("capacity",),
)  # fmt: skip
CLOSED_CAPACITY = _figure(
    "closed_capacity_rps", "closed-loop", REQ_S, UP, V,
    "throughput under a closed loop at the same connections: the search's upper bound",
    rate_text, source=Source(Combine.CELL, "closed_capacity_rps", FIXED_RATE),
)  # fmt: skip
REQUESTS = _figure(
    "requests", "requests", "", FLAT, V, "requests completed, all trials",
    source=Source(Combine.SUM, "requests"),
)  # fmt: skip
ERROR_RATE = _figure(
    "error_pct", "error rate", "%", DOWN, E,
    "failed requests (every kind of error) ÷ requests sent, in %: median over trials "
    "[interval]", lambda v: f"{v:.2f}", source=_median("error_pct"), names=("errors",),
)  # fmt: skip
TRANSFER = _figure(
    "transfer_mb", "transfer", "MB", FLAT, V, "bytes received, all trials", _grouped(1),
    source=Source(Combine.SUM, "bytes", per=2**20),
)  # fmt: skip

BYTES_PER_RESPONSE = _figure(
    "bytes_per_response", "bytes/resp", "B", DOWN, V,
    "bytes received per response as the tool counts them (wrk, ab, h2load: headers too; "
    "hey, siege: bodies; vegeta keeps none): compare it within one tool",
    source=Source(Combine.DERIVED, derive=_bytes_per_response),
)  # fmt: skip

COMPRESSION = _figure(
    "compression_ratio", "gzip", "×", UP, V,
    "a compressed answer: the document's size ÷ the size that came (json-gzip)", _grouped(2),
    source=Source(Combine.CELL, "compression_ratio"),
)  # fmt: skip

# --- latency: percentiles of the merged histogram of every trial ------------------------------
LATENCY_GROUP = "latency_ms"


def _latency(
    key: str, label: str, description: str, brief: bool = False,
    fallback: Combine = Combine.MEDIAN, names: tuple[str, ...] = (),
) -> Figure:  # fmt: skip
    """A latency figure (ms, lower is better), read from the trials' `latency_<key>_ms`."""
    source = Source(Combine.HISTOGRAM, f"latency_{key}_ms", fallback=fallback)
    return _figure(
        key, label, "ms", DOWN, V, description, ms_text, LATENCY_GROUP, brief, source=source,
        names=names,
    )  # fmt: skip


LAT_MEAN = _latency("mean", "avg", "mean latency", names=("avg",))
P50 = _latency("p50", "p50", "median latency", brief=True, names=("median",))
P90 = _latency("p90", "p90", "90th percentile latency")
P99 = _latency("p99", "p99", "99th percentile latency", brief=True)
P999 = _latency("p999", "p99.9", "99.9th percentile latency", names=("p99.9",))
LAT_MAX = _latency("max", "max", "the slowest request", fallback=Combine.PEAK)
PERCENTILES = (P50, P90, P99, P999)
QUANTILES = {P50.key: 50.0, P90.key: 90.0, P99.key: 99.0, P999.key: 99.9}

# --- cost -------------------------------------------------------------------------------------
CPU_PER_REQUEST = _figure(
    "cpu_us_per_request", "CPU/req", "µs", DOWN, E,
    "server CPU time per successful response, counted over its whole process tree",
    WHOLE, brief=True, source=_median("cpu_us_per_request"), names=("cpu",),
)  # fmt: skip
SERVER_CPU = _figure(
    "server_cpu_pct", "server CPU", "%", FLAT, E, "100 = one core busy for the whole trial",
    source=_median("server_cpu_pct"),
)  # fmt: skip
SERVER_RSS = _figure(
    "server_rss_mb", "RSS", "MB", DOWN, V,
    "peak resident memory of the server's whole process tree", _grouped(1),
    source=_peak("server_rss_mb"), names=("rss",),
)  # fmt: skip
RSS_GROWTH = _figure(
    "rss_growth_mb", "RSS growth", "MB", DOWN, E,
    "how much the server's resident memory grew during a trial (the median of its last fifth "
    "less that of its first)", _grouped(1), source=_median("rss_growth_mb"),
)  # fmt: skip
RSS_SLOPE = _figure(
    "rss_slope_mb_min", "RSS slope", "MB/min", DOWN, E,
    "how fast the server's resident memory grew during a trial (a line through the medians of "
    "five stretches)", _grouped(2), source=_median("rss_slope_mb_min"),
)  # fmt: skip
RSS_SLOPE_LOW = _figure(
    "rss_slope_low_mb_min", "RSS slope, low", "MB/min", DOWN, E,
    "the low end of the 95% interval of that slope, in a trial", _grouped(2),
    source=_median("rss_slope_low_mb_min"),
)  # fmt: skip
LOAD_CPU = _figure(
    "load_cpu_pct", "load CPU", "%", FLAT, E, "the load generator's own CPU (100 = one core)",
    source=_median("load_cpu_pct"),
)  # fmt: skip
STEAL = _figure(
    "server_steal_pct", "steal", "%", DOWN, E,
    "CPU time the hypervisor took from the server's cores", source=_median("server_steal_pct"),
)  # fmt: skip
GIL_WAIT = _figure(
    "gil_wait_share", "GIL wait", "%", DOWN, V,
    "the server's own count (granian's metrics): of its threads' time with a request, the "
    "share spent waiting for the GIL", lambda v: f"{100 * v:.0f}",
    source=Source(Combine.DERIVED, derive=_gil_wait_share), share=True,
)  # fmt: skip
RPS_PER_CPU = _figure(
    "rps_per_cpu_s", "req/CPU-s", "", UP, V, "requests served per second of server CPU",
    source=Source(Combine.DERIVED, derive=_requests_per_cpu_second),
)  # fmt: skip

# --- services ---------------------------------------------------------------------------------
DB_SESSIONS = _figure(
    "db_sessions_peak", "#DB", "", FLAT, V, "peak database sessions held by the server",
    source=_peak("db_sessions_peak"),
)  # fmt: skip
POOL_ACTIVE = _figure(
    "pool_active_peak", "pool active", "", FLAT, V, "peak server connections pgbouncer handed out",
    source=_peak("pool_active_peak"),
)  # fmt: skip
CACHE_HITS = _figure(
    "cache_hit_ratio", "cache hit", "%", UP, V, "Redis hits ÷ lookups",
    lambda v: f"{100 * v:.1f}",
    source=Source(Combine.DERIVED, derive=_hit_share), share=True,
)  # fmt: skip

# --- WebSocket (the ws-* scenarios; runner/websocket.py) ---------------------------------
CONNECTIONS_HELD = _figure(
    "ws_connections_held", "held", "conns", UP, E,
    "idle WebSocket connections held when the steps stopped (refused, stalled, dropped, the "
    "memory limit or the last step): median over trials [interval]", WHOLE,
    source=_median("ws_connections_held"),
)  # fmt: skip
RSS_PER_1000 = _figure(
    "ws_rss_per_1000_mb", "RSS/1k conns", "MB", DOWN, E,
    "the server's resident memory per 1,000 idle connections: the slope over the hold's "
    "steps, median over trials [interval]", _grouped(1), brief=True,
    source=_median("ws_rss_per_1000_mb"), spread=True,
)  # fmt: skip
ECHO_P50 = _figure(
    "ws_echo_p50_ms", "echo p50", "ms", DOWN, E,
    "median round trip of a message at the fixed rate, from its due time: median over trials",
    ms_text, source=Source(Combine.MEDIAN, "ws_echo_p50_ms", fixed_rate=True),
)  # fmt: skip
ECHO_P99 = _figure(
    "ws_echo_p99_ms", "echo p99", "ms", DOWN, E,
    "99th percentile round trip at the fixed rate, from each message's due time: median over "
    "trials [interval]", ms_text,
    source=Source(Combine.MEDIAN, "ws_echo_p99_ms", fixed_rate=True),
    # Shown beside an [slo]'s capacity too: the fixed-rate trial runs in every round.
    brief=True, spread=True,
)  # fmt: skip
BROADCAST_P99 = _figure(
    "ws_broadcast_p99_ms", "broadcast p99", "ms", DOWN, E,
    "99th percentile over rounds of the time from a post to the last of its receivers: "
    "median over trials [interval]", ms_text, source=_median("ws_broadcast_p99_ms"),
)  # fmt: skip


def _count_pairs(trial: Any) -> list[tuple[int | None, int | None]]:
    """A WebSocket trial's counts, the tool's beside the server's own: the hold's open
    connections against the kernel's established ones at its last step; the echo's messages
    sent and echoes read against the frames the server read and wrote; the broadcast's
    posts and deliveries against the server's."""
    if trial.ws_hold_steps:
        last = (json.loads(trial.ws_hold_steps) or [{}])[-1]
        return [(last.get("opened"), last.get("established"))]
    if trial.ws_broadcast_p99_ms is not None:
        return [
            (trial.ws_tool_sent, trial.ws_server_frames_in),
            (trial.requests, trial.ws_server_deliveries),
        ]
    return [(trial.ws_tool_sent, trial.ws_server_frames_in),
            (trial.requests, trial.ws_server_frames_out)]  # fmt: skip


def _count_gap(trials: Sequence[Any], figures: Mapping[str, Any]) -> float | None:
    """The largest gap between the tool's count and the server's, as a share of the larger,
    summed over the trials; a broadcast's missed or repeated deliveries count as a gap too
    (None: no WebSocket trial, or the server's counters were not read)."""
    sums: dict[int, list[int]] = {}
    for trial in trials:
        if trial.ws_tool_sent is None and not trial.ws_hold_steps:
            return None
        for index, (tool, server) in enumerate(_count_pairs(trial)):
            if tool is None or server is None:
                return None
            total = sums.setdefault(index, [0, 0])
            total[0], total[1] = total[0] + tool, total[1] + server
    gaps = [abs(tool - server) / max(tool, server, 1) for tool, server in sums.values()]
    delivered = sum(t.requests for t in trials if t.ws_broadcast_p99_ms is not None)
    wrong = sum((t.errors_read or 0) + (t.errors_other or 0)
                for t in trials if t.ws_broadcast_p99_ms is not None)  # fmt: skip
    if delivered:
        gaps.append(wrong / delivered)
    return max(gaps) if gaps else None


WS_COUNT_GAP = _figure(
    "ws_count_gap", "count gap", "%", DOWN, V,
    "the WebSocket tool's counts against the server's own (messages, echoes, posts, "
    "deliveries, open connections), the largest gap over the trials: over 0.1% the figures "
    "are not of the load the server saw", lambda v: f"{100 * v:.2f}", threshold=0.001,
    source=Source(Combine.DERIVED, derive=_count_gap), share=True,
)  # fmt: skip
WS_LATE_SHARE = _figure(
    "ws_late_share", "sent late", "%", DOWN, V,
    "the share of echo messages JMeter sent more than a period after they were due, in the "
    "worst trial: over 0.1% its schedule, not the server, set the pace", lambda v: f"{100 * v:.2f}",
    threshold=0.001, source=_peak("ws_late_share"), share=True,
)  # fmt: skip
WEBSOCKET_FIGURES = (
    CONNECTIONS_HELD, RSS_PER_1000, ECHO_P50, ECHO_P99, BROADCAST_P99, WS_COUNT_GAP,
    WS_LATE_SHARE,
)  # fmt: skip

# --- relative to other cells ------------------------------------------------------------------
RELATIVE = _figure(
    "relative", "vs baseline", "", FLAT, R,
    "the ranking figure ÷ the baseline's at the same grid point [interval]", _grouped(2),
)  # fmt: skip
CEILING = _figure(
    "ceiling_fraction", "of ceiling", "%", FLAT, R,
    "throughput ÷ nginx-static's at the same grid point", lambda v: f"{100 * v:.0f}",
    share=True,
)  # fmt: skip
TO_SENTINEL = _figure(
    "to_sentinel", "÷ sentinel", "", FLAT, R,
    "the ranking figure ÷ the sentinel's at the same grid point, round by round [interval]",
    _grouped(3),
)  # fmt: skip


# What a cell is ranked, compared and divided by, per mode: what the mode measures.
RANK_BY_MODE = {Mode.CLOSED: THROUGHPUT, Mode.RATE: P99, Mode.SLO: CAPACITY}
RANKABLE = (THROUGHPUT, CAPACITY, P99, CPU_PER_REQUEST)
# The figures a cell may be ranked by: a recipe's rank_by choices and the WebSocket
# scenarios' own (http/scenarios.py); a cell keeps its samples of each, round by round.
RANKED = (*RANKABLE, CONNECTIONS_HELD, ECHO_P99, BROADCAST_P99)


def of_record(record: Any, mode: Mode, replicate: bool = False) -> dict[Figure, float | None]:
    """The figures one stored record of a cell of `mode` holds, by this registry: a trial's
    (each figure whose source reads a trial attribute: a median's, a peak's, a percentile's,
    a sum's) or, `replicate`, a capacity search replicate's; in the registry's order."""
    held: dict[Figure, float | None] = {}
    for figure in FIGURES.values():
        source = figure.source
        if source is None or source.attr is None or not source.applies(mode):
            continue
        if source.combine in (Combine.CELL, Combine.DERIVED):
            continue
        if (source.combine is Combine.REPLICATES) is not replicate:
            continue
        value = getattr(record, source.attr)
        held[figure] = value / source.per if source.per and value is not None else value
    return held


def rank_figure(mode: Mode, override: str | None = None) -> Figure:
    if override is not None:
        return FIGURES[override]
    return RANK_BY_MODE[mode]
