"""The noise decomposition recovers components it is given: simulated rounds of two or three
stacks with known within-launch, between-launch, shared and own-drift spreads (seeded)."""

from __future__ import annotations

import math
import random

import pytest

from benchlab.analysis.noise import decompose


def _simulate(rng, rounds, stacks, launches, trials, within, between, shared, drift):
    measured = []
    for _ in range(rounds):
        common = rng.gauss(0, shared)
        rnd = []
        for s in range(stacks):
            own = rng.gauss(0, drift)
            stack = []
            for _ in range(launches):
                launch = rng.gauss(0, between)
                stack.append(
                    [1000 * (s + 1) * math.exp(common + own + launch + rng.gauss(0, within))
                     for _ in range(trials)]
                )  # fmt: skip
            rnd.append(stack)
        measured.append(rnd)
    return measured


@pytest.mark.parametrize(
    ("within", "between", "shared", "drift"),
    [(0.03, 0.08, 0.10, 0.0), (0.03, 0.08, 0.0, 0.05), (0.02, 0.0, 0.06, 0.02)],
)
def test_the_decomposition_finds_the_components_it_was_given(within, between, shared, drift):
    rng = random.Random(2026)
    found = decompose(_simulate(rng, 60, 3, 3, 3, within, between, shared, drift))
    for got, given in (
        (found.within_launch, within), (found.between_launches, between),
        (found.shared_by_round, shared), (found.own_drift, drift),
    ):  # fmt: skip
        # On the variance scale: a component under about 0.03 (variance 0.001) cannot be told
        # from 0 with 60 rounds, and the larger ones within a quarter.
        assert abs(got**2 - given**2) <= 0.25 * given**2 + 0.001, (found, given)
    # Pairing by round is chosen exactly when rounds share a movement.
    assert found.pairing_helps is (shared > 0)


def test_too_few_rounds_is_refused():
    with pytest.raises(ValueError, match="3\\+ rounds"):
        decompose([[[[1.0, 1.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]]] * 2)
