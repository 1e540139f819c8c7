"""What the analysis of a run needs of its recipe, stored with the run (so that a report
never reads the recipe again, and a tune run, which has no recipe file, has them too)."""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from benchlab.analysis.capacity import Objective
from benchlab.analysis.evidence import Evidence, RatioMethod
from benchlab.analysis.tune_options import TuneOptions
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.core.thresholds import Threshold
from benchlab.http.scenarios import SCENARIOS, rate_unit_of
from benchlab.recipe import Recipe, WebSocket, recipe_thresholds, sentinel_of
from benchlab.store import RunRecord

DEFAULT_TARGET_HALF_WIDTH_PCT = 5.0


@dataclass(frozen=True)
class RunOptions:
    """What the analysis needs of the recipe; stored with the run."""

    baseline: str | None = None
    target_half_width_pct: float = DEFAULT_TARGET_HALF_WIDTH_PCT
    adaptive: bool = False  # max_trials was set
    slo: Objective | None = None
    rank_by: str | None = None
    pool_swept: bool = False
    tune: TuneOptions | None = None  # a benchlab tune run: its subject, requests, target
    min_effect_pct: float | None = None  # the practical threshold; None: the target
    # How ratios between this run's cells get their intervals, declared when the run started
    # (runs stored before it: independent cells).
    ratio_method: str = RatioMethod.INDEPENDENT.value
    sentinel: str | None = None  # the stack every cell is also divided by, round by round
    aa: bool = False  # the sentinel was measured twice (its second launch: copy 2)
    thresholds: tuple[Threshold, ...] = ()  # the recipe's [thresholds], judged on every report

    @property
    def practical_threshold_pct(self) -> float:
        """The smallest effect called a difference: `min_effect_pct` (0 is a value: every
        separated pair is a difference, and no tie is decided), else the target."""
        if self.min_effect_pct is not None:
            return self.min_effect_pct
        return self.target_half_width_pct

    @property
    def evidence(self) -> Evidence:
        return Evidence(self.practical_threshold_pct, method=RatioMethod(self.ratio_method))

    def figure_for(self, mode: Mode, scenario: str) -> F.Figure:
        """What a cell of `mode` at `scenario` is ranked by (the runner's adaptive rounds and
        every report alike): a WebSocket scenario's own figure (http/scenarios.py), else the
        recipe's `rank_by`, else its mode's figure."""
        known = SCENARIOS.get(scenario)
        own = known.figure_for(mode) if known is not None else None
        return own or F.rank_figure(mode, self.rank_by)

    @property
    def tune_rate_unit(self) -> str | None:
        """What a tune's own load counts a second, as its run stored it (a WebSocket echo's
        messages); None: not a tune, or one stored before it said."""
        return (self.tune.rate_unit or None) if self.tune is not None else None

    def rate_unit_of(self, scenario: str) -> str:
        """What a cell of `scenario` counts a second: a tune's own load's, else the
        catalogue scenario's (rate_unit_of)."""
        return self.tune_rate_unit or rate_unit_of(scenario)

    def run_figure(self, modes: list[Mode]) -> F.Figure:
        """What the run's cells are ranked by, in one figure (a chart has one scale): the
        recipe's choice, else what most cells measure (a tie goes to the search, then the
        fixed rate: what the run went on to measure)."""
        if self.rank_by:
            return F.FIGURES[self.rank_by]
        modes = modes or [Mode.CLOSED]
        order = list(Mode)
        return F.RANK_BY_MODE[max(set(modes), key=lambda m: (modes.count(m), order.index(m)))]

    def to_json(self) -> dict[str, Any]:
        plain = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {
            **plain,
            "slo": dataclasses.asdict(self.slo) if self.slo else None,
            "tune": self.tune.to_json() if self.tune else None,
            "thresholds": [t.to_json() for t in self.thresholds],
        }

    @classmethod
    def from_recipe(cls, recipe: Recipe, rounds_move_together: bool = False) -> RunOptions:
        """`rounds_move_together`: this machine's measured noise says a round's movement is
        shared by every stack (noise_record), so ratios are taken within rounds."""
        slo = recipe.slo
        return cls(
            ratio_method=ratio_method(recipe.max_trials is not None, rounds_move_together),
            baseline=recipe.baseline,
            target_half_width_pct=recipe.target_half_width_pct,
            adaptive=recipe.max_trials is not None,
            slo=Objective.of(slo) if slo else None,
            rank_by=recipe.rank_by,
            pool_swept=isinstance(recipe.params.pool_size, list),
            min_effect_pct=recipe.min_effect_pct,
            sentinel=sentinel_of(recipe),
            aa=recipe.aa,
            thresholds=recipe_thresholds(recipe),
        )

    @classmethod
    def of_run(cls, run: RunRecord) -> RunOptions:
        """A stored run's options; a run stored before they were: read from its recipe."""
        if run.options is not None:
            return cls.from_json(run.options)
        return cls.from_recipe_text(run.recipe_text)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunOptions:
        slo, tune = data.get("slo"), data.get("tune")
        thresholds = tuple(Threshold.from_json(t) for t in data.get("thresholds") or ())
        return cls(
            **{
                **data,
                "slo": Objective(**slo) if slo else None,
                "tune": TuneOptions.from_json(tune) if tune else None,
                "thresholds": thresholds,
            }
        )

    @classmethod
    def from_recipe_text(cls, text: str) -> RunOptions:
        """For runs stored before the options were: read again from their recipe."""
        try:
            options = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return cls()
        slo = options.get("slo")
        return cls(
            baseline=options.get("baseline"),
            target_half_width_pct=float(
                options.get("target_half_width_pct", DEFAULT_TARGET_HALF_WIDTH_PCT)
            ),
            adaptive=options.get("max_trials") is not None,
            slo=Objective(slo.get("p99_ms"), slo.get("p50_ms"), slo.get("max_error_pct", 0.1))
            if isinstance(slo, dict)
            else None,
            rank_by=options.get("rank_by"),
            pool_swept=isinstance(options.get("params", {}).get("pool_size"), list),
            min_effect_pct=options.get("min_effect_pct"),
        )


def websocket_settings(run: RunRecord) -> WebSocket:
    """The run's [websocket] settings (what its WebSocket cells' loads were): from its stored
    plan, else (a run stored before plans were) its recipe's text; the defaults where neither
    says, as the run had them."""
    stored = (run.plan or {}).get("recipe", {}).get("websocket")
    if stored is None:
        try:
            stored = tomllib.loads(run.recipe_text).get("websocket", {})
        except tomllib.TOMLDecodeError:
            stored = {}
    try:
        return WebSocket.model_validate(stored)
    except ValidationError:
        return WebSocket()


def ratio_method(stops_on_its_data: bool, rounds_move_together: bool) -> str:
    """Chosen before the run has data: a run that adds rounds until its ranking is decided
    needs intervals valid at whatever round it stopped (sequential); otherwise the ratio is
    taken within rounds only when this machine's rounds share a movement worth cancelling."""
    if stops_on_its_data:
        return RatioMethod.SEQUENTIAL.value
    return (RatioMethod.PAIRED if rounds_move_together else RatioMethod.INDEPENDENT).value
