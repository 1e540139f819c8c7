"""Python stacks: each runs the reference app of its framework from this package's apps/,
under one server with the settings its documentation recommends, counts always explicit."""

from __future__ import annotations

from collections.abc import Callable

from benchlab.http.scenarios import API_SCENARIOS, WEBSOCKET_SCENARIOS
from benchlab.stacks.base import ALL_SCENARIOS, WITH_API, Launch, LaunchContext, Stack
from benchlab.stacks.servers import (
    ASYNC_LOOP,
    BACKLOG,
    GREENLET_PER_REQUEST,
    KIND_BY_NAME,
    AppRef,
    PerWorker,
    ServerKind,
    Settings,
)

NO_DB = ("plaintext", "json", "sleep")
DRIVERS_SYNC = ("psycopg", "psycopg_pool", "pymysql", "redis")
DRIVERS_ASYNC = ("asyncpg", "aiomysql", "redis")
Launcher = Callable[[LaunchContext], Launch]


def _launch(argv: Callable[[LaunchContext], list[str]], **env: str) -> Launcher:
    def launch(ctx: LaunchContext) -> Launch:
        env_ = {"BENCHLAB_BACKLOG": BACKLOG, **env}
        return Launch(argv=argv(ctx), env=env_, cwd=ctx.python_apps)

    return launch


def _app(text: str) -> AppRef:
    module, _, attr = text.partition(":")
    return AppRef(module, attr)


def _served_argv(kind: ServerKind, app: str, ctx: LaunchContext) -> list[str]:
    settings = Settings(
        _app(app), ctx.host, ctx.port, ctx.workers, ctx.threads, ctx.python, ctx.workdir,
        ctx.tls, ctx.protocol, pinned=True,
    )  # fmt: skip
    return kind.argv(settings)


def served(kind: ServerKind, app: str, **env: str) -> Launcher:
    """`app` under a server of servers.py, with the catalogue's pinned settings."""
    return _launch(lambda ctx: _served_argv(kind, app, ctx), **env)


def uwsgi(module: str) -> Launcher:
    """uWSGI serving `module`.app, behind a wrapper that adds the Date header uWSGI omits."""
    kind = KIND_BY_NAME["uwsgi"]
    return _launch(
        lambda ctx: [
            *_served_argv(kind, "uwsgi_apps:application", ctx),
            "--chdir",
            str(ctx.python_apps),
        ],
        BENCHLAB_WSGI_MODULE=module,
    )


def script(name: str, *args: str) -> Launcher:
    """Apps that start their own server: python NAME HOST PORT WORKERS|THREADS [ARGS]."""

    def argv(ctx: LaunchContext) -> list[str]:
        count = ctx.threads if ctx.threads is not None else ctx.workers
        return [ctx.python, name, ctx.host, str(ctx.port), str(count), *args]

    return _launch(argv)


def dev_server(*args: str) -> Launcher:
    return _launch(lambda ctx: [ctx.python, "flask_dev_server.py", ctx.host, str(ctx.port), *args])


def _stack(name: str, framework: str, server: str, model: str, launch: Launcher, **kw) -> Stack:
    """A stack whose app starts its own server."""
    return Stack(
        name=name, framework=framework, server=server, worker_model=model, launch=launch,
        scenarios=kw.pop("scenarios", ALL_SCENARIOS), **kw,
    )  # fmt: skip


def _on(name: str, framework: str, kind_name: str, app: str | Launcher, **kw) -> Stack:
    """A stack under a server kind of servers.py: its server, worker model, protocols and
    packages are the kind's. `app` is module:attr, or a launcher of its own."""
    kind = KIND_BY_NAME[kind_name]
    launch = served(kind, app, **kw.pop("env", {})) if isinstance(app, str) else app
    needs = (*kw.pop("needs_modules", ()), *(package.module for package in kind.packages))
    if kind.ws == "off":
        kw["unserved"] = (*kw.get("unserved", ()), *NO_WS)
    return Stack(
        name=name, framework=framework, server=kw.pop("server", kind.shown),
        worker_model=kw.pop("worker_model", kind.worker_model), launch=launch,
        scenarios=kw.pop("scenarios", ALL_SCENARIOS), protocols=kind.protocols,
        concurrency=kind.concurrency, default_concurrency=kind.default_concurrency,
        fixed_workers=kind.fixed_workers, one_at_a_time=kind.one_at_a_time,
        needs_modules=tuple(dict.fromkeys(needs)), served_by=kind, **kw,
    )  # fmt: skip


ASYNC = {"flavours": ("async",), "needs_modules": DRIVERS_ASYNC}
SYNC = {"flavours": ("sync",), "needs_modules": DRIVERS_SYNC}
# FastAPI runs `def` endpoints in anyio's thread pool: its default of 40, set explicitly.
ANYIO_THREADS = 40
FASTAPI = {"flavours": ("async", "sync"), "threadpool": ANYIO_THREADS, "scenarios": WITH_API}
# The apps with the WebSocket contract (starlette_ws.py and the Sanic, aiohttp, Tornado apps).
WITH_WS = (*ALL_SCENARIOS, *WEBSOCKET_SCENARIOS)
FASTAPI_WS = {**FASTAPI, "scenarios": (*WITH_API, *WEBSOCKET_SCENARIOS)}
ASYNC_WS = {**ASYNC, "scenarios": WITH_WS}
NO_WS = tuple(
    (scenario, "benchlab launches granian with --no-ws, its pinned HTTP setting; "
     "starlette+granian has its WebSocket on")
    for scenario in WEBSOCKET_SCENARIOS
)  # fmt: skip
# flask_app.py: every Flask stack but async views (flask-compress: its gzip view)
FLASK = {**SYNC, "needs_modules": (*DRIVERS_SYNC, "flask_compress"), "scenarios": WITH_API}
DJANGO_SCENARIOS = (*ALL_SCENARIOS, *API_SCENARIOS)
# flask_async_views.py: each request runs a fresh event loop, which no pool can outlive.
ASYNC_VIEWS_UNSERVED = tuple(
    (scenario, "its async views run a new event loop per request: no pool can serve them")
    for scenario in ("db", "db-delay", "cache", "cpu", *API_SCENARIOS)
)
NO_STATIC_UNDER_ASGI = (
    ("static", "Django serves no files in production and WhiteNoise 6 wraps WSGI only"),
)
FASTAPI_POOL = {"BENCHLAB_THREADPOOL": str(ANYIO_THREADS)}
DJANGO = {"DJANGO_SETTINGS_MODULE": "django_app.settings"}

PYTHON_STACKS = (
    # --- FastAPI and its ASGI peers -----------------------------------------------------------
    _on("fastapi+uvicorn", "FastAPI", "uvicorn", "fastapi_app:app", env=FASTAPI_POOL,
        needs_modules=("fastapi", "uvicorn", *DRIVERS_ASYNC, *DRIVERS_SYNC), **FASTAPI_WS),
    _on("fastapi+gunicorn-uvicorn", "FastAPI", "gunicorn-uvicorn", "fastapi_app:app",
        env=FASTAPI_POOL,
        needs_modules=("fastapi", "gunicorn", "uvicorn_worker", *DRIVERS_ASYNC, *DRIVERS_SYNC),
        **FASTAPI_WS),
    _on("fastapi+granian", "FastAPI", "granian-asgi", "fastapi_app:app", env=FASTAPI_POOL,
        needs_modules=("fastapi", "granian", *DRIVERS_ASYNC, *DRIVERS_SYNC), **FASTAPI),
    _on("starlette+uvicorn", "Starlette", "uvicorn", "starlette_app:app", **ASYNC_WS),
    _on("starlette+gunicorn-asgi", "Starlette", "gunicorn-asgi", "starlette_app:app",
        **ASYNC_WS),
    # The ASGI servers' WebSocket implementations side by side, on one app (starlette_ws.py):
    # uvicorn's default (websockets' sans-I/O protocol) and wsproto, hypercorn's (wsproto),
    # granian's own (Rust).
    _on("starlette+uvicorn-wsproto", "Starlette", "uvicorn-wsproto", "starlette_app:app",
        **ASYNC_WS),
    _on("starlette+hypercorn", "Starlette", "hypercorn", "starlette_app:app", **ASYNC_WS),
    _on("starlette+granian", "Starlette", "granian-asgi-ws", "starlette_app:app", **ASYNC_WS),
    _on("litestar+uvicorn", "Litestar", "uvicorn", "litestar_app:app", **ASYNC),
    _on("litestar+granian", "Litestar", "granian-asgi", "litestar_app:app", **ASYNC),
    _on("blacksheep+uvicorn", "BlackSheep", "uvicorn", "blacksheep_app:app", **ASYNC),
    _on("blacksheep+granian", "BlackSheep", "granian-asgi", "blacksheep_app:app", **ASYNC),
    _on("quart+uvicorn", "Quart", "uvicorn", "quart_app:app", **ASYNC),
    _on("quart+hypercorn", "Quart", "hypercorn", "quart_app:app", **ASYNC),
    # --- own servers --------------------------------------------------------------------------
    _stack("sanic", "Sanic", "Sanic's own server", ASYNC_LOOP, script("sanic_app.py"),
           start_timeout=60.0, **ASYNC_WS),
    _on("sanic+uvicorn", "Sanic", "uvicorn", "sanic_app:app", **ASYNC),
    _stack("tornado", "Tornado", "Tornado's own HTTPServer (fork_processes)", ASYNC_LOOP,
           script("tornado_app.py"), **ASYNC_WS),
    _on("tornado+gunicorn", "Tornado", "gunicorn-tornado", "tornado_gunicorn:app", **ASYNC),
    _stack("aiohttp", "aiohttp", "aiohttp's own server (SO_REUSEPORT)", ASYNC_LOOP,
           script("aiohttp_app.py"), **ASYNC_WS),
    _on("aiohttp+gunicorn", "aiohttp", "gunicorn-aiohttp", "aiohttp_app:make_app", **ASYNC),
    # --- Flask --------------------------------------------------------------------------------
    _stack("flask+dev-server", "Flask", "Werkzeug development server (not for production)",
           "a thread per request, one process", dev_server(), fixed_workers=True,
           note="dev server", **FLASK),
    _stack("flask-async-views+dev-server", "Flask (async views)",
           "Werkzeug development server (not for production)",
           "an event loop per request, in a thread per request", dev_server("async"),
           fixed_workers=True, scenarios=NO_DB, note="dev server, async views",
           needs_modules=("flask", "asgiref"), unserved=ASYNC_VIEWS_UNSERVED),
    _on("flask+waitress", "Flask", "waitress", "flask_app:app", **FLASK),
    _on("flask+gunicorn", "Flask", "gunicorn-sync", "flask_app:app", note="sync: no keep-alive",
        **FLASK),
    _on("flask+gunicorn-gthread", "Flask", "gunicorn-gthread", "flask_app:app", **FLASK),
    _on("flask+gunicorn-gevent", "Flask", "gunicorn-gevent", "flask_app:app", **FLASK),
    _stack("flask+gevent", "Flask", "gevent WSGIServer, patched first", GREENLET_PER_REQUEST,
           script("gevent_server.py"), fixed_workers=True, concurrency=PerWorker.GREENLETS,
           default_concurrency=1000, **FLASK),
    _stack("flask+gevent-late-patch", "Flask", "gevent WSGIServer, patched too late (a mistake)",
           "greenlets that still block: one request at a time", script("gevent_late_patch.py"),
           fixed_workers=True, concurrency=PerWorker.GREENLETS, default_concurrency=1000,
           note="deliberate mistake: late monkey-patch", **FLASK),
    _on("flask+uwsgi", "Flask", "uwsgi", uwsgi("flask_app"), **FLASK),
    # --- Bottle and Falcon --------------------------------------------------------------------
    _on("bottle+gunicorn", "Bottle", "gunicorn-sync", "bottle_app:app",
        note="sync: no keep-alive", **SYNC),
    _on("bottle+gunicorn-gevent", "Bottle", "gunicorn-gevent", "bottle_app:app", **SYNC),
    _on("bottle+uwsgi", "Bottle", "uwsgi", uwsgi("bottle_app"), **SYNC),
    _on("falcon+gunicorn", "Falcon", "gunicorn-sync", "falcon_app:app",
        note="sync: no keep-alive", **SYNC),
    _on("falcon+gunicorn-gevent", "Falcon", "gunicorn-gevent", "falcon_app:app", **SYNC),
    _on("falcon+uwsgi", "Falcon", "uwsgi", uwsgi("falcon_app"), **SYNC),
    # --- Django -------------------------------------------------------------------------------
    _on("django+gunicorn", "Django (WSGI, persistent connections)", "gunicorn-sync",
        "django_app.wsgi:application", env=DJANGO, note="sync: no keep-alive",
        flavours=("sync",), needs_modules=("django", "gunicorn", "whitenoise", *DRIVERS_SYNC),
        scenarios=DJANGO_SCENARIOS),
    _on("django+uvicorn", "Django (ASGI, connection pool)", "uvicorn",
        "django_app.asgi:application", env={"BENCHLAB_DJANGO_ASGI": "1", **DJANGO},
        worker_model=ASYNC_LOOP + "; queries through sync_to_async", flavours=("async",),
        needs_modules=("django", "uvicorn", *DRIVERS_SYNC),
        scenarios=tuple(s for s in DJANGO_SCENARIOS if s != "static"),
        unserved=NO_STATIC_UNDER_ASGI),
    # --- listed, not runnable -----------------------------------------------------------------
    *(
        _on(f"{framework.lower()}+meinheld", framework, "gunicorn-meinheld",
            f"{framework.lower()}_app:app",
            unavailable="meinheld 1.0.2 does not build on Python 3.11 (it pins greenlet "
            "0.4.17) and is unmaintained since 2020", **SYNC)
        for framework in ("Flask", "Bottle", "Falcon")
    ),
    _on("aioflask+uvicorn", "Aioflask", "uvicorn", "aioflask_app:app", server="uvicorn",
        unavailable="aioflask 0.4.0 installs but fails on import with Flask >= 2.3 "
        "(flask.globals._app_ctx_stack is gone); unmaintained", **ASYNC),
)  # fmt: skip
