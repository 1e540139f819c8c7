"""Runs against real databases: delays are real, sessions are bounded by the pool, and a
database that dies mid-trial fails its cells without taking the run down."""

from __future__ import annotations

import http.client
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from benchlab.core.errors import ExitCode
from tests.conftest import benchlab, benchlab_process, living, write_recipe
from tests.test_failures import _children, _named, _processes_under, _wait_for


def _cells(results: Path) -> list[sqlite3.Row]:
    db = sqlite3.connect(results)
    db.row_factory = sqlite3.Row
    return db.execute(
        "SELECT c.*, MAX(t.db_sessions_peak) AS peak, MAX(t.pool_active_peak) AS pool_peak,"
        " MIN(t.latency_min_ms) AS lat_min, MAX(t.latency_p50_ms) AS p50, COUNT(t.id) AS trials"
        " FROM cells c LEFT JOIN trials t ON t.cell_id = c.id GROUP BY c.id ORDER BY c.position"
    ).fetchall()


SWEEP = """
name = "sessions"
stacks = ["fastapi+uvicorn"]
scenarios = ["db-delay"]
trials = 1
warmup = 0
[services]
{services}
[params]
db_delay_ms = 50
pool_size = {pool}
[[load]]
connections = 1
duration = 2
[[load]]
connections = 2
duration = 2
[[load]]
connections = 8
duration = 2
[[load]]
connections = 32
duration = 2
"""


@pytest.mark.alone
@pytest.mark.slow
def test_sessions_rise_with_connections_up_to_the_pool_limit_and_delay_is_real(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    recipe = write_recipe(tmp_path, SWEEP.format(services="", pool=4))
    results = tmp_path / "r.db"
    run = benchlab("run", str(recipe), "--results", str(results), env={"TMPDIR": str(isolated_tmp)})
    assert run.returncode == 0, run.stdout + run.stderr
    cells = {c["connections"]: c for c in _cells(results)}
    assert all(c["status"] == "ok" for c in cells.values()), [c["reason"] for c in cells.values()]
    peaks = {conns: cell["peak"] for conns, cell in cells.items()}
    assert peaks[1] == 1 and peaks[2] == 2, peaks
    assert peaks[8] == 4 and peaks[32] == 4, peaks  # the pool of 4, never beyond
    # The query holds its session 50 ms: no response can come back sooner.
    assert all(cell["lat_min"] >= 50 for cell in cells.values())
    assert cells[32]["p50"] >= 50 * 32 / 4 * 0.9  # 32 requests queue for 4 sessions


@pytest.mark.alone
@pytest.mark.slow
def test_pgbouncer_caps_the_sessions_the_database_sees(tmp_path: Path, isolated_tmp: Path) -> None:
    services = 'pgbouncer = true\npool_mode = "transaction"\npgbouncer_pool_size = 3'
    recipe = write_recipe(tmp_path, SWEEP.format(services=services, pool=8))
    results = tmp_path / "r.db"
    run = benchlab("run", str(recipe), "--results", str(results), env={"TMPDIR": str(isolated_tmp)})
    assert run.returncode == 0, run.stdout + run.stderr
    cells = {c["connections"]: c for c in _cells(results)}
    assert cells[32]["peak"] == 3 and cells[32]["pool_peak"] == 3
    assert all(c["peak"] <= 3 for c in cells.values())
    assert "starting pgbouncer" in run.stderr  # progress: stderr


@pytest.mark.slow
def test_a_single_delayed_request_takes_the_delay(tmp_path: Path) -> None:
    from benchlab.services.postgres import start_postgres
    from benchlab.system.process import ProcessRegistry
    from tests.conftest import short_tmp
    from tests.servers import running_stack

    workroot = short_tmp()
    workroot.chmod(0o711)
    registry = ProcessRegistry()
    try:
        postgres = start_postgres(registry, workroot, (0,), max_connections=20)
        env = {**postgres.env, "BENCHLAB_DB": "postgres", "BENCHLAB_POOL_SIZE": "2"}
        (workroot / "stack").mkdir()
        with running_stack("gin", workroot / "stack", env=env) as (_, port):
            for ms in (50, 120):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                started = time.perf_counter()
                conn.request("GET", f"/db-delay?username=hui&ms={ms}")
                assert conn.getresponse().status == 200
                elapsed_ms = 1000 * (time.perf_counter() - started)
                conn.close()
                # The delay is a floor; above it a single request adds a connect, a parse
                # and one query (a few ms), and 200 ms is room for a VM's stall that still
                # tells the 50 ms delay from the 120 ms one.
                assert ms <= elapsed_ms < ms + 200, elapsed_ms
    finally:
        registry.stop_all()
        shutil.rmtree(workroot, ignore_errors=True)


@pytest.mark.alone
@pytest.mark.slow
def test_a_database_killed_mid_trial_fails_its_cells_and_leaves_nothing(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    recipe = write_recipe(
        tmp_path,
        """
        name = "kill-db"
        stacks = ["fastapi+uvicorn", "nginx-static"]
        scenarios = ["db", "plaintext"]
        trials = 2
        warmup = 0
        [[load]]
        connections = 8
        duration = 3
        """,
    )
    results = tmp_path / "r.db"
    with benchlab_process(
        "run", str(recipe), "--results", str(results), env={"TMPDIR": str(isolated_tmp)}
    ) as run:
        _wait_for(lambda: _named(_children(run.pid), "/db?username=hui"), 90, "a db trial")
        postmaster = [p for p in _named(_children(run.pid), "postgres -D") if p.ppid() == run.pid]
        assert postmaster, "PostgreSQL should be a child of benchlab"
        backends = postmaster[0].children(recursive=True)
        cmdline = postmaster[0].cmdline()
        data_dir = Path(cmdline[cmdline.index("-D") + 1])
        assert data_dir.is_dir()
        postmaster[0].kill()
        output, _ = run.communicate(timeout=120)
    assert run.returncode == ExitCode.PARTIAL, output  # its db cells failed, the rest ran
    cells = {(c["stack"], c["scenario"]): c for c in _cells(results)}
    db_cell = cells[("fastapi+uvicorn", "db")]
    assert db_cell["status"] == "failed"
    assert "postgresql exited with code -9 during a trial" in db_cell["reason"]
    assert cells[("nginx-static", "plaintext")]["status"] == "ok"
    assert cells[("nginx-static", "plaintext")]["trials"] == 2
    assert cells[("fastapi+uvicorn", "plaintext")]["status"] == "ok"
    status = sqlite3.connect(results).execute("SELECT status FROM runs").fetchone()[0]
    assert status == "partial"
    assert living([postmaster[0], *backends]) == []
    assert _processes_under(isolated_tmp) == []
    assert list(isolated_tmp.iterdir()) == []
    assert not data_dir.exists() and not data_dir.parent.parent.exists()


@pytest.mark.alone
@pytest.mark.slow
def test_redis_killed_mid_trial_fails_the_cache_cells_and_the_others_go_on(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    # cache comes first in the launch: plaintext, after it on the same server, must still run.
    recipe = write_recipe(
        tmp_path,
        """
        name = "kill-redis"
        stacks = ["fastapi+uvicorn"]
        scenarios = ["cache", "plaintext"]
        trials = 2
        warmup = 0
        [[load]]
        connections = 8
        duration = 3
        """,
    )
    results = tmp_path / "r.db"
    with benchlab_process(
        "run", str(recipe), "--results", str(results), env={"TMPDIR": str(isolated_tmp)}
    ) as run:
        _wait_for(lambda: _named(_children(run.pid), "/cache/hui"), 90, "a cache trial")
        redis = [p for p in _named(_children(run.pid), "redis-server") if p.ppid() == run.pid]
        assert redis, "Redis should be a child of benchlab"
        redis[0].kill()
        output, _ = run.communicate(timeout=120)
    assert run.returncode == ExitCode.PARTIAL and "Traceback" not in output, output
    cells = {c["scenario"]: c for c in _cells(results)}
    assert cells["cache"]["status"] == "failed"
    assert "redis exited with code -9 during a trial" in cells["cache"]["reason"]
    assert cells["plaintext"]["status"] == "ok" and cells["plaintext"]["trials"] == 2
    assert living(redis) == []
    assert _processes_under(isolated_tmp) == []
    assert list(isolated_tmp.iterdir()) == []


@pytest.mark.alone
@pytest.mark.slow
def test_mariadb_sessions_are_counted_for_prepared_statements_too(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    # go-sql-driver prepares its statements: MariaDB lists them as 'Execute', not 'Query'.
    recipe = write_recipe(
        tmp_path,
        """
        name = "mariadb-sessions"
        stacks = ["gin", "fastapi+uvicorn"]
        scenarios = ["db-delay"]
        trials = 1
        warmup = 0
        [services]
        database = "mariadb"
        [params]
        db_delay_ms = 50
        pool_size = 4
        [[load]]
        connections = 16
        duration = 2
        """,
    )
    results = tmp_path / "r.db"
    run = benchlab("run", str(recipe), "--results", str(results), env={"TMPDIR": str(isolated_tmp)})
    assert run.returncode == 0, run.stdout + run.stderr
    assert {c["stack"]: c["peak"] for c in _cells(results)} == {"gin": 4, "fastapi+uvicorn": 4}


FAST_QUERIES = """
name = "fast-queries"
stacks = ["fastapi+uvicorn", "gin"]
scenarios = ["db"]
trials = 1
warmup = 1
[services]
database = "{database}"
[params]
pool_size = 10
[cores]
server = [0]
load = [1]
[[load]]
connections = 64
duration = 2
"""


@pytest.mark.alone
@pytest.mark.slow
def test_sessions_are_counted_on_fast_queries_at_thousands_of_requests(tmp_path: Path) -> None:
    """Queries of a fraction of a millisecond: sampling the ones running read 0 or 1 here;
    the sessions the pools held are counted whatever the queries' length."""
    for database in ("mariadb", "postgres"):
        directory = tmp_path / database
        directory.mkdir()
        results = directory / "r.db"
        recipe = write_recipe(directory, FAST_QUERIES.format(database=database))
        run = benchlab("run", str(recipe), "--results", str(results))
        assert run.returncode == 0, run.stdout + run.stderr
        for cell in _cells(results):
            assert cell["status"] == "ok", (database, cell["stack"], cell["reason"])
            rps = (
                sqlite3.connect(results)
                .execute("SELECT throughput_rps FROM trials WHERE cell_id = ?", (cell["id"],))
                .fetchone()[0]
            )
            # The premise: queries far shorter than the 50 ms between samples. At over 200
            # req/s on a pool of 10, each holds its session under 10 / 200 s = 50 ms (at
            # 2,700-8,600 req/s here, well under 4 ms), so a sampler that counted running
            # queries would miss them; the open sessions are what is counted.
            assert rps > 200, (database, cell["stack"], rps)
            assert 1 <= cell["peak"] <= cell["db_pool_limit"] == 10, (database, cell["stack"])
