"""A load's failed requests by kind, declared once: every load tool counts them so, the store
keeps one column per kind, and every report counts them so."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Errors:
    connect: int = 0
    read: int = 0
    write: int = 0
    timeout: int = 0
    non_2xx: int = 0
    other: int = 0  # failures the tool does not classify (siege's failed transactions)

    @property
    def total(self) -> int:
        return self.connect + self.read + self.write + self.timeout + self.non_2xx + self.other

    @property
    def socket(self) -> int:
        """Requests that got no answer at all."""
        return self.total - self.non_2xx


# The kinds, in their order: a trial's `errors_<kind>` columns, the reports' error counts.
ERROR_KINDS = tuple(f.name for f in fields(Errors))
