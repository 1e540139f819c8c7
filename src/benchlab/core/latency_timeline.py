"""A fixed-rate trial's latency over time, step by step, declared once: load/timeline.py counts
it as a tool's requests are read, the store keeps it with the trial (compact JSON), the
reports draw it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Timeline:
    """A fixed-rate trial's latency over time (load/timeline.py counts it), step by step:
    step i covers [i × step_s, (i + 1) × step_s) seconds after its first request was sent."""

    step_s: int
    # The requests sent in the step; None: none was (or none was answered or timed out).
    p50_ms: tuple[float | None, ...]
    p99_ms: tuple[float | None, ...]
    # Successful answers (2xx, 3xx) that came back in the step, per second.
    achieved_rps: tuple[float, ...]
    # Failed requests (no answer, or a status of 400 or more) whose failure came in the step.
    errors: tuple[int, ...]

    @property
    def t_s(self) -> tuple[int, ...]:
        """Each step's start, seconds after the trial's first request."""
        return tuple(index * self.step_s for index in range(len(self.p99_ms)))

    def to_json(self) -> dict[str, Any]:
        return {
            "step_s": self.step_s,
            "t_s": list(self.t_s),
            "p50_ms": list(self.p50_ms),
            "p99_ms": list(self.p99_ms),
            "achieved_rps": list(self.achieved_rps),
            "errors": list(self.errors),
        }

    def stored(self) -> str:
        """As the store keeps it: compact JSON, the steps' starts left out (they follow)."""
        data = {k: v for k, v in self.to_json().items() if k != "t_s"}
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Timeline:
        return cls(
            step_s=int(data["step_s"]),
            p50_ms=tuple(data["p50_ms"]),
            p99_ms=tuple(data["p99_ms"]),
            achieved_rps=tuple(data["achieved_rps"]),
            errors=tuple(data["errors"]),
        )
