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
