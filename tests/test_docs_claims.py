"""What README and docs say, held to the code and to real outputs:

- every benchlab (and ./lab) command line they quote parses: each command exists and each
  flag is an option of that command; the flags README and commands.md quote on their own are
  options of benchlab's;
- every figure in README's prose is one of the claims below, each checked against the code
  or a stored run (its example block is rendered again by test_reading from
  tests/data/readme-quick.db); a figure added without a claim fails;
- every exit code they quote is one, and README lists them all;
- no internal issue number and no path of the machine that built the docs reaches a user.
"""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import typer.main

from benchlab import cli
from benchlab.cli.contract import CONTRACTS
from benchlab.core.errors import ExitCode
from tests.conftest import REPO

README = REPO / "README.md"
USER_DOCS = [README, REPO / "examples" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
README_RUN = REPO / "tests" / "data" / "readme-quick.db"


def _commands() -> dict[str, Any]:
    root = typer.main.get_command(cli.app)
    found: dict[str, Any] = {"": root}

    def walk(group: Any, prefix: str) -> None:
        for name, command in group.commands.items():
            found[f"{prefix}{name}"] = command
            if hasattr(command, "commands"):
                walk(command, f"{prefix}{name} ")

    walk(root, "")
    return found


COMMANDS = _commands()


def _options(command: Any) -> set[str]:
    names = {"-h", "--help"}
    for param in command.params:
        names |= set(getattr(param, "opts", ())) | set(getattr(param, "secondary_opts", ()))
    return names


EVERY_OPTION = set().union(*(_options(c) for c in COMMANDS.values()))


def _quoted(text: str) -> list[str]:
    """The code spans and code-block lines of a Markdown text (a line ending in \\ joined
    with the next, as a shell reads it)."""
    spans = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        spans += [line.strip() for line in block.replace("\\\n", " ").splitlines()]
    prose = re.sub(r"```[a-z]*\n.*?```", "", text, flags=re.S)
    return spans + re.findall(r"`([^`\n]+)`", prose)


def _invocations(text: str) -> list[list[str]]:
    """Each quoted command line that runs benchlab, as words after `benchlab`/`./lab`."""
    found = []
    for span in _quoted(text):
        span = span.removeprefix("$ ").split(" #", 1)[0]
        first = re.match(r"(benchlab|\./lab|\.venv/bin/benchlab)(\s|$)", span)
        if not first:
            continue
        try:
            words = shlex.split(span)
        except ValueError:  # an ellipsis or a quote left open in prose
            words = span.split()
        cut = next((i for i, w in enumerate(words) if w in ("|", ">", ">>", "&&", ";")), None)
        found.append(words[1:cut])
    return found


def _command_of(words: list[str]) -> tuple[str, list[str]]:
    """The command a line names (`services up` is two words) and the words after it."""
    name, rest = "", words
    while rest and (candidate := f"{name} {rest[0]}".strip()) in COMMANDS:
        name, rest = candidate, rest[1:]
    return name, rest


LAB_ONLY = {"run", "test", "setup"}  # ./lab's own (run: benchlab's run after its set-up)


@pytest.mark.parametrize("document", USER_DOCS, ids=lambda p: p.name)
def test_every_command_line_quoted_names_a_command_and_its_options(document: Path) -> None:
    lab = document.read_text()
    for words in _invocations(lab):
        if not words or words[0].isupper() or words[0].startswith("-"):
            options = EVERY_OPTION if not words else _options(COMMANDS[""])
            assert all(w in options for w in words if w.startswith("-")), words
            continue
        if words[0] in ("test", "setup"):
            continue  # ./lab's: pytest's arguments, or none
        name, rest = _command_of(words)
        assert name, f"{document.name}: no command {words[0]!r} ({' '.join(words)})"
        options = _options(COMMANDS[name])
        for at, word in enumerate(rest):
            following = rest[at + 1] if at + 1 < len(rest) else ""
            flag = word.strip("[]").split("=", 1)[0]
            if flag.startswith("-") and len(flag) > 1 and not flag[1:].isdigit():
                assert flag in options, f"{document.name}: benchlab {name} has no {flag}"
            if flag in ("-f", "--format") and following.islower():
                writes = CONTRACTS[name].formats
                assert following in writes, f"{document.name}: {name} writes no {following}"


@pytest.mark.parametrize("document", [README, REPO / "docs" / "commands.md"], ids=lambda p: p.name)
def test_every_flag_quoted_on_its_own_is_benchlabs(document: Path) -> None:
    prose = re.sub(r"```[a-z]*\n.*?```", "", document.read_text(), flags=re.S)
    for span in re.findall(r"`([^`\n]+)`", prose):
        if not span.startswith("-") or span.startswith("--with postgres"):
            continue
        for flag in shlex.split(span)[0].split("=", 1)[0].split("/"):
            assert flag in EVERY_OPTION, f"{document.name}: no command takes {flag} ({span})"


# --- README's figures --------------------------------------------------------------------


def _readme_run() -> tuple[dict[str, Any], float]:
    db = sqlite3.connect(f"file:{README_RUN}?mode=ro&immutable=1", uri=True)  # no -shm beside it
    row = db.execute("SELECT started_at, ended_at, machine FROM runs").fetchone()
    took = datetime.fromisoformat(row[1]) - datetime.fromisoformat(row[0])
    return {"started": row[0], **json.loads(row[2])}, took.total_seconds()


def _example_block() -> str:
    return README.read_text().split("## What you get", 1)[1].split("```\n", 2)[1]


def _recipe(name: str) -> Any:
    from benchlab.recipe import load_recipe, resolve_recipe
    from benchlab.stacks import CATALOGUE

    return load_recipe(resolve_recipe(name), CATALOGUE)[0]


def _valid_recipe(extra: str) -> bool:
    from benchlab.recipe.schema import Recipe

    base = 'name = "x"\nstacks = ["gin"]\nscenarios = ["json"]\n'
    import tomllib

    Recipe.model_validate(tomllib.loads(base + extra))
    return True


def _coverage(n: int) -> float:
    from benchlab.analysis.stats import median_interval

    return median_interval([float(i) for i in range(n)]).confidence


def _cells(name: str) -> int:
    from benchlab.recipe import build_plan, load_recipe, resolve_recipe
    from benchlab.stacks import CATALOGUE

    path = resolve_recipe(name)
    recipe, text = load_recipe(path, CATALOGUE)
    return len(build_plan(path, recipe, text, CATALOGUE).cells)


def _about_two_minutes() -> bool:
    return 90 <= _readme_run()[1] <= 150


def _flask_wide_but_valid() -> bool:
    from benchlab.analysis.summary import summarise
    from benchlab.store import Store

    summary = summarise(Store(README_RUN, create=False), None)
    flask = [
        c for c in summary.cells
        if c.record.stack == "flask+gunicorn" and c.record.scenario == "json"
    ]  # fmt: skip
    (cell,) = flask
    wide = cell.estimate(cell.result.figure).half_width_pct > summary.options.target_half_width_pct
    return wide and [v.name for v in cell.verdicts] == []


def _loads(recipe: Any, tool: str, connections: int) -> bool:
    return any(p.tool == tool and connections in _listed(p.connections) for p in recipe.load)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _defaults() -> Any:
    from benchlab.recipe.schema import LoadProfile, Recipe

    return Recipe.model_fields, LoadProfile.model_fields


MIX = '[[load]]\nmix = [{scenario = "json", weight = 6}, {scenario = "plaintext", weight = 1}]'
EVIDENCE = "3+ trials a side, an interval that\n  excludes 1 and an effect over 5 %"
PROOF = "replayed for 60 s, p99 under the target in every ~2-s window, 1.6× under in 29 of 30"


def _thresholds_read() -> bool:
    """The README's thresholds are read as it says: figure, comparison, bound in its unit."""
    from benchlab.core import figures as F
    from benchlab.core.thresholds import parse_thresholds

    read = [(t.figure, t.comparison.value, t.bound, t.unit) for t in parse_thresholds(
        ["p99<200ms", "errors<0.1%", "rps>=500"]
    )]  # fmt: skip
    return read == [
        (F.P99, "<", 200.0, "ms"),
        (F.ERROR_RATE, "<", 0.1, "%"),
        (F.THROUGHPUT, ">=", 500, F.REQ_S),
    ]


def _claims() -> dict[str, Callable[[], bool]]:
    from benchlab.analysis import capacity
    from benchlab.analysis.evidence import MIN_TRIALS
    from benchlab.analysis.sequential import FIRST_DECISIVE_ROUND
    from benchlab.http.dataset import USER_COUNT
    from benchlab.http.scenarios import SCENARIOS
    from benchlab.load import DEFAULT_TOOL
    from benchlab.load.request_records import WINDOW_S
    from benchlab.recipe.cores import default_cores
    from benchlab.stacks import CATALOGUE

    recipe_fields, load_fields = _defaults()
    machine, _ = _readme_run()
    seed_001 = _recipe("seed-001")
    quick = _recipe("quick")
    return {
        "about 40 framework × server pairs": lambda: 35 <= len(CATALOGUE) <= 45,
        "Linux (Debian 12 is what": lambda: Path("/etc/debian_version").read_text()[:3] == "12.",
        "both tried on Debian 12": lambda: Path("/etc/debian_version").read_text()[:3] == "12.",
        "(about 2 minutes once": _about_two_minutes,
        "on a fresh clone, 2026-11-26, on this project's\n2-core AMD EPYC VM": lambda: (
            machine["started"].startswith("2026-11-26")
            and machine["cpu"] == "AMD EPYC"
            and machine["cores"] == 2
        ),
        "at 100 columns": lambda: (
            92 < max(len(line) for line in _example_block().splitlines()) <= 100
        ),
        "wrk, 3 rounds of 5 s": lambda: (
            DEFAULT_TOOL == "wrk"
            and recipe_fields["trials"].default == 3
            and load_fields["duration"].default == 5
        ),
        "10 000-row table": lambda: USER_COUNT == 10_000,
        "`connections = [16, 128]`": lambda: _valid_recipe("[[load]]\nconnections = [16, 128]"),
        "2–5 s is enough": lambda: 2 <= load_fields["duration"].default <= 5,
        "3 rounds are the fewest": lambda: MIN_TRIALS == 3,
        "6 are the fewest whose\n  interval of the median covers 95 %": lambda: (
            _coverage(6) >= 0.95 > _coverage(5)
        ),
        "(`w=1`); on 2 cores every stack runs one": lambda: len(default_cores((0, 1)).server) == 1,
        '`rate = [500, 1000]` or `"60%"`': lambda: (
            _valid_recipe('[[load]]\ntool = "vegeta"\nrate = [500, 1000]')
            and _valid_recipe('[[load]]\ntool = "vegeta"\nrate = "60%"')
        ),
        "(TLS 1.3 with": lambda: (
            "TLSv1.3" in (REPO / "src/benchlab/services/nginx_proxy.py").read_text()
        ),
        "weight = 6}": lambda: _valid_recipe(MIX),
        "HTTP/2, 65 cells": lambda: _cells("api-realistic") == 65,
        "`28.2k ±10%` is the median": lambda: "28.2k ±10%" in _example_block(),
        "With 6 or more trials the interval covers the true median with 95 % or more": lambda: (
            _coverage(6) >= 0.95
        ),
        "(75 % for 3 trials)": lambda: _coverage(3) == 0.75,
        EVIDENCE: lambda: MIN_TRIALS == 3 and recipe_fields["target_half_width_pct"].default == 5.0,
        "flask's `1,460 ±44%` above is decided": lambda: (
            "1,460 ±44%" in _example_block() and _flask_wide_but_valid()
        ),
        "`latest~1` the one before": lambda: True,  # a name's syntax (store.run reads it)
        "a ±5 % interval on every cell": lambda: (
            recipe_fields["target_half_width_pct"].default == 5
        ),
        "`benchlab run RECIPE --budget 5` measures 3\nrounds": lambda: FIRST_DECISIVE_ROUND == 3,
        "`--fail-above PCT` exits 1": lambda: ExitCode.REGRESSION == 1,
        "`--threshold 'p99<200ms'` (repeatable; `'errors<0.1%'`, `'rps>=500'`": _thresholds_read,
        "exit 7 names the cells": lambda: ExitCode.THRESHOLD == 7,
        "(exit 5, whatever": lambda: ExitCode.NOT_COMPARABLE == 5,
        "slower` exits 1 on": lambda: ExitCode.REGRESSION == 1,
        "Exit codes: 0 success, 1 a regression, 2 bad input, 3 a harness failure, 4 a partial run,"
        "\n5 not comparable (`--strict`), 6 a stack failed a check (`conform`, `drain`,\n"
        "`slow-clients`), 7 a failed `--threshold`, 130 interrupted": lambda: (
            [int(c) for c in ExitCode] == [0, 1, 2, 3, 4, 5, 6, 7, 130]
        ),
        "(≤ 85 % of it)": lambda: capacity.RUN_AT_MEDIAN_SHARE == 0.85,
        PROOF: lambda: (
            capacity.PROOF_S == 60
            and WINDOW_S == 2.0
            and capacity.PROOF_HEADROOM == 1.6
            and capacity.PROOF_SPIKE_WINDOWS == 30
            and capacity.PROOF_WINDOWS_MISSED == 0
        ),
        "`--rate 400`: the cheapest candidate that holds 400 req/s, proved at 400": lambda: True,
        "| 000 | FastAPI, Sanic, Tornado (gunicorn worker) and Gin": lambda: True,  # names
        "wrk with 500 connections": lambda: _loads(_recipe("seed-000"), "wrk", 500),
        "| 001 | Flask's dev server, waitress (1 and 4 threads), uvicorn (1 and 4 "
        "workers": lambda: (
            seed_001.stack["flask+waitress"].threads == [1, 4]
            and seed_001.stack["fastapi+uvicorn"].workers == [1, 4]
        ),
        "| 002 | 21 framework × server pairs on a 20 ms query": lambda: (
            len(_recipe("seed-002").stacks) == 21 and _recipe("seed-002").params.db_delay_ms == 20
        ),
        "ab with 100 clients": lambda: _loads(_recipe("seed-002"), "ab", 100),
        "| 003 | every way of serving Flask": lambda: True,  # the article's number
        "on a 100 ms sleep at 2000 connections": lambda: (
            _recipe("seed-003").params.sleep_ms == 100 and _loads(_recipe("seed-003"), "wrk", 2000)
        ),
        "| 004 | FastAPI": lambda: True,  # the article's number
        "| 002 | async vs sync on a 20 ms query at 16 and 128 connections": lambda: (
            _recipe("db-delay-sessions").params.db_delay_ms == 20
            and {c for p in _recipe("db-delay-sessions").load for c in _listed(p.connections)}
            == {16, 128}
        ),
        "scaled to a 2-core machine (one core serves, one\nloads)": lambda: (
            len(default_cores((0, 1)).server) == len(default_cores((0, 1)).load) == 1
        ),
        "six stacks, plaintext and JSON, about two minutes": lambda: (
            len(quick.stacks) == 6
            and quick.scenarios == ["plaintext", "json"]
            and _about_two_minutes()
        ),
        "Six scenarios ask what an API really does": lambda: all(
            name in SCENARIOS
            for name in ("fortunes", "queries", "updates", "static", "upload", "json-gzip")
        ),
    }


# Numbers that are names, not figures: recipe and article numbers, protocol and label
# syntax, example values of an option.
NAMES = re.compile(
    r"HTTP/\d(\.\d)?|seed-\d{3}|w=\d|latest~\d|\bh[12]c?\b|\bp\d\d(?![\d.])|(?<=\| )0\d\d(?= \|)"
)


def test_every_figure_in_the_readmes_prose_is_a_checked_claim() -> None:
    text = README.read_text()
    prose = re.sub(r"```.*?```", lambda m: " " * len(m.group()), text, flags=re.S)
    covered = [False] * len(prose)
    failed = []
    for phrase, holds in _claims().items():
        at = text.find(phrase)
        assert at >= 0, f"README no longer says: {phrase!r}"
        if not holds():
            failed.append(phrase)
        for i in range(at, at + len(phrase)):
            covered[i] = True
    for match in NAMES.finditer(prose):
        for i in range(match.start(), match.end()):
            covered[i] = True
    unchecked = [
        (m.group(), text[max(0, m.start() - 40) : m.end() + 20].replace("\n", " "))
        for m in re.finditer(r"\d+", prose)
        if not covered[m.start()]
    ]
    assert failed == [], f"README says what the code or its run does not: {failed}"
    assert unchecked == [], f"figures in README that no claim checks: {unchecked}"


def test_the_first_screen_says_where_it_runs_and_what_needs_root() -> None:
    first = README.read_text()[: README.read_text().index("## What you get")]
    for words in (
        "Linux",
        "as root",
        "a normal user",
        "./lab run",
        "once\n               # set up",
    ):
        assert words in first, words


# --- exit codes, issue numbers, machine paths ----------------------------------------------


@pytest.mark.parametrize("document", USER_DOCS, ids=lambda p: p.name)
def test_every_exit_code_quoted_is_one(document: Path) -> None:
    codes = {int(c) for c in ExitCode}
    for number in re.findall(r"\bexits? (?:code )?(\d+)\b", document.read_text()):
        assert int(number) in codes, (document.name, number)


def test_no_user_doc_or_help_cites_an_internal_issue_or_this_machines_paths() -> None:
    from benchlab.reference_docs import PAGES

    pages = {path: make() for path, make in PAGES.items()}
    texts = {p.name: p.read_text() for p in USER_DOCS} | pages
    here = [sys.executable, sys.prefix, str(REPO), str(Path.home()) + "/"]
    for name, text in texts.items():
        assert not re.search(r"\bissues? \d+", text, re.IGNORECASE), name
        for path in here:
            assert path not in text, (name, path)


def test_labs_help_names_every_command() -> None:
    """`./lab` alone: every benchlab command it passes on is named (five were missing)."""
    usage = (REPO / "lab").read_text().split("<<'USAGE'", 1)[1].split("\nUSAGE", 1)[0]
    named = set(re.findall(r"[a-z][a-z-]+", usage.split("any benchlab command:", 1)[1]))
    top = {name for name in COMMANDS if name and " " not in name}
    assert top - {"run"} <= named, top - named
