"""Two runs of one recipe, cell by cell: the ratio B/A with its interval and a verdict."""

from __future__ import annotations

from dataclasses import dataclass

from benchlab.analysis.stats import Ratio, ratio_interval
from benchlab.store import Store


@dataclass(frozen=True)
class CellChange:
    key: str
    label: str
    scenario: str
    connections: int
    ratio: Ratio | None  # B / A
    verdict: str  # faster, slower, no significant change, not comparable

    def regressed_beyond(self, pct: float) -> bool:
        return (
            self.verdict == "slower" and self.ratio is not None and self.ratio.value < 1 - pct / 100
        )


def _throughputs(store: Store, run_id: str) -> dict[str, tuple[dict, list[float]]]:
    cells = {}
    for cell in store.cells(run_id):
        values = [t["throughput_rps"] for t in store.trials(cell["id"])]
        cells[cell["key"]] = (dict(cell), values)
    return cells


def compare_runs(store: Store, run_a: str, run_b: str) -> list[CellChange]:
    """Cells are matched by their key (stack, flavour, scenario, load, parameters)."""
    a = _throughputs(store, store.run(run_a)["id"])
    b = _throughputs(store, store.run(run_b)["id"])
    changes = []
    for key in [k for k in a if k in b]:
        cell, before = a[key]
        _, after = b[key]
        ratio = ratio_interval(after, before) if before and after else None
        if ratio is None:
            verdict = "not comparable"
        elif not ratio.significant:
            verdict = "no significant change"
        else:
            verdict = "faster" if ratio.low > 1 else "slower"
        changes.append(
            CellChange(
                key, cell["stack_label"], cell["scenario"], cell["connections"], ratio, verdict
            )
        )
    return changes
