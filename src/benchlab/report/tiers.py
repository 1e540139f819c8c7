"""A grid point's whole ranking as tiers: stacks the evidence rule cannot separate share a
tier, and each tier is separated from the next by a declared difference, with its ratio and
interval. The ceiling stack stands apart (it is the load tool's limit, not a contender)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from benchlab.analysis.evidence import Evidence
from benchlab.analysis.stats import Ratio
from benchlab.analysis.summary import CellSummary
from benchlab.analysis.verdicts import CAUTIONS
from benchlab.core import figures as F


@dataclass(frozen=True)
class Tier:
    cells: tuple[CellSummary, ...]  # best first; its first is the tier's head
    # How far the tier's head is ahead of the next tier's head ("better by", so always ≥ 1);
    # None for the last tier.
    ahead: Ratio | None = None
    spread: Ratio | None = None  # its head against its last member, when it has several
    # When the run stopped before its members were told apart: what would tell them apart.
    pending: str | None = None

    def as_json(self) -> dict:
        def ratio(r: Ratio | None) -> dict | None:
            if r is None:
                return None
            # A bound a confidence sequence has not reached yet (0 or ∞) is null.
            low, high = (r.low or None), (r.high if math.isfinite(r.high) else None)
            return {"value": r.value, "low": low, "high": high}

        return {
            "stacks": [c.key for c in self.cells],
            "ratio_to_next": ratio(self.ahead),
            "ratio_within": ratio(self.spread),
            "undecided": self.pending,
        }


def better_by(ratio: Ratio, figure: F.Figure) -> Ratio:
    """a / b as 'a is this many times better than b' (inverted when lower is better)."""
    if figure.better is F.Better.LOWER:
        return Ratio(
            _inverse(ratio.value), _inverse(ratio.high), _inverse(ratio.low), ratio.confidence,
            ratio.fewest,
        )  # fmt: skip
    return ratio


def _inverse(x: float) -> float:
    """1 / x, where a bound not yet reached (0 or ∞: a sequence still unbounded) stays one."""
    return math.inf if x == 0 else 0.0 if math.isinf(x) else 1 / x


def tiers(ranked: Sequence[CellSummary], figure: F.Figure, evidence: Evidence) -> list[Tier]:
    """`ranked`: best first, each with samples of `figure`. A stack joins the tier above when
    the rule cannot tell it from that tier's head; otherwise it heads a new tier."""
    groups: list[list[CellSummary]] = []
    pending: dict[int, str] = {}  # group index -> what would decide it
    for cell in ranked:
        if groups:
            head = groups[-1][0]
            judged = evidence.judge(head.samples[figure.key], cell.samples[figure.key], figure)
            if not judged.decided:
                groups[-1].append(cell)
                if judged.pending:
                    pending[len(groups) - 1] = judged.pending
                continue
        groups.append([cell])
    found = []
    for i, group in enumerate(groups):
        head = group[0]
        ahead = spread = None
        if i + 1 < len(groups):
            judged = evidence.judge(
                head.samples[figure.key], groups[i + 1][0].samples[figure.key], figure
            )
            ahead = better_by(judged.ratio, figure) if judged.ratio else None
        if len(group) > 1:
            judged = evidence.judge(head.samples[figure.key], group[-1].samples[figure.key], figure)
            spread = better_by(judged.ratio, figure) if judged.ratio else None
        found.append(Tier(tuple(group), ahead, spread, pending.get(i)))
    return found


def _decimals(value: float) -> int:
    """As many decimals as a ratio needs to be read: 1.08, 5.7, 12."""
    return 2 if value < 2 else 1 if value < 9.95 else 0


def times(value: float, decimals: int | None = None) -> str:
    if math.isinf(value):
        return "∞"  # a bound a confidence sequence has not reached yet
    return f"{value:.{_decimals(value) if decimals is None else decimals}f}"


def interval(ratio: Ratio) -> str:
    """The bounds written as precisely as the ratio itself."""
    digits = _decimals(ratio.value)
    return f"[{times(ratio.low, digits)}–{times(ratio.high, digits)}]"


def order_sentence(
    found: Sequence[Tier],
    figure: F.Figure,
    names: dict[str, str],
    lead: str | None = None,
    named: frozenset[str] = frozenset(),
) -> str:
    """'In order of throughput: gin 5.1× sanic [5.0–5.2] > sanic 1.7× fastapi [1.6–1.9] >
    fastapi ≈ tornado (tie, 1.04× [0.97–1.12]).' A caution stands beside a stack the first
    time it is named."""
    shown: set[str] = set(named)  # cell keys a sentence before it named (with cautions)

    def name(cell: CellSummary) -> str:
        flagged = [v.name for v in cell.verdicts if v.name in CAUTIONS]
        first = cell.key not in shown
        shown.add(cell.key)
        return names[cell.key] + (f" ({', '.join(flagged)})" if flagged and first else "")

    lower = " lower than" if figure.better is F.Better.LOWER else ""
    parts = []
    for i, tier in enumerate(found):
        if len(tier.cells) > 1:
            within = tier.spread
            what = f"undecided: {tier.pending}" if tier.pending else "tie"
            tie = f"{what}, {times(within.value)}× {interval(within)}" if within else what
            parts.append(" ≈ ".join(name(c) for c in tier.cells) + f" ({tie})")
        if tier.ahead is not None:
            head, following = name(tier.cells[0]), name(found[i + 1].cells[0])
            parts.append(f"{head} {times(tier.ahead.value)}×{lower} {following} "
                         f"{interval(tier.ahead)}")  # fmt: skip
    return (lead if lead is not None else f"In order of {figure.label}: ") + " > ".join(parts) + "."
