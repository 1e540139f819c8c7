"""A cell as the ranking reads it (analysis/ranking.py's `Entrant`; a run's `CellResult` is
one), made of the samples a test sets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from benchlab.analysis.grid import GridPoint
from benchlab.core import figures as F


@dataclass(frozen=True, eq=False)
class Contender:
    key: str
    label: str
    point: GridPoint
    figure: F.Figure
    values: Sequence[float]  # of `figure`
    ranks: bool = True
    stack: str = ""  # the label when not given

    def __post_init__(self) -> None:
        if not self.stack:
            object.__setattr__(self, "stack", self.label)

    @property
    def samples(self) -> Mapping[str, Sequence[float]]:
        return {self.figure.key: self.values}
