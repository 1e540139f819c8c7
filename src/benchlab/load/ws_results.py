"""JMeter's CSV of every sample, read back into the three WebSocket results.

Each line is one sample: its start (epoch ms), its elapsed ms, its label (jmeter_plans.py's),
its thread, whether it succeeded, and the frame a read kept. JMeter times in whole
milliseconds, so every figure here is in whole milliseconds too (latency_resolution_ms)."""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from benchlab.core.errors import LoadToolError
from benchlab.load import histogram
from benchlab.load.jmeter_plans import ECHO, GOT, OPEN, POST, RECEIVE
from benchlab.load.request_records import MIN_PER_WINDOW, window_count
from benchlab.load.ws_requests import BroadcastResult, EchoRequest, EchoResult

# A closed loop is timed over the part every connection was sending when that part is at
# least this share of the load (closed_window).
STEADY_SHARE = 0.5


@dataclass(frozen=True)
class Sample:
    start_ms: int
    elapsed_ms: int
    label: str
    thread: str
    ok: bool
    got: str

    @property
    def end_ms(self) -> int:
        return self.start_ms + self.elapsed_ms


def samples(results: Path) -> Iterator[Sample]:
    """Every complete line of the results file (a line being written is skipped)."""
    if not results.exists():
        return
    with results.open(newline="", errors="replace") as handle:
        for row in csv.DictReader(handle):
            try:
                yield Sample(
                    int(row["timeStamp"]), int(row["elapsed"]), row["label"],
                    row["threadName"], row["success"] == "true", row.get(GOT) or "",
                )  # fmt: skip
            except (KeyError, TypeError, ValueError):
                continue


def percentile(sorted_values: list[float], quantile: float) -> float | None:
    """The nearest-rank percentile (quantile in %) of sorted values."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(quantile / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def echo_result(results: Path, request: EchoRequest) -> EchoResult:
    """Each message's latency counted from its due time: its connection's schedule is one
    message every period from the earliest start the samples allow (JMeter's timer never
    sends early), so a message sent late carries its lag in its latency."""
    opens_failed = 0
    by_thread: dict[str, list[Sample]] = defaultdict(list)
    for sample in samples(results):
        if sample.label == OPEN and not sample.ok:
            opens_failed += 1
        elif sample.label == ECHO:
            by_thread[sample.thread].append(sample)
    period = 0.0 if request.closed else request.period_ms
    for exchanges in by_thread.values():
        exchanges.sort(key=lambda s: s.start_ms)
    window = closed_window(list(by_thread.values())) if request.closed else None
    timed: list[tuple[float, float]] = []  # (due, latency from due) of each answered message
    lags: list[float] = []
    spans: list[float] = []
    errors = 0
    for exchanges in by_thread.values():
        # A closed loop has no schedule: each message is due when it is sent.
        base = min(s.start_ms - k * period for k, s in enumerate(exchanges))
        # A connection's timed schedule lasts its messages' periods; late ones stretch it.
        warm_ms = 0 if request.closed else request.warmup_messages * period
        last_end = max(s.end_ms for s in exchanges)
        spans.append(max(last_end - base - warm_ms, len(exchanges) * period - warm_ms, 1.0))
        warm = 0 if request.closed else request.warmup_messages
        for k, sample in enumerate(exchanges):
            due = sample.start_ms if request.closed else base + k * period
            counted = k >= warm and (window is None or window[0] <= due < window[1])
            if not sample.ok:
                errors += 1
            elif counted:
                timed.append((due, sample.end_ms - due))
            if counted:
                lags.append(sample.start_ms - due)
    sent = sum(len(v) for v in by_thread.values())
    if sent == 0:
        raise LoadToolError(
            f"jmeter sent no WebSocket message ({opens_failed} connections failed to open)"
        )
    # The connections run side by side, each over its own span (their starts are spread over
    # a period): the load's length is their mean span; a closed loop's, its one window.
    span_ms = window[1] - window[0] if window is not None else sum(spans) / len(spans)
    timed.sort()
    quarter = max(len(timed) // 4, 1)
    first = sorted(v for _, v in timed[:quarter])
    last = sorted(v for _, v in timed[-quarter:])
    latencies = sorted(v for _, v in timed)
    recorded = histogram.from_counts((round(v * 1000), 1) for v in latencies)
    return EchoResult(
        sent=sent, answered=sent - errors, timed=len(latencies), sent_timed=len(lags),
        errors=errors,
        connect_errors=opens_failed,
        duration_s=span_ms / 1000, target_rate=request.paced_rate,
        p50_ms=percentile(latencies, 50), p99_ms=percentile(latencies, 99),
        mean_ms=sum(latencies) / len(latencies) if latencies else None,
        max_ms=latencies[-1] if latencies else None,
        lag_ms=max(lags, default=0.0),
        late_share=sum(lag > period for lag in lags) / len(lags) if lags and period else 0.0,
        histogram=histogram.encode(recorded) if latencies else None,
        first_ms=percentile(first, 50), last_ms=percentile(last, 50),
        windows_p99_ms=windows_p99(timed, span_ms / 1000),
    )  # fmt: skip


def closed_window(connections: list[list[Sample]]) -> tuple[float, float]:
    """The part of a closed loop it is timed over: from the last connection's first message
    to the first connection's last echo, when every connection was sending; its messages
    over its length are the loop's rate. Counted over each connection's own span instead,
    the connections that opened first would count as if all had sent from the start (a
    server that answers 500 messages a second read as 620 when 50 opens took a third of the
    run). The whole load when that part is under STEADY_SHARE of it: a connection that
    ended early, or opened late."""
    bounds = [
        (exchanges[0].start_ms, max(s.end_ms for s in exchanges)) for exchanges in connections
    ]
    start, end = max(b[0] for b in bounds), min(b[1] for b in bounds)
    first, last = min(b[0] for b in bounds), max(b[1] for b in bounds)
    if end - start >= STEADY_SHARE * (last - first) and end > start:
        return float(start), float(end)
    return float(first), float(max(last, first + 1))


def windows_p99(timed: list[tuple[float, float]], span_s: float) -> tuple[float, ...]:
    """The p99 of each window of (due, latency) pairs sorted by due time: as many windows
    as the load's span holds (request_records.window_count, HTTP's rule), split by due
    time; none when one holds under half of MIN_PER_WINDOW (its p99 would be its maximum)."""
    if not timed:
        return ()
    count = window_count(span_s, len(timed))
    start, end = timed[0][0], timed[-1][0]
    width = (end - start) / count + 1e-9
    windows: list[list[float]] = [[] for _ in range(count)]
    for due, latency in timed:
        windows[min(count - 1, int((due - start) / width))].append(latency)
    if any(len(w) < MIN_PER_WINDOW // 2 for w in windows):
        return ()
    return tuple(percentile(sorted(w), 99) or 0.0 for w in windows)


def broadcast_result(
    results: Path, receivers: int, rounds: int, warmup_rounds: int = 0
) -> BroadcastResult:
    """Round k's time: from its post's start to the end of the last receiver's read of it
    (the warm-up's rounds not timed). Each receiver must read each round's frame once, in
    order (each frame names its round)."""
    posts: dict[int, int] = {}
    reads: dict[int, list[int]] = defaultdict(list)
    duplicates = 0
    seen: dict[str, set[int]] = defaultdict(set)
    for sample in samples(results):
        if sample.label == POST and sample.ok:
            posts[len(posts)] = sample.start_ms
        elif sample.label == RECEIVE and sample.ok:
            number = _round_of(sample.got)
            if number is None or number in seen[sample.thread]:
                duplicates += 1
                continue
            seen[sample.thread].add(number)
            reads[number].append(sample.end_ms)
    last_ms = []
    missing = 0
    for number, posted in posts.items():
        got = reads.get(number, [])
        missing += receivers - len(got)
        if len(got) == receivers and number >= warmup_rounds:
            last_ms.append(float(max(got) - posted))
    ordered = sorted(last_ms)
    return BroadcastResult(
        rounds=len(posts), receivers=receivers, deliveries=sum(map(len, reads.values())),
        missing=missing + receivers * (rounds + warmup_rounds - len(posts)),
        duplicates=duplicates,
        last_ms=last_ms, p50_ms=percentile(ordered, 50), p99_ms=percentile(ordered, 99),
    )  # fmt: skip


def _round_of(frame: str) -> int | None:
    """The round a frame names ("round K …"), 0-based as JMeter's loop index."""
    parts = frame.split(" ", 2)
    if len(parts) < 2 or parts[0] != "round" or not parts[1].isdigit():
        return None
    return int(parts[1])


def opened(results: Path) -> dict[int, tuple[int, int]]:
    """The hold's opens so far, by step: (succeeded, failed)."""
    counts: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    prefix = OPEN + " "
    for sample in samples(results):
        if sample.label.startswith(prefix) and sample.label[len(prefix) :].isdigit():
            counts[int(sample.label[len(prefix) :])][0 if sample.ok else 1] += 1
    return {step: (ok, failed) for step, (ok, failed) in counts.items()}
