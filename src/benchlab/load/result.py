"""The one result type every load tool adapter returns."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from benchlab.core.latency_timeline import Timeline
from benchlab.core.request_errors import Errors


@dataclass(frozen=True)
class Latency:
    """Milliseconds. None where the tool cannot report a figure: never invented."""

    min: float | None
    mean: float | None
    stdev: float | None
    p50: float | None
    p90: float | None
    p99: float | None
    p999: float | None
    max: float | None
    percentiles: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class LoadResult:
    tool: str
    requests: int  # responses received, whatever their status
    duration_s: float
    bytes: int
    latency: Latency
    errors: Errors
    load_cpu_pct: float | None = None  # of one core; the tool's own CPU use
    # The whole latency histogram (HdrHistogram V2, base64, microseconds); None where the
    # tool gives no per-request or per-bucket latencies.
    histogram: str | None = None
    # Fixed-rate load only: the rate asked for, the rate the generator really sent, and the
    # longest a request waited past its due time (already added to its latency).
    target_rate: float | None = None
    sent_rate: float | None = None
    schedule_lag_ms: float | None = None
    # Median latency of the first and the last quarter of the requests (by send order): a
    # queue that grows through a trial shows as last >> first.
    latency_first_ms: float | None = None
    latency_last_ms: float | None = None
    # p99 of each consecutive window of about 2 s (request_records.WINDOW_S, by send time):
    # one stall decides one window's p99, not the trial's (DESIGN: judge over several
    # windows). Stored before issue 38: four windows, one per quarter.
    window_p99_ms: tuple[float, ...] = ()
    # A mix of requests, by "METHOD path": each request's own count, errors and latency
    # (tools that record every request: vegeta).
    parts: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    # Fixed-rate load read request by request (vegeta): its latency, answers and failures
    # second by second.
    timeline: Timeline | None = None

    @property
    def throughput_rps(self) -> float:
        return self.requests / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def successes(self) -> int:
        return max(self.requests - self.errors.non_2xx, 0)

    @property
    def achieved_rps(self) -> float:
        """Successful responses per second."""
        return self.successes / self.duration_s if self.duration_s > 0 else 0.0


@dataclass(frozen=True)
class LoadShare:
    """One generator's part of a trial."""

    host: str
    machine: str  # whose cores: generators on one machine share them
    cores: tuple[int, ...]
    connections: int
    rate: float | None
    result: LoadResult


def busiest_machine(shares: list[LoadShare]) -> float | None:
    """The generators' CPU where it was tightest: summed over the generators that share a
    machine's cores, the most of any machine (100 = one core busy)."""
    used: dict[tuple[str, tuple[int, ...]], float] = defaultdict(float)
    for share in shares:
        if share.result.load_cpu_pct is None:
            return None
        used[(share.machine, share.cores)] += share.result.load_cpu_pct
    return max(used.values()) if used else None
