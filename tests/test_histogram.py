"""Latency histograms: trials merge bin by bin into exactly the histogram of all their
samples, at the precision promised (three significant digits)."""

from __future__ import annotations

import random

from benchlab.load import histogram


def test_merged_trials_give_the_percentiles_of_all_their_samples() -> None:
    rng = random.Random(7)
    trials = [[int(rng.lognormvariate(8, 1)) + 1 for _ in range(20_000)] for _ in range(5)]
    encoded = [histogram.encode(histogram.from_counts((v, 1) for v in t)) for t in trials]
    merged = histogram.merge(encoded)
    combined = histogram.from_counts((v, 1) for t in trials for v in t)
    assert merged.get_total_count() == sum(len(t) for t in trials)
    for q in (50, 90, 99, 99.9, 100):
        assert merged.get_value_at_percentile(q) == combined.get_value_at_percentile(q)


def test_percentiles_are_within_the_promised_precision_of_the_exact_ones() -> None:
    rng = random.Random(11)
    values = sorted(int(rng.expovariate(1 / 5000)) + 1 for _ in range(50_000))
    hist = histogram.from_counts((v, 1) for v in values)
    for q in (50, 90, 99, 99.9):
        exact = values[int(len(values) * q / 100) - 1]
        assert abs(hist.get_value_at_percentile(q) - exact) <= 0.01 * exact + 1


def test_no_histogram_merges_to_none_and_summarises_to_nothing() -> None:
    assert histogram.merge([None, ""]) is None
    assert set(histogram.summary_ms(None).values()) == {None}


def test_the_figures_read_over_recorded_bins_are_hdrhistograms_own() -> None:
    # The package's own readers (every bin walked in Python) are the reference: the same
    # mean and the same value at every percentile, on shapes that stress the bin edges.
    rng = random.Random(3)
    shapes = [
        [int(rng.lognormvariate(7, 1.5)) + 1 for _ in range(30_000)],
        [1] * 50 + [3_600_000_000] * 2,  # the lowest and highest trackable values
        [rng.choice((5_000, 50_000, 200_000)) for _ in range(2_000)],
        [123_456],
    ]
    for values in shapes:
        merged = histogram.merge([histogram.encode(histogram.from_counts((v, 1) for v in values))])
        summary = histogram.summary_ms(merged)
        assert summary["mean"] == merged.get_mean_value() / 1000
        for key, q in (("p50", 50), ("p90", 90), ("p99", 99), ("p999", 99.9)):
            assert summary[key] == merged.get_value_at_percentile(q) / 1000, (key, values[:3])
        curve = histogram.curve_ms(merged)
        for q, value in curve.items():
            assert value == merged.get_value_at_percentile(float(q)) / 1000
        for q in (0, 0.1, 33.3, 100):
            assert histogram._Recorded(merged).at_percentile(q) == merged.get_value_at_percentile(q)
