"""Each server is declared once (servers.py): the catalogue's stacks and tune's candidates
build their command lines with the same builder. The expected lists are the command lines
the code made before the two were one (issue 37), so a change to one side only fails here.
No process is started: the argv builders are called directly."""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchlab.analysis.recommendation import served_by
from benchlab.http.tls import TlsFiles
from benchlab.stacks import CATALOGUE
from benchlab.stacks.base import LaunchContext
from benchlab.stacks.python_env import OWN_APPS as PYTHON_APPS
from benchlab.stacks.servers import KIND_BY_NAME, IoModel, PerWorker
from benchlab.tune import app as tune_app
from benchlab.tune.app import AppInfo, AppSpec
from benchlab.tune.candidates import KINDS, candidates, deploy_command, skipped_servers, stack_for

PY = sys.executable
TLS = TlsFiles(Path("/tls/ca.pem"), Path("/tls/cert.pem"), Path("/tls/key.pem"))
HOST, PORT = "127.0.0.1", "8123"
BIND = f"{HOST}:{PORT}"
TLS_GUNICORN = ["--keyfile", "/tls/key.pem", "--certfile", "/tls/cert.pem"]
TLS_UVICORN = ["--ssl-keyfile", "/tls/key.pem", "--ssl-certfile", "/tls/cert.pem"]
TLS_GRANIAN = ["--ssl-keyfile", "/tls/key.pem", "--ssl-certificate", "/tls/cert.pem"]
GTHREAD = [PY, "-m", "gunicorn", "flask_app:app", "--bind", BIND, "--workers", "2",
           "--worker-class", "gthread", "--threads", "4", "--backlog", "2048",
           "--log-level", "warning", "--worker-tmp-dir", "{W}"]  # fmt: skip
UVICORN = [PY, "-m", "uvicorn", "fastapi_app:app", "--host", HOST, "--port", PORT,
           "--workers", "2", "--loop", "uvloop", "--http", "httptools", "--no-access-log",
           "--log-level", "warning", "--backlog", "2048"]  # fmt: skip
GRANIAN = [PY, "-m", "granian", "--interface", "asgi", "--host", HOST, "--port", PORT,
           "--workers", "2", "--runtime-threads", "1", "--runtime-mode", "st", "--loop",
           "uvloop", "--backlog", "2048", "--log-level", "warning", "--no-ws"]  # fmt: skip
GUNICORN_ASGI = [PY, "-m", "gunicorn", "starlette_app:app", "--bind", BIND, "--workers", "2",
                 "--worker-class", "asgi", "--backlog", "2048", "--asgi-loop", "uvloop",
                 "--log-level", "warning", "--worker-tmp-dir", "{W}"]  # fmt: skip
CATALOGUE_BEFORE = {
    ("flask+gunicorn-gthread", "h1"): GTHREAD,
    ("flask+gunicorn-gthread", "h1-tls"): [*GTHREAD, *TLS_GUNICORN],
    ("fastapi+uvicorn", "h1"): UVICORN,
    ("fastapi+uvicorn", "h1-tls"): [*UVICORN, *TLS_UVICORN],
    ("fastapi+granian", "h1"): [*GRANIAN, "fastapi_app:app"],
    ("fastapi+granian", "h1-tls"): [*GRANIAN, *TLS_GRANIAN, "fastapi_app:app"],
    ("fastapi+granian", "h2c"): [*GRANIAN, "--http", "2", "fastapi_app:app"],
    ("quart+hypercorn", "h1-tls"): [
        PY, "-m", "hypercorn", "--config", "{W}/hypercorn.toml", "--bind", BIND, "--workers",
        "2", "--worker-class", "uvloop", "--backlog", "2048", "--log-level", "warning",
        *TLS_GUNICORN, "quart_app:app",
    ],
    # Added with issue 38: gunicorn's native ASGI worker, its HTTP/2 over its own TLS.
    ("starlette+gunicorn-asgi", "h1"): GUNICORN_ASGI,
    ("flask+uwsgi", "h1"): [
        str(Path(PY).with_name("uwsgi")), "--http11-socket", BIND, "--master", "--processes",
        "2", "--threads", "4", "--enable-threads", "--disable-logging", "--die-on-term",
        "--single-interpreter", "--lazy-apps", "--listen", "2048", "--module",
        "uwsgi_apps:application", "--chdir", str(PYTHON_APPS),
    ],
    # Before: `<venv>/waitress-serve` as the program; the same server run by `python -m
    # waitress` now, as tune runs it (the flags are the same, in the same order).
    ("flask+waitress", "h1"): [
        PY, "-m", "waitress", f"--host={HOST}", f"--port={PORT}", "--threads=4",
        "--connection-limit=100000", "--backlog=2048", "--channel-timeout=120", "flask_app:app",
    ],
}  # fmt: skip


@pytest.mark.parametrize(("stack", "protocol"), list(CATALOGUE_BEFORE))
def test_a_catalogue_stack_launches_as_it_did(stack: str, protocol: str, tmp_path: Path) -> None:
    tls = TLS if protocol in ("h1-tls", "h2") else None
    ctx = LaunchContext(HOST, int(PORT), tmp_path, (0,), 2, 4, protocol, tls)
    argv = CATALOGUE[stack].launch(ctx).argv
    expected = [a.replace("{W}", str(tmp_path)) for a in CATALOGUE_BEFORE[stack, protocol]]
    assert argv == expected


def _info(interface: str, call: str | None = None, uvloop: bool = True) -> AppInfo:
    spec = AppSpec("app:app", "app", "app", Path("/srv/app"), call)
    servers = {name: True for name in tune_app.PROBED} | {"uvloop": uvloop}
    return AppInfo(spec, "/venv/bin/python", "3.11.2", interface, servers, 50.0, cwd=spec.directory)


VENV = "/venv/bin/python"
# kind, interface, factory call: (launched argv, printed command) as tune made them before;
# where the order changed, the order now (the catalogue's) with the flags of before.
TUNE_BEFORE: dict[tuple[str, str, str | None], tuple[list[str], str]] = {
    ("gunicorn-gthread", "wsgi", None): (
        [VENV, "-m", "gunicorn", "app:app", "--bind", BIND, "--workers", "2", "--worker-class",
         "gthread", "--threads", "4", "--backlog", "2048", "--log-level", "warning",
         "--worker-tmp-dir", "{W}"],
        "gunicorn app:app --bind 0.0.0.0:8000 --workers 2 --worker-class gthread --threads 4 "
        "--backlog 2048",
    ),
    ("granian-asgi", "asgi", None): (
        [VENV, "-m", "granian", "--interface", "asgi", "--host", HOST, "--port", PORT,
         "--workers", "2", "--backlog", "2048", "--log-level", "warning", "app:app"],
        "granian --interface asgi --host 0.0.0.0 --port 8000 --workers 2 --backlog 2048 app:app",
    ),
    ("granian-wsgi", "wsgi", None): (
        [VENV, "-m", "granian", "--interface", "wsgi", "--host", HOST, "--port", PORT,
         "--workers", "2", "--blocking-threads", "4", "--backlog", "2048", "--log-level",
         "warning", "app:app"],
        "granian --interface wsgi --host 0.0.0.0 --port 8000 --workers 2 --blocking-threads 4 "
        "--backlog 2048 app:app",
    ),
    ("gunicorn-asgi", "asgi", None): (
        [VENV, "-m", "gunicorn", "app:app", "--bind", BIND, "--workers", "2", "--worker-class",
         "asgi", "--backlog", "2048", "--log-level", "warning", "--worker-tmp-dir", "{W}"],
        "gunicorn app:app --bind 0.0.0.0:8000 --workers 2 --worker-class asgi --backlog 2048",
    ),
    ("waitress", "wsgi", "()"): (
        [VENV, "-m", "waitress", f"--host={HOST}", f"--port={PORT}", "--threads=4",
         "--backlog=2048", "--call", "app:app"],
        "waitress-serve --host=0.0.0.0 --port=8000 --threads=4 --backlog=2048 --call app:app",
    ),
}  # fmt: skip
TUNE_REORDERED = {
    # before: ... --workers 2 --backlog 2048 --no-access-log --log-level warning
    ("uvicorn", "asgi", None): (
        [VENV, "-m", "uvicorn", "app:app", "--host", HOST, "--port", PORT, "--workers", "2",
         "--no-access-log", "--log-level", "warning", "--backlog", "2048"],
        "uvicorn app:app --host 0.0.0.0 --port 8000 --workers 2 --no-access-log --backlog 2048",
    ),
    # before: the app first, and no --log-level when tune launched it
    ("hypercorn", "asgi", "()"): (
        [VENV, "-m", "hypercorn", "--bind", BIND, "--workers", "2", "--worker-class", "uvloop",
         "--backlog", "2048", "--log-level", "warning", "app:app()"],
        "hypercorn --bind 0.0.0.0:8000 --workers 2 --worker-class uvloop --backlog 2048 "
        "'app:app()'",
    ),
    # before: --listen 2048 --module app:app before --disable-logging ... --lazy-apps
    ("uwsgi", "wsgi", None): (
        ["/venv/bin/uwsgi", "--http11-socket", BIND, "--master", "--processes", "2",
         "--threads", "4", "--enable-threads", "--disable-logging", "--die-on-term",
         "--single-interpreter", "--lazy-apps", "--listen", "2048", "--module", "app:app"],
        "uwsgi --http11-socket 0.0.0.0:8000 --master --processes 2 --threads 4 "
        "--enable-threads --disable-logging --die-on-term --single-interpreter --lazy-apps "
        "--listen 2048 --module app:app",
    ),
}  # fmt: skip
ORDER_BEFORE = {
    "uvicorn": "uvicorn app:app --host 0.0.0.0 --port 8000 --workers 2 --backlog 2048 "
    "--no-access-log",
    "hypercorn": "hypercorn 'app:app()' --bind 0.0.0.0:8000 --workers 2 --worker-class uvloop "
    "--backlog 2048",
    "uwsgi": "uwsgi --http11-socket 0.0.0.0:8000 --master --processes 2 --threads 4 "
    "--enable-threads --listen 2048 --module app:app --disable-logging --die-on-term "
    "--single-interpreter --lazy-apps",
}


@pytest.mark.parametrize("key", [*TUNE_BEFORE, *TUNE_REORDERED])
def test_a_tune_candidate_launches_and_prints_as_it_did(
    key: tuple[str, str, str | None], tmp_path: Path
) -> None:
    name, interface, call = key
    argv, printed = {**TUNE_BEFORE, **TUNE_REORDERED}[key]
    kind = next(k for k in KINDS if k.name == name)
    info = _info(interface, call)
    threads = 4 if kind.concurrency else None
    ctx = LaunchContext(HOST, int(PORT), tmp_path, (0,), 2, threads)
    assert stack_for(kind, info).launch(ctx).argv == [a.replace("{W}", str(tmp_path)) for a in argv]
    assert deploy_command(kind, info, 2, threads) == printed
    if name in ORDER_BEFORE:  # reordered only: the same words as before
        assert Counter(printed.split()) == Counter(ORDER_BEFORE[name].split())


def test_the_catalogue_and_tune_share_each_server_kind() -> None:
    pairs = {"flask+gunicorn-gthread": "gunicorn-gthread", "fastapi+uvicorn": "uvicorn",
             "fastapi+granian": "granian-asgi", "quart+hypercorn": "hypercorn",
             "flask+waitress": "waitress", "flask+uwsgi": "uwsgi",
             "flask+gunicorn": "gunicorn-sync", "flask+gunicorn-gevent": "gunicorn-gevent",
             "fastapi+gunicorn-uvicorn": "gunicorn-uvicorn",
             "starlette+gunicorn-asgi": "gunicorn-asgi"}  # fmt: skip
    for stack_name, kind_name in pairs.items():
        stack, kind = CATALOGUE[stack_name], KIND_BY_NAME[kind_name]
        assert stack.served_by is kind and kind in KINDS
        assert (stack.concurrency, stack.one_at_a_time) == (kind.concurrency, kind.one_at_a_time)
        assert stack.protocols == kind.protocols


def test_a_launch_stores_its_server_and_worker_model_typed() -> None:
    gthread = KIND_BY_NAME["gunicorn-gthread"]
    facts = stack_for(gthread, _info("wsgi")).facts(2, 4)
    assert facts["server"] == "gunicorn (gthread)"  # as before, for the reports
    assert (facts["server_name"], facts["io_model"], facts["per_worker"]) == (
        "gunicorn", "threads", "threads",
    )  # fmt: skip
    assert CATALOGUE["flask+gunicorn"].facts(2, None)["io_model"] == "sync processes"
    assert "io_model" not in CATALOGUE["sanic"].facts(2, None)  # its own server


def test_the_report_reads_the_typed_fields_and_defaults_for_older_runs() -> None:
    stored = {"server": "gunicorn (gevent)", "server_name": "gunicorn",
              "io_model": "greenlets", "per_worker": "greenlets"}  # fmt: skip
    new = served_by(SimpleNamespace(stack="renamed-since", facts=stored))
    assert (new.server, new.io_model, new.concurrency) == (
        "gunicorn", IoModel.GREENLETS, PerWorker.GREENLETS,
    )  # fmt: skip
    # Stored before the typed fields: the kind its stack is named after.
    old = {"server": "waitress (threads)", "worker_model": "a thread per request, N threads"}
    found = served_by(SimpleNamespace(stack="waitress", facts=old))
    assert (found.server, found.io_model, found.concurrency) == (
        "waitress", IoModel.THREADS, PerWorker.THREADS,
    )  # fmt: skip
    sync = served_by(SimpleNamespace(stack="gunicorn-sync", facts={}))
    assert sync.io_model is IoModel.PROCESSES and sync.concurrency is None
    unknown = served_by(SimpleNamespace(stack="gone", facts={"server": "x (y)"}))
    assert (unknown.server, unknown.io_model, unknown.concurrency) == ("?", None, None)


def test_tune_probes_and_names_the_servers_as_before() -> None:
    assert tune_app.WSGI_SERVERS == ("gunicorn", "gevent", "waitress", "granian", "uwsgi")
    assert tune_app.ASGI_SERVERS == ("uvicorn", "gunicorn", "uvicorn-worker", "granian",
                                     "hypercorn")  # fmt: skip
    assert tune_app.PROBED == {
        "gunicorn": "gunicorn", "gevent": "gevent", "waitress": "waitress",
        "granian": "granian", "uwsgi": "pyuwsgi", "uvicorn": "uvicorn",
        "uvicorn-worker": "uvicorn_worker", "hypercorn": "hypercorn", "uvloop": "uvloop",
    }  # fmt: skip
    assert [k.name for k in KINDS] == [
        "gunicorn-sync", "gunicorn-gthread", "gunicorn-gevent", "waitress", "granian-wsgi",
        "uwsgi", "uvicorn", "gunicorn-uvicorn", "gunicorn-asgi", "granian-asgi", "hypercorn",
    ]  # fmt: skip


def test_gunicorn_before_its_asgi_worker_is_skipped_with_the_reason() -> None:
    info = _info("asgi")
    asgi = KIND_BY_NAME["gunicorn-asgi"]
    old = dataclasses.replace(info, versions={"gunicorn": "23.0.0"})
    assert asgi not in {c.kind for c in candidates(old, 2, 4096.0)}
    assert skipped_servers(old) == {
        "gunicorn (asgi)": "its asgi worker needs gunicorn ≥ 24 (have 23.0.0)"
    }
    assert KIND_BY_NAME["gunicorn-uvicorn"] in {c.kind for c in candidates(old, 2, 4096.0)}
    for have in ("24.0.0", "27.0.1", "24.1b1"):
        new = dataclasses.replace(info, versions={"gunicorn": have})
        assert asgi in {c.kind for c in candidates(new, 2, 4096.0)} and not skipped_servers(new)
