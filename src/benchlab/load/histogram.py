"""Latency histograms: HdrHistogram (the `hdrhistogram` package), in microseconds.

Every trial keeps its whole histogram, encoded (HdrHistogram's compressed V2 form, base64),
so a cell's percentiles come from the merge of its trials' histograms, bin by bin, and any
percentile can be read again later. Three significant digits: a value is kept within 0.1 %.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

import numpy
from hdrh.histogram import HdrHistogram

from benchlab.load.result import Latency

LOWEST_US = 1
HIGHEST_US = 3_600_000_000  # an hour: far beyond any timeout
SIGNIFICANT_DIGITS = 3
# A step of a trial's latency over time (load/timeline.py): a value kept within 1 %, in a
# histogram of 27 KB where a whole trial's takes 190 KB.
COARSE_DIGITS = 2


def new(digits: int = SIGNIFICANT_DIGITS) -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, digits)


def from_counts(counts: Iterable[tuple[int, int]]) -> HdrHistogram:
    """A histogram of (microseconds, count) pairs."""
    histogram = new()
    for value, count in counts:
        histogram.record_value(min(max(int(value), LOWEST_US), HIGHEST_US), int(count))
    return histogram


def encode(histogram: HdrHistogram) -> str:
    return histogram.encode().decode("ascii")


def decode(text: str) -> HdrHistogram:
    return HdrHistogram.decode(text.encode("ascii"))


def merge(encoded: Iterable[str | None]) -> HdrHistogram | None:
    """The bin-by-bin sum of encoded histograms; None when there is none."""
    merged = None
    for text in encoded:
        if not text:
            continue
        if merged is None:
            merged = new()
        merged.add(decode(text))
    return merged


class _Recorded:
    """A histogram's recorded bins, read once: HdrHistogram's own figures (its mean, its value
    at a percentile), computed over the bins that hold a count. The package's readers walk
    every one of its ~23,000 bins in Python, a third of a second per cell for the mean."""

    def __init__(self, histogram: HdrHistogram) -> None:
        counts = numpy.ctypeslib.as_array(histogram.counts)
        indices = numpy.flatnonzero(counts)
        self.histogram = histogram
        self.values = [histogram.get_value_from_index(int(i)) for i in indices]
        self.counts = counts[indices]
        self.cumulative = numpy.cumsum(self.counts)

    def _middles(self) -> list[int]:
        """Each recorded bin's middle value (HdrHistogram's medianEquivalentValue)."""
        h, middles = self.histogram, []
        for value in self.values:
            low, high = h.get_lowest_equivalent_value(value), h.get_highest_equivalent_value(value)
            middles.append(low + ((high + 1 - low) >> 1))
        return middles

    def mean(self) -> float:
        """HdrHistogram's mean: each bin counted at the middle of the values it stands for."""
        total = sum(c * m for c, m in zip(self.counts.tolist(), self._middles(), strict=True))
        return total / self.histogram.get_total_count()

    def stdev(self) -> float:
        """HdrHistogram's standard deviation, over the bins' middles as its mean is."""
        middles = numpy.array(self._middles(), dtype=numpy.float64)
        deviations = middles - self.mean()
        return float(
            numpy.sqrt((deviations * deviations * self.counts).sum() / self.cumulative[-1])
        )

    def at_percentile(self, percentile: float) -> int:
        """HdrHistogram's value at a percentile: the top of the first bin that reaches it."""
        target = self.histogram.get_target_count_at_percentile(percentile)
        value = self.values[int(numpy.searchsorted(self.cumulative, target, side="left"))]
        if percentile:
            return self.histogram.get_highest_equivalent_value(value)
        return self.histogram.get_lowest_equivalent_value(value)


def summary_ms(histogram: HdrHistogram | None) -> dict[str, float | None]:
    """mean, p50, p90, p99, p99.9 and max of a histogram, in milliseconds."""
    keys = ("mean", "p50", "p90", "p99", "p999", "max")
    if histogram is None or histogram.get_total_count() == 0:
        return dict.fromkeys(keys)
    recorded = _Recorded(histogram)
    return {
        "mean": recorded.mean() / 1000.0,
        "p50": recorded.at_percentile(50) / 1000.0,
        "p90": recorded.at_percentile(90) / 1000.0,
        "p99": recorded.at_percentile(99) / 1000.0,
        "p999": recorded.at_percentile(99.9) / 1000.0,
        "max": histogram.get_max_value() / 1000.0,
    }


CURVE_QUANTILES = ("50", "75", "90", "95", "99", "99.9")


def curve_ms(histogram: HdrHistogram) -> dict[str, float]:
    """Latency at the quantiles the percentile chart draws."""
    if histogram.get_total_count() == 0:
        return {}
    recorded = _Recorded(histogram)
    return {q: recorded.at_percentile(float(q)) / 1000.0 for q in CURVE_QUANTILES}


def record_many(histogram: HdrHistogram, values_us: numpy.ndarray) -> None:
    """Record every value of an integer array at once: the bins HdrHistogram's own
    record_value would choose (its index arithmetic, vectorised), a thousand times faster
    than a call per value. Values are clipped to the histogram's range."""
    if values_us.size == 0:
        return
    values = numpy.clip(values_us.astype(numpy.int64), LOWEST_US, HIGHEST_US)
    h = histogram
    # bit length of (value | sub_bucket_mask): exact through float64 below 2**53
    pow2ceiling = numpy.frexp((values | h.sub_bucket_mask).astype(numpy.float64))[1]
    bucket = pow2ceiling - h.unit_magnitude - (h.sub_bucket_half_count_magnitude + 1)
    sub_bucket = values >> (bucket + h.unit_magnitude)
    index = ((bucket + 1) << h.sub_bucket_half_count_magnitude) + (
        sub_bucket - h.sub_bucket_half_count
    )
    counts = numpy.ctypeslib.as_array(h.counts)
    counts += numpy.bincount(index, minlength=h.counts_len).astype(counts.dtype)
    h.total_count += int(values.size)
    h.min_value = min(h.min_value, int(values.min()))
    h.max_value = max(h.max_value, int(values.max()))


class LatencyTally:
    """A trial's latencies, fed in chunks (numpy arrays of µs): their histogram, their exact
    minimum and the moments of their standard deviation. Its memory is the histogram's,
    however many requests the trial sent."""

    def __init__(self) -> None:
        self.histogram = new()
        self.count = 0
        self.minimum: int | None = None
        self._sum = 0.0
        self._squares = 0.0

    def add(self, values_us: numpy.ndarray) -> None:
        if values_us.size == 0:
            return
        record_many(self.histogram, values_us)
        self.count += int(values_us.size)
        low = int(values_us.min())
        self.minimum = low if self.minimum is None else min(self.minimum, low)
        as_float = values_us.astype(numpy.float64)
        self._sum += float(as_float.sum())
        self._squares += float((as_float * as_float).sum())

    def stdev_us(self) -> float | None:
        if self.count < 2:
            return None
        mean = self._sum / self.count
        return max(self._squares / self.count - mean * mean, 0.0) ** 0.5

    def latency(self) -> tuple[Latency, str | None]:
        """The trial's latency figures and its encoded histogram."""
        if self.count == 0 or self.minimum is None:
            return Latency(None, None, None, None, None, None, None, None), None
        summary = summary_ms(self.histogram)
        stdev = self.stdev_us()
        latency = Latency(
            min=self.minimum / 1000,
            mean=summary.get("mean"),
            stdev=None if stdev is None else stdev / 1000,
            p50=summary.get("p50"),
            p90=summary.get("p90"),
            p99=summary.get("p99"),
            p999=summary.get("p999"),
            max=summary.get("max"),
            percentiles=curve_ms(self.histogram),
        )
        return latency, encode(self.histogram)

    def quantile_ms(self, percentile: float) -> float | None:
        return quantile_ms(self.histogram, percentile)


def quantile_ms(histogram: HdrHistogram, percentile: float) -> float | None:
    """HdrHistogram's value at a percentile, in milliseconds; None: an empty histogram."""
    if histogram.get_total_count() == 0:
        return None
    return _Recorded(histogram).at_percentile(percentile) / 1000.0


# --- HdrHistogram's own file formats, as its Java library writes them ----------------------

# Rows of a percentile distribution: levels that halve their distance to 100 % every 5 rows
# (HdrHistogram's outputPercentileDistribution, wrk2's --latency).
TICKS_PER_HALF_DISTANCE = 5
US_PER_MS = 1000.0


def _next_level(level: float) -> float:
    """HdrHistogram's PercentileIterator step: the tick size of the level's half-distance to
    100 %, its power of two rounded down as Java's (long) casts round it."""
    halvings = int(math.log(100.0 / (100.0 - level)) / math.log(2))
    return level + 100.0 / (TICKS_PER_HALF_DISTANCE * 2 ** (halvings + 1))


def _fixed(value: float, places: int, width: int = 0) -> str:
    """A number as Java's %WIDTH.PLACESf writes it: its shortest decimal digits rounded half
    up (Python's rounds the binary value half to even: 0.999780273437 for Java's ...438)."""
    if math.isinf(value):
        return "Infinity".rjust(width)
    rounded = Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP)
    return f"{rounded:.{places}f}".rjust(width)


def percentile_distribution(histogram: HdrHistogram, unit_ratio: float = US_PER_MS) -> str:
    """The histogram as HdrHistogram's percentile distribution file (.hgrm), values ÷
    `unit_ratio` (µs to ms by default), as Java's outputPercentileDistribution writes it
    (HdrHistogram's plotter and HistogramLogProcessor read and write the same). hdrh's own
    output_percentile_distribution steps its levels without Java's rounding down (its rows
    differ), writes the total count as a decimal and leaves the deviation unscaled."""
    digits = histogram.significant_figures
    out = [f"{'Value':>12} {'Percentile':>14} {'TotalCount':>10} {'1/(1-Percentile)':>14}\n\n"]
    total = histogram.get_total_count()
    mean = stdev = 0.0
    if total:
        recorded = _Recorded(histogram)
        mean, stdev = recorded.mean() / unit_ratio, recorded.stdev() / unit_ratio
        level = 0.0
        for value, reached in zip(recorded.values, recorded.cumulative.tolist(), strict=True):
            top = _fixed(histogram.get_highest_equivalent_value(value) / unit_ratio, digits, 12)
            while 100.0 * reached / total >= level:
                fraction = level / 100.0
                odds = math.inf if fraction == 1 else 1 / (1 - fraction)
                out.append(f"{top} {_fixed(fraction, 12)} {reached:10d} {_fixed(odds, 2, 14)}\n")
                level = _next_level(level)
                if reached == total:
                    break
            if reached == total:  # the last row: 100 %
                out.append(f"{top} {_fixed(1.0, 12)} {reached:10d}\n")
                break
    out += [
        f"#[Mean    = {_fixed(mean, digits, 12)}, StdDeviation   = {_fixed(stdev, digits, 12)}]\n",
        f"#[Max     = {_fixed(histogram.get_max_value() / unit_ratio, digits, 12)}, "
        f"Total count    = {total:12d}]\n",
        f"#[Buckets = {histogram.bucket_count:12d}, SubBuckets     = "
        f"{histogram.sub_bucket_count:12d}]\n",
    ]
    return "".join(out)


@dataclass(frozen=True)
class Interval:
    """One histogram of an interval log: when its recording started (seconds after the log's
    start) and how long it lasted."""

    start_s: float
    length_s: float
    encoded: str  # as encode() makes it: HdrHistogram's compressed V2 form, base64


def interval_log(
    intervals: Iterable[Interval],
    start_epoch_s: float,
    comments: Iterable[str] = (),
    unit_ratio: float = US_PER_MS,
) -> str:
    """HdrHistogram's interval log (HistogramLogWriter's format 1.3): its comments, its start
    time, and a line per interval with its compressed histogram, which every HdrHistogram
    library's HistogramLogReader reads (the maximum column ÷ `unit_ratio`: ms). Written here,
    not by hdrh's HistogramLogWriter: its StartTime line calls a method datetime lacks."""
    started = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(start_epoch_s))
    lines = [f"#{comment}" for comment in comments]
    lines += [
        "#[Histogram log format version 1.3]",
        f"#[StartTime: {start_epoch_s:.3f} (seconds since epoch), {started}]",
        f"#[BaseTime: {start_epoch_s:.3f} (seconds since epoch)]",
        '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"',
    ]
    for interval in intervals:
        highest = decode(interval.encoded).get_max_value() / unit_ratio
        lines.append(
            f"{interval.start_s:.3f},{interval.length_s:.3f},{highest:.3f},{interval.encoded}"
        )
    return "\n".join(lines) + "\n"
