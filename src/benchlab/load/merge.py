"""Several generators' results as one, exactly: counts add up, latency histograms merge bin
by bin (HdrHistogram adds the counts of equal buckets: the merge of two histograms is the
histogram of both sets of latencies). vegeta's results merge request by request instead
(see Vegeta.merge): every request of every generator is read back, each timed against its
own generator's schedule.
"""

from __future__ import annotations

import math

from benchlab.core.errors import LoadToolError
from benchlab.core.request_errors import Errors
from benchlab.load import histogram
from benchlab.load.result import Latency, LoadResult


def merge_histograms(results: list[LoadResult]) -> LoadResult:
    """Counts summed; percentiles from the merged histogram; the mean and the standard
    deviation pooled from each generator's own (exact) ones; the longest duration (they
    start together)."""
    if any(r.histogram is None for r in results if r.requests):
        raise LoadToolError(
            f"{results[0].tool} gave no latency histogram: several generators' results "
            "cannot be merged exactly"
        )
    merged = histogram.merge(r.histogram for r in results)
    timed = [(r, histogram.decode(r.histogram).get_total_count()) for r in results if r.histogram]
    summary = histogram.summary_ms(merged)
    count = sum(n for _, n in timed)
    mean = stdev = None
    if count and all(r.latency.mean is not None for r, _ in timed):
        mean = sum(r.latency.mean * n for r, n in timed) / count
        if all(r.latency.stdev is not None for r, _ in timed):
            spread = sum(
                n * (r.latency.stdev**2 + (r.latency.mean - mean) ** 2)  # type: ignore[operator]
                for r, n in timed
            )
            stdev = math.sqrt(spread / count)
    lows = [r.latency.min for r, _ in timed if r.latency.min is not None]
    highs = [r.latency.max for r, _ in timed if r.latency.max is not None]
    errors = Errors(
        **{kind: sum(getattr(r.errors, kind) for r in results) for kind in vars(Errors())}
    )
    return LoadResult(
        tool=results[0].tool,
        requests=sum(r.requests for r in results),
        duration_s=max(r.duration_s for r in results),
        bytes=sum(r.bytes for r in results),
        latency=Latency(
            min=min(lows) if lows else None,
            mean=mean,
            stdev=stdev,
            p50=summary["p50"],
            p90=summary["p90"],
            p99=summary["p99"],
            p999=summary["p999"],
            max=max(highs) if highs else None,
            percentiles=histogram.curve_ms(merged) if merged else {},
        ),
        errors=errors,
        histogram=histogram.encode(merged) if merged else None,
    )
