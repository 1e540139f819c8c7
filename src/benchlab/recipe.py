"""Recipes: TOML files declaring stacks, scenarios, load profiles and trials; expanded to cells.

Every mistake in a recipe becomes one UserError naming the file, the key and what would be
right, so `benchlab run` never shows a traceback for a bad recipe.
"""

from __future__ import annotations

import difflib
import os
import tomllib
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchlab.errors import UserError
from benchlab.scenarios import SCENARIOS

DEFAULT_RECIPE = Path("recipes/quick.toml")
LOAD_TOOLS = ("wrk",)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


PositiveInt = Annotated[int, Field(ge=1)]
CoreList = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]


class LoadProfile(_Strict):
    tool: Literal["wrk"] = "wrk"
    connections: PositiveInt = 64
    threads: PositiveInt | None = None
    # wrk takes whole seconds
    duration: Annotated[int, Field(ge=1, le=3600)] = 5
    timeout: Annotated[int, Field(ge=1, le=600)] = 5


class Cores(_Strict):
    server: CoreList
    load: CoreList


class StackParams(_Strict):
    workers: PositiveInt | None = None


class Exclusion(_Strict):
    stack: str | None = None
    scenario: str | None = None
    connections: PositiveInt | None = None

    def matches(self, stack: str, scenario: str, connections: int) -> bool:
        return (
            (self.stack is None or self.stack == stack)
            and (self.scenario is None or self.scenario == scenario)
            and (self.connections is None or self.connections == connections)
        )


class Recipe(_Strict):
    name: str
    question: str = ""
    stacks: Annotated[list[str], Field(min_length=1)]
    scenarios: Annotated[list[str], Field(min_length=1)]
    load: Annotated[list[LoadProfile], Field(min_length=1)]
    trials: Annotated[int, Field(ge=1, le=1000)] = 3
    warmup: Annotated[int, Field(ge=0, le=600)] = 1
    cores: Cores | None = None
    stack: dict[str, StackParams] = Field(default_factory=dict)
    exclude: list[Exclusion] = Field(default_factory=list)


@dataclass(frozen=True)
class CoreAssignment:
    server: tuple[int, ...]
    load: tuple[int, ...]


@dataclass(frozen=True)
class Cell:
    """One measured unit: stack × scenario × load profile (× parameters, later)."""

    stack: str
    scenario: str
    tool: str
    connections: int
    threads: int
    duration: int
    timeout: int
    workers: int

    @property
    def key(self) -> str:
        return (
            f"{self.stack}|{self.scenario}|{self.tool}|c{self.connections}"
            f"|t{self.threads}|d{self.duration}|w{self.workers}"
        )


@dataclass(frozen=True)
class Plan:
    recipe: Recipe
    path: Path
    text: str
    cores: CoreAssignment
    cells: tuple[Cell, ...]


# --- loading -------------------------------------------------------------------------------


def load_recipe(path: Path) -> tuple[Recipe, str]:
    """Read and validate a recipe file; every problem is a UserError naming file and key."""
    if not path.exists():
        hint = _available_recipes_hint()
        raise UserError(f"recipe file '{path}' not found{hint}")
    if path.is_dir():
        raise UserError(f"recipe '{path}' is a directory; give a .toml file inside it")
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML: {exc}; fix the syntax at that line") from None
    try:
        recipe = Recipe.model_validate(data)
    except ValidationError as exc:
        raise UserError(_describe_validation_error(path, exc)) from None
    _check_names(path, recipe)
    return recipe, text


def apply_overrides(
    recipe: Recipe,
    *,
    duration: int | None = None,
    trials: int | None = None,
    connections: int | None = None,
) -> Recipe:
    """Command-line overrides: they replace the value in every load profile."""
    if trials is not None:
        recipe = recipe.model_copy(update={"trials": trials})
    updates: dict[str, Any] = {}
    if duration is not None:
        updates["duration"] = duration
    if connections is not None:
        updates["connections"] = connections
    if updates:
        recipe = recipe.model_copy(
            update={"load": [p.model_copy(update=updates) for p in recipe.load]}
        )
    return recipe


def build_plan(path: Path, recipe: Recipe, text: str, cpu_count: int | None = None) -> Plan:
    cores = resolve_cores(path, recipe, cpu_count or os.cpu_count() or 1)
    return Plan(recipe=recipe, path=path, text=text, cores=cores, cells=expand(recipe, cores))


def resolve_cores(path: Path, recipe: Recipe, cpu_count: int) -> CoreAssignment:
    if recipe.cores is None:
        if cpu_count < 2:
            # One core cannot be split: say so in doctor and reports rather than refuse.
            return CoreAssignment(server=(0,), load=(0,))
        half = cpu_count // 2
        return CoreAssignment(server=tuple(range(half)), load=tuple(range(half, cpu_count)))
    for role in ("server", "load"):
        for i, core in enumerate(getattr(recipe.cores, role)):
            if core >= cpu_count:
                raise UserError(
                    f"{path}: key 'cores.{role}[{i}]': core {core} does not exist; "
                    f"this machine has cores 0-{cpu_count - 1}"
                )
    shared = sorted(set(recipe.cores.server) & set(recipe.cores.load))
    if shared:
        raise UserError(
            f"{path}: key 'cores': core(s) {shared} are in both 'server' and 'load'; "
            "the server and the load tool must not share a core"
        )
    return CoreAssignment(server=tuple(recipe.cores.server), load=tuple(recipe.cores.load))


def expand(recipe: Recipe, cores: CoreAssignment) -> tuple[Cell, ...]:
    """The matrix: stacks × scenarios × load profiles, minus exclusions and unserved pairs."""
    from benchlab.stacks import CATALOGUE

    cells: list[Cell] = []
    for stack_name in recipe.stacks:
        stack = CATALOGUE[stack_name]
        params = recipe.stack.get(stack_name, StackParams())
        workers = params.workers or len(cores.server)
        for scenario in recipe.scenarios:
            if scenario not in stack.scenarios:
                continue
            for profile in recipe.load:
                if any(
                    e.matches(stack_name, scenario, profile.connections) for e in recipe.exclude
                ):
                    continue
                threads = min(profile.threads or len(cores.load), profile.connections)
                cells.append(
                    Cell(
                        stack=stack_name,
                        scenario=scenario,
                        tool=profile.tool,
                        connections=profile.connections,
                        threads=threads,
                        duration=profile.duration,
                        timeout=profile.timeout,
                        workers=workers,
                    )
                )
    return tuple(dict.fromkeys(cells))


# --- error messages ------------------------------------------------------------------------


def _available_recipes_hint() -> str:
    recipes = sorted(Path("recipes").glob("*.toml")) if Path("recipes").is_dir() else []
    if not recipes:
        return "; give the path of a recipe .toml file"
    return "; available recipes: " + ", ".join(str(r) for r in recipes)


def _check_names(path: Path, recipe: Recipe) -> None:
    from benchlab.stacks import CATALOGUE

    for i, name in enumerate(recipe.stacks):
        if name not in CATALOGUE:
            raise UserError(
                f"{path}: key 'stacks[{i}]': unknown stack '{name}'"
                f"{_did_you_mean(name, CATALOGUE)}; run 'benchlab stacks' for the catalogue"
            )
    for i, name in enumerate(recipe.scenarios):
        if name not in SCENARIOS:
            raise UserError(
                f"{path}: key 'scenarios[{i}]': unknown scenario '{name}'"
                f"{_did_you_mean(name, SCENARIOS)}; known scenarios: {', '.join(SCENARIOS)}"
            )
    for name in recipe.stack:
        if name not in recipe.stacks:
            where = "unknown stack" if name not in CATALOGUE else "stack not in 'stacks'"
            raise UserError(
                f"{path}: key 'stack.\"{name}\"': {where} '{name}'"
                f"{_did_you_mean(name, recipe.stacks)}; parameters apply only to listed stacks"
            )
    for i, exclusion in enumerate(recipe.exclude):
        if exclusion.stack is not None and exclusion.stack not in recipe.stacks:
            raise UserError(
                f"{path}: key 'exclude[{i}].stack': '{exclusion.stack}' is not in 'stacks'"
                f"{_did_you_mean(exclusion.stack, recipe.stacks)}"
            )
        if exclusion.scenario is not None and exclusion.scenario not in recipe.scenarios:
            raise UserError(
                f"{path}: key 'exclude[{i}].scenario': '{exclusion.scenario}' is not in "
                f"'scenarios'{_did_you_mean(exclusion.scenario, recipe.scenarios)}"
            )
    for name in recipe.stacks:
        served = [s for s in recipe.scenarios if s in CATALOGUE[name].scenarios]
        if not served:
            raise UserError(
                f"{path}: key 'stacks': stack '{name}' serves none of the recipe's scenarios "
                f"({', '.join(recipe.scenarios)}); it serves {', '.join(CATALOGUE[name].scenarios)}"
            )


def _did_you_mean(word: str, choices: typing.Iterable[str]) -> str:
    options = list(choices)
    close = [o for o in options if o.startswith(word) or word in o.split("+")]
    close = close or difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _key_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            part_text = part if part.replace("_", "").replace("-", "").isalnum() else f'"{part}"'
            out += f".{part_text}" if out else part_text
    return out or "(top level)"


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model class that holds the key at `loc` (to list the keys allowed there)."""
    model: Any = Recipe
    skip_next = False  # the next part is a list index or a dict key, not a field name
    for part in loc:
        if skip_next:
            skip_next = False
            continue
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            return None
        skip_next = _is_container(field.annotation)
        model = _unwrap(field.annotation)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
    return model


def _is_container(annotation: Any) -> bool:
    while typing.get_origin(annotation) is Annotated or typing.get_origin(annotation) in (
        typing.Union,
        types.UnionType,
    ):
        args = typing.get_args(annotation)
        annotation = (
            args[0]
            if typing.get_origin(annotation) is Annotated
            else next(a for a in args if a is not type(None))
        )
    return typing.get_origin(annotation) in (list, dict)


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin is Annotated:
            annotation = args[0]
        elif origin in (list, typing.Union, types.UnionType):
            annotation = next(a for a in args if a is not type(None))
        elif origin is dict:
            annotation = args[1]
        else:
            return annotation


def _describe_validation_error(path: Path, exc: ValidationError) -> str:
    error = exc.errors()[0]
    loc = tuple(error["loc"])
    kind = error["type"]
    key = _key_path(loc)
    more = f" (and {exc.error_count() - 1} more problem(s))" if exc.error_count() > 1 else ""
    if kind == "extra_forbidden":
        parent = _model_at(loc[:-1])
        allowed = list(parent.model_fields) if parent else []
        name = str(loc[-1])
        hint = _did_you_mean(name, allowed)
        listed = f"; allowed keys here: {', '.join(allowed)}" if allowed else ""
        return f"{path}: key '{key}': unknown key{hint}{listed}{more}"
    if kind == "missing":
        return f"{path}: key '{key}': required key is missing; add it{more}"
    given = error.get("input")
    expected = _expected(kind, error)
    return f"{path}: key '{key}': {expected}, got {given!r}{more}"


def _expected(kind: str, error: Any) -> str:
    ctx = error.get("ctx") or {}
    messages = {
        "int_parsing": "expected a whole number",
        "int_type": "expected a whole number",
        "int_from_float": "expected a whole number",
        "float_parsing": "expected a number",
        "float_type": "expected a number",
        "string_type": "expected a text string in quotes",
        "list_type": 'expected a list like ["a", "b"]',
        "dict_type": "expected a table",
        "model_type": "expected a table",
        "bool_type": "expected true or false",
        "literal_error": f"expected one of {ctx.get('expected', '')}",
        "greater_than_equal": f"expected a value >= {ctx.get('ge')}",
        "greater_than": f"expected a value > {ctx.get('gt')}",
        "less_than_equal": f"expected a value <= {ctx.get('le')}",
        "too_short": "expected at least one entry",
    }
    return messages.get(kind, error.get("msg", "invalid value"))
