"""Python stacks: each runs the reference app of its framework from this package's apps/,
under one server with the settings its documentation recommends, counts always explicit."""

from __future__ import annotations

import sys
from collections.abc import Callable

from benchlab.scenarios import API_SCENARIOS
from benchlab.stacks.base import (
    ALL_SCENARIOS,
    APPS_DIR,
    LISTEN_BACKLOG,
    WITH_API,
    Launch,
    LaunchContext,
    Stack,
)

PYTHON_APPS = APPS_DIR / "python"
PY = sys.executable
BACKLOG = str(LISTEN_BACKLOG)
NO_DB = ("plaintext", "json", "sleep")
DRIVERS_SYNC = ("psycopg", "psycopg_pool", "pymysql", "redis")
DRIVERS_ASYNC = ("asyncpg", "aiomysql", "redis")
Launcher = Callable[[LaunchContext], Launch]
# The protocols each launcher's server speaks over its own TLS (stacks read it by launcher).
H1_TLS = ("h1", "h1-tls")
EVERY_PROTOCOL = ("h1", "h1-tls", "h2", "h2c")
_SPOKEN: dict[Launcher, tuple[str, ...]] = {}


def _speaks(protocols: tuple[str, ...], launcher: Launcher) -> Launcher:
    _SPOKEN[launcher] = protocols
    return launcher


def _tls_args(ctx: LaunchContext, key_flag: str, cert_flag: str) -> list[str]:
    return [key_flag, str(ctx.tls.key), cert_flag, str(ctx.tls.cert)] if ctx.tls else []


def _launch(argv: Callable[[LaunchContext], list[str]], **env: str) -> Launcher:
    def launch(ctx: LaunchContext) -> Launch:
        return Launch(argv=argv(ctx), env={"BENCHLAB_BACKLOG": BACKLOG, **env}, cwd=PYTHON_APPS)

    return launch


def uvicorn(app: str, **env: str) -> Launcher:
    return _speaks(H1_TLS, _launch(
        lambda ctx: [
            PY, "-m", "uvicorn", app, "--host", ctx.host, "--port", str(ctx.port),
            "--workers", str(ctx.workers), "--loop", "uvloop", "--http", "httptools",
            "--no-access-log", "--log-level", "warning", "--backlog", BACKLOG,
            *_tls_args(ctx, "--ssl-keyfile", "--ssl-certfile"),
        ],
        **env,
    ))  # fmt: skip


def gunicorn(app: str, worker_class: str, *extra: str, **env: str) -> Launcher:
    def argv(ctx: LaunchContext) -> list[str]:
        per_worker: list[str] = []
        if worker_class == "gthread":
            per_worker = ["--threads", str(ctx.threads)]
        elif worker_class == "gevent":
            per_worker = ["--worker-connections", str(ctx.threads)]
        return [
            PY, "-m", "gunicorn", app, "--bind", f"{ctx.host}:{ctx.port}",
            "--workers", str(ctx.workers), "--worker-class", worker_class, *per_worker,
            "--backlog", BACKLOG, "--log-level", "warning", "--worker-tmp-dir", str(ctx.workdir),
            *_tls_args(ctx, "--keyfile", "--certfile"), *extra,
        ]  # fmt: skip

    # gunicorn's own TLS, which these worker classes use; the tornado and aiohttp workers
    # are not wired for it here.
    tls = worker_class in ("sync", "gthread", "gevent", "uvicorn_worker.UvicornWorker")
    return _speaks(H1_TLS if tls else ("h1",), _launch(argv, **env))


def granian(app: str, **env: str) -> Launcher:
    return _speaks(EVERY_PROTOCOL, _launch(
        lambda ctx: [
            PY, "-m", "granian", "--interface", "asgi", "--host", ctx.host,
            "--port", str(ctx.port), "--workers", str(ctx.workers), "--runtime-threads", "1",
            "--runtime-mode", "st", "--loop", "uvloop", "--backlog", BACKLOG,
            "--log-level", "warning", "--no-ws",
            *_tls_args(ctx, "--ssl-keyfile", "--ssl-certificate"),
            # HTTP/2 only when asked (h2c is prior knowledge); otherwise its default, auto
            *(["--http", "2"] if ctx.protocol == "h2c" else []), app,
        ],
        **env,
    ))  # fmt: skip


def hypercorn(app: str) -> Launcher:
    def argv(ctx: LaunchContext) -> list[str]:
        # Hypercorn closes a connection after 1000 requests unless told (config file only).
        config = ctx.workdir / "hypercorn.toml"
        config.write_text("keep_alive_max_requests = 1000000000\n")
        return [
            PY, "-m", "hypercorn", "--config", str(config), "--bind", f"{ctx.host}:{ctx.port}",
            "--workers", str(ctx.workers), "--worker-class", "uvloop", "--backlog", BACKLOG,
            "--log-level", "warning", *_tls_args(ctx, "--keyfile", "--certfile"), app,
        ]  # fmt: skip

    return _speaks(EVERY_PROTOCOL, _launch(argv))


def uwsgi(module: str) -> Launcher:
    """uWSGI serving `module`.app, behind a wrapper that adds the Date header uWSGI omits."""
    return _launch(
        lambda ctx: [
            _venv_program("uwsgi"),
            "--http11-socket", f"{ctx.host}:{ctx.port}", "--master",
            "--processes", str(ctx.workers), "--threads", str(ctx.threads),
            "--enable-threads", "--disable-logging", "--die-on-term", "--single-interpreter",
            "--lazy-apps", "--listen", BACKLOG, "--module", "uwsgi_apps:application",
            "--chdir", str(PYTHON_APPS),
        ],
        BENCHLAB_WSGI_MODULE=module,
    )  # fmt: skip


def script(name: str, *args: str) -> Launcher:
    """Apps that start their own server: python NAME HOST PORT WORKERS|THREADS [ARGS]."""

    def argv(ctx: LaunchContext) -> list[str]:
        count = ctx.threads if ctx.threads is not None else ctx.workers
        return [PY, name, ctx.host, str(ctx.port), str(count), *args]

    return _launch(argv)


def _venv_program(name: str) -> str:
    from pathlib import Path

    return str(Path(PY).with_name(name))


def waitress(app: str) -> Launcher:
    return _launch(
        lambda ctx: [
            _venv_program("waitress-serve"), f"--host={ctx.host}", f"--port={ctx.port}",
            f"--threads={ctx.threads}", "--connection-limit=100000", f"--backlog={BACKLOG}",
            "--channel-timeout=120", app,
        ]
    )  # fmt: skip


def dev_server(*args: str) -> Launcher:
    return _launch(lambda ctx: [PY, "flask_dev_server.py", ctx.host, str(ctx.port), *args])


def _stack(name: str, framework: str, server: str, model: str, launch: Launcher, **kw) -> Stack:
    return Stack(
        name=name, framework=framework, server=server, worker_model=model, launch=launch,
        scenarios=kw.pop("scenarios", ALL_SCENARIOS), protocols=_SPOKEN.get(launch, ("h1",)),
        **kw,
    )  # fmt: skip


ASYNC = {"flavours": ("async",), "needs_modules": DRIVERS_ASYNC}
SYNC = {"flavours": ("sync",), "needs_modules": DRIVERS_SYNC}
ASYNC_LOOP = "asyncio event loop per process"
# FastAPI runs `def` endpoints in anyio's thread pool: its default of 40, set explicitly.
ANYIO_THREADS = 40
FASTAPI = {"flavours": ("async", "sync"), "threadpool": ANYIO_THREADS, "scenarios": WITH_API}
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
RUST_IO = ASYNC_LOOP + " (Rust I/O)"
ONE_AT_A_TIME = "one request at a time per process"
THREADS = "a thread per request, N threads per process"
GREENLETS = "a greenlet per request (gevent), N per process"
UWSGI = "uWSGI (--http11-socket; Date added by a WSGI wrapper)"
DJANGO = {"DJANGO_SETTINGS_MODULE": "django_app.settings"}

PYTHON_STACKS = (
    # --- FastAPI and its ASGI peers -----------------------------------------------------------
    _stack("fastapi+uvicorn", "FastAPI", "uvicorn (uvloop, httptools)", ASYNC_LOOP,
           uvicorn("fastapi_app:app", **FASTAPI_POOL),
           needs_modules=("fastapi", "uvicorn", *DRIVERS_ASYNC, *DRIVERS_SYNC), **FASTAPI),
    _stack("fastapi+gunicorn-uvicorn", "FastAPI", "gunicorn + uvicorn-worker", ASYNC_LOOP,
           gunicorn("fastapi_app:app", "uvicorn_worker.UvicornWorker", **FASTAPI_POOL),
           needs_modules=("fastapi", "gunicorn", "uvicorn_worker", *DRIVERS_ASYNC, *DRIVERS_SYNC),
           **FASTAPI),
    _stack("fastapi+granian", "FastAPI", "granian (--interface asgi)", RUST_IO,
           granian("fastapi_app:app", **FASTAPI_POOL),
           needs_modules=("fastapi", "granian", *DRIVERS_ASYNC, *DRIVERS_SYNC), **FASTAPI),
    _stack("starlette+uvicorn", "Starlette", "uvicorn (uvloop, httptools)", ASYNC_LOOP,
           uvicorn("starlette_app:app"), **ASYNC),
    _stack("litestar+uvicorn", "Litestar", "uvicorn (uvloop, httptools)", ASYNC_LOOP,
           uvicorn("litestar_app:app"), **ASYNC),
    _stack("litestar+granian", "Litestar", "granian (--interface asgi)", RUST_IO,
           granian("litestar_app:app"), **ASYNC),
    _stack("blacksheep+uvicorn", "BlackSheep", "uvicorn (uvloop, httptools)", ASYNC_LOOP,
           uvicorn("blacksheep_app:app"), **ASYNC),
    _stack("blacksheep+granian", "BlackSheep", "granian (--interface asgi)", RUST_IO,
           granian("blacksheep_app:app"), **ASYNC),
    _stack("quart+uvicorn", "Quart", "uvicorn (uvloop, httptools)", ASYNC_LOOP,
           uvicorn("quart_app:app"), **ASYNC),
    _stack("quart+hypercorn", "Quart", "hypercorn (uvloop)", ASYNC_LOOP,
           hypercorn("quart_app:app"), **ASYNC),
    # --- own servers --------------------------------------------------------------------------
    _stack("sanic", "Sanic", "Sanic's own server", ASYNC_LOOP, script("sanic_app.py"),
           start_timeout=60.0, **ASYNC),
    _stack("sanic+uvicorn", "Sanic", "uvicorn (uvloop, httptools)", ASYNC_LOOP,
           uvicorn("sanic_app:app"), **ASYNC),
    _stack("tornado", "Tornado", "Tornado's own HTTPServer (fork_processes)", ASYNC_LOOP,
           script("tornado_app.py"), **ASYNC),
    _stack("tornado+gunicorn", "Tornado", "gunicorn tornado worker", ASYNC_LOOP,
           gunicorn("tornado_gunicorn:app", "tornado"), **ASYNC),
    _stack("aiohttp", "aiohttp", "aiohttp's own server (SO_REUSEPORT)", ASYNC_LOOP,
           script("aiohttp_app.py"), **ASYNC),
    _stack("aiohttp+gunicorn", "aiohttp", "gunicorn aiohttp worker (uvloop)", ASYNC_LOOP,
           gunicorn("aiohttp_app:make_app", "aiohttp.GunicornUVLoopWebWorker"), **ASYNC),
    # --- Flask --------------------------------------------------------------------------------
    _stack("flask+dev-server", "Flask", "Werkzeug development server (not for production)",
           "a thread per request, one process", dev_server(), fixed_workers=True,
           note="dev server", **FLASK),
    _stack("flask-async-views+dev-server", "Flask (async views)",
           "Werkzeug development server (not for production)",
           "an event loop per request, in a thread per request", dev_server("async"),
           fixed_workers=True, scenarios=NO_DB, note="dev server, async views",
           needs_modules=("flask", "asgiref"), unserved=ASYNC_VIEWS_UNSERVED),
    _stack("flask+waitress", "Flask", "waitress", THREADS + " (one process)",
           waitress("flask_app:app"), fixed_workers=True, concurrency="threads",
           default_concurrency=4, **FLASK),
    _stack("flask+gunicorn", "Flask", "gunicorn (sync workers)", ONE_AT_A_TIME,
           gunicorn("flask_app:app", "sync"), one_at_a_time=True,
           note="sync: no keep-alive", **FLASK),
    _stack("flask+gunicorn-gthread", "Flask", "gunicorn (gthread workers)", THREADS,
           gunicorn("flask_app:app", "gthread"), concurrency="threads", default_concurrency=4,
           **FLASK),
    _stack("flask+gunicorn-gevent", "Flask", "gunicorn (gevent workers)", GREENLETS,
           gunicorn("flask_app:app", "gevent"), concurrency="greenlets",
           default_concurrency=1000, **FLASK),
    _stack("flask+gevent", "Flask", "gevent WSGIServer, patched first", GREENLETS,
           script("gevent_server.py"), fixed_workers=True, concurrency="greenlets",
           default_concurrency=1000, **FLASK),
    _stack("flask+gevent-late-patch", "Flask", "gevent WSGIServer, patched too late (a mistake)",
           "greenlets that still block: one request at a time", script("gevent_late_patch.py"),
           fixed_workers=True, concurrency="greenlets", default_concurrency=1000,
           note="deliberate mistake: late monkey-patch", **FLASK),
    _stack("flask+uwsgi", "Flask", UWSGI, THREADS,
           uwsgi("flask_app"), concurrency="threads", default_concurrency=1, **FLASK),
    # --- Bottle and Falcon --------------------------------------------------------------------
    _stack("bottle+gunicorn", "Bottle", "gunicorn (sync workers)", ONE_AT_A_TIME,
           gunicorn("bottle_app:app", "sync"), one_at_a_time=True,
           note="sync: no keep-alive", **SYNC),
    _stack("bottle+gunicorn-gevent", "Bottle", "gunicorn (gevent workers)", GREENLETS,
           gunicorn("bottle_app:app", "gevent"), concurrency="greenlets",
           default_concurrency=1000, **SYNC),
    _stack("bottle+uwsgi", "Bottle", UWSGI, THREADS,
           uwsgi("bottle_app"), concurrency="threads", default_concurrency=1, **SYNC),
    _stack("falcon+gunicorn", "Falcon", "gunicorn (sync workers)", ONE_AT_A_TIME,
           gunicorn("falcon_app:app", "sync"), one_at_a_time=True,
           note="sync: no keep-alive", **SYNC),
    _stack("falcon+gunicorn-gevent", "Falcon", "gunicorn (gevent workers)", GREENLETS,
           gunicorn("falcon_app:app", "gevent"), concurrency="greenlets",
           default_concurrency=1000, **SYNC),
    _stack("falcon+uwsgi", "Falcon", UWSGI, THREADS,
           uwsgi("falcon_app"), concurrency="threads", default_concurrency=1, **SYNC),
    # --- Django -------------------------------------------------------------------------------
    _stack("django+gunicorn", "Django (WSGI, persistent connections)", "gunicorn (sync workers)",
           ONE_AT_A_TIME, gunicorn("django_app.wsgi:application", "sync", **DJANGO),
           note="sync: no keep-alive", one_at_a_time=True, flavours=("sync",),
           needs_modules=("django", "gunicorn", "whitenoise", *DRIVERS_SYNC),
           scenarios=DJANGO_SCENARIOS),
    _stack("django+uvicorn", "Django (ASGI, connection pool)", "uvicorn (uvloop, httptools)",
           ASYNC_LOOP + "; queries through sync_to_async",
           uvicorn("django_app.asgi:application", BENCHLAB_DJANGO_ASGI="1", **DJANGO),
           flavours=("async",), needs_modules=("django", "uvicorn", *DRIVERS_SYNC),
           scenarios=tuple(s for s in DJANGO_SCENARIOS if s != "static"),
           unserved=NO_STATIC_UNDER_ASGI),
    # --- listed, not runnable -----------------------------------------------------------------
    *(
        _stack(f"{framework.lower()}+meinheld", framework, "meinheld", "greenlets (meinheld)",
               gunicorn(f"{framework.lower()}_app:app", "egg:meinheld#gunicorn_worker"),
               unavailable="meinheld 1.0.2 does not build on Python 3.11 (it pins greenlet "
               "0.4.17) and is unmaintained since 2020", **SYNC)
        for framework in ("Flask", "Bottle", "Falcon")
    ),
    _stack("aioflask+uvicorn", "Aioflask", "uvicorn", ASYNC_LOOP, uvicorn("aioflask_app:app"),
           unavailable="aioflask 0.4.0 installs but fails on import with Flask >= 2.3 "
           "(flask.globals._app_ctx_stack is gone); unmaintained", **ASYNC),
)  # fmt: skip
