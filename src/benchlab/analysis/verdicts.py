"""Validity verdicts: whether a cell's figure can be trusted, each with one plain sentence.

Thresholds are deliberately coarse: a verdict flags a figure to look at, it does not grade it.
"""

from __future__ import annotations

from dataclasses import dataclass

ERROR_RATE = 0.001  # more than 0.1 % of requests failed
CLIENT_SATURATED = 0.90  # the load tool used 90 % of its cores
SERVER_SATURATED = 0.90  # the server used 90 % of its cores
DELIVERED = 0.95  # a fixed-rate cell below 95 % of its target did not get its load
FALLING_BEHIND = 2.0  # latency at the end of a trial at least twice that at its start ...
FALLING_BEHIND_MS = 10.0  # ... and at least this much longer
LAG_MS = 5.0  # the generator sent a request this late ...
LAG_SHARE = 0.25  # ... and that is a quarter of the p99 or more
IDLE_SERVER = 0.50  # the server used under half of its cores ...
FAR_BELOW = 0.50  # ... while throughput stayed under half of what it could hold
CPU_BOUND = 0.80  # a server at 80 % of its cores is busy, not waiting
WAITING_SCENARIOS = ("sleep", "db-delay")
# Where the server alone should be busy: with a database, the database works on the
# server's cores too and an idle app proves nothing.
SERVER_ONLY_SCENARIOS = ("plaintext", "json")


@dataclass(frozen=True)
class Verdict:
    name: str
    sentence: str


@dataclass(frozen=True)
class CellFigures:
    """What the verdicts look at, for one cell (medians over its trials)."""

    scenario: str
    connections: int
    ms: int | None
    throughput_rps: float
    half_width_pct: float | None  # of the figure the cell is ranked by
    confidence: float  # the coverage that figure's interval really has
    requests: int
    errors: dict[str, int]
    server_cpu_pct: float | None
    load_cpu_pct: float | None
    server_cores: int
    load_cores: int  # the load cores its tool could use: no more than its threads
    capacity: int | None  # requests the launch can hold at once; None: no limit of its own
    db_sessions_peak: int | None
    db_pool_limit: int | None
    mode: str = "closed"
    target_rate: float | None = None
    sent_rate: float | None = None  # the rate the generator sent at (its requests' send times)
    rate_ratio: float | None = None  # achieved ÷ target, median over trials
    latency_first_ms: float | None = None  # median latency of a trial's first quarter ...
    latency_last_ms: float | None = None  # ... and of its last (medians over trials)
    schedule_lag_ms: float | None = None  # the latest a request was sent past its due time
    p99_ms: float | None = None
    # How long a request waits when it is alone (a user's app: its latency at one
    # connection); the contract's sleep and db-delay wait their `ms`.
    alone_ms: float | None = None
    mean_latency_ms: float | None = None  # the tool's own mean (closed loop)
    tool: str = ""
    latency_resolution_ms: float = 0.0  # the tool's: a mean below it cannot be checked

    @property
    def wait_ms(self) -> float | None:
        if self.scenario in WAITING_SCENARIOS:
            return float(self.ms) if self.ms else None
        return self.alone_ms


def verdicts(
    cell: CellFigures, target_half_width_pct: float, adaptive: bool = False
) -> list[Verdict]:
    """Every verdict that applies; `adaptive`: the recipe allowed more trials (max_trials)."""
    checks = (
        _errors, _tool_stalled, _client_bound, _rate_not_delivered, _generator_lag,
        _falling_behind, _server_saturated,
        _blocked, _littles_law, _pool_exhausted,
    )  # fmt: skip
    found = [check(cell) for check in checks]
    found.append(_unstable(cell, target_half_width_pct, adaptive))
    return [v for v in found if v is not None]


def _errors(cell: CellFigures) -> Verdict | None:
    socket = sum(v for k, v in cell.errors.items() if k not in ("total", "non_2xx"))
    failed = socket + cell.errors.get("non_2xx", 0)
    attempts = cell.requests + socket
    if attempts == 0 or failed / attempts <= ERROR_RATE:
        return None
    kinds = ", ".join(f"{k} {v:,}" for k, v in cell.errors.items() if k != "total" and v)
    return Verdict(
        "errors", f"{100 * failed / attempts:.1f}% of requests failed ({kinds}): the figure "
        "counts failures as answers"
    )  # fmt: skip


TOOL_BUSY = 0.5  # in a closed loop, under half the connections busy with a request


def consistency_checkable(cell: CellFigures) -> bool:
    """Whether the tool reported a mean latency fine enough to check its figures with."""
    return (
        cell.mean_latency_ms is not None
        and cell.mean_latency_ms >= cell.latency_resolution_ms
        and cell.connections >= 1
    )


def _tool_stalled(cell: CellFigures) -> Verdict | None:
    """Little's law on the client side: in a closed loop every connection always has one
    request in flight, so throughput × mean latency is close to the connections held open.
    Far below, the tool spent its time somewhere other than in requests."""
    if cell.mode != "closed" or not consistency_checkable(cell):
        return None
    in_flight = cell.throughput_rps * cell.mean_latency_ms / 1000
    if in_flight >= TOOL_BUSY * cell.connections:
        return None
    idle = 100 * (1 - in_flight / cell.connections)
    return Verdict(
        "tool-stalled",
        f"{cell.throughput_rps:,.1f} req/s × {cell.mean_latency_ms:,.1f} ms mean latency = "
        f"{in_flight:,.2f} requests in flight, against {cell.connections:,} connections held "
        f"open: {cell.tool or 'the load tool'} spent {idle:.0f}% "
        "of its time outside the requests it timed (waiting on a socket, reconnecting), so "
        "this throughput is the tool's, not the server's",
    )


def _load_saturated(cell: CellFigures) -> bool:
    return (
        cell.load_cpu_pct is not None
        and cell.load_cpu_pct >= CLIENT_SATURATED * 100 * cell.load_cores
    )


def _client_bound(cell: CellFigures) -> Verdict | None:
    if not _load_saturated(cell) or _undelivered(cell):
        return None  # an undelivered rate says it in its own verdict
    return Verdict(
        "client-bound",
        f"the load tool used {cell.load_cpu_pct:.0f}% CPU of its {cell.load_cores} core(s): it, "
        "not the server, may have been the limit",
    )


def _undelivered(cell: CellFigures) -> bool:
    return cell.mode == "rate" and cell.rate_ratio is not None and cell.rate_ratio < DELIVERED


def _rate_not_delivered(cell: CellFigures) -> Verdict | None:
    if not _undelivered(cell) or cell.target_rate is None or cell.rate_ratio is None:
        return None
    achieved = cell.rate_ratio * cell.target_rate
    shortfall = (
        f"{achieved:,.0f} successful req/s of the {cell.target_rate:,.0f} asked "
        f"({100 * cell.rate_ratio:.0f}%)"
    )
    if _load_saturated(cell):
        return Verdict(
            "rate-not-delivered",
            f"{shortfall}: generator-bound — the load generator used {cell.load_cpu_pct:.0f}% "
            f"CPU of its {cell.load_cores} core(s) and could not send faster; this says nothing "
            "about the server",
        )
    if _unsent(cell):
        # A generator starved of its cores (a VM's neighbours, steal) uses less than
        # 90 % CPU and still sends late: when it sent, not its CPU, says whose the shortfall is.
        return Verdict(
            "rate-not-delivered",
            f"{shortfall}: generator-bound — the load generator sent only "
            f"{cell.sent_rate:,.0f} req/s (its CPU at {cell.load_cpu_pct or 0:.0f}%): it fell "
            "behind its own schedule; this says nothing about the server",
        )
    return Verdict(
        "rate-not-delivered",
        f"{shortfall}: server-bound — the generator sent on time, the server did not keep up",
    )


def _unsent(cell: CellFigures) -> bool:
    """The generator sent under DELIVERED of the rate asked (a tool that keeps its schedule
    and waits for a connection records the send when it was due, so a slow server does not
    show here)."""
    return (
        cell.sent_rate is not None
        and cell.target_rate is not None
        and cell.sent_rate < DELIVERED * cell.target_rate
    )


def _generator_lag(cell: CellFigures) -> Verdict | None:
    lag, p99 = cell.schedule_lag_ms, cell.p99_ms
    if cell.mode != "rate" or lag is None or p99 is None or _undelivered(cell):
        return None
    if lag < LAG_MS or lag < LAG_SHARE * p99:
        return None
    cpu = "" if cell.load_cpu_pct is None else f" (its CPU at {cell.load_cpu_pct:.0f}%)"
    return Verdict(
        "generator-lag",
        f"the generator sent requests up to {lag:,.1f} ms after they were due{cpu}; that wait "
        f"is counted in the latency (p99 {p99:,.1f} ms), so part of it is the generator's: "
        "lower the rate or give the load more cores",
    )


def _falling_behind(cell: CellFigures) -> Verdict | None:
    first, last = cell.latency_first_ms, cell.latency_last_ms
    if cell.mode != "rate" or first is None or last is None:
        return None
    if last < FALLING_BEHIND * first or last - first < FALLING_BEHIND_MS:
        return None
    return Verdict(
        "falling-behind",
        f"latency grew through each trial, from {first:,.1f} ms (median of its first quarter) to "
        f"{last:,.1f} ms (its last): requests queue faster than they are served, so the "
        "percentiles depend on how long the trial ran",
    )


def _server_saturated(cell: CellFigures) -> Verdict | None:
    share = _server_share(cell)
    if cell.mode == "closed" or share is None or share < SERVER_SATURATED:
        return None
    return Verdict(
        "server-saturated",
        f"the server used {100 * share:.0f}% of its {cell.server_cores} core(s): at this rate "
        "its CPU, not its concurrency, is the limit",
    )


def _server_share(cell: CellFigures) -> float | None:
    if cell.server_cpu_pct is None:
        return None
    return cell.server_cpu_pct / (100 * cell.server_cores)


def _littles_bound(cell: CellFigures, concurrency: int) -> float | None:
    wait = cell.wait_ms
    return None if not wait else concurrency / (wait / 1000)


def _blocked(cell: CellFigures) -> Verdict | None:
    share = _server_share(cell)
    if cell.mode != "closed" or share is None or share >= IDLE_SERVER:
        return None
    if cell.wait_ms is not None:
        # What the launch could hold at once: its own limit, the clients, and (db-delay) the
        # database pool — a pool that caps the figure is pool-exhausted, not blocked.
        limits = [cell.connections]
        if cell.capacity is not None:
            limits.append(cell.capacity)
        if cell.scenario == "db-delay" and cell.db_pool_limit is not None:
            limits.append(cell.db_pool_limit)
        bound = _littles_bound(cell, min(limits))
        if bound is None or cell.throughput_rps >= FAR_BELOW * bound:
            return None
        holding = cell.throughput_rps * cell.wait_ms / 1000
        return Verdict(
            "blocked",
            f"it could hold {min(limits):,} requests waiting at once but held about {holding:,.1f} "
            f"({cell.throughput_rps:,.0f} req/s of a possible {bound:,.0f}) with its CPU at "
            f"{100 * share:.0f}%: something blocks (a blocking call in an event loop, a late "
            "gevent patch)",
        )
    if cell.scenario not in SERVER_ONLY_SCENARIOS:
        return None
    load = cell.load_cpu_pct / (100 * cell.load_cores) if cell.load_cpu_pct is not None else 1.0
    if load >= IDLE_SERVER or sum(cell.errors.values()):
        return None
    return Verdict(
        "blocked",
        f"neither the server ({100 * share:.0f}% CPU) nor the load tool ({100 * load:.0f}%) was "
        "busy: something else limited the throughput",
    )


def _binding_limit(cell: CellFigures) -> tuple[str, int]:
    """The limit on requests in progress that is reached first: the clients, the server's
    own concurrency (workers × threads), or the database pool (db-delay)."""
    limits = [(f"the {cell.connections:,} clients", cell.connections)]
    if cell.capacity is not None:
        limits.append((f"its own concurrency ({cell.capacity:,} requests at once)", cell.capacity))
    if cell.scenario == "db-delay" and cell.db_pool_limit is not None:
        limits.append((f"its database pool ({cell.db_pool_limit:,} sessions)", cell.db_pool_limit))
    return min(limits, key=lambda limit: limit[1])


def _littles_law(cell: CellFigures) -> Verdict | None:
    bound = _littles_bound(cell, cell.connections)
    share = _server_share(cell)
    if cell.mode != "closed" or bound is None or share is None or share >= CPU_BOUND:
        return None
    fraction = cell.throughput_rps / bound
    if fraction >= FAR_BELOW:
        return None
    name, value = _binding_limit(cell)
    if value == cell.connections:
        return None  # no limit of its own explains it: that is `blocked`, if anything
    if "pool" in name and _pool_exhausted(cell) is not None:
        return None  # pool-exhausted says it
    most = _littles_bound(cell, value) or 0.0
    return Verdict(
        "littles-law",
        f"{cell.throughput_rps:,.0f} req/s is {100 * fraction:.0f}% of what {cell.connections:,} "
        f"connections could carry ({bound:,.0f}: connections ÷ {cell.wait_ms:,.3g} ms) while the "
        f"server's CPU was at {100 * share:.0f}%: the limit reached first is {name}, "
        f"{most:,.0f} req/s at most",
    )


def _pool_exhausted(cell: CellFigures) -> Verdict | None:
    if cell.db_sessions_peak is None or not cell.db_pool_limit:
        return None
    if cell.db_sessions_peak < cell.db_pool_limit:
        return None
    return Verdict(
        "pool-exhausted",
        f"the stack's pools grew to their limit of {cell.db_pool_limit} database sessions "
        f"({cell.db_sessions_peak} open at the peak): they grow only when every session is "
        "busy, so requests waited for one",
    )


def _unstable(cell: CellFigures, target: float, adaptive: bool) -> Verdict | None:
    if adaptive and cell.confidence < 0.95:
        return Verdict(
            "unstable",
            f"never converged: max_trials ran out before its interval reached 95% "
            f"({100 * cell.confidence:.0f}% now; it takes 6 trials)",
        )
    if cell.half_width_pct is None or cell.half_width_pct <= target:
        return None
    return Verdict(
        "unstable",
        f"trials disagree: the interval spans ±{cell.half_width_pct:.0f}% of the median "
        f"(target ±{target:g}%)",
    )
