"""The one result type every load tool adapter returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Errors:
    connect: int = 0
    read: int = 0
    write: int = 0
    timeout: int = 0
    non_2xx: int = 0
    other: int = 0  # failures the tool does not classify (siege's failed transactions)

    @property
    def total(self) -> int:
        return self.connect + self.read + self.write + self.timeout + self.non_2xx + self.other


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
    requests: int
    duration_s: float
    bytes: int
    latency: Latency
    errors: Errors
    load_cpu_pct: float | None = None  # of one core; the tool's own CPU use

    @property
    def throughput_rps(self) -> float:
        return self.requests / self.duration_s if self.duration_s > 0 else 0.0

    def to_dict(self) -> dict:
        data = asdict(self)
        data["throughput_rps"] = self.throughput_rps
        return data
