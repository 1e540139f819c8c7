"""What a recipe's validation errors say: the key (as the TOML names it), what was expected,
what was given, and the closest allowed word."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from benchlab.core.text import did_you_mean, toml_key
from benchlab.recipe.schema import Recipe


def _key_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            part_text = part if part.replace("_", "").replace("-", "").isalnum() else toml_key(part)
            out += f".{part_text}" if out else part_text
    return out or "(top level)"


def _model_at(loc: tuple[int | str, ...], root: type[BaseModel]) -> type[BaseModel] | None:
    """The model class that holds the key at `loc` in a `root` document (to list the keys
    allowed there)."""
    model: Any = root
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


_UNION_TAG = re.compile(r"(constrained-)?(int|str|float|bool)|list\[.*", re.DOTALL)


def _union_tag(part: object) -> bool:
    return isinstance(part, str) and _UNION_TAG.fullmatch(part) is not None


def describe_validation_error(
    path: Path, exc: ValidationError, root: type[BaseModel] = Recipe
) -> str:
    """A TOML file's first problem in one line: the key (as the TOML names it), what was
    expected, what was given, the closest allowed key (`root`: the file's model, a recipe's
    by default)."""
    # A value that may be one thing or a list of them fails once per branch, with the branch
    # named in its location; the deepest location is the one that says what is wrong.
    errors: list[ErrorDetails] = [
        {**e, "loc": tuple(p for p in e["loc"] if not _union_tag(p))} for e in exc.errors()
    ]
    error = max(errors, key=lambda e: len(e["loc"]))
    loc = tuple(error["loc"])
    kind = error["type"]
    key = _key_path(loc)
    others = {e["loc"] for e in errors if loc[: len(e["loc"])] != e["loc"]}
    more = f" (and {len(others)} more problem(s))" if others else ""
    if kind == "extra_forbidden":
        parent = _model_at(loc[:-1], root)
        allowed = list(parent.model_fields) if parent else []
        name = str(loc[-1])
        hint = did_you_mean(name, allowed) if name.isprintable() else ""
        listed = f"; allowed keys here: {', '.join(allowed)}" if allowed else ""
        return f"{path}: key '{key}': unknown key{hint}{listed}{more}"
    if kind == "missing":
        return f"{path}: key '{key}': required key is missing; add it{more}"
    given = error.get("input")
    expected = what_was_expected(kind, error)
    if isinstance(given, str) and len(given) > 60:
        given = given[:57] + "..."
    return f"{path}: key '{key}': {expected}, got {given!r}{limit_reason(loc, kind)}{more}"


# Why a count has the ceiling it has: said with the refusal.
LIMIT_REASONS = {
    "connections": "each connection is a socket and a file descriptor on the load host",
    "threads": "each is a thread of its own; beyond this the machine spends its time switching",
    "workers": "each is a process with its own memory; so many would only measure the scheduler",
    "pool_size": "each is a database session, with its memory, on the database",
    "pgbouncer_pool_size": "each is a database session, with its memory, on the database",
    "weight": "a part of weight N is written N times into the load tool's list of requests",
}


def limit_reason(loc: tuple[int | str, ...], kind: str) -> str:
    if kind != "less_than_equal":
        return ""
    name = next((p for p in reversed(loc) if isinstance(p, str) and p in LIMIT_REASONS), None)
    return f" ({LIMIT_REASONS[name]})" if name else ""


def what_was_expected(kind: str, error: Any) -> str:
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
        "too_long": f"expected at most {ctx.get('max_length')} entries",
        "string_too_long": f"expected at most {ctx.get('max_length')} characters",
        "value_error": str(ctx.get("error", error.get("msg", "invalid value"))),
    }
    return messages.get(kind, error.get("msg", "invalid value"))
