"""The three WebSocket loads, as typed requests (what a WebSocket load tool is asked to do),
and the results it hands back. The server side of each is the reference app's contract
(docs/scenarios.md): /ws/echo sends every text frame back, /ws/room/NAME sends a frame
posted by one member to every other member."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

ECHO_PATH = "/ws/echo"
ROOM_PREFIX = "/ws/room/"


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    cores: tuple[int, ...]  # the load tool's cores


@dataclass(frozen=True)
class EchoRequest:
    """`rate` messages a second, spread evenly over `connections` connections, for
    `duration_s`: each connection sends one message every `period_ms`, counted from its own
    start (each message's due time), and waits for its echo."""

    endpoint: Endpoint
    connections: int
    rate: float
    duration_s: float
    message_bytes: int = 64
    timeout_ms: int = 5000
    path: str = ECHO_PATH
    closed: bool = False  # each message as soon as the last came back (the search's top)
    # Seconds of the same load first, sent and counted but not timed (the JVM compiles its
    # code in them: a broadcast's first rounds took 10-23 ms, the later ones 2-3).
    warmup_s: float = 0.0

    @property
    def period_ms(self) -> int:
        """Each connection's period, in whole milliseconds: JMeter's timer keeps whole
        milliseconds, so the rate sent is `paced_rate`, the lowest a whole period allows at
        or above the rate asked (18.6 ms is sent every 18): a rate that held was never sent
        slower than said. A capacity search's held rate may so be up to one period's step
        under the server's (5,066 msg/s asked of 50 connections is sent at 5,556)."""
        return max(1, math.floor(1000.0 * self.connections / self.rate + 1e-9))

    @property
    def paced_rate(self) -> float:
        return 1000.0 * self.connections / self.period_ms

    @property
    def messages(self) -> int:
        """Messages each connection sends, its warm-up's first."""
        return self.warmup_messages + max(1, round(self.duration_s * 1000 / self.period_ms))

    @property
    def warmup_messages(self) -> int:
        return round(self.warmup_s * 1000 / self.period_ms)


@dataclass(frozen=True)
class HoldRequest:
    """Idle connections opened `step` at a time (at `open_rate` a second), each step held
    for `settle_s` before the next, up to `steps` steps; all held until the last step ends."""

    endpoint: Endpoint
    step: int
    steps: int
    open_rate: float
    settle_s: float
    path: str = ECHO_PATH


@dataclass(frozen=True)
class BroadcastRequest:
    """`receivers` connections join the room; then one more posts `rounds` messages, one
    every `interval_ms`; each receiver reads every one."""

    endpoint: Endpoint
    receivers: int
    rounds: int
    interval_ms: int
    room: str = "bench"
    message_bytes: int = 64
    join_rate: float = 500.0
    timeout_ms: int = 5000
    warmup_rounds: int = 0  # posted first, each delivered and counted, not timed

    @property
    def path(self) -> str:
        return ROOM_PREFIX + self.room


@dataclass(frozen=True)
class EchoResult:
    sent: int  # messages the tool sent (its warm-up's too: the server counts them)
    answered: int  # echoes that came back equal to what was sent (likewise)
    timed: int  # answered after the warm-up: the latencies and the rate are theirs
    sent_timed: int  # sent after the warm-up
    errors: int  # failed exchanges (no echo in time, a wrong one, a broken connection)
    connect_errors: int
    duration_s: float  # from the first send to the last echo
    target_rate: float
    # Latency counted from each message's due time (its connection's schedule), in ms.
    p50_ms: float | None
    p99_ms: float | None
    mean_ms: float | None
    max_ms: float | None
    # The most a message was sent after it was due (the tool's lag; already in the latency).
    lag_ms: float
    late_share: float  # of messages sent more than one period after their due time
    histogram: str | None  # HdrHistogram V2 (µs) of the due-time latencies
    # Median latency of the first and the last quarter of the messages (by due time).
    first_ms: float | None = None
    last_ms: float | None = None
    load_cpu_pct: float | None = None
    # The p99 of each ~2-s window by due time (request_records.window_count), as a replay's
    # windows are judged; empty when a window holds too few messages.
    windows_p99_ms: tuple[float, ...] = ()

    @property
    def achieved_rate(self) -> float:
        return self.timed / self.duration_s if self.duration_s > 0 else 0.0


@dataclass(frozen=True)
class HoldStep:
    """What was open after one step: the tool's count, the kernel's, the server's memory."""

    asked: int  # connections asked for up to this step
    opened: int  # the tool's successful opens up to this step
    refused: int  # the tool's failed opens up to this step
    established: int  # established sockets on the server's port (ss)
    rss_mb: float | None


# Why a hold's steps ended (HoldResult.stopped): the server refused an upgrade, opens
# stopped completing, it closed idle connections, it passed the memory limit, or the last
# step was reached with the server still holding (the count is then a lower bound).
REFUSED, STALLED, DROPPED, MEMORY, AT_LAST_STEP = "refused", "stalled", "dropped", "memory", "steps"


@dataclass(frozen=True)
class HoldResult:
    steps: list[HoldStep]
    stopped: str  # why the steps ended: REFUSED, STALLED, DROPPED, MEMORY, AT_LAST_STEP
    held: int  # connections held at the last step that lost none
    rss_per_1000_mb: float | None  # the slope of RSS over established connections
    load_cpu_pct: float | None = None


@dataclass(frozen=True)
class BroadcastResult:
    rounds: int  # rounds posted (the warm-up's too)
    receivers: int
    deliveries: int  # frames the receivers read
    missing: int  # (round, receiver) pairs that read nothing for a round
    duplicates: int  # frames read twice or out of order
    # Per round after the warm-up: from the post to the last receiver's read, ms.
    last_ms: list[float] = field(default_factory=list)
    p50_ms: float | None = None
    p99_ms: float | None = None
    load_cpu_pct: float | None = None
