"""Latency histograms: HdrHistogram (the `hdrhistogram` package), in microseconds.

Every trial keeps its whole histogram, encoded (HdrHistogram's compressed V2 form, base64),
so a cell's percentiles come from the merge of its trials' histograms, bin by bin, and any
percentile can be read again later. Three significant digits: a value is kept within 0.1 %.
"""

from __future__ import annotations

from collections.abc import Iterable

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

    def mean(self) -> float:
        """HdrHistogram's mean: each bin counted at the middle of the values it stands for."""
        h, total = self.histogram, 0
        for value, count in zip(self.values, self.counts.tolist(), strict=True):
            low, high = h.get_lowest_equivalent_value(value), h.get_highest_equivalent_value(value)
            total += count * (low + ((high + 1 - low) >> 1))
        return total / self.histogram.get_total_count()

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
