"""The API scenarios (fortunes, queries, updates, static, upload, json-gzip): each passes
verification on FastAPI (both flavours), Flask, Django (WSGI and ASGI) and Gin against a
real PostgreSQL, and a server that gets each one wrong fails it with the reason."""

from __future__ import annotations

import functools
import gzip
import http.client
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from benchlab.http.dataset import file_bytes, gzip_document, world_number
from benchlab.http.scenarios import API_SCENARIOS, SCENARIOS
from benchlab.http.verify import verify
from benchlab.services.postgres import read_worlds, start_postgres
from benchlab.stacks import CATALOGUE, Launch, LaunchContext, Stack
from benchlab.system.process import ProcessRegistry
from tests.conftest import run_and_report, short_tmp, write_recipe
from tests.servers import running_stack

VARIANTS = [
    ("fastapi+uvicorn", "async"),
    ("fastapi+uvicorn", "sync"),
    ("flask+gunicorn-gthread", "sync"),
    ("django+gunicorn", "sync"),
    ("django+uvicorn", "async"),
    ("gin", None),
]
# Each scenario's parameter, as a recipe's [params] would give it.
PARAMS = {"queries": 20, "updates": 5, "static": 16, "upload": 64}
WRONG_API = Path(__file__).with_name("apps") / "wrong_api.py"


@pytest.fixture(scope="module")
def database() -> Iterator[dict[str, object]]:
    """A seeded PostgreSQL, the static files, and a reader of the world table."""
    workroot = short_tmp()
    workroot.chmod(0o711)
    static = workroot / "static"
    static.mkdir()
    (static / "16k.bin").write_bytes(file_bytes(16))
    registry = ProcessRegistry()
    try:
        postgres = start_postgres(registry, workroot, (0,), max_connections=100)
        with psycopg.connect(postgres.dsn, autocommit=True) as conn:
            yield {
                "env": {
                    **postgres.env,
                    "BENCHLAB_DB": "postgres",
                    "BENCHLAB_POOL_SIZE": "4",
                    "BENCHLAB_STATIC_DIR": str(static),
                },
                "read": functools.partial(read_worlds, conn),
            }
    finally:
        registry.stop_all()
        shutil.rmtree(workroot, ignore_errors=True)


@pytest.fixture
def workdir() -> Iterator[Path]:
    directory = short_tmp()
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.slow
def test_the_world_table_is_seeded_with_the_numbers_answers_are_checked_against(
    database,
) -> None:
    held = database["read"]([1, 4321, 10_000])
    assert held == {i: world_number(i) for i in (1, 4321, 10_000)}
    assert len(database["read"](None)) == 10_000


@pytest.mark.parametrize(("stack", "flavour"), VARIANTS)
@pytest.mark.slow
def test_every_api_scenario_passes_verification(
    database, workdir: Path, stack: str, flavour: str | None
) -> None:
    env = dict(database["env"])
    if flavour:
        env["BENCHLAB_FLAVOUR"] = flavour
    served = [s for s in API_SCENARIOS if s in CATALOGUE[stack].scenarios]
    assert len(served) >= 5, served
    read = database["read"]
    threads = CATALOGUE[stack].default_concurrency if CATALOGUE[stack].concurrency else None
    with running_stack(stack, workdir, env=env, threads=threads) as (_, port):
        for name in served:
            expectations = SCENARIOS[name].expectations(PARAMS.get(name))
            problem = verify("127.0.0.1", port, expectations, read_worlds=read)
            assert problem is None, f"{stack}[{flavour}] {name}: {problem}"
        # The rows an update answered are the rows the table now holds, changed.
        before = read(None)
        status, body, _ = _get(port, "/updates?n=20")
        assert status == 200
        rows = {row["id"]: row["randomNumber"] for row in _json(body)}
        assert read(sorted(rows)) == rows
        assert sum(before[i] != n for i, n in rows.items()) >= 19
        # Compressed only when asked, and then much smaller.
        _, plain, headers = _get(port, "/gzip/json")
        assert "content-encoding" not in headers
        _, packed, headers = _get(port, "/gzip/json", {"Accept-Encoding": "gzip"})
        assert headers["content-encoding"] == "gzip"
        assert gzip.decompress(packed) == plain and len(packed) < len(plain) / 3


def test_a_stack_that_does_not_serve_a_scenario_says_why() -> None:
    assert CATALOGUE["django+uvicorn"].why_not("static") is not None
    assert "WSGI" in (CATALOGUE["django+uvicorn"].why_not("static") or "")
    assert "FastAPI, Flask, Django and Gin" in (CATALOGUE["sanic"].why_not("fortunes") or "")
    assert CATALOGUE["gin"].why_not("fortunes") is None


def _wrong_api() -> Stack:
    def launch(ctx: LaunchContext) -> Launch:
        return Launch(argv=[sys.executable, str(WRONG_API), ctx.host, str(ctx.port)])

    return Stack(
        name="wrong-api", framework="test", server="http.server", worker_model="threads",
        scenarios=("json", *API_SCENARIOS), launch=launch, start_timeout=10,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("scenario", "reason"),
    [
        ("fortunes", "not escaped"),
        ("updates", "no row it answered was written"),
        ("upload", 'body b\'{"bytes":65536'),
        ("json-gzip", "Content-Encoding 'none' when gzip was asked for"),
        ("static", "body"),
    ],
)
def test_a_wrong_answer_fails_verification_with_its_reason(
    database, workdir: Path, scenario: str, reason: str
) -> None:
    with running_stack(_wrong_api(), workdir, env=dict(database["env"])) as (_, port):
        # An honest read (queries) passes on the same server: the read-back is not what fails.
        honest = SCENARIOS["queries"].expectations(5)
        assert verify("127.0.0.1", port, honest, read_worlds=database["read"]) is None
        expectations = SCENARIOS[scenario].expectations(PARAMS.get(scenario))
        problem = verify("127.0.0.1", port, expectations, read_worlds=database["read"])
    assert problem is not None and reason in problem, problem


def _get(
    port: int, path: str, headers: dict[str, str] | None = None
) -> tuple[int, bytes, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read(), {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


def _json(body: bytes) -> list[dict[str, int]]:
    return json.loads(body)


@pytest.mark.alone
@pytest.mark.slow
def test_a_run_sends_each_scenarios_own_request_and_reports_what_it_weighs(
    tmp_path: Path, isolated_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """wrk sends the upload's body and the gzip header (its Lua); the report gives bytes per
    response and the compression verification saw."""
    monkeypatch.setenv("TMPDIR", str(isolated_tmp))
    path = write_recipe(
        tmp_path,
        """
        name = "weights"
        stacks = ["gin", "flask+gunicorn-gthread"]
        scenarios = ["upload", "json-gzip", "static"]
        trials = 1
        warmup = 0
        [params]
        body_kb = 8
        file_kb = 32
        [[load]]
        connections = 8
        duration = 1
        """,
    )
    report = run_and_report(path, tmp_path / "r.db")
    cells = {(c["stack"], c["scenario"]): c for c in report["cells"]}
    document = len(gzip_document())
    for stack in ("gin", "flask+gunicorn-gthread"):
        for scenario in ("upload", "json-gzip", "static"):
            cell = cells[(stack, scenario)]
            assert cell["status"] == "ok", cell["reason"]
            # a GET /upload would be a 405: every request went out as the POST it is
            assert cell["errors"]["total"] == 0 and cell["requests"] > 50, cell["errors"]
        packed = cells[(stack, "json-gzip")]
        assert packed["compression_ratio"] > 3, packed["compression_ratio"]
        assert packed["bytes_per_response"] < document / 3
        assert cells[(stack, "static")]["bytes_per_response"] > 32 * 1024
        assert packed["negotiated"] == "HTTP/1.1" and packed["protocol"] == "h1"
