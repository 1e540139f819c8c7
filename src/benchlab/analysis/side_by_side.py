"""A run's cells put side by side beyond its ranking: what TLS and HTTP/2 cost each stack (its
throughput over each ÷ over plain HTTP/1.1), and whether the load tools that measured one
cell agree (article 001)."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchlab.analysis.grid import GridPoint
from benchlab.analysis.stats import Estimate, Ratio, ratio_interval
from benchlab.core import figures as F
from benchlab.core.modes import Mode

if TYPE_CHECKING:
    from benchlab.analysis.summary import CellSummary


@dataclass(frozen=True)
class ProtocolCost:
    """A stack's throughput over a protocol ÷ the same cell's over plain HTTP/1.1."""

    stack_label: str
    point: str  # the grid point, its protocol left out
    protocol: str
    tool: str  # the protocol's tool, when it is not the plain cell's (h2load beside wrk)
    plain_tool: str
    ratio: Ratio

    def text(self) -> str:
        r = self.ratio
        tools = (
            f" ({self.tool} vs {self.plain_tool}: the tools differ too)"
            if self.tool != self.plain_tool
            else ""
        )
        interval = f"[{r.low:.2f}–{r.high:.2f}]" if r.has_interval else "(1 trial: no interval)"
        return (
            f"{self.stack_label} {self.point}: over {self.protocol} {r.value:.2f}× "
            f"{interval} of its HTTP/1.1 throughput{tools}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "stack_label": self.stack_label, "point": self.point, "protocol": self.protocol,
            "tool": self.tool, "plain_tool": self.plain_tool, "ratio": self.ratio.value,
            "low": self.ratio.low, "high": self.ratio.high,
            "confidence": self.ratio.confidence,
        }  # fmt: skip


def protocol_costs(cells: Sequence[CellSummary]) -> list[ProtocolCost]:
    """Each closed-loop cell over TLS or HTTP/2 beside the same stack's plain HTTP/1.1 cell
    at the same point (tool aside): the ratio of their throughputs, with its interval."""
    plain: dict[tuple[str, GridPoint], list[CellSummary]] = {}
    others: list[tuple[tuple[str, GridPoint], CellSummary]] = []
    for cell in cells:
        record = cell.record
        if record.mode != Mode.CLOSED or not cell.samples.get(F.THROUGHPUT.key):
            continue
        point = dataclasses.replace(cell.result.point, tool="", protocol="h1")
        where = (record.stack_label, point)
        if record.protocol == "h1":
            plain.setdefault(where, []).append(cell)
        else:
            others.append((where, cell))
    found = []
    for where, cell in others:
        bases = plain.get(where, [])
        tool = cell.record.tool
        # the same tool's plain cell when there is one: then only the protocol differs
        base = next((b for b in bases if b.record.tool == tool), bases[0] if bases else None)
        if base is None:
            continue
        ratio = ratio_interval(cell.samples[F.THROUGHPUT.key], base.samples[F.THROUGHPUT.key])
        if ratio is not None:
            point = dataclasses.replace(where[1], tool=tool)
            found.append(
                ProtocolCost(
                    cell.record.stack_label,
                    point.text(),
                    cell.record.protocol,
                    tool,
                    base.record.tool,
                    ratio,
                )
            )
    return found


def tool_agreement(cells: Sequence[CellSummary]) -> list[str]:
    """For each cell measured by several tools: do their throughput intervals overlap? If
    not, the tool farthest from the others is named."""
    groups: dict[tuple[str, GridPoint], list[tuple[CellSummary, Estimate]]] = {}
    for cell in cells:
        throughput = cell.estimate(F.THROUGHPUT)
        if cell.record.mode == Mode.CLOSED and throughput is not None:
            where = dataclasses.replace(cell.result.point, tool="")
            groups.setdefault((cell.record.stack_label, where), []).append((cell, throughput))
    lines = []
    for (label, where), group in groups.items():
        if len({c.record.tool for c, _ in group}) < 2:
            continue
        text = f"{label} {where.text()}: " + ", ".join(
            f"{c.record.tool} {F.THROUGHPUT.format(e.median)}" for c, e in group
        )
        if any(e.n < 2 for _, e in group):
            lines.append(f"{text} req/s (1 trial: no interval to judge agreement)")
            continue
        apart = [
            (a, b) for i, (_, a) in enumerate(group) for _, b in group[i + 1 :]
            if a.low > b.high or b.low > a.high
        ]  # fmt: skip
        if not apart:
            lines.append(f"{text} req/s: the tools agree within their intervals")
            continue
        distances = [_distance(estimate, group) for _, estimate in group]
        outlier = group[distances.index(max(distances))][0]
        lines.append(
            f"{text} req/s: the tools disagree beyond their intervals; {outlier.record.tool} is "
            "the outlier" + (f" ({outlier.verdicts[0].name})" if outlier.verdicts else "")
        )
    return lines


def _distance(estimate: Estimate, group: list[tuple[CellSummary, Estimate]]) -> float:
    """How far a cell's throughput is from the median of the others', relatively."""
    others = statistics.median(e.median for _, e in group if e is not estimate)
    return abs(estimate.median - others) / max(others, 1e-9)
