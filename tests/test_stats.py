"""Statistics on data with known answers."""

from __future__ import annotations

import math
import random

import pytest

from benchlab.analysis.stats import median_interval, order_statistic_coverage


def test_ten_trials_give_the_second_and_ninth_order_statistics() -> None:
    estimate = median_interval([float(v) for v in [7, 3, 10, 1, 5, 2, 9, 4, 8, 6]])
    assert estimate is not None
    assert estimate.median == 5.5
    assert (estimate.low, estimate.high) == (2.0, 9.0)
    # 1 - 2 * (C(10,0) + C(10,1)) / 2**10
    assert estimate.confidence == pytest.approx(1 - 2 * 11 / 1024)


def test_few_trials_widen_to_min_max_and_say_their_real_coverage() -> None:
    estimate = median_interval([3.0, 1.0, 2.0])
    assert estimate is not None
    assert (estimate.median, estimate.low, estimate.high) == (2.0, 1.0, 3.0)
    assert estimate.confidence == pytest.approx(0.75)
    six = median_interval([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert six is not None and six.confidence == pytest.approx(1 - 2 / 64)


def test_coverage_formula_matches_the_binomial() -> None:
    assert order_statistic_coverage(5, 1) == pytest.approx(1 - 2 / 32)
    assert order_statistic_coverage(20, 6) == pytest.approx(
        1 - 2 * sum(math.comb(20, i) for i in range(6)) / 2**20
    )


def test_missing_values_are_ignored_and_nothing_gives_none() -> None:
    assert median_interval([]) is None
    assert median_interval([None, float("nan")]) is None
    one = median_interval([None, 4.0])
    assert one is not None and (one.median, one.low, one.high, one.n) == (4.0, 4.0, 4.0, 1)


def test_interval_covers_the_true_median_at_least_95_percent_of_the_time() -> None:
    rng = random.Random(1234)
    true_median = math.log(2)  # exponential(1): skewed, so a normal interval would be wrong
    samples, covered = 3000, 0
    for _ in range(samples):
        estimate = median_interval([rng.expovariate(1.0) for _ in range(15)])
        assert estimate is not None
        covered += estimate.low <= true_median <= estimate.high
    assert estimate.confidence >= 0.95
    # The binomial standard error over 3000 draws is about 0.4 %.
    assert covered / samples >= 0.95 - 0.012
    assert covered / samples <= estimate.confidence + 0.012


def test_ratio_interval_covers_the_true_ratio_and_says_when_it_is_significant() -> None:
    from benchlab.analysis.stats import ratio_interval

    rng = random.Random(7)
    faster = [rng.gauss(1200, 30) for _ in range(8)]
    slower = [rng.gauss(1000, 30) for _ in range(8)]
    ratio = ratio_interval(faster, slower)
    assert ratio is not None
    assert ratio.low <= 1.2 <= ratio.high and ratio.significant
    # Two samples of one distribution: "significant" should be rare (about 5 % of pairs;
    # a percentile bootstrap on 8 trials runs a little over).
    false_alarms = sum(
        ratio_interval(
            [rng.gauss(1000, 30) for _ in range(8)], [rng.gauss(1000, 30) for _ in range(8)]
        ).significant
        for _ in range(150)
    )
    assert false_alarms / 150 < 0.12
    # A fixed seed: the same data always gives the same interval.
    assert ratio_interval(faster, slower) == ratio
    assert ratio_interval([], slower) is None


def test_adaptive_stopping_on_synthetic_trials() -> None:
    from benchlab.analysis.stats import median_interval, settled

    steady = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0]
    assert not settled(median_interval(steady[:5]), 5.0), "5 trials cannot reach 95 %: keep going"
    assert settled(median_interval(steady), 5.0), "6 tight trials reach 95 % within ±5 %: stop"
    noisy = [1000.0, 1400.0, 700.0, 1300.0, 800.0, 1200.0, 900.0, 1100.0]
    assert not settled(median_interval(noisy), 5.0)
    assert settled(median_interval(noisy), 40.0)
    # A run adds trials until converged or max_trials: simulate it on a stream of values.
    rng = random.Random(3)
    stream = [rng.gauss(1000, 10) for _ in range(20)]
    taken = next(n for n in range(1, 21) if settled(median_interval(stream[:n]), 5.0))
    assert taken == 6
