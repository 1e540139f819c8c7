"""The reference pages the docs site generates from the code when it is built (the MkDocs
hook in docs/hooks.py adds them), so they cannot drift from it: every command's options,
every recipe key, every figure with its column label, every verdict, every environment
variable and every exit code. Each page is Markdown; nothing here is written by hand twice."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any

import typer
import typer.main

from benchlab.analysis.verdicts import VERDICTS, VerdictKind
from benchlab.cli import app
from benchlab.cli.contract import CONTRACTS
from benchlab.core import environment
from benchlab.core import figures as F
from benchlab.core.errors import EXIT_MEANINGS
from benchlab.recipe.schema import recipe_json_schema

DOCS_PAGE = re.compile(r"docs/([a-z-]+)\.md")
GENERATED_NOTE = "*Generated from benchlab's code when the site is built.*"


def _cell(text: str) -> str:
    """Text inside a Markdown table cell: a pipe would end the cell; a docs page named as
    the repository names it (docs/x.md) is a link."""
    text = DOCS_PAGE.sub(r"[\1](../\1.md)", " ".join(text.split()))
    return text.replace("|", "&#124;")


# typer vendors its own click (typer._click, private): its commands are read as Any, and their
# contexts are typer's Context, a subclass of that click's.
def _commands(group: Any, parent: typer.Context) -> Iterator[tuple[Any, typer.Context]]:
    for name in group.list_commands(parent):
        command = group.get_command(parent, name)
        if command is None or command.hidden:
            continue
        context = typer.Context(command, info_name=name, parent=parent)
        if hasattr(command, "list_commands"):  # a group
            yield from _commands(command, context)
        else:
            yield command, context


def _portable(text: str) -> str:
    """Help as any machine shows it: a default that is this machine's interpreter (the
    site's build machine's path, else) named for what it is."""
    return text.replace(f"[default: {sys.executable}]", "[default: the Python benchlab runs on]")


def cli_page() -> str:
    """Every command: its synopsis, what it does, and each argument and option."""
    root = typer.main.get_command(app)
    top = typer.Context(root, info_name="benchlab")
    lines = [
        "# Command-line options",
        "",
        GENERATED_NOTE + " What each command is for, with examples: [Commands](../commands.md).",
        "",
    ]
    for command, context in _commands(root, top):
        path = context.command_path
        usage = " ".join(command.collect_usage_pieces(context))
        lines += [f"## {path}", "", "```", f"{path} {usage}", "```", ""]
        lines += [" ".join((command.help or "").split()), ""]
        contract = CONTRACTS.get(path.removeprefix("benchlab "))
        if contract is not None:
            lines += ["Examples:", "", "```"]
            lines += [f"{line}    # {what}" for line, what in contract.examples]
            lines += ["```", ""]
        for param in command.params:
            record = param.get_help_record(context)
            if record is None:
                continue
            name, help_text = record
            lines.append(f"- `{name}`: {_portable(' '.join(help_text.split()))}")
        lines.append("")
    return "\n".join(lines)


def _type_text(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(_type_text(part) for part in schema["anyOf"] if part != {"type": "null"})
    if "enum" in schema:
        return " · ".join(f'"{value}"' for value in schema["enum"])
    if "const" in schema:
        return f'"{schema["const"]}"'
    if "$ref" in schema:
        return "table"
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type_text(schema.get('items', {}))}"
    if kind == "object":
        return "table"
    bounds = [
        f"{symbol} {schema[key]}"
        for key, symbol in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"))
        if key in schema
    ]
    return kind + (f" ({', '.join(bounds)})" if bounds else "")


def _recipe_keys(
    schema: dict[str, Any], definitions: dict[str, Any], prefix: str
) -> Iterator[tuple[str, dict[str, Any], bool]]:
    """(dotted key, its schema, required) for every key, depth first, tables after keys."""
    required = set(schema.get("required", ()))
    for name, field in schema.get("properties", {}).items():
        key = f"{prefix}{name}"
        yield key, field, name in required
        for nested, suffix in _nested(field, definitions):
            yield from _recipe_keys(nested, definitions, f"{key}{suffix}.")


def _nested(field: dict[str, Any], definitions: dict[str, Any]) -> Iterator[tuple[dict, str]]:
    """The tables a key holds: a table, a list of tables ([[load]]) or tables by name."""
    for part in field.get("anyOf", [field]):
        if "$ref" in part:
            yield definitions[part["$ref"].rsplit("/", 1)[1]], ""
        elif part.get("type") == "array" and "$ref" in part.get("items", {}):
            yield definitions[part["items"]["$ref"].rsplit("/", 1)[1]], "[]"
        elif part.get("type") == "object" and "$ref" in part.get("additionalProperties", {}):
            ref = part["additionalProperties"]["$ref"]
            yield definitions[ref.rsplit("/", 1)[1]], ".NAME"


def recipe_page() -> str:
    """Every recipe key, from the recipe's model: its type and limits, default, meaning."""
    schema = recipe_json_schema()
    definitions = schema.get("$defs", {})
    rows = []
    for key, field, required in _recipe_keys(schema, definitions, ""):
        default = "required" if required else _default_text(field)
        # pydantic leaves out a field's description when its table's docstring says it.
        tables = [table.get("description", "") for table, _ in _nested(field, definitions)]
        description = field.get("description") or next(iter(tables), "")
        rows.append([f"`{key}`", _cell(_type_text(field)), _cell(default), _cell(description)])
    return _table_page(
        "Recipe keys",
        "A recipe with every key, and what they combine into: [Recipes](../recipes.md). "
        '`load[]` is a `[[load]]` table, `stack.NAME` a `[stack."NAME"]` table.',
        ["key", "type", "default", "what it is"],
        rows,
    )


def _default_text(field: dict[str, Any]) -> str:
    if "default" not in field:
        return "–"
    value = field["default"]
    if value is None or value == [] or value == {}:
        return "–"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f'`"{value}"`' if isinstance(value, str) else f"`{value}`"


def _table_page(title: str, intro: str, headers: list[str], rows: list[list[str]]) -> str:
    """A generated page: its title, what it is, and one table (cells given as Markdown)."""
    lines = [f"# {title}", "", f"{GENERATED_NOTE} {intro}", ""]
    lines += ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def figures_page() -> str:
    """Every figure: its column label in tables, JSON key, unit, direction and source."""
    rows = []
    for figure in F.FIGURES.values():
        key = f"{figure.group}.{figure.key}" if figure.group else figure.key
        source = figure.source.combine.value if figure.source else "a ratio to another cell"
        rows.append(
            [_cell(figure.label), f"`{key}`", _cell(figure.unit), figure.better.value,
             _cell(figure.description), _cell(source)]
        )  # fmt: skip
    return _table_page(
        "Figures and columns",
        "Each figure's column label in the tables, its key in the JSON and CSV (under its "
        "group), and how a cell's trials make it. How to read them: [Results](../results.md).",
        ["column", "key", "unit", "better", "what it is", "from the trials"],
        rows,
    )


def _doubted(verdict: VerdictKind) -> str:
    if verdict.robustness:
        return "none: robustness, beside the figures"
    return verdict.weakens.label if verdict.weakens else "the ranking figure"


def verdicts_page() -> str:
    rows = [
        [f"`{verdict.name}`", _cell(verdict.about),
         _cell(_doubted(verdict)),
         "yes" if verdict.caution else "no"]
        for verdict in VERDICTS.values()
    ]  # fmt: skip
    return _table_page(
        "Verdicts",
        "When each applies and what it means for a ranking: [Verdicts](../verdicts.md).",
        ["verdict", "flags", "casts doubt on", "a caution beside comparisons"],
        rows,
    )


def environment_page() -> str:
    rows = [[f"`{v.name}`", _cell(v.meaning)] for v in environment.VARIABLES.values()]
    return _table_page(
        "Environment variables",
        "benchlab reads these and no others. The reference apps it starts get their own (the "
        "services' addresses and passwords: [Services](../services.md)).",
        ["variable", "what it changes"],
        rows,
    )


def exit_codes_page() -> str:
    rows = [
        [str(int(code)), f"`{code.name.lower()}`", _cell(meaning)]
        for code, meaning in EXIT_MEANINGS.items()
    ]
    return _table_page(
        "Exit codes",
        "One meaning each, so CI can tell a slower branch from a broken runner "
        "([Commands](../commands.md#exit-codes) says how to use them).",
        ["exit code", "name", "meaning"],
        rows,
    )


def exit_code_table() -> list[str]:
    """docs/commands.md's table of exit codes (the reference page's, without the names)."""
    return ["| exit code | meaning |", "| --- | --- |"] + [
        f"| {int(code)} | {_cell(meaning)} |" for code, meaning in EXIT_MEANINGS.items()
    ]


def environment_table() -> list[str]:
    """docs/commands.md's table of the environment variables benchlab reads."""
    return ["| variable | what it changes |", "| --- | --- |"] + [
        f"| `{v.name}` | {_cell(v.meaning)} |" for v in environment.VARIABLES.values()
    ]


# The tables hand-written pages hold between `<!-- NAME:begin ... -->` and `<!-- NAME:end -->`,
# made from the code: `python -c "from benchlab.reference_docs import refresh_docs;
# refresh_docs('docs')"` writes them again; a test fails when a page is not in step.
MARKED_TABLES = {"exit-codes": exit_code_table, "environment": environment_table}


def refreshed(text: str) -> str:
    """`text` with each marked table made again from the code."""
    for name, make in MARKED_TABLES.items():
        begin = re.search(rf"<!-- {name}:begin[^>]*-->\n", text)
        end = text.find(f"<!-- {name}:end -->")
        if begin is None or end < 0:
            continue
        text = text[: begin.end()] + "\n".join(make()) + "\n" + text[end:]
    return text


def refresh_docs(directory: str) -> None:
    from pathlib import Path

    for page in Path(directory).glob("*.md"):
        text = page.read_text(encoding="utf-8")
        if (made := refreshed(text)) != text:
            page.write_text(made, encoding="utf-8")


# The site's path of each page, and how it is made.
PAGES = {
    "reference/cli.md": cli_page,
    "reference/recipe-keys.md": recipe_page,
    "reference/figures.md": figures_page,
    "reference/verdicts.md": verdicts_page,
    "reference/environment.md": environment_page,
    "reference/exit-codes.md": exit_codes_page,
}
