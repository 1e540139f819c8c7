"""Why a cell failed: a kind the code decides by, and the sentence the report shows."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class FailureKind(Enum):
    UNAVAILABLE = "unavailable"  # the stack cannot run here (a tool or package is missing)
    BUILD = "build"
    START = "start"  # the stack did not come up
    STACK_DIED = "stack died"
    SERVICE_DIED = "service died"
    VERIFICATION = "verification"  # the stack's answer, checked before its trial, was wrong
    VERIFICATION_AFTER_WARMUP = "verification after warm-up"
    VERIFICATION_AFTER_CLOSED_LOOP = "verification after the closed loop"  # a rate share's
    VERIFICATION_BETWEEN_PROBES = "verification between probes"  # a capacity search's
    LOAD_TOOL = "load tool"
    NO_RATE = "no rate"  # a rate share of a closed loop that completed nothing
    # The kernel killed it at the memory limit it runs under (tune --memory): it does not fit.
    OUT_OF_MEMORY = "does not fit"


# The words that open a stored reason, for the kinds whose detail does not say it itself.
_OPENING = {
    FailureKind.UNAVAILABLE: "unavailable",
    FailureKind.BUILD: "build failed",
    FailureKind.VERIFICATION: "verification failed",
    FailureKind.VERIFICATION_AFTER_WARMUP: "verification after warm-up failed",
    FailureKind.VERIFICATION_AFTER_CLOSED_LOOP: "verification after the closed loop",
    FailureKind.VERIFICATION_BETWEEN_PROBES: "verification between probes",
    FailureKind.LOAD_TOOL: "load tool failed",
}


@dataclass(frozen=True)
class Failure:
    kind: FailureKind
    detail: str  # what was found, in words

    @property
    def reason(self) -> str:
        """The sentence stored with the cell and shown in reports."""
        opening = _OPENING.get(self.kind)
        return f"{opening}: {self.detail}" if opening else self.detail
