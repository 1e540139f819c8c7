"""Latency histograms: HdrHistogram (the `hdrhistogram` package), in microseconds.

Every trial keeps its whole histogram, encoded (HdrHistogram's compressed V2 form, base64),
so a cell's percentiles come from the merge of its trials' histograms, bin by bin, and any
percentile can be read again later. Three significant digits: a value is kept within 0.1 %.
"""

from __future__ import annotations

from collections.abc import Iterable

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


def percentile_ms(histogram: HdrHistogram, quantile: float) -> float | None:
    if histogram.get_total_count() == 0:
        return None
    return histogram.get_value_at_percentile(quantile) / 1000.0


def summary_ms(histogram: HdrHistogram | None) -> dict[str, float | None]:
    """mean, p50, p90, p99, p99.9 and max of a histogram, in milliseconds."""
    keys = ("mean", "p50", "p90", "p99", "p999", "max")
    if histogram is None or histogram.get_total_count() == 0:
        return dict.fromkeys(keys)
    return {
        "mean": histogram.get_mean_value() / 1000.0,
        "p50": percentile_ms(histogram, 50),
        "p90": percentile_ms(histogram, 90),
        "p99": percentile_ms(histogram, 99),
        "p999": percentile_ms(histogram, 99.9),
        "max": histogram.get_max_value() / 1000.0,
    }


CURVE_QUANTILES = ("50", "75", "90", "95", "99", "99.9")


def curve_ms(histogram: HdrHistogram) -> dict[str, float]:
    """Latency at the quantiles the percentile chart draws."""
    out = {}
    for quantile in CURVE_QUANTILES:
        value = percentile_ms(histogram, float(quantile))
        if value is not None:
            out[quantile] = value
    return out


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
