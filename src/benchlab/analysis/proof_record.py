"""What a tune's proof found at one step, as stored in the facts of the step's cell: keyed by
the searched cell whose printed command it replayed, read back as a typed record."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PROOF = "proof"  # the facts' key


@dataclass(frozen=True)
class ProofJudgement:
    of_cell: str | None  # the key of the searched cell (None: a run stored before it was kept)
    of: str  # that cell's label, which runs stored before `of_cell` are matched by
    step: int  # 0: the rate every replicate held; then each step down
    held: bool
    missed: str | None  # why it did not hold, in words
    windows_p99_ms: tuple[float, ...] = ()

    def facts(self) -> dict[str, Any]:
        return {
            PROOF: {
                "of_cell": self.of_cell, "of": self.of, "step": self.step, "held": self.held,
                "missed": self.missed, "windows_p99_ms": list(self.windows_p99_ms),
            }
        }  # fmt: skip

    def proves(self, cell_key: str | None, label: str) -> bool:
        """Whether this step replayed that searched cell's command."""
        if self.of_cell is not None and cell_key is not None:
            return self.of_cell == cell_key
        return self.of == label

    @classmethod
    def of_facts(cls, facts: Mapping[str, Any]) -> ProofJudgement | None:
        found = facts.get(PROOF)
        if not isinstance(found, Mapping):
            return None
        return cls(
            of_cell=found.get("of_cell"),
            of=str(found.get("of", "")),
            step=int(found.get("step", 0)),
            held=bool(found.get("held")),
            missed=found.get("missed"),
            windows_p99_ms=tuple(found.get("windows_p99_ms") or ()),
        )
