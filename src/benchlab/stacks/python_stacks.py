"""Python stacks: each runs the reference app of its framework from this package's apps/."""

from __future__ import annotations

import sys

from benchlab.stacks.base import (
    ALL_SCENARIOS,
    APPS_DIR,
    LISTEN_BACKLOG,
    Launch,
    LaunchContext,
    Stack,
)

PYTHON_APPS = APPS_DIR / "python"
DRIVERS_SYNC = ("psycopg", "psycopg_pool", "pymysql", "redis")
DRIVERS_ASYNC = ("asyncpg", "aiomysql", "redis")


def _uvicorn(ctx: LaunchContext) -> Launch:
    return Launch(
        argv=[
            sys.executable, "-m", "uvicorn", "fastapi_app:app",
            "--host", ctx.host, "--port", str(ctx.port),
            "--workers", str(ctx.workers),
            "--loop", "uvloop", "--http", "httptools",
            "--no-access-log", "--log-level", "warning",
            "--backlog", str(LISTEN_BACKLOG),
        ],
        cwd=PYTHON_APPS,
    )  # fmt: skip


def _gunicorn_sync(ctx: LaunchContext) -> Launch:
    return Launch(
        argv=[
            sys.executable, "-m", "gunicorn", "flask_app:app",
            "--bind", f"{ctx.host}:{ctx.port}",
            "--workers", str(ctx.workers),
            "--worker-class", "sync",
            "--backlog", str(LISTEN_BACKLOG),
            "--log-level", "warning",
            "--worker-tmp-dir", str(ctx.workdir),
        ],
        cwd=PYTHON_APPS,
    )  # fmt: skip


def _sanic(ctx: LaunchContext) -> Launch:
    return Launch(
        argv=[sys.executable, "sanic_app.py", ctx.host, str(ctx.port), str(ctx.workers)],
        env={"BENCHLAB_BACKLOG": str(LISTEN_BACKLOG)},
        cwd=PYTHON_APPS,
    )


def _tornado(ctx: LaunchContext) -> Launch:
    return Launch(
        argv=[sys.executable, "tornado_app.py", ctx.host, str(ctx.port), str(ctx.workers)],
        env={"BENCHLAB_BACKLOG": str(LISTEN_BACKLOG)},
        cwd=PYTHON_APPS,
    )


PYTHON_STACKS = (
    Stack(
        name="fastapi+uvicorn",
        framework="FastAPI",
        server="uvicorn (uvloop, httptools)",
        worker_model="asyncio event loop per process",
        scenarios=ALL_SCENARIOS,
        launch=_uvicorn,
        flavours=("async", "sync"),
        needs_modules=("fastapi", "uvicorn", "uvloop", "httptools", *DRIVERS_ASYNC, *DRIVERS_SYNC),
    ),
    Stack(
        name="flask+gunicorn",
        framework="Flask",
        server="gunicorn (sync workers)",
        worker_model="one request at a time per process",
        scenarios=ALL_SCENARIOS,
        launch=_gunicorn_sync,
        flavours=("sync",),
        needs_modules=("flask", "gunicorn", *DRIVERS_SYNC),
        note="sync: no keep-alive",
    ),
    Stack(
        name="sanic",
        framework="Sanic",
        server="Sanic's own server",
        worker_model="asyncio event loop per process",
        scenarios=ALL_SCENARIOS,
        launch=_sanic,
        flavours=("async",),
        needs_modules=("sanic", *DRIVERS_ASYNC),
        start_timeout=60.0,
    ),
    Stack(
        name="tornado",
        framework="Tornado",
        server="Tornado's own HTTPServer (fork_processes)",
        worker_model="asyncio event loop per process",
        scenarios=ALL_SCENARIOS,
        launch=_tornado,
        flavours=("async",),
        needs_modules=("tornado", *DRIVERS_ASYNC),
    ),
)
