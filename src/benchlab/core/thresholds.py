"""A threshold: a bound one figure of every cell must keep (`p99<200ms`, `errors<0.1%`,
`rps>=500`), as `--threshold` and a recipe's [thresholds] declare it. The grammar is declared
here once: a figure's name (its key, or one of its `names`, in core/figures.py's registry),
a comparison, a number and, optionally, a unit of the figure's kind (ms, s or µs for a
latency; % for a share). What a cell's figure makes of it is analysis/thresholds.py's."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from benchlab.core import figures as F
from benchlab.core.errors import UserError
from benchlab.core.modes import Mode
from benchlab.core.text import did_you_mean


class Comparison(Enum):
    """How a figure must stand to its bound; longest first, as the grammar reads them."""

    AT_MOST = "<="
    AT_LEAST = ">="
    BELOW = "<"
    ABOVE = ">"

    @property
    def holds(self) -> Callable[[float, float], bool]:
        """(value, bound) -> whether the value keeps the bound."""
        return _OPERATORS[self]

    @property
    def upper(self) -> bool:
        """The bound is a ceiling (< or <=): the figure must stay under it."""
        return self in (Comparison.AT_MOST, Comparison.BELOW)


_OPERATORS = {
    Comparison.AT_MOST: operator.le,
    Comparison.AT_LEAST: operator.ge,
    Comparison.BELOW: operator.lt,
    Comparison.ABOVE: operator.gt,
}

# The units a bound may be written in, per unit a figure declares: how many of the figure's
# unit one of them is. A bound without a unit is in the figure's own.
UNITS: dict[str, dict[str, float]] = {
    "ms": {"ms": 1.0, "s": 1000.0, "us": 0.001, "µs": 0.001},
    "µs": {"µs": 1.0, "us": 1.0, "ms": 1000.0, "s": 1_000_000.0},
    F.REQ_S: {F.REQ_S: 1.0, F.MSG_S: 1.0, "rps": 1.0, "/s": 1.0},
    "MB": {"MB": 1.0, "GB": 1024.0, "KB": 1 / 1024},
    "MB/min": {"MB/min": 1.0},
    "%": {"%": 1.0},
    "B": {"B": 1.0, "KB": 1024.0},
}

# NAME OP NUMBER UNIT, spaces allowed between them: p99<200ms, rps >= 500, errors<0.1%.
_GRAMMAR = re.compile(
    r"\s*(?P<name>[A-Za-z_][\w.]*)\s*(?P<op><=|>=|<|>)\s*"
    r"(?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)?\s*(?P<unit>\S*)\s*",
    re.IGNORECASE,
)
EXAMPLE = "p99<200ms, errors<0.1%, rps>=500"


def figure_names() -> dict[str, F.Figure]:
    """Every name a threshold may give a figure: its key and its other names."""
    found: dict[str, F.Figure] = {}
    for figure in F.FIGURES.values():
        for name in (figure.key, *figure.names):
            found[name.lower()] = figure
    return found


@dataclass(frozen=True)
class Threshold:
    """A bound on one figure of every cell."""

    figure: F.Figure
    comparison: Comparison
    bound: float  # in the figure's unit (a share: in %)
    unit: str  # the unit the bound is in: the figure's ("" for a count or a ratio)
    name: str = ""  # the figure's name as it was written (rps, errors); default its key

    @property
    def text(self) -> str:
        """As `--threshold` takes it: p99<200 ms, errors<0.1%."""
        unit = self.unit if self.unit in ("", "%") else f" {self.unit}"
        return f"{self.name or self.figure.key}{self.comparison.value}{self.bound:g}{unit}"

    def shown(self, stored: float) -> float:
        """A figure's stored value in the bound's unit (a share of 1: in %)."""
        return 100.0 * stored if self.figure.share else stored

    def keeps(self, stored: float) -> bool:
        return self.comparison.holds(self.shown(stored), self.bound)

    def to_json(self) -> dict[str, Any]:
        return {
            "threshold": self.text, "figure": self.figure.key, "name": self.name,
            "comparison": self.comparison.value, "bound": self.bound, "unit": self.unit,
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Threshold:
        """A threshold stored with a run (RunOptions); its figure by its key."""
        return cls(
            F.FIGURES[data["figure"]], Comparison(data["comparison"]), float(data["bound"]),
            str(data["unit"]), str(data.get("name") or ""),
        )  # fmt: skip


def _unit_of(figure: F.Figure) -> str:
    return "%" if figure.share else figure.unit


def parse_threshold(text: str, said: str = "") -> Threshold:
    """`text` as a threshold, or one line saying what is wrong and how it is written, after
    `said` (where it came from; default `--threshold 'TEXT'`)."""
    said = said or f"--threshold '{text}'"
    found = _GRAMMAR.fullmatch(text)
    if found is None:
        raise UserError(
            f"{said}: write a figure, a comparison (<, <=, >, >=) and a number with its unit, "
            f"like {EXAMPLE}"
        )
    name = found["name"]
    names = figure_names()
    figure = names.get(name.lower())
    if figure is None:
        raise UserError(
            f"{said}: no figure is called '{name}'{did_you_mean(name.lower(), names)}; "
            f"thresholds take {', '.join(_common())} or any figure's JSON key"
        )
    number = found["number"]
    try:
        bound = float(number or "")
    except ValueError:
        raise UserError(
            f"{said}: '{number or found['unit'] or ''}' is not a number; write one after "
            f"'{found['op']}', like {figure_example(figure)}"
        ) from None
    unit = _unit_of(figure)
    scale = _scale(found["unit"], unit)
    if scale is None:
        units = ", ".join(UNITS.get(unit, {unit: 1.0}) if unit else ("none",))
        raise UserError(
            f"{said}: {figure.label} is in {unit or 'no unit'}, not '{found['unit']}'; "
            f"write it in {units}, like {figure_example(figure)}"
        )
    return Threshold(figure, Comparison(found["op"]), bound * scale, unit, name)


def _scale(written: str, unit: str) -> float | None:
    """How many of `unit` one `written` is; None: it is no unit of that kind."""
    if not written:
        return 1.0
    if not unit:
        return None
    units = UNITS.get(unit, {unit: 1.0})
    return next((scale for name, scale in units.items() if name.lower() == written.lower()), None)


def figure_example(figure: F.Figure) -> str:
    op = "<" if figure.better is F.Better.LOWER else ">="
    return f"{figure.names[0] if figure.names else figure.key}{op}100{_unit_of(figure)}"


def _common() -> list[str]:
    """The names a message offers: the percentiles' keys and every figure's other names."""
    return [*(f.key for f in F.PERCENTILES), *(n for f in F.FIGURES.values() for n in f.names)]


def parse_thresholds(texts: Iterable[str]) -> tuple[Threshold, ...]:
    """Each `--threshold` given, each once (the first mistake is the one said)."""
    return tuple(dict.fromkeys(parse_threshold(text) for text in texts))


# What a mode's cells measure, for the message that refuses a figure none of them has.
_WHAT = {Mode.CLOSED: "closed-loop", Mode.RATE: "fixed-rate", Mode.SLO: "capacity-search"}


def check_measured(
    thresholds: Iterable[Threshold], modes: Collection[Mode], said: str = ""
) -> None:
    """Refuse, before anything runs, a threshold on a figure no cell of `modes` has (a
    capacity where no cell searches one): it could never be judged. `said`: where it came
    from (default `--threshold 'TEXT'`)."""
    for threshold in thresholds:
        source = threshold.figure.source
        if source is None or any(source.applies(mode) for mode in modes):
            continue
        having = sorted(_WHAT[m] for m in Mode if source.applies(m))
        cells = " and ".join(sorted({_WHAT[m] for m in modes})) or "no"
        raise UserError(
            f"{said or f'--threshold {threshold.text!r}'}: {threshold.figure.label} is measured by "
            f"{' and '.join(having)} cells only, and these are {cells} cells; drop it, or "
            "bound a figure they have"
        )
