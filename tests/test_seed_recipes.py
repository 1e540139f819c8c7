"""Each seed recipe parses and expands to the matrix its article describes."""

from __future__ import annotations

from pathlib import Path

from benchlab.recipe import Cell, build_plan, load_recipe
from benchlab.stacks import CATALOGUE
from tests.conftest import REPO


def _cells(name: str) -> list[Cell]:
    path = REPO / "recipes" / f"{name}.toml"
    recipe, text = load_recipe(path, CATALOGUE)
    return list(build_plan(path, recipe, text, CATALOGUE, cpu_count=2).cells)


def _pairs(cells: list[Cell]) -> set[tuple[str, str]]:
    return {(c.stack, c.scenario) for c in cells}


def test_seed_000_gin_vs_python() -> None:
    cells = _cells("seed-000-gin-vs-python")
    stacks = {"fastapi+uvicorn", "sanic", "tornado+gunicorn", "gin"}
    assert _pairs(cells) == {(s, sc) for s in stacks for sc in ("json", "db", "cache")}
    assert {(c.tool, c.connections) for c in cells} == {("wrk", 500)}
    assert {c.flavour for c in cells if c.stack != "gin"} == {"async"}
    assert all(c.pool_size == 10 for c in cells if c.scenario != "json")


def test_seed_001_flask_vs_fastapi() -> None:
    cells = _cells("seed-001-flask-vs-fastapi")
    launches = {(c.stack, c.flavour, c.workers, c.server_threads) for c in cells}
    assert launches == {
        ("flask+dev-server", "sync", 1, None),
        ("flask+waitress", "sync", 1, 1),
        ("flask+waitress", "sync", 1, 4),
        ("fastapi+uvicorn", "sync", 1, None),
        ("fastapi+uvicorn", "async", 1, None),
        ("fastapi+uvicorn", "sync", 4, None),
        ("fastapi+uvicorn", "async", 4, None),
    }
    assert {c.scenario for c in cells} == {"json"}
    # every cell under each tool of the article (hey -c 20, siege ~15 users), and wrk
    assert {(c.tool, c.connections) for c in cells} == {("hey", 20), ("siege", 15), ("wrk", 20)}
    assert len(cells) == 7 * 3


def test_seed_002_ignore_benchmarks() -> None:
    path = REPO / "recipes" / "seed-002-ignore-benchmarks.toml"
    recipe, _ = load_recipe(path, CATALOGUE)
    cells = _cells("seed-002-ignore-benchmarks")
    assert len(recipe.stacks) == 21 and len(cells) == 21 * 3
    frameworks = {CATALOGUE[s].framework.split()[0] for s in recipe.stacks}
    assert frameworks == {"Bottle", "Falcon", "Sanic", "Flask", "Starlette", "aiohttp", "Tornado",
                          "FastAPI", "Aioflask", "Quart"}  # fmt: skip
    assert "flask+gunicorn" in recipe.stacks  # the article's baseline
    assert {c.scenario for c in cells} == {"db-delay"}
    points = {(c.point, c.ms, c.connections) for c in cells}
    assert points == {("my-benchmark", 20, 100), ("better-async", 40, 400), ("better-sync", 1, 3)}
    assert {c.tool for c in cells} == {"ab"} and recipe.baseline == "flask+gunicorn"
    async_pools = {(c.point, c.pool_size) for c in cells if c.stack == "fastapi+uvicorn"}
    assert async_pools == {("my-benchmark", 17), ("better-async", 17), ("better-sync", 3)}
    assert recipe.services.pgbouncer and recipe.services.proxy == "nginx"
    sync = [c for c in cells if c.stack.endswith(("+gunicorn", "+uwsgi"))]
    assert sync and all(c.workers == 3 and c.pool_size == 1 for c in sync)
    unavailable = [s for s in recipe.stacks if CATALOGUE[s].unavailable]
    assert sorted(unavailable) == ["aioflask+uvicorn", "bottle+meinheld", "falcon+meinheld",
                                   "flask+meinheld"]  # fmt: skip


def test_seed_003_flask_deployments() -> None:
    cells = _cells("seed-003-flask-deployments")
    sleep = {(c.stack, c.flavour) for c in cells if c.scenario == "sleep"}
    assert sleep == {
        ("flask+dev-server", "sync"),
        ("flask-async-views+dev-server", None),
        ("flask+gevent-late-patch", "sync"),
        ("flask+gevent", "sync"),
        ("flask+gunicorn-gevent", "sync"),
        ("go-nethttp", None),
        ("fastapi+uvicorn", "sync"),
        ("fastapi+uvicorn", "async"),
        ("fastapi+gunicorn-uvicorn", "async"),
        ("sanic", "async"),
        ("nginx-lua", None),
    }
    assert {c.ms for c in cells if c.scenario == "sleep"} == {100}
    assert {(c.tool, c.connections, c.timeout) for c in cells} == {("wrk", 2000, 2)}
    gevent = next(c for c in cells if c.stack == "flask+gunicorn-gevent")
    assert gevent.server_threads == 2000


def test_seed_004_fastapi_sync_vs_async() -> None:
    cells = _cells("seed-004-fastapi-sync-vs-async")
    assert {(c.stack, c.flavour, c.scenario, c.tool) for c in cells} == {
        (s, f, "db", t)
        for s in ("fastapi+uvicorn",)
        for f in ("sync", "async")
        for t in ("ab", "wrk")
    }
    assert {c.connections for c in cells} == {100} and {c.pool_size for c in cells} == {10}


def test_every_recipe_names_its_scaling_at_the_top() -> None:
    for path in sorted((REPO / "recipes").glob("seed-*.toml")):
        head = Path(path).read_text().splitlines()[:12]
        assert any("Scaled to a 2-core machine" in line for line in head), path
