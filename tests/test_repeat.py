"""How far a second tune may move the rate to run at (analysis/repeat.py): known answers, and
the range's coverage on tunes drawn from a known noise model."""

from __future__ import annotations

import math
import random

import pytest

from benchlab.analysis.noise import NoiseComponents
from benchlab.analysis.repeat import MACHINE, REPLICATES, Z95, repeat_of


def test_the_machines_noise_gives_the_range_of_two_tunes_difference() -> None:
    noise = NoiseComponents(0.05, 0.05, 0.05, 0.05, rounds=5)  # sd 0.1 on one occasion
    found = repeat_of(200.0, (210.0, 230.0), noise)
    assert found is not None and found.basis == MACHINE
    reach = Z95 * math.sqrt(2) * 0.1
    assert found.high_rps == pytest.approx(200.0 * math.exp(reach))
    assert found.low_rps == pytest.approx(200.0 * math.exp(-reach))
    assert found.spread_pct == pytest.approx(100 * (math.exp(reach) - 1))


def test_without_a_record_the_replicates_give_it_and_a_noisier_hour_wins() -> None:
    own = repeat_of(300.0, (300.0, 360.0), None)
    assert own is not None and own.basis == REPLICATES
    sd = math.log(360 / 300) / math.sqrt(2)  # two values' sample deviation
    assert own.high_rps == pytest.approx(300.0 * math.exp(Z95 * math.sqrt(2) * sd))
    quiet = NoiseComponents(0.01, 0.0, 0.0, 0.0, rounds=5)
    wider = repeat_of(300.0, (300.0, 360.0), quiet)
    assert wider is not None and wider.basis == REPLICATES  # the replicates spread more
    assert repeat_of(300.0, (300.0,), None) is None  # one replicate: nothing to tell from
    assert repeat_of(None, (300.0, 360.0), quiet) is None  # no rate to run at


def test_a_second_tune_falls_in_the_first_ones_range_95_percent_of_the_time() -> None:
    noise = NoiseComponents(0.04, 0.06, 0.05, 0.03, rounds=5)
    sd = math.sqrt(0.04**2 + 0.06**2 + 0.05**2 + 0.03**2)
    draws = random.Random(58)
    held = 0
    tries = 4000
    for _ in range(tries):
        first, second = (500 * math.exp(draws.gauss(0, sd)) for _ in range(2))
        found = repeat_of(first, (), noise)
        assert found is not None
        held += found.holds(second)
    assert 0.93 <= held / tries <= 0.97, held / tries
