"""Where a run's time goes, and how long the next one will take.

Every run measures what its steps cost on this machine — starting and stopping each stack,
each service, verifying a cell, a load tool's time beyond its own duration (start-up,
draining, reading its results) — and keeps them in benchlab's cache. The plan a run prints
before it starts (and `benchlab run --dry-run`) adds those costs up over its cells and
rounds; during the run the same sum over what is left, with this run's own costs folded in,
is the time left. The defaults are what these steps cost on a 2-core machine (2026-11).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchlab.analysis.capacity import STEP_SHARES
from benchlab.core.modes import Mode
from benchlab.core.service_kinds import Service
from benchlab.core.text import minutes
from benchlab.http.scenarios import BROADCAST, HOLD, SCENARIOS, WEBSOCKET_SCENARIOS
from benchlab.load import TOOLS
from benchlab.load.jmeter_plans import step_timing
from benchlab.load.ws_requests import BroadcastRequest, Endpoint, HoldRequest
from benchlab.recipe import Cell, Plan
from benchlab.recipe.schema import WebSocket
from benchlab.resilience import drain, slow_clients
from benchlab.resilience.facts import CHECK_WORDS, DRAIN, SLOW_CLIENTS
from benchlab.stacks import Stack
from benchlab.system.build_cache import state_dir
from benchlab.system.state_files import read_state, write_state
from benchlab.system.trusted_path import Untrusted

SERVICE_START_S = {
    Service.POSTGRESQL: 4.0, Service.PGBOUNCER: 0.5, Service.MARIADB: 8.0, Service.REDIS: 0.5
}  # fmt: skip
DEFAULTS = {
    "start": 1.5, "stop": 0.5, "verify": 0.05, "overhead": 0.3,
    **{service.start_cost_key: seconds for service, seconds in SERVICE_START_S.items()},
    "proxy": 0.3,
    **{f"overhead:{name}": tool.overhead_s for name, tool in TOOLS.items()},
    # A hold's JMeter is stopped, not finished (its threads would hold on): its start and
    # the stop's 2-s grace (runner/ws_load.py).
    "overhead:jmeter:ws-hold": 5.0,
}  # fmt: skip
# Probes of a capacity search: the first replicate's closed loop, steps and bisection; later
# replicates' bisection (from the searches of recipes/slo-capacity.toml).
FIRST_REPLICATE_PROBES = 1 + len(STEP_SHARES) + 4
LATER_REPLICATE_PROBES = 3.5
WEIGHT = 0.2  # how much a new measurement moves a remembered cost
# One step that stalls (a request a load tool waited its timeout for) would otherwise move
# every remaining step's estimate: a new measurement counts for at most this many times the
# remembered cost (plus a quarter second), so a cost that really grew is learnt over a few steps.
OUTLIER_FACTOR = 3.0


def _path() -> Path:
    return state_dir() / "costs.json"


class Costs:
    """Step costs in seconds, remembered across runs (a moving average per step)."""

    def __init__(self, known: Mapping[str, float] | None = None) -> None:
        self.known: dict[str, float] = dict(known or {})

    @classmethod
    def load(cls) -> Costs:
        """What earlier runs learnt (nothing, when the file is missing or not benchlab's)."""
        try:
            known = json.loads(read_state(_path()) or b"{}")
        except (OSError, ValueError, Untrusted):
            return cls()
        if not isinstance(known, dict):
            return cls()
        return cls({k: float(v) for k, v in known.items() if isinstance(v, int | float)})

    def save(self) -> None:
        with contextlib.suppress(OSError):
            write_state(_path(), json.dumps(self.known, indent=1, sort_keys=True))

    def get(self, key: str, general: str | None = None) -> float:
        """What `key` costs: learnt, else its default (a tool's declared overhead: JMeter's
        JVM start is 3 s, not the general 0.3), else the `general` step's."""
        if key in self.known:
            return self.known[key]
        if key in DEFAULTS:
            return DEFAULTS[key]
        if general is not None:
            return self.known.get(general, DEFAULTS.get(general, DEFAULTS["overhead"]))
        return DEFAULTS.get(key, DEFAULTS["overhead"])

    def record(self, key: str, seconds: float) -> None:
        seconds = max(seconds, 0.0)  # siege stops before its duration on short runs
        old = self.known.get(key)
        if old is None:
            self.known[key] = seconds
            return
        old = max(old, 0.0)
        seconds = min(seconds, OUTLIER_FACTOR * old + 0.25)
        self.known[key] = (1 - WEIGHT) * old + WEIGHT * seconds

    @contextlib.contextmanager
    def timed(self, key: str) -> Iterator[None]:
        started = time.monotonic()
        yield
        self.record(key, time.monotonic() - started)


@dataclass(frozen=True)
class Estimate:
    total_s: float
    services_s: float
    launches_s: float  # starting and stopping stacks
    load_s: float  # under measured load (warm-ups excluded)
    other_s: float  # warm-ups, verification, tool overheads

    def text(self) -> str:
        return (
            f"about {minutes(self.total_s)} ({minutes(self.load_s)} under measured load, "
            f"{minutes(self.launches_s)} starting and stopping stacks, "
            f"{minutes(self.services_s)} starting services, {minutes(self.other_s)} warm-ups, "
            "checks and tool overheads)"
        )


def websocket_load_s(cell: Cell, kind: str | None, settings: WebSocket, warmup_s: float) -> float:
    """What one WebSocket load of `cell` (its scenario's `kind` of load) asks of the tool,
    its start aside: the hold's steps (each its ramp and settle, as runner/ws_load.py times
    them), the echo's warm-up and duration, the broadcast's joins and rounds (its warm-up's
    rounds first)."""
    if kind == HOLD:
        request = HoldRequest(
            _NOWHERE, settings.hold_step, settings.hold_steps, settings.hold_open_rate,
            settings.hold_settle_s,
        )  # fmt: skip
        return float(settings.hold_steps * step_timing(request)[1])
    if kind == BROADCAST:
        interval_s = settings.round_interval_ms / 1000
        warm_rounds = round(warmup_s / interval_s)
        joins = settings.receivers / BroadcastRequest.join_rate
        return joins + (settings.rounds + warm_rounds) * interval_s
    return warmup_s + cell.duration


_NOWHERE = Endpoint("", 0, ())


def websocket_cost_key(cell: Cell) -> str:
    """A WebSocket load's own overhead, learnt by scenario (a hold's JMeter is stopped, an
    echo's finishes), the tool's in general until it is."""
    return f"overhead:{cell.tool}:{cell.scenario}"


def _websocket_seconds(
    cell: Cell, first_round: bool, warmup: int, costs: Costs, settings: WebSocket
) -> tuple[float, float]:
    """(under load, around it) for one round of a WebSocket cell: each of its loads is a
    JMeter run (a JVM started: its overhead learnt from every load), checked before;
    an echo with an [slo] runs its fixed rate, then a replicate of the capacity search (the
    first with its closed loop), each probe verified first."""
    overhead = costs.get(websocket_cost_key(cell), f"overhead:{cell.tool}")
    verify = costs.get("verify")
    warm = warmup if cell.warmup_s is None else cell.warmup_s
    load = websocket_load_s(cell, SCENARIOS[cell.scenario].websocket, settings, float(warm))
    loads = 1.0
    if cell.mode == Mode.SLO:
        loads += FIRST_REPLICATE_PROBES if first_round else LATER_REPLICATE_PROBES
    return loads * load, loads * (overhead + verify) + 2 * verify


def cell_seconds(
    cell: Cell, first_round: bool, warmup: int, costs: Costs, websocket: WebSocket | None = None
) -> tuple[float, float]:
    """(under load, around it) for one round of one cell; `warmup`: the warm-up it runs
    (the first cell of each scenario in a launch); `websocket`: the recipe's [websocket]."""
    if websocket is not None and cell.scenario in WEBSOCKET_SCENARIOS:
        return _websocket_seconds(cell, first_round, warmup, costs, websocket)
    overhead = costs.get(f"overhead:{cell.tool}", "overhead")
    verify = costs.get("verify")
    around = 2 * verify + (warmup + overhead if warmup else 0.0)
    if cell.mode == Mode.SLO:
        probes = FIRST_REPLICATE_PROBES if first_round else LATER_REPLICATE_PROBES
        return probes * cell.duration, around + probes * (overhead + verify)
    if cell.mode == Mode.RATE and cell.rate_share is not None and first_round:
        return 2 * cell.duration, around + 2 * overhead  # its closed-loop probe first
    return cell.duration, around + overhead


def estimate(
    cells: Sequence[Cell],
    rounds_left: Mapping[Cell, int],
    rounds_done: Mapping[Cell, int],
    warmup: int,
    costs: Costs,
    services: Sequence[Service] = (),
    websocket: WebSocket | None = None,
) -> Estimate:
    """The time the cells' remaining rounds take, launch by launch as the runner does them
    (`websocket`: the recipe's [websocket], which times its WebSocket cells)."""
    services_s = sum(costs.get(service.start_cost_key) for service in services)
    launches_s = load_s = other_s = 0.0
    groups: dict[tuple, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(cell.launch_key, []).append(cell)
    for group in groups.values():
        stack = group[0].stack
        for r in range(max(rounds_left.get(c, 0) for c in group)):
            todo = [c for c in group if rounds_left.get(c, 0) > r]
            launches_s += costs.get(f"start:{stack}", "start") + costs.get(f"stop:{stack}", "stop")
            warmed: set[str] = set()  # one warm-up per launch and scenario, as the runner
            for cell in todo:
                first = rounds_done.get(cell, 0) + r == 0
                warm = 0 if cell.scenario in warmed else warmup
                under, around = cell_seconds(cell, first, warm, costs, websocket)
                warmed.add(cell.scenario)
                load_s += under
                other_s += around
    total = services_s + launches_s + load_s + other_s
    return Estimate(total, services_s, launches_s, load_s, other_s)


def services_needed(plan_cells: Sequence[Cell], recipe) -> list[Service]:
    scenarios = [SCENARIOS[c.scenario] for c in plan_cells if c.scenario in SCENARIOS]
    names: list[Service] = []
    if any(s.needs_database for s in scenarios):
        names.append(recipe.services.database_service)
        if recipe.services.pool_fronts_database:
            names.append(Service.PGBOUNCER)
    if any(s.needs_cache for s in scenarios):
        names.append(Service.REDIS)
    return names


def resilience_seconds(recipe, stack: Stack | None = None) -> float:
    """What the recipe's resilience checks (drain, slow_clients) take `stack` (or any
    stack), beyond its start and stop: slow readers only where it serves static files."""
    seconds = drain.expected_s() if recipe.drain else 0.0
    modes = [
        m for m in recipe.slow_clients
        if stack is None or slow_clients.MODES[m].applies_to(stack.scenarios)
    ]  # fmt: skip
    if modes:
        seconds += slow_clients.expected_s(len(modes), recipe.slow_client_rounds)
    return seconds


def checks_seconds(
    cells: Sequence[Cell], recipe, catalogue: Mapping[str, Stack], costs: Costs
) -> float:
    """Every stack's resilience checks, each on a launch of its own."""
    if not resilience_seconds(recipe):
        return 0.0
    stacks = {c.stack for c in cells}
    return sum(
        resilience_seconds(recipe, catalogue[stack])
        + costs.get(f"start:{stack}", "start")
        + costs.get(f"stop:{stack}", "stop")
        for stack in stacks
    )


def plan_seconds(
    cells: Sequence[Cell], recipe, catalogue: Mapping[str, Stack], costs: Costs,
    budget_min: float | None = None,
) -> float:  # fmt: skip
    """What the plan's rounds take (the recipe's, not the adaptive ones) and its resilience
    checks, within a budget."""
    services = services_needed(cells, recipe)
    base = estimate(
        cells, dict.fromkeys(cells, recipe.trials), {}, recipe.warmup, costs, services,
        recipe.websocket,
    )  # fmt: skip
    total = base.total_s + checks_seconds(cells, recipe, catalogue, costs)
    return total if budget_min is None else min(total, budget_min * 60)


def plan_estimate(
    plan: Plan, costs: Costs, budget_min: float | None = None
) -> tuple[list[str], float]:
    """What a run of `plan` will print before it starts and how long it will take (within a
    budget), of its cells whose stacks run here."""
    catalogue = plan.catalogue
    runnable = [c for c in plan.cells if catalogue[c.stack].availability().ok]
    return (
        plan_lines(runnable, plan.recipe, catalogue, costs, budget_min),
        plan_seconds(runnable, plan.recipe, catalogue, costs, budget_min),
    )


def plan_lines(
    cells: Sequence[Cell], recipe, catalogue: Mapping[str, Stack], costs: Costs,
    budget_min: float | None = None,
) -> list[str]:  # fmt: skip
    """What a run will do and how long it will take, before it starts."""
    services = services_needed(cells, recipe)
    launches = len({c.launch_key for c in cells})
    base = estimate(
        cells, dict.fromkeys(cells, recipe.trials), {}, recipe.warmup, costs, services,
        recipe.websocket,
    )  # fmt: skip
    lines = [
        f"plan: {len(cells)} cells in {launches} launch(es) × {recipe.trials} round(s)"
        + (f", services: {', '.join(services)}" if services else "")
        + f"; {base.text()}"
    ]
    if checks := checks_seconds(cells, recipe, catalogue, costs):
        asked = [CHECK_WORDS[SLOW_CLIENTS]] * bool(recipe.slow_clients)
        asked += [CHECK_WORDS[DRAIN]] * recipe.drain
        lines.append(
            f"  then the checks of {' and '.join(asked)}: {len({c.stack for c in cells})} "
            f"stack(s), about {minutes(checks)}"
        )
    if recipe.max_trials and recipe.max_trials > recipe.trials:
        most = estimate(
            cells, dict.fromkeys(cells, recipe.max_trials), {}, recipe.warmup, costs, services,
            recipe.websocket,
        )  # fmt: skip
        if budget_min is None:
            lines.append(
                f"  up to {minutes(most.total_s)} if every pair still undecided needs all "
                f"{recipe.max_trials} rounds (max_trials)"
            )
        else:
            within = min(most.total_s, budget_min * 60)
            lines.append(
                f"  then rounds only for the pairs still undecided, until each is decided, "
                f"{recipe.max_trials} rounds, or {minutes(within)} (--budget)"
            )
            if base.total_s > budget_min * 60:
                lines.append(
                    f"  the budget ({minutes(budget_min * 60)}) ends before the first "
                    f"{recipe.trials} rounds: raise --budget, or lower --trials"
                )
    return lines
