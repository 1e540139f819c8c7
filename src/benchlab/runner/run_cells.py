"""A run's cells as its store keeps them: each stored once (a resumed run's found by its
key) with its stack's label and limits, its stack built (or the cell failed: not here), and
what became of it: measured, failed (with a kind the code decides by), checked; its trials
and replicates read back."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from benchlab.conformance.check import Conformance
from benchlab.core.errors import UserError
from benchlab.http.scenarios import WEBSOCKET_SCENARIOS
from benchlab.recipe import Cell, Recipe, sentinel_of
from benchlab.recipe.cells import AA_COPY_MARK, CEILING_MARK, SENTINEL_MARK
from benchlab.runner.failure import Failure, FailureKind
from benchlab.runner.outcome import Reporter
from benchlab.runner.records import cell_record
from benchlab.stacks import Stack
from benchlab.store import CELL_CHECKED, CapacityRecord, Store, TrialRecord


def db_pool_limit(recipe: Recipe, cell: Cell) -> int | None:
    """The most database sessions the cell's pools can hold: pool × workers, or pgbouncer's
    pool when it stands in front. Not the server's own concurrency: a sync worker that holds
    one session leaves its pool idle, not exhausted."""
    if cell.pool_size is None:
        return None
    limits = [cell.pool_size * cell.workers]
    services = recipe.services
    if services.pool_fronts_database:
        limits.append(services.pgbouncer_pool_size)
    return min(limits)


class RunCells(Sequence[Cell]):
    """The cells of one run, in the order they were added (a Sequence of them), with their
    store ids (`ids`), what failed (`failed`), what a trial measured (`measured`) and each
    stack's conformance, checked at its first plain launch (`conformance`)."""

    def __init__(
        self, store: Store, catalogue: Mapping[str, Stack], recipe: Recipe, reporter: Reporter,
        redact: Callable[[str], str],
    ) -> None:  # fmt: skip
        self.store = store
        self.catalogue = catalogue
        self.recipe = recipe
        self.reporter = reporter
        self.redact = redact
        self.run_id = ""
        self._cells: list[Cell] = []
        self.ids: dict[Cell, int] = {}
        self.failed: dict[Cell, Failure] = {}
        self.measured: set[Cell] = set()
        self.conformance: dict[str, Conformance] = {}

    def __getitem__(self, index: int) -> Cell:  # type: ignore[override]
        return self._cells[index]

    def __len__(self) -> int:
        return len(self._cells)

    def __iter__(self) -> Iterator[Cell]:
        return iter(self._cells)

    def add(self, cells: Sequence[Cell]) -> None:
        """Store the cells (those a resumed run already has are found by their key)."""
        known = {stored.key: stored.id for stored in self.store.cells(self.run_id)}
        for cell in cells:
            if cell in self.ids:
                continue
            self._cells.append(cell)
            if cell.key in known:
                self.ids[cell] = known[cell.key]
                continue
            stack = self.catalogue[cell.stack]
            limit = stack.concurrency_limit(cell.workers, cell.server_threads, cell.flavour)
            record = cell_record(
                self.run_id, len(self._cells) - 1, cell, self.label_of(cell), limit,
                db_pool_limit(self.recipe, cell), stack.facts(cell.workers, cell.server_threads),
            )  # fmt: skip
            self.ids[cell] = self.store.add_cell(record)

    def prepare_stacks(self, cells: Sequence[Cell]) -> None:
        """Build what the cells' stacks need; fail the cells of a stack that is not here."""
        for name in dict.fromkeys(cell.stack for cell in cells):
            served = [c for c in cells if c.stack == name]
            stack = self.catalogue[name]
            available = stack.availability()
            if not available.ok:
                detail = f"{available.reason}; fix: {available.fix}"
                for cell in served:
                    self.fail(cell, FailureKind.UNAVAILABLE, detail)
                continue
            if stack.build is not None:
                self.reporter.status(f"building {name}")
                try:
                    stack.build()
                except UserError as exc:
                    for cell in served:
                        self.fail(cell, FailureKind.BUILD, str(exc))

    def label_of(self, cell: Cell) -> str:
        """The stack's label as the cell's rows carry it in the store."""
        stack = self.catalogue[cell.stack]
        label = stack.label(cell.workers, cell.flavour, cell.server_threads)
        if stack.websocket_ceiling and cell.scenario in WEBSOCKET_SCENARIOS:
            return f"{label} {CEILING_MARK}"
        if cell.stack != sentinel_of(self.recipe):
            return label
        return f"{label} {SENTINEL_MARK if cell.copy == 1 else AA_COPY_MARK}"

    def trials_of(self, cell: Cell, probe: str | None = None) -> list[TrialRecord]:
        """The cell's stored trials in order: its own, or a `probe`'s (alone, a search's)."""
        return [t for t in self.store.trials(self.ids[cell]) if t.probe == probe]

    def capacities_of(self, cell: Cell) -> list[CapacityRecord]:
        """The cell's stored capacity search replicates, in order."""
        return self.store.capacities(self.ids[cell])

    def add_facts(self, cell: Cell, facts: dict[str, Any]) -> None:
        """Store what was learnt of the cell once it was measured."""
        self.store.add_cell_facts(self.ids[cell], facts)

    def failure_of(self, cell: Cell) -> Failure | None:
        """Why the cell failed (None: it has not)."""
        return self.failed.get(cell)

    def mark_checked(self, cell: Cell) -> None:
        """Its stack answered right (tune --check-only): nothing measured."""
        self.store.mark_cell(self.ids[cell], CELL_CHECKED)

    def fail(self, cell: Cell, kind: FailureKind, detail: str) -> None:
        if cell in self.failed:
            return
        failure = Failure(kind, self.redact(detail))
        self.failed[cell] = failure
        self.store.mark_cell(self.ids[cell], "failed", failure.reason)
        self.reporter.cell_failed(cell, failure.reason)

    def fail_launch(
        self, first: Cell, detail: str, kind: FailureKind = FailureKind.STACK_DIED
    ) -> None:
        """Every cell served by `first`'s launch fails (its stack died, or did not fit)."""
        for cell in self._cells:
            if cell.launch_key == first.launch_key:
                self.fail(cell, kind, detail)

    def mark_measured(self) -> None:
        """Every cell measured and not failed is `ok` (the run's end)."""
        for cell in self.measured - set(self.failed):
            self.store.mark_cell(self.ids[cell], "ok")
