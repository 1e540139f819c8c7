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


def new() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


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


def latency_of(latencies_us: list[int]) -> tuple[Latency, str | None]:
    """Every request's latency (µs) as the figures and the encoded histogram of a trial: for
    the tools that keep each request (vegeta, h2load)."""
    import statistics

    if not latencies_us:
        return Latency(None, None, None, None, None, None, None, None), None
    hist = from_counts((v, 1) for v in latencies_us)
    summary = summary_ms(hist)
    latency = Latency(
        min=min(latencies_us) / 1000,
        mean=summary.get("mean"),
        stdev=statistics.pstdev(latencies_us) / 1000 if len(latencies_us) > 1 else None,
        p50=summary.get("p50"),
        p90=summary.get("p90"),
        p99=summary.get("p99"),
        p999=summary.get("p999"),
        max=summary.get("max"),
        percentiles=curve_ms(hist),
    )
    return latency, encode(hist)
