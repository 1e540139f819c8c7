"""What shell completion offers (`benchlab --install-completion`) beyond each command's
formats (cli/formats.py): benchlab's recipes by name and the TOML files here for a RECIPE,
and tune's servers for --servers."""

from __future__ import annotations

from pathlib import Path


def recipes(incomplete: str) -> list[str]:
    from benchlab.recipe.files import bundled_recipes

    names = [p.stem for p in bundled_recipes()]
    directory = incomplete.rpartition("/")[0]  # "recipes/se": the files of recipes/
    files = [
        f"{directory}/{p.name}" if directory else p.name
        for p in Path(directory or ".").glob("*.toml")
    ]
    return [name for name in (*names, *files) if name.startswith(incomplete)]


def tune_servers(incomplete: str) -> list[str]:
    from benchlab.stacks.servers import TUNE_KINDS

    names = dict.fromkeys([k.server.name for k in TUNE_KINDS] + [k.name for k in TUNE_KINDS])
    done, _, last = incomplete.rpartition(",")  # a comma-separated list: complete its last
    prefix = f"{done}," if done else ""
    return [f"{prefix}{name}" for name in names if name.startswith(last)]


def stacks(incomplete: str) -> list[str]:
    from benchlab.stacks import CATALOGUE

    return [name for name in CATALOGUE if name.startswith(incomplete)]
