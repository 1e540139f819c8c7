"""benchlab tune's run: a session of its own kind. Its journal says `tune`; its row describes
the app it tunes, not a recipe file; it adds what tune's phases ask of a run (the SLO its
proof judges by, a trial more than announced, a file of its own, its journal)."""

from __future__ import annotations

from pathlib import Path

from benchlab.analysis import capacity
from benchlab.recipe import Plan
from benchlab.runner import Reporter, Session, SessionOptions
from benchlab.store import RunInfo, Store
from benchlab.system.journal import Journal
from benchlab.tune.candidates import SCENARIO


class TuneSession(Session):
    kind = "tune"

    def __init__(
        self, plan: Plan, store: Store, reporter: Reporter, options: SessionOptions,
        run_info: RunInfo, address: str | None = None,
    ) -> None:  # fmt: skip
        super().__init__(plan, store, reporter, options)
        self._run_info = run_info
        self._address = address  # an endpoint's host: where the load goes

    @property
    def server_address(self) -> str:
        """Where the subject answers: an endpoint's host, else where benchlab starts it."""
        return self._address or super().server_address

    def describe(self) -> RunInfo:
        return self._run_info

    def objective(self) -> capacity.Objective:
        """The tune's SLO, as the capacity search and the proof judge a rate by it."""
        assert self.plan.recipe.slo is not None
        return capacity.Objective.of(self.plan.recipe.slo)

    def extend_plan(self, trials: int) -> None:
        """The run takes `trials` more trials than it announced."""
        self.reporter.extend(trials)

    def work_file(self, name: str) -> Path:
        """A file of the run's own directory (removed with it)."""
        return self.workroot / name

    @property
    def unit(self) -> str:
        """What the tune's rates count a second (requests, or a WebSocket's messages)."""
        return self.scenarios[SCENARIO].rate_unit

    @property
    def journal(self) -> Journal | None:
        """The run's journal on disk, while it runs."""
        return self.registry.journal
