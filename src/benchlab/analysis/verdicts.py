"""Validity verdicts: whether a cell's figure can be trusted, each with one plain sentence.

Every verdict is declared once, in `VERDICTS` (the end of this module): its name, what it is
about, whether it is a caution beside a comparison, which figure it weakens, and the check
that writes its sentence. Reports, takeaways, relative figures and `tune` read those
declarations, never a verdict's name or sentence spelled out again.

A check reads the cell's figures through the registry in `benchlab.core.figures` (any object with
the `JudgedCell` shape: the summary's `CellFigures`) and what the run adds (`Setting`).
Thresholds are deliberately coarse: a verdict flags a figure to look at, it does not grade it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from benchlab.analysis.stats import reaches_confidence, within_target
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.load.ws_requests import STALLED
from benchlab.resilience.drain import Drain
from benchlab.resilience.facts import NotChecked
from benchlab.resilience.slow_clients import SlowClients

ERROR_RATE = 0.001  # more than 0.1 % of requests failed
CLIENT_SATURATED = 0.90  # the load tool used 90 % of its cores
SERVER_FULL = 0.90  # the server used 90 % of its cores
GREW = 2.0  # latency at the end of a trial at least twice that at its start ...
GREW_MS = 10.0  # ... and at least this much longer
LAG_MS = 5.0  # the generator sent a request this late ...
LAG_SHARE = 0.25  # ... and that is a quarter of the p99 or more
IDLE_SERVER = 0.50  # the server used under half of its cores ...
FAR_BELOW = 0.50  # ... while throughput stayed under half of what it could hold
CPU_BOUND = 0.80  # a server at 80 % of its cores is busy, not waiting
NEAR_CLOSED = 0.95  # a capacity this close to the closed loop's throughput met its bound
# ... which lets a capacity search go this far above it (analysis/capacity.py); a capacity
# above that came from a search the closed loop did not bound (capacity.search_top).
CLOSED_HEADROOM = 1.2
WAITING_SCENARIOS = ("sleep", "db-delay")
# Where the server alone should be busy: with a database, the database works on the
# server's cores too and an idle app proves nothing.
SERVER_ONLY_SCENARIOS = ("plaintext", "json")


class Bound(Enum):
    """Whose limit a verdict says was reached."""

    SERVER = "server"
    GENERATOR = "generator"


@dataclass(frozen=True)
class Verdict:
    name: str
    sentence: str
    bound: Bound | None = None  # whose limit it found, when it names one


class StoredCell(Protocol):
    """A cell's identity and settings as its record has them."""

    @property
    def scenario(self) -> str: ...
    @property
    def connections(self) -> int: ...
    @property
    def ms(self) -> int | None: ...
    @property
    def mode(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def concurrency_limit(self) -> int | None: ...  # None: no limit of its own
    @property
    def db_pool_limit(self) -> int | None: ...


class CountedCell(Protocol):
    """What a cell's trials made of it beside its figures."""

    @property
    def errors(self) -> Mapping[str, int]: ...
    # How long a request waits when it is alone (a user's app: its latency at one
    # connection); the contract's sleep and db-delay wait their `ms`.
    @property
    def alone_ms(self) -> float | None: ...
    @property
    def trials(self) -> int: ...  # trials measured (for a capacity search: replicates)
    @property
    def rate_unit(self) -> str: ...  # what its rates count a second (req/s, msg/s)
    # Capacity-search replicates in which no rate missed the target: their figure is a
    # lower bound, not a capacity.
    @property
    def unbracketed(self) -> int: ...
    # What a conformance check found (recipe key `conform`), by whether each failure keeps
    # the stack out of the ranking: {"unranking": [...], "cautions": [...]}; None: unchecked.
    @property
    def conformance(self) -> Mapping[str, list[str]] | None: ...
    # What the run's resilience checks found for the stack (recipe keys drain, slow_clients).
    @property
    def drain(self) -> Drain | NotChecked | None: ...
    @property
    def slow_clients(self) -> SlowClients | NotChecked | None: ...
    # Why a WebSocket hold's steps ended in most of its trials ("refused", "stalled", ...);
    # None: no hold.
    @property
    def hold_stop(self) -> str | None: ...


class JudgedCell(Protocol):
    """A cell as the verdicts read it: its record, what its trials made of it, and every
    figure it has by the registry (its own and those against the run's other cells: the
    summary's `CellFigures`)."""

    @property
    def record(self) -> StoredCell: ...
    @property
    def result(self) -> CountedCell: ...
    def value(self, figure: F.Figure) -> float | None: ...


@dataclass(frozen=True)
class Setting:
    """What the verdicts need beside a cell's figures: where it ran, how its trials agreed."""

    server_cores: int
    load_cores: int  # the load cores its tool could use: no more than its threads
    half_width_pct: float | None  # of the figure the cell is ranked by
    confidence: float  # the coverage that figure's interval really has
    target_half_width_pct: float
    adaptive: bool = False  # the recipe allowed more trials (max_trials)
    latency_first_ms: float | None = None  # median latency of a trial's first quarter ...
    latency_last_ms: float | None = None  # ... and of its last (medians over trials)
    latency_resolution_ms: float = 0.0  # the tool's: a mean below it cannot be checked
    # At a WebSocket point: the Go ceiling's cell there (what JMeter reaches against it is
    # JMeter's limit), and whether this cell is that ceiling.
    ceiling: JudgedCell | None = None
    is_ceiling: bool = False
    # Ahead of the cell after it and behind the one before it in its point's ranking (an
    # interval wider than the target, yet clear of theirs): `unstable` changes nothing a
    # reader may conclude there, and is not said (its interval is still shown).
    separated: bool = False


def _throughput(cell: JudgedCell) -> float:
    return cell.value(F.THROUGHPUT) or 0.0


def _wait_ms(cell: JudgedCell) -> float | None:
    if cell.record.scenario in WAITING_SCENARIOS:
        return float(cell.record.ms) if cell.record.ms else None
    return cell.result.alone_ms


def verdicts(cell: JudgedCell, setting: Setting) -> list[Verdict]:
    """Every verdict that applies, in the registry's order."""
    found = [kind.check(cell, setting) for kind in VERDICTS.values()]
    return [v for v in found if v is not None]


def _errors(cell: JudgedCell, setting: Setting) -> Verdict | None:
    if cell.result.hold_stop is not None:
        return None  # a hold's refused opens are where it stopped (hold_stop), not failures
    socket = sum(v for k, v in cell.result.errors.items() if k not in ("total", "non_2xx"))
    failed = socket + cell.result.errors.get("non_2xx", 0)
    attempts = int(cell.value(F.REQUESTS) or 0) + socket
    if attempts == 0 or failed / attempts <= ERROR_RATE:
        return None
    kinds = ", ".join(f"{k} {v:,}" for k, v in cell.result.errors.items() if k != "total" and v)
    return ERRORS.says(
        f"{100 * failed / attempts:.1f}% of requests failed ({kinds}): the figure "
        "counts failures as answers"
    )


TOOL_BUSY = 0.5  # in a closed loop, under half the connections busy with a request


def consistency_checkable(cell: JudgedCell, setting: Setting) -> bool:
    """Whether the tool reported a mean latency fine enough to check its figures with."""
    mean = cell.value(F.LAT_MEAN)
    return (
        mean is not None and mean >= setting.latency_resolution_ms and cell.record.connections >= 1
    )


def _tool_stalled(cell: JudgedCell, setting: Setting) -> Verdict | None:
    """Little's law on the client side: in a closed loop every connection always has one
    request in flight, so throughput × mean latency is close to the connections held open.
    Far below, the tool spent its time somewhere other than in requests."""
    if cell.record.mode != Mode.CLOSED or not consistency_checkable(cell, setting):
        return None
    throughput, mean = _throughput(cell), cell.value(F.LAT_MEAN) or 0.0
    in_flight = throughput * mean / 1000
    if in_flight >= TOOL_BUSY * cell.record.connections:
        return None
    idle = 100 * (1 - in_flight / cell.record.connections)
    return TOOL_STALLED.says(
        f"{throughput:,.1f} {cell.result.rate_unit} × {mean:,.1f} ms mean latency = "
        f"{in_flight:,.2f} requests in flight, against {cell.record.connections:,} connections "
        f"held open: {cell.record.tool or 'the load tool'} spent {idle:.0f}% "
        "of its time outside the requests it timed (waiting on a socket, reconnecting), so "
        "this throughput is the tool's, not the server's",
    )


def _load_saturated(cell: JudgedCell, setting: Setting) -> bool:
    load_cpu = cell.value(F.LOAD_CPU)
    return load_cpu is not None and load_cpu >= CLIENT_SATURATED * 100 * setting.load_cores


def _client_bound(cell: JudgedCell, setting: Setting) -> Verdict | None:
    if not _load_saturated(cell, setting) or _undelivered(cell):
        at_ceiling = _at_the_ceiling(cell, setting)  # an undelivered rate: its own verdict
        return None if at_ceiling is None else CLIENT_BOUND.says(at_ceiling)
    return CLIENT_BOUND.says(
        f"the load tool used {cell.value(F.LOAD_CPU):.0f}% CPU of its {setting.load_cores} "
        "core(s): it, not the server, may have been the limit",
    )


# A WebSocket echo capacity this near the Go ceiling's (or above it) is the tool's paced
# limit: JMeter held its schedule to about 5,300 msg/s against Go here, whose server had
# room to spare.
CEILING_SHARE = 0.8
FLOOR_FACTOR = 1.5  # a broadcast p99 within this of the ceiling's is at the tool's floor


def _at_the_ceiling(cell: JudgedCell, setting: Setting) -> str | None:
    """Where a WebSocket figure shows JMeter's limit, by the Go ceiling's at its point: a
    hold that stalled where the ceiling's stalled too (its pace of opening, a thread a
    connection); an echo capacity at CEILING_SHARE of the ceiling's or more; a broadcast
    within FLOOR_FACTOR of the ceiling's (its threads' wake-ups)."""
    ceiling = setting.ceiling
    if ceiling is None:
        return None
    if cell.result.hold_stop == STALLED and ceiling.result.hold_stop == STALLED:
        return "its opens stalled, and so did the Go ceiling's: JMeter's pace, not the server's"
    if setting.is_ceiling:
        return None
    mine, top = cell.value(F.CAPACITY), ceiling.value(F.CAPACITY)
    if mine is not None and top and mine >= CEILING_SHARE * top:
        return (
            f"its capacity of {F.rate_text(mine)} {cell.result.rate_unit} is "
            f"{100 * mine / top:.0f}% of the Go "
            f"ceiling's ({F.rate_text(top)}): JMeter's paced limit, not the server's"
        )
    mine, floor = cell.value(F.BROADCAST_P99), ceiling.value(F.BROADCAST_P99)
    if mine is not None and floor is not None and mine <= FLOOR_FACTOR * floor:
        return (
            f"its broadcast p99 of {F.ms_text(mine)} ms is within {FLOOR_FACTOR:g}× the Go "
            f"ceiling's ({F.ms_text(floor)} ms): JMeter's floor, not the server's"
        )
    return None


def _ws_counts(cell: JudgedCell, setting: Setting) -> Verdict | None:
    gap = cell.value(F.WS_COUNT_GAP)
    if gap is None or F.WS_COUNT_GAP.within(gap):
        return None
    return WS_COUNTS.says(
        f"JMeter's counts and the server's own differ by {100 * gap:.2f}% (over "
        f"{100 * (F.WS_COUNT_GAP.threshold or 0):g}%): messages lost, repeated or never "
        "answered, so the figure is not of the load the server saw"
    )


# An echo connection in flight over this share of the time is no longer mostly idle: its
# next send may wait for the last echo, and the load is not open-loop (Little's law).
IN_FLIGHT_SHARE = 0.1


def _sent_late(cell: JudgedCell, setting: Setting) -> Verdict | None:
    late = cell.value(F.WS_LATE_SHARE)
    if late is None:  # no echo
        return None
    rate, mean = cell.value(F.ACHIEVED), cell.value(F.LAT_MEAN)
    busy = (rate or 0.0) * (mean or 0.0) / 1000 / max(cell.record.connections, 1)
    if F.WS_LATE_SHARE.within(late) and busy <= IN_FLIGHT_SHARE:
        return None
    return SENT_LATE.says(
        f"{100 * late:.2f}% of the messages were sent over a period late, and each connection "
        f"had a message in flight {100 * busy:.0f}% of the time (rate × mean round trip ÷ "
        f"connections; open-loop up to {100 * IN_FLIGHT_SHARE:g}%): the tool's schedule, not "
        "only the server, set the latency — more connections at the same rate fix it"
    )


def _hold_stalled(cell: JudgedCell, setting: Setting) -> Verdict | None:
    if cell.result.hold_stop != STALLED or _at_the_ceiling(cell, setting) is not None:
        return None  # the ceiling's stalled too: client-bound says it
    return HOLD_STALLED.says(
        "its opens stopped completing before it refused one or reached the memory limit: "
        "connections held is where the server stalled (its accept queue or event loop), "
        "not a limit it declared"
    )


def _undelivered(cell: JudgedCell) -> bool:
    ratio = cell.value(F.RATE_RATIO)
    return cell.record.mode == Mode.RATE and ratio is not None and not F.RATE_RATIO.reaches(ratio)


def _rate_not_delivered(cell: JudgedCell, setting: Setting) -> Verdict | None:
    target, ratio = cell.value(F.TARGET_RATE), cell.value(F.RATE_RATIO)
    if not _undelivered(cell) or target is None or ratio is None:
        return None
    load_cpu = cell.value(F.LOAD_CPU)
    shortfall = (
        f"{ratio * target:,.0f} successful {cell.result.rate_unit} of the {target:,.0f} asked "
        f"({100 * ratio:.0f}%)"
    )
    if _load_saturated(cell, setting):
        return RATE_NOT_DELIVERED.says(
            f"{shortfall}: generator-bound — the load generator used {load_cpu:.0f}% "
            f"CPU of its {setting.load_cores} core(s) and could not send faster; this says "
            "nothing about the server",
            Bound.GENERATOR,
        )
    if _unsent(cell):
        # A generator starved of its cores (a VM's neighbours, steal) uses less than
        # 90 % CPU and still sends late: when it sent, not its CPU, says whose the shortfall is.
        return RATE_NOT_DELIVERED.says(
            f"{shortfall}: generator-bound — the load generator sent only "
            f"{cell.value(F.SENT_RATE):,.0f} {cell.result.rate_unit} (its CPU at "
            f"{load_cpu or 0:.0f}%): it fell behind its own schedule; this says nothing about the "
            "server",
            Bound.GENERATOR,
        )
    return RATE_NOT_DELIVERED.says(
        f"{shortfall}: server-bound — the generator sent on time, the server did not keep up",
        Bound.SERVER,
    )


def _unsent(cell: JudgedCell) -> bool:
    """The generator sent under the delivered share of the rate asked (a tool that keeps its
    schedule and waits for a connection records the send when it was due, so a slow server
    does not show here)."""
    sent, target = cell.value(F.SENT_RATE), cell.value(F.TARGET_RATE)
    return sent is not None and target is not None and not F.RATE_RATIO.reaches(sent, of=target)


def _generator_lag(cell: JudgedCell, setting: Setting) -> Verdict | None:
    lag, p99 = cell.value(F.SCHEDULE_LAG), cell.value(F.P99)
    if cell.record.mode != Mode.RATE or lag is None or p99 is None or _undelivered(cell):
        return None
    if lag < LAG_MS or lag < LAG_SHARE * p99:
        return None
    load_cpu = cell.value(F.LOAD_CPU)
    cpu = "" if load_cpu is None else f" (its CPU at {load_cpu:.0f}%)"
    return GENERATOR_LAG.says(
        f"the generator sent requests up to {lag:,.1f} ms after they were due{cpu}; that wait "
        f"is counted in the latency (p99 {p99:,.1f} ms), so part of it is the generator's: "
        "lower the rate or give the load more cores",
    )


def queue_grew(first_ms: float | None, last_ms: float | None) -> bool:
    """Whether latency at the end of a fixed-rate window (the median of its last quarter)
    grew enough over its start (its first quarter) to say requests queue faster than they
    are served."""
    if first_ms is None or last_ms is None:
        return False
    return last_ms >= GREW * first_ms and last_ms - first_ms >= GREW_MS


def _falling_behind(cell: JudgedCell, setting: Setting) -> Verdict | None:
    first, last = setting.latency_first_ms, setting.latency_last_ms
    if (
        cell.record.mode != Mode.RATE
        or first is None
        or last is None
        or not queue_grew(first, last)
    ):
        return None
    return FALLING_BEHIND.says(
        f"latency grew through each trial, from {first:,.1f} ms (median of its first quarter) to "
        f"{last:,.1f} ms (its last): requests queue faster than they are served, so the "
        "percentiles depend on how long the trial ran",
    )


def _server_saturated(cell: JudgedCell, setting: Setting) -> Verdict | None:
    share = _server_share(cell, setting)
    if cell.record.mode == Mode.CLOSED or share is None or share < SERVER_FULL:
        return None
    return SERVER_SATURATED.says(
        f"the server used {100 * share:.0f}% of its {setting.server_cores} core(s): at this "
        "rate its CPU, not its concurrency, is the limit",
    )


def _server_share(cell: JudgedCell, setting: Setting) -> float | None:
    server_cpu = cell.value(F.SERVER_CPU)
    if server_cpu is None:
        return None
    return server_cpu / (100 * setting.server_cores)


def _busy_or_starved(cell: JudgedCell, setting: Setting) -> float | None:
    """The share of its cores the server was busy on, or had taken from it by the
    hypervisor (steal): a server starved by a VM's neighbours is not idle, it waits."""
    share = _server_share(cell, setting)
    return None if share is None else share + (cell.value(F.STEAL) or 0.0) / 100


def _littles_bound(cell: JudgedCell, concurrency: int) -> float | None:
    wait = _wait_ms(cell)
    return None if not wait else concurrency / (wait / 1000)


def _blocked(cell: JudgedCell, setting: Setting) -> Verdict | None:
    share = _busy_or_starved(cell, setting)
    if cell.record.mode != Mode.CLOSED or share is None or share >= IDLE_SERVER:
        return None
    cpu = _server_share(cell, setting) or 0.0
    wait, throughput = _wait_ms(cell), _throughput(cell)
    if wait is not None:
        # What the launch could hold at once: its own limit, the clients, and (db-delay) the
        # database pool — a pool that caps the figure is pool-exhausted, not blocked.
        limits = [cell.record.connections]
        if cell.record.concurrency_limit is not None:
            limits.append(cell.record.concurrency_limit)
        if cell.record.scenario == "db-delay" and cell.record.db_pool_limit is not None:
            limits.append(cell.record.db_pool_limit)
        bound = _littles_bound(cell, min(limits))
        if bound is None or throughput >= FAR_BELOW * bound:
            return None
        holding = throughput * wait / 1000
        return BLOCKED.says(
            f"it could hold {min(limits):,} requests waiting at once but held about {holding:,.1f} "
            f"({throughput:,.0f} {cell.result.rate_unit} of a possible {bound:,.0f}) with its CPU "
            f"at {100 * cpu:.0f}%: something blocks (a blocking call in an event loop, a late "
            "gevent patch)",
        )
    if cell.record.scenario not in SERVER_ONLY_SCENARIOS:
        return None
    load_cpu = cell.value(F.LOAD_CPU)
    load = load_cpu / (100 * setting.load_cores) if load_cpu is not None else 1.0
    if load >= IDLE_SERVER or sum(cell.result.errors.values()) != 0:
        return None
    return BLOCKED.says(
        f"neither the server ({100 * cpu:.0f}% CPU) nor the load tool ({100 * load:.0f}%) was "
        "busy: something else limited the throughput",
    )


def _binding_limit(cell: JudgedCell) -> tuple[str, int]:
    """The limit on requests in progress that is reached first: the clients, the server's
    own concurrency (workers × threads), or the database pool (db-delay)."""
    limits = [(f"the {cell.record.connections:,} clients", cell.record.connections)]
    own = cell.record.concurrency_limit
    if own is not None:
        limits.append((f"its own concurrency ({own:,} requests at once)", own))
    if cell.record.scenario == "db-delay" and cell.record.db_pool_limit is not None:
        limits.append(
            (
                f"its database pool ({cell.record.db_pool_limit:,} sessions)",
                cell.record.db_pool_limit,
            )
        )
    return min(limits, key=lambda limit: limit[1])


def _littles_law(cell: JudgedCell, setting: Setting) -> Verdict | None:
    bound = _littles_bound(cell, cell.record.connections)
    share = _server_share(cell, setting)
    if cell.record.mode != Mode.CLOSED or bound is None or share is None or share >= CPU_BOUND:
        return None
    fraction = _throughput(cell) / bound
    if fraction >= FAR_BELOW:
        return None
    name, value = _binding_limit(cell)
    if value == cell.record.connections:
        return None  # no limit of its own explains it: that is `blocked`, if anything
    if "pool" in name and _pool_exhausted(cell, setting) is not None:
        return None  # pool-exhausted says it
    most = _littles_bound(cell, value) or 0.0
    return LITTLES_LAW.says(
        f"{_throughput(cell):,.0f} {cell.result.rate_unit} is {100 * fraction:.0f}% of what "
        f"{cell.record.connections:,} connections could carry ({bound:,.0f}: connections ÷ "
        f"{_wait_ms(cell):,.3g} ms) while the server's CPU was at {100 * share:.0f}%: the limit "
        f"reached first is {name}, {most:,.0f} {cell.result.rate_unit} at most",
    )


LEAK_MB = 5.0  # growth over a trial that counts: at least this much ...
LEAK_SHARE = 0.10  # ... and this share of what the server held at its start


def _leaks(cell: JudgedCell, setting: Setting) -> Verdict | None:
    """Resident memory that grew through the trials: the low end of its slope's interval
    above zero in the median trial, and a growth that is material."""
    growth, low = cell.value(F.RSS_GROWTH), cell.value(F.RSS_SLOPE_LOW)
    peak, slope = cell.value(F.SERVER_RSS), cell.value(F.RSS_SLOPE)
    if growth is None or low is None or peak is None or slope is None or low <= 0:
        return None
    if growth < max(LEAK_MB, LEAK_SHARE * max(peak - growth, 0.0)):
        return None
    return LEAKS.says(
        f"its resident memory grew {growth:,.1f} MB during a trial ({slope:,.1f} MB/min, the "
        f"interval's low end {low:,.1f} MB/min, to a peak of {peak:,.0f} MB): a leak, or a "
        "cache still filling — a longer fixed-rate trial tells them apart"
    )


def _pool_exhausted(cell: JudgedCell, setting: Setting) -> Verdict | None:
    peak = cell.value(F.DB_SESSIONS)
    if peak is None or not cell.record.db_pool_limit:
        return None
    if peak < cell.record.db_pool_limit:
        return None
    return POOL_EXHAUSTED.says(
        f"the stack's pools grew to their limit of {cell.record.db_pool_limit} database sessions "
        f"({peak} open at the peak): they grow only when every session is "
        "busy, so requests waited for one",
    )


def _unstable(cell: JudgedCell, setting: Setting) -> Verdict | None:
    if setting.separated:
        return None  # clear of both neighbours in its ranking: its width changes nothing read
    if setting.adaptive and not reaches_confidence(setting.confidence):
        return UNSTABLE.says(
            f"never converged: max_trials ran out before its interval reached 95% "
            f"({100 * setting.confidence:.0f}% now; it takes 6 trials)",
        )
    half_width, target = setting.half_width_pct, setting.target_half_width_pct
    if half_width is None or within_target(half_width, target):
        return None
    return UNSTABLE.says(
        f"trials disagree: the interval spans ±{half_width:.0f}% of the median "
        f"(target ±{target:g}%)",
    )


# --- the registry -----------------------------------------------------------------------------

Check = Callable[[JudgedCell, Setting], Verdict | None]


@dataclass(frozen=True)
class VerdictKind:
    """One verdict, declared once."""

    name: str  # what reports, the JSON and the CSV call it
    about: str  # what it flags, in a few words
    check: Check  # whether it applies to a cell, and its sentence when it does
    weakens: F.Figure | None  # the figure it casts doubt on; None: the one the cell is ranked by
    caution: bool = False  # a comparison that rests on the figure gets a caution beside it
    # The figure is the load tool's limit, not the server's: a ceiling cell with it is none.
    tool_figure: bool = False
    bound: Bound | None = None  # whose limit it says was reached, when always the same side
    unranked: bool = False  # a cell with it is measured and shown, but not ranked
    # It tells of the server's robustness, beside its figures: it casts doubt on none.
    robustness: bool = False

    def says(self, sentence: str, bound: Bound | None = None) -> Verdict:
        return Verdict(self.name, sentence, bound or self.bound)


VERDICTS: dict[str, VerdictKind] = {}


def _conformance_check(verdict: str, key: str, lead: str, why: str) -> Check:
    """The verdict `verdict` on what the conformance check found under `key` (unranking,
    cautions)."""

    def check(cell: JudgedCell, setting: Setting) -> Verdict | None:
        found = (cell.result.conformance or {}).get(key) or []
        if not found:
            return None
        return VERDICTS[verdict].says(f"{lead} ({'; '.join(found)}): {why}")

    return check


def _stop_verdict(verdict: str, consequence: str) -> Check:
    """The verdict `verdict` (drops, hangs) on what the run's drain check found."""

    def check(cell: JudgedCell, setting: Setting) -> Verdict | None:
        stop = cell.result.drain
        if not isinstance(stop, Drain) or stop.verdict != verdict:
            return None
        return VERDICTS[verdict].says(f"stopped under load, it {stop.sentence()}: {consequence}")

    return check


def _slow_clients(cell: JudgedCell, setting: Setting) -> Verdict | None:
    found = cell.result.slow_clients
    if not isinstance(found, SlowClients) or not found.needs_proxy:
        return None
    harmed = [r for r in found.results if r.harmed]
    return NEEDS_PROXY.says(
        f"{'; '.join(r.sentence() for r in harmed)}: harmed in every round, so put a "
        "buffering proxy (nginx) in front of it"
    )


def _unbracketed(cell: JudgedCell, setting: Setting) -> Verdict | None:
    if cell.record.mode != Mode.SLO or not cell.result.unbracketed:
        return None
    found, closed = cell.value(F.CAPACITY) or 0.0, cell.value(F.CLOSED_CAPACITY)
    lead = (
        f"no rate the search tried missed the target in {cell.result.unbracketed} of "
        f"{cell.result.trials} replicate(s): ≥ {F.rate_text(found)} {cell.result.rate_unit} is a "
        "lower bound, not the capacity; "
    )
    if closed and NEAR_CLOSED * closed <= found <= CLOSED_HEADROOM * closed:
        return UNBRACKETED.says(
            lead
            + f"it held up to what {cell.record.connections} connections carry in a closed loop "
            f"({F.rate_text(closed)} {cell.result.rate_unit}): more connections would let the "
            "search go higher"
        )
    return UNBRACKETED.says(
        lead + "the search ran out of probes first: more replicates (max_trials, or a longer "
        "budget) would bracket it"
    )


def _declare(kind: VerdictKind) -> VerdictKind:
    VERDICTS[kind.name] = kind
    return kind


# In the order their sentences are listed.
ERRORS = _declare(VerdictKind(
    "errors", "requests that failed, counted as answers", _errors, None, caution=True,
))  # fmt: skip
TOOL_STALLED = _declare(VerdictKind(
    "tool-stalled", "a load tool idle between the requests it timed", _tool_stalled,
    F.THROUGHPUT, caution=True, tool_figure=True,
))  # fmt: skip
CLIENT_BOUND = _declare(VerdictKind(
    "client-bound", "a load tool out of CPU", _client_bound, F.THROUGHPUT, caution=True,
    tool_figure=True, bound=Bound.GENERATOR,
))  # fmt: skip
RATE_NOT_DELIVERED = _declare(VerdictKind(
    "rate-not-delivered", "a fixed rate that was not delivered, and whose fault",
    _rate_not_delivered, F.P99, caution=True,
))  # fmt: skip
GENERATOR_LAG = _declare(VerdictKind(
    "generator-lag", "a generator that sent late, adding to the latency", _generator_lag, F.P99,
))  # fmt: skip
FALLING_BEHIND = _declare(VerdictKind(
    "falling-behind", "a queue that grew through each trial", _falling_behind, F.P99,
))  # fmt: skip
SERVER_SATURATED = _declare(VerdictKind(
    "server-saturated", "a server out of CPU at a fixed rate", _server_saturated, F.P99,
    bound=Bound.SERVER,
))  # fmt: skip
BLOCKED = _declare(VerdictKind(
    "blocked", "a server that waited with its CPU idle", _blocked, F.THROUGHPUT, caution=True,
))  # fmt: skip
LITTLES_LAW = _declare(VerdictKind(
    "littles-law", "a limit of its own reached before the clients'", _littles_law, F.THROUGHPUT,
))  # fmt: skip
POOL_EXHAUSTED = _declare(VerdictKind(
    "pool-exhausted", "requests that waited for a database session", _pool_exhausted,
    F.THROUGHPUT,
))  # fmt: skip
UNBRACKETED = _declare(VerdictKind(
    "capacity-unbracketed", "a capacity search that never saw a rate miss: a lower bound",
    _unbracketed, F.CAPACITY, caution=True,
))  # fmt: skip
LEAKS = _declare(VerdictKind(
    "leaks", "resident memory that grew through a trial", _leaks, F.SERVER_RSS,
))  # fmt: skip
NONCONFORMANT = _declare(VerdictKind(
    "nonconformant", "a server that parsed or framed a request wrong (not ranked)",
    _conformance_check(
        "nonconformant", "unranking", "it parsed or framed a request wrong",
        "kept out of the ranking, since a server that gets a client's requests wrong can "
        "look fast by doing less",
    ),
    None, caution=True, unranked=True,
))  # fmt: skip
INPUT_LIMITS = _declare(VerdictKind(
    "input-limits", "a missing header limit, or a malformed request mishandled",
    _conformance_check(
        "input-limits", "cautions", "it mishandled a malformed request or a header's size",
        "this tells of robustness (a proxy in front may be needed), not of the figures",
    ),
    None, robustness=True,
))  # fmt: skip
DROPS = _declare(VerdictKind(
    "drops", "a server that failed requests it had taken when stopped",
    _stop_verdict("drops", "a deploy that stops it fails what it was serving"), None,
    robustness=True,
))  # fmt: skip
HANGS = _declare(VerdictKind(
    "hangs", "a server that did not exit when stopped",
    _stop_verdict("hangs", "a deploy waits for its kill timeout"), None, robustness=True,
))  # fmt: skip
NEEDS_PROXY = _declare(VerdictKind(
    "needs-proxy", "a server that slow clients harm: it needs a buffering proxy",
    _slow_clients, None, robustness=True,
))  # fmt: skip
WS_COUNTS = _declare(VerdictKind(
    "ws-counts", "a WebSocket tool's counts that differ from the server's own", _ws_counts,
    None, caution=True,
))  # fmt: skip
SENT_LATE = _declare(VerdictKind(
    "sent-late", "WebSocket messages sent late, or connections too busy to be open-loop",
    _sent_late, F.ECHO_P99, caution=True, bound=Bound.GENERATOR,
))  # fmt: skip
HOLD_STALLED = _declare(VerdictKind(
    "hold-stalled", "a hold whose opens stopped completing (not refused)", _hold_stalled,
    F.CONNECTIONS_HELD, bound=Bound.SERVER,
))  # fmt: skip
UNSTABLE = _declare(VerdictKind(
    "unstable", "trials that disagree more than the target allows", _unstable, None,
    caution=True,
))  # fmt: skip

# Verdicts that make a comparison worth a caution beside it.
CAUTIONS = frozenset(name for name, kind in VERDICTS.items() if kind.caution)
# Verdicts that keep a cell out of its ranking (it is still measured and shown).
UNRANKED = frozenset(name for name, kind in VERDICTS.items() if kind.unranked)
