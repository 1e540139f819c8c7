"""A load tool's record of every request (vegeta's results, as `vegeta encode --to csv`
writes them), read into a trial's figures without keeping the requests: the records are
read twice, in chunks, from the tool's file (once for the schedule, once into the
histograms), so benchlab's memory is the histograms', whatever the rate and the duration.

A fixed-rate trial's latency over time (load/timeline.py) is counted in the second pass too.

Latency is counted from each request's due time: vegeta's constant pacer sends request
`seq` at start + (seq + 1) / rate; the start is not recorded, and the least-late request
fixes it (so a lag is a lower bound, off by that one's). The lag between due and sent is
added to the request's latency (coordinated omission, see vegeta.py).
"""

from __future__ import annotations

import csv
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import numpy

from benchlab.core.errors import LoadToolError
from benchlab.core.request_errors import Errors
from benchlab.load.histogram import LatencyTally
from benchlab.load.result import LoadResult
from benchlab.load.timeline import TimelineTally

CHUNK_ROWS = 65_536
# vegeta's CSV columns (see `vegeta encode -h`).
SENT, CODE, LATENCY, BYTES_IN, ERROR, SEQ, METHOD, URL = 0, 1, 2, 4, 5, 8, 9, 10
NUMBERS = (SENT, CODE, LATENCY, BYTES_IN, SEQ)
SUCCESS_LOW, SUCCESS_HIGH = 200, 400  # vegeta's own definition of a success: 2xx and 3xx
QUARTERS = 4  # a trend's parts: the median of the first against the last
# The windows a p99 is judged in: WINDOW_S each, as many as the trial holds, each with at
# least MIN_PER_WINDOW requests (fewer, and its p99 is its maximum): a 60-s replay at 500
# req/s is judged in 30 windows; one at 20 req/s in 6 windows of 10 s.
WINDOW_S = 2.0
MIN_PER_WINDOW = 200

# One generator's records: a way to read its CSV lines (again), and the rate it was paced at.
Lines = Callable[[], Iterable[str]]


@dataclass(frozen=True)
class Generator:
    lines: Lines
    rate: float | None


@dataclass
class _Chunk:
    sent: numpy.ndarray  # ns since the epoch
    code: numpy.ndarray
    latency: numpy.ndarray  # ns
    bytes_in: numpy.ndarray
    seq: numpy.ndarray
    lines: list[str]


def _chunks(lines: Iterable[str]) -> Iterator[_Chunk]:
    """The records in chunks of CHUNK_ROWS, their numbers as arrays (parsed in C)."""
    iterator = iter(lines)
    while batch := [line for line in itertools.islice(iterator, CHUNK_ROWS) if line.strip()]:
        numbers = numpy.loadtxt(
            batch, delimiter=",", quotechar='"', usecols=NUMBERS, dtype=numpy.int64, ndmin=2
        )
        sent, code, latency, bytes_in, seq = numbers.T
        yield _Chunk(sent, code, latency, bytes_in, seq, batch)


def _columns(line: str) -> list[str]:
    return next(csv.reader([line]))


@dataclass
class _Schedule:
    """The first pass, per generator: how many, the first and last sent, and the start its
    least-late request implies (rate / due times)."""

    rate: float | None
    count: int = 0
    first: int = 2**63 - 1
    last: int = -(2**63)
    # ns after `origin`: due time of request seq is start + (seq + 1) / rate. Times are taken
    # from an integer origin first: a float64 of epoch nanoseconds is off by up to 256 ns.
    start: float = math.inf
    origin: int | None = None

    def see(self, chunk: _Chunk) -> None:
        self.count += int(chunk.sent.size)
        self.first = min(self.first, int(chunk.sent.min()))
        self.last = max(self.last, int(chunk.sent.max()))
        if self.rate:
            due = (chunk.seq + 1).astype(numpy.float64) * (1e9 / self.rate)
            self.start = min(self.start, float((self._since_origin(chunk) - due).min()))

    def _since_origin(self, chunk: _Chunk) -> numpy.ndarray:
        if self.origin is None:
            self.origin = int(chunk.sent[0])
        return (chunk.sent - self.origin).astype(numpy.float64)

    def lags(self, chunk: _Chunk) -> numpy.ndarray:
        """How late each request was sent, ns."""
        if not self.rate:
            return numpy.zeros(chunk.sent.size, dtype=numpy.int64)
        due = self.start + (chunk.seq + 1).astype(numpy.float64) * (1e9 / self.rate)
        return numpy.maximum(0, numpy.rint(self._since_origin(chunk) - due)).astype(numpy.int64)

    @property
    def sent_rate(self) -> float:
        span = (self.last - self.first) / 1e9
        return (self.count - 1) / span if span > 0 else 0.0


def error_kind(error: str) -> str:
    text = error.lower()
    if "timeout" in text or "deadline exceeded" in text:
        return "timeout"
    if "connection refused" in text or "dial" in text or "connect:" in text:
        return "connect"
    if "write:" in text or "broken pipe" in text:
        return "write"
    if "eof" in text or "reset by peer" in text or "read:" in text:
        return "read"
    return "other"


@dataclass
class _Tally:
    """The second pass: every figure of the trial, added chunk by chunk."""

    first_sent: int
    span_ns: int
    mixed: bool  # several kinds of request: each is counted on its own too
    window_count: int = 1
    whole: LatencyTally = field(default_factory=LatencyTally)
    quarters: list[LatencyTally] = field(
        default_factory=lambda: [LatencyTally() for _ in range(QUARTERS)]
    )
    windows: list[LatencyTally] = field(default_factory=list)
    timeline: TimelineTally | None = None  # a fixed-rate trial's: latency over time
    kinds: dict[str, LatencyTally] = field(default_factory=dict)
    failed_kinds: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("connect", "read", "write", "timeout", "other"), 0)
    )
    answered: int = 0
    non_2xx: int = 0
    received: int = 0
    end: int = 0
    max_lag: int = 0
    _paths: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.windows = [LatencyTally() for _ in range(self.window_count)]

    def add(self, chunk: _Chunk, lags: numpy.ndarray) -> None:
        code = chunk.code
        answered = code != 0
        self.answered += int(answered.sum())
        self.received += int(chunk.bytes_in[answered].sum())
        failed_status = answered & ((code < SUCCESS_LOW) | (code >= SUCCESS_HIGH))
        self.non_2xx += int(failed_status.sum())
        self.end = max(self.end, int((chunk.sent + chunk.latency).max()))
        self.max_lag = max(self.max_lag, int(lags.max()))
        kept = answered.copy()  # a latency: every answer, and a timeout's wait
        for i in numpy.flatnonzero(~answered):
            kind = error_kind(_columns(chunk.lines[i])[ERROR])
            self.errors[kind] += 1
            kept[i] = kind == "timeout"
        latency_us = numpy.maximum(1, (chunk.latency + lags) // 1000)
        self.whole.add(latency_us[kept])
        since = chunk.sent - self.first_sent
        for parts, tallies in ((QUARTERS, self.quarters), (self.window_count, self.windows)):
            part = (since * parts) // (self.span_ns + 1)
            for index, tally in enumerate(tallies):
                tally.add(latency_us[kept & (part == index)])
        failed = ~answered | failed_status
        if self.timeline is not None:
            came = chunk.sent + chunk.latency
            self.timeline.add(chunk.sent, came, latency_us, kept, answered & ~failed, failed)
        if self.mixed:
            self._add_kinds(chunk, latency_us, kept, failed)

    def _add_kinds(
        self, chunk: _Chunk, latency_us: numpy.ndarray, kept: numpy.ndarray, failed: numpy.ndarray
    ) -> None:
        """Each request of a mix ("METHOD path") on its own: its count, failures, latency."""
        kinds = numpy.array([self._kind(line) for line in chunk.lines])
        for kind in numpy.unique(kinds):
            mine = kinds == kind
            self.kinds.setdefault(str(kind), LatencyTally()).add(latency_us[kept & mine])
            self.failed_kinds[str(kind)] = self.failed_kinds.get(str(kind), 0) + int(
                (failed & mine).sum()
            )

    def _kind(self, line: str) -> str:
        columns = _columns(line)
        url = columns[URL]
        path = self._paths.get(url)
        if path is None:
            parts = urlsplit(url)
            path = self._paths[url] = parts.path + (f"?{parts.query}" if parts.query else "")
        return f"{columns[METHOD]} {path}"

    def window_p99s(self) -> tuple[float, ...]:
        # Requests sent unevenly (a closed loop that stalled) may leave a window thin.
        if any(w.count < MIN_PER_WINDOW // 2 for w in self.windows):
            return ()
        return tuple(w.quantile_ms(99) or 0.0 for w in self.windows)

    def parts(self) -> dict[str, dict[str, float | int | None]]:
        if len(set(self.kinds) | set(self.failed_kinds)) < 2:
            return {}
        return {
            kind: {
                "requests": self.kinds[kind].count if kind in self.kinds else 0,
                "errors": self.failed_kinds.get(kind, 0),
                "p50_ms": self.kinds[kind].quantile_ms(50) if kind in self.kinds else None,
                "p99_ms": self.kinds[kind].quantile_ms(99) if kind in self.kinds else None,
            }
            for kind in sorted(set(self.kinds) | set(self.failed_kinds))
        }


def window_count(span_s: float, requests: int) -> int:
    """How many windows of at least WINDOW_S and MIN_PER_WINDOW requests a trial holds."""
    return max(1, min(int(span_s / WINDOW_S + 0.5), requests // MIN_PER_WINDOW))


def read_results(generators: Sequence[Generator], mixed: bool = False) -> LoadResult:
    """One LoadResult from every generator's records, each timed against its own schedule.
    `mixed`: the requests were several (a mix): each is reported on its own too."""
    try:
        return _read(generators, mixed)
    except ValueError as exc:  # a line numpy could not read as vegeta's
        raise LoadToolError(f"vegeta's record of its requests could not be read: {exc}") from None


def _read(generators: Sequence[Generator], mixed: bool) -> LoadResult:
    schedules = [_Schedule(g.rate) for g in generators]
    for generator, schedule in zip(generators, schedules, strict=True):
        for chunk in _chunks(generator.lines()):
            schedule.see(chunk)
    seen = [s for s in schedules if s.count]
    if not seen:
        raise LoadToolError("vegeta sent no request")
    first = min(s.first for s in seen)
    span = max(s.last for s in seen) - first
    paced = all(g.rate for g in generators)
    tally = _Tally(
        first,
        span,
        mixed,
        window_count(span / 1e9, sum(s.count for s in seen)),
        timeline=TimelineTally(first, span) if paced else None,
    )
    for generator, schedule in zip(generators, schedules, strict=True):
        for chunk in _chunks(generator.lines()):
            tally.add(chunk, schedule.lags(chunk))
    latency, encoded = tally.whole.latency()
    return LoadResult(
        tool="vegeta",
        requests=tally.answered,
        duration_s=max(tally.end - first, 1) / 1e9,
        bytes=tally.received,
        latency=latency,
        errors=Errors(non_2xx=tally.non_2xx, **tally.errors),
        histogram=encoded,
        target_rate=sum(g.rate or 0.0 for g in generators) if paced else None,
        sent_rate=sum(s.sent_rate for s in seen) if paced else None,
        schedule_lag_ms=tally.max_lag / 1e6 if paced else None,
        latency_first_ms=tally.quarters[0].quantile_ms(50),
        latency_last_ms=tally.quarters[-1].quantile_ms(50),
        window_p99_ms=tally.window_p99s(),
        parts=tally.parts(),
        timeline=tally.timeline.timeline() if tally.timeline is not None else None,
    )


def csv_lines(rows: Iterable[Sequence[str]]) -> list[str]:
    """Rows as vegeta's CSV lines (for records made by hand: the tests)."""
    import io

    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().splitlines()
