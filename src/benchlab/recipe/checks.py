"""What a recipe's types cannot say: names that must exist (stacks, scenarios, flavours,
points), settings a stack or tool cannot take, rates and the SLO. Each mistake is one
UserError naming the file, the key and what would be right."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

from benchlab.core.errors import UserError
from benchlab.core.modes import Mode
from benchlab.core.text import did_you_mean, quoted, toml_key
from benchlab.core.thresholds import check_measured
from benchlab.http.scenarios import SCENARIOS
from benchlab.load import RATE_TOOL, TOOLS
from benchlab.recipe.cells import proxied, scenario_names
from benchlab.recipe.schema import (
    Recipe,
    StackParams,
    as_list,
    profile_mode,
    rate_share,
    recipe_thresholds,
    sentinel_of,
)
from benchlab.stacks.base import Stack

Catalogue = Mapping[str, Stack]


def check_names(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """Every check, in this order: the first mistake found is the one reported; the stacks a
    recipe may name are `catalogue`'s."""
    for check in (
        _check_sentinel,
        _check_stack_names,
        _check_baseline,
        _check_points,
        _check_trials,
        _check_scenario_names,
        _check_mixes,
        _check_stack_tables,
        _check_exclusions,
        _check_stack_params,
        _check_flavours,
        _check_pool_sweep,
        _check_rates,
        _check_pgbouncer,
        _check_served,
        _check_database_serves,
        _check_tool_sends,
        _check_protocols,
        _check_resilience,
        _check_websocket,
        _check_thresholds,
    ):
        check(path, recipe, catalogue)


def _check_thresholds(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """Each [thresholds] bound is written as `--threshold` takes it, on a figure the
    recipe's cells measure."""
    modes = {
        SCENARIOS[name].mode_for(profile_mode(recipe, profile))
        for profile in recipe.load
        for name in scenario_names(recipe)
        if name in SCENARIOS
    }
    for threshold in recipe_thresholds(recipe, path):
        check_measured([threshold], modes, f"{path}: key 'thresholds.{threshold.name}'")


def _check_websocket(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """The WebSocket scenarios need the WebSocket tool, which loads nothing else; a room
    lives in one process, so their stacks run one worker."""
    names = scenario_names(recipe)
    sockets = [n for n in names if SCENARIOS[n].websocket]
    others = [n for n in names if not SCENARIOS[n].websocket]
    for i, profile in enumerate(recipe.load):
        websocket = TOOLS[profile.tool].websocket
        if sockets and not websocket:
            able = ", ".join(n for n, t in TOOLS.items() if t.websocket)
            raise UserError(
                f"{path}: key 'load[{i}].tool': {profile.tool} speaks no WebSocket, and "
                f'{", ".join(sockets)} needs it; use tool = "{able}", or measure HTTP and '
                "WebSocket scenarios in recipes of their own"
            )
        if others and websocket:
            raise UserError(
                f"{path}: key 'load[{i}].tool': {profile.tool} loads the WebSocket scenarios "
                f"only, not {', '.join(others)}; measure them in a recipe of their own"
            )
        if websocket and (profile.rate is not None or profile.mix is not None):
            raise UserError(
                f"{path}: key 'load[{i}]': a WebSocket profile takes no rate or mix; "
                "ws-echo's rate is [websocket] rate"
            )
    for name, params in recipe.stack.items():
        workers = as_list(params.workers) if params.workers is not None else []
        if sockets and any(w != 1 for w in workers):
            raise UserError(
                f"{path}: key 'stack.\"{name}\".workers': the WebSocket scenarios run one "
                "worker (a room lives in one process); set workers = 1"
            )


def _check_stack_names(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """Every stack is one of the catalogue's."""
    _check_known(
        path, "stacks", recipe.stacks, catalogue, "stack", "run 'benchlab stacks' for the catalogue"
    )


def _check_known(
    path: Path, key: str, names: list[str], known: Collection[str], what: str, hint: str
) -> None:
    for i, name in enumerate(names):
        if name not in known:
            raise UserError(
                f"{path}: key '{key}[{i}]': unknown {what} {quoted(name)}"
                f"{did_you_mean(name, known)}; {hint}"
            )


def _check_sentinel(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """The sentinel is a stack of the catalogue that serves one of the recipe's scenarios;
    an A/A pair needs it."""
    if recipe.sentinel == "":
        raise UserError(
            f"{path}: key 'sentinel': empty; name a stack, or set sentinel = true for the "
            "built-in one (or remove the key)"
        )
    name = sentinel_of(recipe)
    if recipe.aa and name is None:
        raise UserError(
            f"{path}: key 'aa': an A/A pair is the sentinel measured twice; "
            "set sentinel = true (the built-in one) or name a stack"
        )
    if name is None:
        return
    if name not in catalogue:
        raise UserError(
            f"{path}: key 'sentinel': unknown stack {quoted(name)}"
            f"{did_you_mean(name, catalogue)}; run 'benchlab stacks' for the catalogue"
        )
    names = scenario_names(recipe)
    if not any(not catalogue[name].why_not(s) for s in names):
        raise UserError(
            f"{path}: key 'sentinel': {quoted(name)} serves none of the recipe's scenarios "
            f"({', '.join(names)}); it serves {', '.join(catalogue[name].scenarios)}: "
            "name a sentinel that does"
        )


def _check_baseline(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """The baseline is one of the stacks measured."""
    if recipe.baseline is not None and recipe.baseline not in recipe.stacks:
        raise UserError(
            f"{path}: key 'baseline': {quoted(recipe.baseline)} is not in 'stacks'"
            f"{did_you_mean(recipe.baseline, recipe.stacks)}; the baseline must be measured too"
        )


def _check_points(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """Each point is named once."""
    names = [p.name for p in recipe.points]
    for i, name in enumerate(names):
        if names.index(name) != i:
            raise UserError(
                f"{path}: key 'points[{i}].name': {quoted(name)} is used twice; name each "
                "point once"
            )


def _check_trials(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """max_trials is at least trials."""
    if recipe.max_trials is not None and recipe.max_trials < recipe.trials:
        raise UserError(
            f"{path}: key 'max_trials': {recipe.max_trials} is below 'trials' ({recipe.trials}); "
            "max_trials is the most trials an unconverged cell gets"
        )


def _check_scenario_names(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """Every scenario is a known one."""
    hint = f"known scenarios: {', '.join(SCENARIOS)}"
    _check_known(path, "scenarios", recipe.scenarios, SCENARIOS, "scenario", hint)


def _check_stack_tables(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """Every [stack."NAME"] table is one of the recipe's stacks."""
    for name in recipe.stack:
        if name not in recipe.stacks:
            where = "unknown stack" if name not in catalogue else "stack not in 'stacks'"
            raise UserError(
                f"{path}: key 'stack.{toml_key(name)}': {where} {quoted(name)}"
                f"{did_you_mean(name, recipe.stacks)}; parameters apply only to listed stacks"
            )


def _check_exclusions(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """Every exclusion names a stack and a scenario of the recipe."""
    for i, exclusion in enumerate(recipe.exclude):
        if exclusion.stack is not None and exclusion.stack not in recipe.stacks:
            raise UserError(
                f"{path}: key 'exclude[{i}].stack': {quoted(exclusion.stack)} is not in 'stacks'"
                f"{did_you_mean(exclusion.stack, recipe.stacks)}"
            )
        if exclusion.scenario is not None and exclusion.scenario not in recipe.scenarios:
            raise UserError(
                f"{path}: key 'exclude[{i}].scenario': {quoted(exclusion.scenario)} is not in "
                f"'scenarios'{did_you_mean(exclusion.scenario, recipe.scenarios)}"
            )


def _check_stack_params(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """Each stack's own settings are ones it can take."""
    for name, params in recipe.stack.items():
        stack = catalogue[name]
        if params.workers not in (None, 1, [1]) and stack.fixed_workers:
            raise UserError(
                f"{path}: key 'stack.{toml_key(name)}.workers': {quoted(name)} runs one process "
                "only; "
                "remove 'workers' or pick a stack with worker processes"
            )
        if params.threads is not None and not stack.concurrency:
            raise UserError(
                f"{path}: key 'stack.{toml_key(name)}.threads': {quoted(name)} has no threads or "
                "greenlets "
                "per worker to set; remove 'threads'"
            )
        offered = stack.flavours
        if params.flavour is not None and params.flavour not in offered:
            choices = ", ".join(offered) or "none (it has no driver flavours)"
            raise UserError(
                f"{path}: key 'stack.{toml_key(name)}.flavour': {quoted(params.flavour)} is not a "
                "flavour of "
                f"{quoted(name)}; it offers: {choices}"
            )


def _check_flavours(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """params.flavour names flavours the recipe's stacks offer."""
    if recipe.params.flavour is not None:
        wanted = as_list(recipe.params.flavour)
        every_offered = {f for name in recipe.stacks for f in catalogue[name].flavours}
        for i, flavour in enumerate(wanted):
            if flavour not in every_offered:
                key = (
                    f"params.flavour[{i}]"
                    if isinstance(recipe.params.flavour, list)
                    else "params.flavour"
                )
                raise UserError(
                    f"{path}: key '{key}': no stack of the recipe offers flavour {quoted(flavour)}"
                    f"{did_you_mean(flavour, sorted(every_offered))}; flavours offered: "
                    f"{', '.join(sorted(every_offered)) or 'none'}"
                )
        for name in recipe.stacks:
            offered = catalogue[name].flavours
            explicit = recipe.stack.get(name, StackParams()).flavour
            if offered and not explicit and not set(wanted) & set(offered):
                raise UserError(
                    f"{path}: key 'params.flavour': stack {quoted(name)} offers none of "
                    f"{', '.join(wanted)} (it offers {', '.join(offered)}); add that flavour "
                    f'or set [stack."{name}"] flavour'
                )


def _check_pool_sweep(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """A swept params.pool_size leaves no stack a pool of its own."""
    if isinstance(recipe.params.pool_size, list):
        for name, params in recipe.stack.items():
            if params.pool_size is not None:
                raise UserError(
                    f"{path}: key 'stack.{toml_key(name)}.pool_size': a stack's own pool cannot "
                    "join the sweep of 'params.pool_size' (its cells would be ranked alone); to "
                    "hold it while the others' pools change, give [[points]] each a pool_size"
                )


def _check_pgbouncer(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """pgbouncer fronts PostgreSQL only."""
    if recipe.services.pgbouncer and not recipe.services.pool_fronts_database:
        raise UserError(
            f"{path}: key 'services.pgbouncer': pgbouncer fronts PostgreSQL only; "
            'set database = "postgres" or pgbouncer = false'
        )


def _check_served(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """Every stack serves one of the recipe's scenarios (or mixes) at least."""
    names = scenario_names(recipe)
    for name in recipe.stacks:
        served = [s for s in names if not catalogue[name].why_not(s)]
        if not served:
            why = catalogue[name].why_not(names[0])
            raise UserError(
                f"{path}: key 'stacks': stack {quoted(name)} serves none of the recipe's scenarios "
                f"({', '.join(names)}): {why}; it serves {', '.join(catalogue[name].scenarios)}"
            )


def _check_mixes(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """A mix names known scenarios, and is sent by a tool that records every request."""
    if not scenario_names(recipe):
        raise UserError(
            f"{path}: key 'scenarios': no scenario to measure; list some (e.g. scenarios = "
            '["json"]) or give a [[load]] profile a mix'
        )
    for i, profile in enumerate(recipe.load):
        for j, entry in enumerate(profile.mix or []):
            if entry.scenario not in SCENARIOS or entry.scenario.startswith("mix:"):
                raise UserError(
                    f"{path}: key 'load[{i}].mix[{j}].scenario': unknown scenario "
                    f"{quoted(entry.scenario)}{did_you_mean(entry.scenario, list(SCENARIOS))}; "
                    "known "
                    f"scenarios: {', '.join(SCENARIOS)}"
                )
        if profile.mix and not TOOLS[profile.tool].records_each_request:
            able = ", ".join(n for n, t in TOOLS.items() if t.records_each_request)
            raise UserError(
                f"{path}: key 'load[{i}].tool': a mix needs a tool that records each request "
                f"(so that each part's latency and errors are known): {able}"
            )


def _check_rates(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    for i, profile in enumerate(recipe.load):
        if profile.rate is None:
            continue
        if not TOOLS[profile.tool].can_pace:
            raise UserError(
                f"{path}: key 'load[{i}].rate': {profile.tool} cannot send at a fixed rate (it "
                f'runs a closed loop only); use tool = "{RATE_TOOL}" for a rate, or remove '
                "'rate'"
            )
        if profile.threads is not None:
            raise UserError(
                f"{path}: key 'load[{i}].threads': a fixed-rate profile takes no threads "
                f"({profile.tool} starts the workers its schedule needs); remove 'threads'"
            )
        rates = as_list(profile.rate)
        for j, rate in enumerate(rates):
            if not isinstance(rate, str):
                continue
            key = f"load[{i}].rate" + (f"[{j}]" if isinstance(profile.rate, list) else "")
            share = rate_share(rate)
            if share is None:
                raise UserError(
                    f"{path}: key '{key}': {quoted(rate)} is neither a number of requests per "
                    "second "
                    'nor a share like "60%" of the cell\'s own capacity'
                )
            if not 0 < share <= 100:
                raise UserError(
                    f"{path}: key '{key}': a share must be within (0, 100] % of the cell's "
                    f"capacity, got {rate!r}"
                )
    if recipe.slo is not None:
        if recipe.slo.p99_ms is None and recipe.slo.p50_ms is None:
            raise UserError(
                f"{path}: key 'slo': no latency target; give p99_ms (and optionally p50_ms), "
                "e.g. p99_ms = 100"
            )
        if not any(profile_mode(recipe, p) == Mode.SLO for p in recipe.load):
            raise UserError(
                f"{path}: key 'slo': no [[load]] profile can search a capacity; add one with "
                f'tool = "{RATE_TOOL}" and no rate'
            )


def _check_database_serves(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """The API scenarios' apps query PostgreSQL only."""
    database = recipe.services.database
    for i, name in enumerate(scenario_names(recipe)):
        scenario = SCENARIOS[name]
        if scenario.needs_database and database not in scenario.databases:
            where = f"scenarios[{i}]" if i < len(recipe.scenarios) else "load.mix"
            raise UserError(
                f"{path}: key '{where}': {quoted(name)} is served on "
                f"{', '.join(scenario.databases)} only, and services.database is '{database}'; "
                'set database = "postgres" or run it in a recipe of its own'
            )


def _check_tool_sends(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """A request with its own method, headers or body needs a tool that can send it."""
    needy = [
        name
        for name in recipe.scenarios
        if not all(e.plain_get for e in SCENARIOS[name].load_mix(_first_param(recipe, name)))
    ]
    for i, profile in enumerate(recipe.load):
        if needy and not TOOLS[profile.tool].sends_any_request:
            able = ", ".join(n for n, t in TOOLS.items() if t.sends_any_request)
            raise UserError(
                f"{path}: key 'load[{i}].tool': {profile.tool} sends a plain GET only, and "
                f"{', '.join(needy)} needs its own method, headers or body; use one of {able}, "
                "or measure those scenarios in a recipe of their own"
            )


def _first_param(recipe: Recipe, scenario: str) -> int | None:
    param = SCENARIOS[scenario].param
    return as_list(getattr(recipe.params, param))[0] if param else None


def _check_protocols(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """Each profile's tool speaks its protocol, and some stack of the recipe does too."""
    proxy = proxied(recipe)
    for i, profile in enumerate(recipe.load):
        tool = TOOLS[profile.tool]
        if profile.protocol not in tool.protocols:
            able = ", ".join(n for n, t in TOOLS.items() if profile.protocol in t.protocols)
            raise UserError(
                f"{path}: key 'load[{i}].protocol': {profile.tool} does not speak "
                f"{profile.protocol} (it speaks {', '.join(tool.protocols)}); use tool = one of "
                f"{able}"
            )
        if not profile.keepalive and profile.tool == "h2load":
            raise UserError(
                f"{path}: key 'load[{i}].keepalive': h2load keeps its connections open; use "
                'tool = "wrk" or "vegeta" for a load without keep-alive'
            )
        reasons = [catalogue[s].why_not_protocol(profile.protocol, proxy) for s in recipe.stacks]
        if all(reasons):
            raise UserError(
                f"{path}: key 'load[{i}].protocol': no stack of the recipe speaks "
                f"{profile.protocol}: {reasons[0]}"
            )


def _check_resilience(path: Path, recipe: Recipe, catalogue: Catalogue) -> None:
    """The shutdown and slow-client checks signal and load the server from this machine."""
    if not recipe.hosts:
        return
    for key in ("drain", "slow_clients"):
        if getattr(recipe, key):
            raise UserError(
                f"{path}: key '{key}': the check runs only with every role on this machine; "
                f"remove [hosts] or '{key}'"
            )
