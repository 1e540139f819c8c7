"""A cell's samples of one figure, each with the round it was measured in: read as a plain
sequence of values everywhere, and paired round by round where a ratio is taken within
rounds (analysis/evidence.py)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload


@dataclass(frozen=True)
class Samples(Sequence[float]):
    values: tuple[float, ...]
    rounds: tuple[int, ...]  # the round of each value, in the same order

    def __post_init__(self) -> None:
        if len(self.values) != len(self.rounds):
            raise ValueError("one round per value")

    @overload
    def __getitem__(self, index: int) -> float: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[float]: ...
    def __getitem__(self, index: int | slice) -> float | Sequence[float]:
        return self.values[index]

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[float]:
        return iter(self.values)

    def by_round(self) -> dict[int, float]:
        return dict(zip(self.rounds, self.values, strict=True))


def paired(a: Sequence[float], b: Sequence[float]) -> list[tuple[float, float]] | None:
    """The values of the rounds both were measured in, side by side, in round order; None
    when either side does not know its rounds (a stored summary, a test's plain list)."""
    if not isinstance(a, Samples) or not isinstance(b, Samples):
        return None
    first, second = a.by_round(), b.by_round()
    return [(first[r], second[r]) for r in sorted(set(first) & set(second))]


def per_round_ratios(a: Sequence[float] | None, b: Sequence[float] | None) -> Samples | None:
    """a ÷ b in each round both were measured in (b's zeros left out), knowing its rounds;
    None when either side does not know its rounds or they share none."""
    if not isinstance(a, Samples) or not isinstance(b, Samples):
        return None
    first, second = a.by_round(), b.by_round()
    rounds = tuple(r for r in sorted(set(first) & set(second)) if second[r] > 0)
    if not rounds:
        return None
    return Samples(tuple(first[r] / second[r] for r in rounds), rounds)
