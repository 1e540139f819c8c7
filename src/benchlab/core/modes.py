"""How a cell's load is driven, declared once: a closed loop, a fixed rate, or the search for
the capacity under an SLO. A `Mode` is its name too (stored, in JSON and in recipes)."""

from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    CLOSED = "closed"  # connections send as fast as answers come back
    RATE = "rate"  # a fixed rate of arrivals, whatever the answers do
    SLO = "slo"  # rates searched for the highest that holds the SLO: the capacity

    @property
    def fixed_rate(self) -> bool:
        """Whether its load arrives at a rate (latency is then its figure, not throughput)."""
        return self is not Mode.CLOSED


def mode_of(stored: str | None) -> Mode:
    """A stored mode; runs stored before modes were are closed loops."""
    return Mode(stored or Mode.CLOSED)
