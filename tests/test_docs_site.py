"""The docs as a site: its home is the guide, its reference pages come from the code, and a
broken link fails the build; the hand-written pages stay in step with the declarations."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from benchlab.analysis.verdicts import VERDICTS
from benchlab.core import environment
from benchlab.recipe.schema import Recipe, recipe_json_schema
from benchlab.reference_docs import PAGES, _recipe_keys
from benchlab.system import build_cache
from tests.conftest import REPO


def _build(config_dir: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=config_dir, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip


@pytest.mark.slow
def test_the_site_builds_with_the_guide_as_home_and_the_generated_reference(
    tmp_path: Path,
) -> None:
    built = _build(REPO, tmp_path / "site")
    assert built.returncode == 0, built.stderr
    site = tmp_path / "site"
    pages = {p.stem for p in (REPO / "docs").glob("*.md")}
    assert {p.parent.name for p in site.glob("*/index.html")} - {"reference"} == pages
    generated = {p.parent.name for p in site.glob("reference/*/index.html")}
    assert generated == {Path(path).stem for path in PAGES}
    home = (site / "index.html").read_text()
    assert "What you get" in home and 'href="recipes/"' in home  # the README, links made the site's
    commands = (site / "commands" / "index.html").read_text()
    assert "\\|" not in commands  # an escaped pipe shown as it is written


@pytest.mark.slow
def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "docs", copy / "docs", ignore=shutil.ignore_patterns("research"))
    for name in ("mkdocs.yml", "README.md"):
        shutil.copy(REPO / name, copy / name)
    page = copy / "docs" / "history.md"
    page.write_text(page.read_text() + "\n[gone](commands.md#no-such-section)\n")
    built = _build(copy, tmp_path / "site")
    assert built.returncode != 0
    assert "no-such-section" in built.stderr


def test_the_recipe_example_shows_every_key_and_is_a_valid_recipe() -> None:
    text = (REPO / "docs" / "recipes.md").read_text()
    example = tomllib.loads(text.split("```toml\n", 1)[1].split("```", 1)[0])
    Recipe.model_validate(example)
    schema = recipe_json_schema()
    every = {key for key, _, _ in _recipe_keys(schema, schema["$defs"], "")}

    def shown(value: object, prefix: str) -> set[str]:
        keys = set()
        items = value if isinstance(value, list) else [value]
        for item in items:
            if not isinstance(item, dict):
                continue
            for key, inner in item.items():
                name = f"{prefix}{key}"
                # [stack."x"] and [hosts.x] are tables by name: the reference says NAME.
                if prefix.rstrip(".") in ("stack", "hosts"):
                    name = f"{prefix}NAME"
                keys.add(name)
                suffix = (
                    "[]" if isinstance(inner, list) and inner and isinstance(inner[0], dict) else ""
                )
                keys |= shown(inner, f"{name}{suffix}.")
        return keys

    assert every - shown(example, "") == set(), "docs/recipes.md's example lacks these keys"


def test_the_verdicts_page_explains_every_verdict_and_no_other() -> None:
    text = (REPO / "docs" / "verdicts.md").read_text()
    explained = set(re.findall(r"^\| `([a-z-]+)` \|", text, re.MULTILINE))
    assert explained == set(VERDICTS)


def test_every_environment_variable_benchlab_reads_is_declared() -> None:
    """A variable is read through its declaration (environment.py), never by a literal name:
    then the reference page lists every one. The reference apps read what benchlab sets."""
    literal = re.compile(
        r"""(?:environ(?:\.get)?|getenv)\(?\[?\s*["']([A-Z_]+)["']"""
        r"""|["']([A-Z_]+)["'] in os\.environ"""
    )
    system = {"PATH"}  # the user's own, passed through to what benchlab starts
    found = {}
    for path in (REPO / "src" / "benchlab").rglob("*.py"):
        if "apps" in path.parts:
            continue
        names = {a or b for a, b in literal.findall(path.read_text())}
        for name in names - system:
            found.setdefault(name, path.name)
    assert found == {}
    page = PAGES["reference/environment.md"]()
    assert all(f"`{name}`" in page for name in environment.VARIABLES)


def test_the_cli_reference_lists_every_option_of_every_command() -> None:
    page = PAGES["reference/cli.md"]()
    for needle in ("## benchlab run", "## benchlab services up", "`--fail-above PCT`",
                   "`-q, --quiet`", "`--resume`", "`-f, --format table|md|json`"):  # fmt: skip
        assert needle in page, needle


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"XDG_CACHE_HOME": "/srv/cache"}, "/srv/cache/benchlab"),
        ({"XDG_CACHE_HOME": "relative/cache"}, "HOME/.cache/benchlab"),  # invalid: ignored
        ({"XDG_CACHE_HOME": "/srv/cache", "BENCHLAB_CACHE": "/srv/mine"}, "/srv/mine"),
        ({}, "HOME/.cache/benchlab"),
    ],
)
def test_the_cache_follows_xdg_cache_home_unless_benchlab_cache_says(
    variables: dict[str, str], expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("XDG_CACHE_HOME", "BENCHLAB_CACHE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert str(build_cache.state_dir()) == expected.replace("HOME", str(Path.home()))
