"""Recipe parsing, matrix expansion and every kind of recipe error."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.core.errors import UserError
from benchlab.recipe import (
    BUNDLED_RECIPES,
    apply_overrides,
    build_plan,
    load_recipe,
    resolve_recipe,
)
from benchlab.stacks import CATALOGUE
from tests.conftest import REPO, benchlab, write_recipe

GOOD = """
name = "t"
stacks = ["gin", "nginx-static"]
scenarios = ["plaintext", "json"]
trials = 2

[cores]
server = [0]
load = [1]

[[load]]
connections = 16
duration = 1

[[load]]
connections = 64
threads = 2
duration = 1

[[exclude]]
stack = "nginx-static"
connections = 64

[stack.gin]
workers = 1
"""
RATE = (
    GOOD
    + """
[[load]]
tool = "vegeta"
rate = 500
connections = 16
duration = 1
"""
)


def test_good_recipe_expands_to_the_product_minus_exclusions(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, GOOD)
    recipe, text = load_recipe(path, CATALOGUE)
    plan = build_plan(path, recipe, text, CATALOGUE, cpu_count=2)
    keys = {(c.stack, c.scenario, c.connections) for c in plan.cells}
    assert keys == {
        ("gin", "plaintext", 16),
        ("gin", "json", 16),
        ("gin", "plaintext", 64),
        ("gin", "json", 64),
        ("nginx-static", "plaintext", 16),
        ("nginx-static", "json", 16),
    }
    assert plan.cores.server == (0,) and plan.cores.load == (1,)
    gin64 = next(c for c in plan.cells if c.stack == "gin" and c.connections == 64)
    assert gin64.threads == 2 and gin64.workers == 1 and gin64.duration == 1


def test_overrides_replace_every_profile(tmp_path: Path) -> None:
    recipe, _ = load_recipe(write_recipe(tmp_path, GOOD), CATALOGUE)
    changed = apply_overrides(recipe, duration=7, trials=5, connections=3, warmup=0)
    assert changed.trials == 5 and changed.warmup == 0 and recipe.warmup == 1
    assert {(p.duration, p.connections) for p in changed.load} == {(7, 3)}
    with pytest.raises(UserError, match=r"--warmup 601: expected a value <= 600"):
        apply_overrides(recipe, warmup=601)


def test_default_cores_split_the_machine(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, GOOD.replace("[cores]\nserver = [0]\nload = [1]\n", ""))
    recipe, text = load_recipe(path, CATALOGUE)
    assert build_plan(path, recipe, text, CATALOGUE, cpu_count=2).cores.server == (0,)
    assert build_plan(path, recipe, text, CATALOGUE, cpu_count=8).cores.load == (4, 5, 6, 7)


def test_threads_never_exceed_connections(tmp_path: Path) -> None:
    path = write_recipe(
        tmp_path, GOOD.replace("connections = 64\nthreads = 2", "connections = 1\nthreads = 4")
    )
    recipe, text = load_recipe(path, CATALOGUE)
    plan = build_plan(path, recipe, text, CATALOGUE, cpu_count=2)
    assert all(c.threads <= c.connections for c in plan.cells)


def test_every_shipped_recipe_loads() -> None:
    for path in sorted((REPO / "recipes").glob("*.toml")):
        recipe, text = load_recipe(path, CATALOGUE)
        assert build_plan(path, recipe, text, CATALOGUE, cpu_count=2).cells, path


BAD_RECIPES = [
    # (what to change, the key the message must name, a phrase of the fix)
    (GOOD.replace("trials = 2", "trails = 2"), "'trails'", "did you mean 'trials'"),
    (
        GOOD.replace('"gin", "nginx-static"', '"gni", "nginx-static"'),
        "stacks[0]",
        "did you mean 'gin'",
    ),
    (
        GOOD.replace('"plaintext", "json"', '"plaintext", "jsn"'),
        "scenarios[1]",
        "did you mean 'json'",
    ),
    (
        GOOD.replace("connections = 16", 'connections = "many"'),
        "load[0].connections",
        "whole number",
    ),
    (GOOD.replace("connections = 16", "connections = 0"), "load[0].connections", ">= 1"),
    (
        GOOD.replace("connections = 16\n", "connections = 16\nconections = 3\n"),
        "load[0].conections",
        "did you mean 'connections'",
    ),
    (GOOD.replace('name = "t"\n', ""), "'name'", "required key is missing"),
    (
        GOOD.replace("[[load]]\nconnections = 16", '[[load]]\ntool = "curl"\nconnections = 16'),
        "load[0].tool",
        "'wrk'",
    ),
    (GOOD.replace("load = [1]", "load = [0]"), "'cores'", "must not share a core"),
    (GOOD.replace("load = [1]", "load = [9]"), "cores.load[0]", "it may use 0, 1"),
    (GOOD.replace("[stack.gin]", "[stack.sanic]"), 'stack."sanic"', "not in 'stacks'"),
    (
        GOOD.replace("workers = 1", "workers = 1\nthreds = 2"),
        "stack.gin.threds",
        "did you mean 'threads'",
    ),
    (
        GOOD.replace("workers = 1", "workers = 1\nthreads = 2"),
        'stack."gin".threads',
        "no threads or greenlets",
    ),
    (
        GOOD.replace('stack = "nginx-static"', 'stack = "nginx"'),
        "exclude[0].stack",
        "did you mean 'nginx-static'",
    ),
    (GOOD.replace("trials = 2", "trials = 2.5"), "'trials'", "whole number"),
    (
        GOOD.replace('scenarios = ["plaintext", "json"]', "scenarios = []"),
        "'scenarios'",
        "no scenario to measure",
    ),
    (
        GOOD.replace("trials = 2", "trials = [2"),
        ":7:1: not valid TOML: Unclosed array at line 7 ('",
        "fix the syntax there, or just above it",
    ),
    # Strict types: a value of the wrong type is named, never coerced.
    (GOOD.replace("connections = 16", "connections = true"), "load[0].connections", "got True"),
    (GOOD + '[services]\npgbouncer = "yes"\n', "services.pgbouncer", "expected true or false"),
    (
        GOOD.replace("load = [1]", "load = [1]\nservices = [1]"),
        "'cores'",
        "the services and the load tool must not share a core",
    ),
    (GOOD + '[services]\ndatabase = "mysql"\n', "services.database", "'postgres' or 'mariadb'"),
    (
        GOOD + '[services]\ndatabase = "mariadb"\npgbouncer = true\n',
        "services.pgbouncer",
        "fronts PostgreSQL only",
    ),
    (GOOD + "[params]\npool_size = [4, 0]\n", "params.pool_size", ">= 1"),
    (
        GOOD.replace("workers = 1", "workers = 1\npool_size = 2")
        + "[params]\npool_size = [4, 8]\n",
        'stack."gin".pool_size',
        "give [[points]] each a pool_size",
    ),
    (GOOD + "[params]\nsleep_ms = -5\n", "params.sleep_ms", ">= 0"),
    (GOOD + "[params]\ndelay = 5\n", "params.delay", "did you mean 'db_delay_ms'"),
    (
        GOOD.replace("workers = 1", 'workers = 1\nflavour = "async"'),
        'stack."gin".flavour',
        "no driver flavours",
    ),
    # Fixed rates and the SLO.
    (RATE.replace("rate = 500", "rate = 0"), "load[2].rate", "> 0"),
    (RATE.replace("rate = 500", "rate = -3"), "load[2].rate", "> 0"),
    (RATE.replace("rate = 500", 'rate = "150%"'), "load[2].rate", "(0, 100]"),
    (RATE.replace("rate = 500", 'rate = [100, "0%"]'), "load[2].rate[1]", "(0, 100]"),
    (RATE.replace("rate = 500", 'rate = "fast"'), "load[2].rate", 'a share like "60%"'),
    (
        RATE.replace('tool = "vegeta"', 'tool = "wrk"'),
        "load[2].rate",
        "cannot send at a fixed rate",
    ),
    (RATE.replace("rate = 500", "rate = 500\nthreads = 2"), "load[2].threads", "no threads"),
    (GOOD + "[slo]\nmax_error_pct = 1\n", "'slo'", "no latency target"),
    (GOOD + "[slo]\np99_ms = 100\n", "'slo'", 'tool = "vegeta" and no rate'),
    (GOOD + "[slo]\np99_ms = 0\n", "slo.p99_ms", "> 0"),
    (
        GOOD.replace(
            "connections = 16\nduration = 1", "connections = 16\nduration = 1\ntimeout = 9"
        )
        + "[[load]]\nconnections = 16\nduration = 1\n",
        "'load'",
        "differ only in 'timeout'",
    ),
    ('rank_by = "speed"\n' + GOOD, "'rank_by'", "'throughput_rps'"),
    (
        GOOD.replace('"plaintext", "json"', '"db"')
        .replace(', "nginx-static"]', "]")
        .replace('stack = "nginx-static"', 'stack = "gin"')
        + "[services]\nmax_connections = 20\n[params]\npool_size = 30\n",
        "params.pool_size",
        "raise services.max_connections",
    ),
    (
        GOOD.replace('"plaintext", "json"', '"db"')
        .replace(', "nginx-static"]', "]")
        .replace('stack = "nginx-static"', 'stack = "gin"')
        .replace("workers = 1", "workers = 3")
        + "[services]\nmax_connections = 20\n[params]\npool_size = 6\n",
        "params.pool_size",
        "3 worker(s) × a pool of 6 may open 18",
    ),
    # Limits on every count, each with its reason (issue 36).
    (
        GOOD.replace("connections = 16", "connections = 99999999999999999999999"),
        "load[0].connections",
        "<= 1000000, got 99999999999999999999999 (each connection is a socket",
    ),
    (GOOD.replace("connections = 16", "connections = 1e23"), "load[0].connections", "whole"),
    (GOOD.replace("workers = 1", "workers = 1000000"), "stack.gin.workers", "<= 1024"),
    (
        GOOD.replace("workers = 1", "workers = 500"),
        'stack."gin".workers',
        "at most 64 (max(64, 4 × cores))",
    ),
    (
        RATE.replace("rate = 500", "rate = 100000").replace("duration = 1\n", "duration = 3600\n"),
        "'load'",
        "360,000,000 requests in one trial; at most 18,000,000",
    ),
    (
        GOOD.replace("connections = 16", f"connections = {list(range(1, 2000))}"),
        "'stacks'",
        "more than 5,000 cells",
    ),
    (
        GOOD.replace("[[exclude]]", '[[load.mix]]\nscenario = "json"\nweight = 1000\n[[exclude]]'),
        "mix[0].weight",
        "<= 100",
    ),
    # Names and text that reach a terminal, a file name or a report.
    (GOOD.replace('name = "t"', 'name = ""'), "'name'", "at least one visible character"),
    (GOOD.replace('name = "t"', 'name = "x\\u001b[31mred"'), "'name'", "control character (\\x1b)"),
    (
        'question = "why\\u001b]52;c;aGk=\\u0007"\n' + GOOD,
        "'question'",
        "control character (\\x1b)",
    ),
]


@pytest.mark.parametrize(("text", "key", "fix"), BAD_RECIPES)
def test_bad_recipe_message_names_file_key_and_fix(
    tmp_path: Path, text: str, key: str, fix: str
) -> None:
    path = write_recipe(tmp_path, text)
    with pytest.raises(UserError) as caught:
        recipe, text_ = load_recipe(path, CATALOGUE)
        build_plan(path, recipe, text_, CATALOGUE, cpu_count=2)
    message = str(caught.value)
    assert str(path) in message
    assert key in message
    assert fix in message
    assert "\n" not in message


def test_missing_recipe_file_lists_the_available_ones(tmp_path: Path) -> None:
    with pytest.raises(
        UserError, match=r"recipe file 'nope.toml' not found; give a .toml file or one of .*quick"
    ):
        load_recipe(Path("nope.toml"), CATALOGUE)


def test_recipes_are_found_by_name_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_recipe("quick") == BUNDLED_RECIPES / "quick.toml"
    assert resolve_recipe("seed-000") == BUNDLED_RECIPES / "seed-000-gin-vs-python.toml"
    assert resolve_recipe("mine.toml") == Path("mine.toml")  # a path stays a path
    (tmp_path / "quick").write_text("")  # a file of that name here wins over the bundled one
    assert resolve_recipe("quick") == Path("quick")


@pytest.mark.slow
def test_cli_exits_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, GOOD.replace("trials = 2", "trials = -1"))
    result = benchlab("run", str(path), "--results", str(tmp_path / "r.db"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "'trials'" in lines[0] and str(path) in lines[0], result.stderr
    missing = benchlab("run", str(tmp_path / "absent.toml"), "--results", str(tmp_path / "r.db"))
    assert missing.returncode == 2 and "not found" in missing.stderr
    assert "Traceback" not in missing.stderr


DB_RECIPE = """
name = "db"
stacks = ["fastapi+uvicorn", "flask+gunicorn", "nginx-static"]
scenarios = ["plaintext", "db", "db-delay", "sleep"]

[params]
flavour = ["sync", "async"]
pool_size = [2, 8]
db_delay_ms = [10, 40]
sleep_ms = 100

[[load]]
connections = 16
duration = 1
"""


def test_parameters_multiply_only_the_cells_they_apply_to(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, DB_RECIPE)
    recipe, text = load_recipe(path, CATALOGUE)
    cells = build_plan(path, recipe, text, CATALOGUE, cpu_count=2).cells
    fastapi = [c for c in cells if c.stack == "fastapi+uvicorn"]
    # per flavour: plaintext 1 + db 2 pools + db-delay 2 pools x 2 delays + sleep 1 = 8
    assert len(fastapi) == 16
    assert {c.flavour for c in fastapi} == {"sync", "async"}
    flask = [c for c in cells if c.stack == "flask+gunicorn"]
    assert {c.flavour for c in flask} == {"sync"} and len(flask) == 8
    nginx = [c for c in cells if c.stack == "nginx-static"]
    assert [(c.scenario, c.flavour, c.pool_size, c.ms) for c in nginx] == [
        ("plaintext", None, None, None)
    ]
    plaintext = next(c for c in fastapi if c.scenario == "plaintext")
    assert plaintext.pool_size is None and plaintext.ms is None
    delays = {(c.pool_size, c.ms) for c in fastapi if c.scenario == "db-delay"}
    assert delays == {(2, 10), (2, 40), (8, 10), (8, 40)}
    assert {c.ms for c in fastapi if c.scenario == "sleep"} == {100}
    # One launch per stack x flavour x workers x pool; plaintext rides with the first pool.
    assert len({c.launch_key for c in fastapi}) == 4
    assert plaintext.launch_pool == 2


def test_a_misspelt_flavour_in_a_list_is_an_error_not_dropped(tmp_path: Path) -> None:
    path = write_recipe(
        tmp_path, DB_RECIPE.replace('flavour = ["sync", "async"]', 'flavour = ["sync", "asnyc"]')
    )
    with pytest.raises(
        UserError, match=r"key 'params.flavour\[1\]': no stack .* 'asnyc' \(did you mean 'async'"
    ):
        load_recipe(path, CATALOGUE)


def test_a_flavour_no_stack_offers_is_an_error(tmp_path: Path) -> None:
    path = write_recipe(
        tmp_path, DB_RECIPE.replace('flavour = ["sync", "async"]', 'flavour = "async"')
    )
    with pytest.raises(
        UserError, match=r"key 'params.flavour': stack 'flask\+gunicorn' offers none of async"
    ):
        load_recipe(path, CATALOGUE)
