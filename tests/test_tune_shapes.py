"""benchlab tune loads an app the way its own server would, in the shapes people have: an
app that imports `requests`, modules named like benchlab's own, a src layout, a Django
project by module and by the path of its wsgi.py, factories (WSGI and ASGI), an app.py
inside a package, an app that needs --env-file. Each is checked for real from the app's own
directory, as a user would type it: `tune --check-only` starts the candidate as its deploy
command does and checks its answer (loading is what these tests are about; what a tune
measures is tested in test_tune.py)."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO, benchlab
from tests.servers import VENV_BIN, served_by

# Every test here runs `benchlab tune`, which takes the machine's run lock: one at a time
# (tests/alone.py).
pytestmark = pytest.mark.alone

# Every module of benchlab's tune package (and recommend, its old name), as a user's own.
_OWN = {p.stem for p in (REPO / "src/benchlab/tune").glob("*.py")} - {"__init__"}
TUNE_MODULES = tuple(sorted(_OWN | {"recommend"}))


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def _tune(where: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """`benchlab tune ARGS --check-only -f json` typed in `where`: its one candidate answered
    right; the command that deploys it. (The JSON on stdout is the document alone.)"""
    result = benchlab(
        "tune", *args, "--check-only", "--workers", "1", "--results", "results.db",
        "-f", "json", cwd=where, env=env, timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["recommendation"] is None, report["recommendation"]
    (candidate,) = report["candidates"]
    assert candidate["status"] == "checked", candidate
    return candidate["command"]


WSGI_ANSWER = """
def answer(text):
    def app(environ, start_response):
        body = text.encode()
        start_response(
            "200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))]
        )
        return [body]

    return app
"""


@pytest.mark.slow
def test_an_app_that_imports_requests_gets_the_real_one_and_nothing_of_benchlab(
    tmp_path: Path,
) -> None:
    _write(tmp_path, {
        "answer.py": WSGI_ANSWER,
        "usesrequests.py": """
            import os

            import requests

            from answer import answer

            ours = sorted(k for k in os.environ if k.startswith("BENCHLAB_"))
            app = answer(f"requests {requests.__version__} from {requests.__file__}; {ours}")
        """,
    })  # fmt: skip
    # A variable of benchlab's own is set where benchlab runs; the app must not see it.
    command = _tune(
        tmp_path, "usesrequests.py:app", "--servers", "gunicorn-sync",
        "--check-body", "site-packages/requests/__init__.py; []",
        env={"BENCHLAB_STORE_TIMEOUT_S": "31"},
    )  # fmt: skip
    assert command.startswith("gunicorn usesrequests:app ")


@pytest.mark.slow
def test_modules_named_like_benchlabs_own_are_the_apps(tmp_path: Path) -> None:
    files = {f"{name}.py": f'MARK = "users-{name}"\n' for name in TUNE_MODULES if name != "app"}
    files["answer.py"] = WSGI_ANSWER
    names = [name for name in TUNE_MODULES if name != "app"]
    files["app.py"] = f"""
        import importlib
        from answer import answer

        marks = [importlib.import_module(name).MARK for name in {names!r}]
        app = answer(" ".join(marks))
    """
    _write(tmp_path, files)
    expected = " ".join(f"users-{n}" for n in TUNE_MODULES if n != "app")
    _tune(tmp_path, "app.py:app", "--servers", "gunicorn-sync", "--check-body", expected)


@pytest.mark.slow
def test_a_src_layout_package_is_imported_by_its_package_name(tmp_path: Path) -> None:
    _write(tmp_path, {
        "src/shop/__init__.py": "",
        "src/shop/catalogue.py": 'ITEMS = ["tea", "cups"]\n',
        "src/shop/web.py": """
            from flask import Flask

            from shop.catalogue import ITEMS

            app = Flask(__name__)


            @app.get("/items")
            def items():
                return {"items": ITEMS}
        """,
    })  # fmt: skip
    command = _tune(
        tmp_path, "src/shop/web.py:app", "--servers", "gunicorn-sync",
        "--request", "GET /items", "--check-body", '"tea"',
    )  # fmt: skip
    assert command.startswith("cd src && gunicorn shop.web:app "), command
    assert json.loads(served_by(command, tmp_path, "/items")) == {"items": ["tea", "cups"]}


def _django_project(where: Path) -> Path:
    subprocess.run([f"{VENV_BIN}/django-admin", "startproject", "mysite"], cwd=where, check=True)
    root = where / "mysite"
    urls = root / "mysite" / "urls.py"
    urls.write_text(
        urls.read_text() + "\nfrom django.http import HttpResponse\n\n"
        "urlpatterns.append(path('hello/', lambda request: HttpResponse('hello from mysite')))\n"
    )
    return root


@pytest.mark.parametrize("app", ["mysite.wsgi:application", "mysite/wsgi.py:application"])
@pytest.mark.slow
def test_a_django_project_by_module_and_by_the_path_of_its_wsgi_py(
    tmp_path: Path, app: str
) -> None:
    root = _django_project(tmp_path)
    command = _tune(
        root, app, "--servers", "gunicorn-sync", "--request", "GET /hello/",
        "--check-body", "hello from mysite",
    )  # fmt: skip
    assert command.startswith("gunicorn mysite.wsgi:application "), command


@pytest.mark.slow
def test_through_lab_paths_mean_what_they_say_where_the_command_was_typed(
    tmp_path: Path,
) -> None:
    root = _django_project(tmp_path)
    result = subprocess.run(
        [str(REPO / "lab"), "tune", "mysite.wsgi:application", "--check-only", "--workers", "1",
         "--servers", "gunicorn-sync", "--request", "GET /hello/", "--check-body", "hello",
         "--results", "r.db", "-f", "json", "-o", "tune.json"],
        cwd=root, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((root / "tune.json").read_text())  # -o too: relative to the user
    assert report["candidates"][0]["command"].startswith("gunicorn mysite.wsgi:application")


FLASK_FACTORY = """
    from flask import Flask


    def create_app(shop="corner", debug=False):
        app = Flask(__name__)

        @app.get("/")
        def index():
            return f"shop {shop}"

        return app
"""


@pytest.mark.slow
def test_a_wsgi_factory_with_arguments_loads_in_gunicorns_own_syntax(tmp_path: Path) -> None:
    _write(tmp_path, {"fact.py": FLASK_FACTORY})
    command = _tune(
        tmp_path, "fact.py:create_app('harbour', debug=False)", "--servers", "gunicorn-sync",
        "--check-body", "shop harbour",
    )  # fmt: skip
    assert command.startswith("gunicorn 'fact:create_app('\"'\"'harbour'\"'\"', debug=False)' ")
    assert served_by(command, tmp_path, "/") == "shop harbour"


@pytest.mark.slow
def test_a_bare_factory_with_the_factory_flag_loads_through_waitress_call(
    tmp_path: Path,
) -> None:
    _write(tmp_path, {"fact.py": FLASK_FACTORY})
    command = _tune(
        tmp_path, "fact.py:create_app", "--factory", "--servers", "waitress", "--threads", "4",
        "--check-body", "shop corner",
    )  # fmt: skip
    assert command.startswith("waitress-serve ") and "--call fact:create_app" in command
    assert served_by(command, tmp_path, "/") == "shop corner"


@pytest.mark.slow
def test_an_asgi_factory_loads_with_uvicorns_factory_flag(tmp_path: Path) -> None:
    _write(tmp_path, {
        "asgi_fact.py": """
            from starlette.applications import Starlette
            from starlette.responses import PlainTextResponse
            from starlette.routing import Route


            def create_app():
                async def hello(request):
                    return PlainTextResponse("hello from a factory")

                return Starlette(routes=[Route("/", hello)])
        """,
    })  # fmt: skip
    command = _tune(
        tmp_path, "asgi_fact.py:create_app()", "--servers", "uvicorn",
        "--check-body", "hello from a factory",
    )  # fmt: skip
    assert command.startswith("uvicorn --factory asgi_fact:create_app ")


@pytest.mark.slow
def test_an_app_py_inside_a_package_keeps_its_relative_imports(tmp_path: Path) -> None:
    _write(tmp_path, {
        "orders/__init__.py": "",
        "orders/views.py": "def status(number):\n    return f'order {number}: shipped'\n",
        "orders/app.py": """
            from flask import Flask

            from .views import status

            app = Flask(__name__)


            @app.get("/orders/<int:number>")
            def order(number):
                return status(number)
        """,
    })  # fmt: skip
    command = _tune(
        tmp_path, "orders/app.py:app", "--servers", "gunicorn-sync",
        "--request", "GET /orders/7", "--check-body", "order 7: shipped",
    )  # fmt: skip
    assert command.startswith("gunicorn orders.app:app ")


@pytest.mark.slow
def test_an_app_that_needs_its_env_file_gets_it_and_so_does_the_deploy_command(
    tmp_path: Path,
) -> None:
    _write(tmp_path, {
        ".env": 'export SHOP_GREETING="hello from the env file"\nSHOP_MODE=quiet\n',
        "answer.py": WSGI_ANSWER,
        "web/envapp.py": """
            import os

            from answer import answer

            app = answer(f"{os.environ['SHOP_GREETING']} ({os.environ['SHOP_MODE']})")
        """,
    })  # fmt: skip
    (tmp_path / "web" / "answer.py").write_text((tmp_path / "answer.py").read_text())
    command = _tune(
        tmp_path, "web/envapp.py:app", "--env-file", ".env", "--servers", "gunicorn-sync",
        "--check-body", "hello from the env file (quiet)",
    )  # fmt: skip
    assert command.startswith("set -a && . ./.env && set +a && cd web && gunicorn envapp:app")
    assert served_by(command, tmp_path, "/") == "hello from the env file (quiet)"


@pytest.mark.slow
def test_an_import_that_fails_inside_a_library_shows_the_librarys_real_message(
    tmp_path: Path,
) -> None:
    _write(tmp_path, {
        "fancylib/__init__.py": """
            try:
                import fancylib_native_part
            except ImportError as exc:
                raise ImportError("fancylib could not load its native part") from exc
        """,
        "shopsite.py": "import fancylib\n\napp = None\n",
    })  # fmt: skip
    result = benchlab("tune", "shopsite.py:app", "--results", "r.db", cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    line = result.stderr
    assert "ModuleNotFoundError: No module named 'fancylib_native_part'" in line, line
    assert f"({tmp_path}/fancylib/__init__.py:2)" in line, line
    assert "raised again as ImportError: fancylib could not load its native part" in line
    assert "--verbose shows the traceback" in line and "Traceback" not in line
    verbose = benchlab("tune", "shopsite.py:app", "--verbose", "--results", "r.db", cwd=tmp_path)
    assert verbose.returncode == 2
    assert "Traceback (most recent call last)" in verbose.stderr
    assert "The above exception was the direct cause" in verbose.stderr


@pytest.mark.slow
def test_a_factory_a_server_cannot_call_with_arguments_is_skipped_with_the_reason(
    tmp_path: Path,
) -> None:
    _write(tmp_path, {"fact.py": FLASK_FACTORY})
    result = benchlab(
        "tune", "fact.py:create_app('harbour')", "--servers", "waitress", "--results", "r.db",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert "no WSGI server to run fact:create_app('harbour')" in result.stderr
    assert "not tried: waitress (its --call calls the factory without arguments)" in (
        result.stderr
    ), result.stderr


SETUP_DB = """
import os

import psycopg

with psycopg.connect(os.environ["DATABASE_URL"]) as db:
    db.execute("CREATE TABLE IF NOT EXISTS greeting (text TEXT)")
    db.execute("INSERT INTO greeting VALUES ('made by --setup')")
"""

READS_DB = """
import os

import psycopg


def app(environ, start_response):
    with psycopg.connect(os.environ["DATABASE_URL"]) as db:
        body = db.execute("SELECT text FROM greeting").fetchone()[0].encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
"""


@pytest.mark.slow
def test_setup_runs_once_on_the_services_before_the_first_candidate(tmp_path: Path) -> None:
    _write(tmp_path, {"setup_db.py": SETUP_DB, "reads.py": READS_DB})
    command = _tune(
        tmp_path, "reads.py:app", "--servers", "gunicorn-sync", "--with", "postgres=DATABASE_URL",
        "--setup", "python setup_db.py", "--check-body", "made by --setup",
    )  # fmt: skip
    assert command.startswith("gunicorn reads:app ")
    # A setup that fails ends the tune with its own last line of output.
    failed = benchlab(
        "tune", "reads.py:app", "--servers", "gunicorn-sync", "--workers", "1", "--check-only",
        "--with", "postgres=DATABASE_URL", "--setup", "echo no migrations here; exit 3",
        "--results", "results.db", cwd=tmp_path, timeout=180,
    )  # fmt: skip
    assert failed.returncode == 2 and "Traceback" not in failed.stderr, failed.stderr
    last = failed.stderr.strip().splitlines()[-1]
    # Its command is not repeated: it may hold a secret (the run's record keeps no copy).
    assert "--setup: exit 3: no migrations here" in last and "echo" not in last, last


PICKY = """
def app(environ, start_response):
    # Answers right only under gunicorn: a server-specific fault a check must find.
    body = b"served" if environ.get("SERVER_SOFTWARE", "").startswith("gunicorn") else b"refused"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
"""


@pytest.mark.slow
def test_a_check_only_names_each_candidate_that_answered_right_and_why_the_others_did_not(
    tmp_path: Path,
) -> None:
    _write(tmp_path, {"picky.py": PICKY})
    result = benchlab(
        "tune", "picky.py:app", "--check-only", "--servers", "gunicorn-sync,waitress",
        "--workers", "1", "--threads", "4", "--check-body", "served", "--results", "r.db",
        cwd=tmp_path, timeout=180,
        # A first use on a machine without Go: a check sends no load, so builds no load tool.
        env={"BENCHLAB_CACHE": str(tmp_path / "cache"), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "building" not in result.stderr and not (tmp_path / "cache" / "bin").exists()
    assert "2 cells, nothing measured" in result.stderr
    assert "Checked picky:app: 1 of 2 candidate(s) answered right" in result.stdout, result.stdout
    assert "  gunicorn-sync w=1: gunicorn picky:app --bind" in result.stdout
    assert "waitress w=1 t=4: verification failed: GET /: body b'refused'" in result.stdout
    assert not list(tmp_path.glob("*.html")), "a check that measured nothing draws no page"
    # Stored as a tune whose cells say what the check found.
    stored = json.loads(
        benchlab("report", "--results", str(tmp_path / "r.db"), "-f", "json").stdout
    )
    assert {c["label"]: c["status"] for c in stored["candidates"]} == {
        "gunicorn-sync w=1": "checked", "waitress w=1 t=4": "failed",
    }  # fmt: skip
