"""Recipes: TOML files declaring stacks, scenarios, load profiles and trials; expanded to the
cells of a plan. schema.py is a recipe's shape, files.py finds and reads one (its mistakes
worded by messages.py and checks.py), cores.py and hosts.py place its roles (host_spec.py
parses where a host is), cells.py expands its matrix and plan.py puts them together."""

from benchlab.recipe.cells import Cell, expand, unserved
from benchlab.recipe.cores import CoreAssignment, allowed_cores, default_cores, resolve_cores
from benchlab.recipe.files import (
    BUNDLED_RECIPES,
    DEFAULT_RECIPE,
    apply_overrides,
    bundled_recipes,
    load_recipe,
    resolve_recipe,
)
from benchlab.recipe.hosts import HostPlan, local_only, resolve_hosts
from benchlab.recipe.plan import Plan, build_plan
from benchlab.recipe.schema import (
    Cores,
    Exclusion,
    HostEntry,
    LoadProfile,
    Params,
    Point,
    Recipe,
    Services,
    Slo,
    StackParams,
    WebSocket,
    as_list,
    at_point,
    profile_mode,
    recipe_thresholds,
    sentinel_of,
)

__all__ = [
    "BUNDLED_RECIPES", "DEFAULT_RECIPE", "Cell", "CoreAssignment", "Cores", "Exclusion",
    "HostEntry", "HostPlan", "LoadProfile", "Params", "Plan", "Point", "Recipe", "Services",
    "Slo", "StackParams", "WebSocket", "allowed_cores", "apply_overrides", "as_list", "at_point",
    "build_plan", "bundled_recipes", "default_cores", "expand", "load_recipe", "local_only",
    "profile_mode", "recipe_thresholds", "resolve_cores", "resolve_hosts", "resolve_recipe",
    "sentinel_of", "unserved",
]  # fmt: skip
