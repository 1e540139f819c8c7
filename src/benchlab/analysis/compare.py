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
    # faster, slower, no significant change; failed in B, missing in B (A measured it);
    # not comparable (A has no trials of it)
    verdict: str

    def regressed_beyond(self, pct: float) -> bool:
        """Slower by more than `pct` % even at the top of its interval, or broken in B."""
        if self.verdict in LOST:
            return True
        return (
            self.verdict == "slower" and self.ratio is not None and self.ratio.high < 1 - pct / 100
        )


LOST = ("failed in B", "missing in B")


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
    for key, (cell, before) in a.items():
        after = b[key][1] if key in b else []
        ratio = ratio_interval(after, before) if before and after else None
        if before and key not in b:
            verdict = "missing in B"
        elif before and not after:
            verdict = "failed in B"
        elif ratio is None:
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
