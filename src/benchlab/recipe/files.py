"""Recipe files: found by path or by name among benchlab's own, read, validated, and changed
by command-line overrides.

Every mistake in a recipe becomes one UserError naming the file, the key and what would be
right, so `benchlab run` never shows a traceback for a bad recipe.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pydantic import ValidationError

from benchlab.core.errors import UserError
from benchlab.core.text import did_you_mean
from benchlab.recipe.checks import Catalogue, check_names
from benchlab.recipe.messages import describe_validation_error, what_was_expected
from benchlab.recipe.schema import Recipe

DEFAULT_RECIPE = "quick"
# The recipes benchlab comes with (package data: an installed benchlab has them too), found
# by name from any directory. The checkout's recipes/ is a link to them.
BUNDLED_RECIPES = Path(__file__).resolve().parents[1] / "recipes"


def bundled_recipes() -> list[Path]:
    return sorted(BUNDLED_RECIPES.glob("*.toml")) if BUNDLED_RECIPES.is_dir() else []


def shown_source(path: str | Path) -> str:
    """Where a recipe came from, as a report shows it: "benchlab's own" for one that came
    with benchlab, wherever it ran from (its path in an install or a temporary clone means
    nothing to a reader), else its path as given."""
    found = Path(path)
    bundled = {p.stem for p in bundled_recipes()}
    if found.parts[-3:-1] == ("benchlab", "recipes") and found.stem in bundled:
        return "benchlab's own"
    return str(path)


def resolve_recipe(text: str) -> Path:
    """A recipe by its path, or one of benchlab's by name: `quick`, `seed-000` (a name's
    unique prefix up to a dash is enough)."""
    path = Path(text)
    if path.exists() or text.endswith(".toml") or "/" in text:
        return path
    named = {p.stem: p for p in bundled_recipes()}
    if text in named:
        return named[text]
    prefixed = [p for stem, p in named.items() if stem.startswith(f"{text}-")]
    if len(prefixed) == 1:
        return prefixed[0]
    return path


def load_recipe(path: Path, catalogue: Catalogue) -> tuple[Recipe, str]:
    """Read and validate a recipe file, whose stacks are `catalogue`'s; every problem is a
    UserError naming file and key."""
    if not path.exists():
        names = [r.stem for r in bundled_recipes()]
        guess = did_you_mean(path.name, names) if len(path.parts) == 1 else ""
        raise UserError(f"recipe file '{path}' not found{guess}{_available_recipes_hint()}")
    if path.is_dir():
        raise UserError(f"recipe '{path}' is a directory; give a .toml file inside it")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"recipe '{path}': cannot read it ({exc.strerror})") from None
    data = read_toml(path, text)
    try:
        recipe = Recipe.model_validate(data)
    except ValidationError as exc:
        raise UserError(describe_validation_error(path, exc)) from None
    check_names(path, recipe, catalogue)
    return recipe, text


# tomllib says where it stopped at the end of its message (Python 3.11 keeps no attribute).
_TOML_WHERE = re.compile(r" \((?:at line (\d+), column (\d+)|at end of document)\)$")
SHOWN_LINE = 60  # characters of the line at fault an error quotes


def _toml_error(path: Path, text: str, said: str) -> str:
    """A TOML syntax error as file:line:column, what is wrong, and the line itself (where
    tomllib stopped: a bracket left open is found on a line after its own)."""
    found = _TOML_WHERE.search(said)
    if found is None:
        return f"{path}: not valid TOML: {said}; fix its syntax"
    lines = text.splitlines() or [""]
    line = int(found[1]) if found[1] else len(lines)
    column = f":{found[2]}" if found[2] else ""
    shown = lines[line - 1].strip() if line <= len(lines) else ""
    if len(shown) > SHOWN_LINE:
        shown = shown[: SHOWN_LINE - 3] + "..."
    return (
        f"{path}:{line}{column}: not valid TOML: {said[: found.start()]} at line {line} "
        f"({shown!r}); fix the syntax there, or just above it (a bracket or quote left open)"
    )


def read_toml(path: Path, text: str) -> dict:
    """The TOML document; a syntax error or a nesting deeper than Python's stack is one
    line naming the file."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(_toml_error(path, text, str(exc))) from None
    except RecursionError:
        raise UserError(
            f"{path}: not a recipe: its tables or lists are nested hundreds deep; a recipe "
            "needs two levels"
        ) from None


def apply_overrides(
    recipe: Recipe,
    *,
    duration: int | None = None,
    trials: int | None = None,
    connections: int | None = None,
    warmup: int | None = None,
    points: list[str] | None = None,
    path: Path | None = None,
) -> Recipe:
    """Command-line overrides: they replace the value in every load profile."""
    if points:
        known = [p.name for p in recipe.points]
        for name in points:
            if name not in known:
                raise UserError(
                    f"--point '{name}': {path or 'the recipe'} has no such point; "
                    f"its points: {', '.join(known) or 'none'}"
                )
        recipe = recipe.model_copy(
            update={"points": [p for p in recipe.points if p.name in points]}
        )
    # Validated as the recipe's own values are: the same limits, the same messages.
    options = {
        "--trials": ("trials", trials), "--duration": ("duration", duration),
        "--connections": ("connections", connections), "--warmup": ("warmup", warmup),
    }  # fmt: skip
    data = recipe.model_dump(exclude_unset=True)
    for key, value in options.values():
        if value is None:
            continue
        if key in ("trials", "warmup"):  # the recipe's own keys; the others are each profile's
            data[key] = value
            if key == "trials" and recipe.max_trials is not None and recipe.max_trials < value:
                data["max_trials"] = value
        else:
            data["load"] = [{**profile, key: value} for profile in data["load"]]
    try:
        return Recipe.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        option = next((o for o, (k, _) in options.items() if k in error["loc"]), "an option")
        given = next(v for o, (_, v) in options.items() if o == option) if option in options else ""
        raise UserError(
            f"{option} {given}: {what_was_expected(error['type'], error)} (the recipe's own limit)"
        ) from None


def _available_recipes_hint() -> str:
    recipes = bundled_recipes()
    if not recipes:
        return "; give the path of a recipe .toml file"
    return "; give a .toml file or one of benchlab's recipes: " + ", ".join(r.stem for r in recipes)
