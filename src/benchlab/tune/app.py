"""The user's app as benchlab tune sees it: where it is, what it is, which servers its
Python environment has. Everything is learnt by running the user's own interpreter on
`probe_app.py`; benchlab never imports the app itself nor installs anything into that
environment."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from benchlab.errors import UserError

PROBE = Path(__file__).with_name("probe_app.py")
PROBE_TIMEOUT_S = 120


@dataclass(frozen=True)
class AppSpec:
    """APP as given: path/to/module.py:attr or package.module:attr."""

    text: str
    module: str
    attr: str
    directory: Path  # the working directory the servers run in (the app is importable there)

    @property
    def target(self) -> str:
        return f"{self.module}:{self.attr}"


def parse_app(text: str, cwd: Path) -> AppSpec:
    module_part, sep, attr = text.rpartition(":")
    if not sep or not module_part or not attr:
        raise UserError(
            f"APP '{text}': give the module and the app's name, as path/to/module.py:app or "
            "package.module:app"
        )
    if not attr.isidentifier():
        raise UserError(f"APP '{text}': '{attr}' is not a Python name; the part after ':' is")
    if module_part.endswith(".py") or "/" in module_part:
        path = (cwd / module_part).resolve()
        if path.suffix != ".py":
            path = path.with_suffix(".py")
        if not path.is_file():
            raise UserError(f"APP '{text}': no file {path}; give the path of the module's .py file")
        return AppSpec(text, path.stem, attr, path.parent)
    if not all(part.isidentifier() for part in module_part.split(".")):
        raise UserError(
            f"APP '{text}': '{module_part}' is neither a module path (a.b.c) nor a .py file"
        )
    return AppSpec(text, module_part, attr, cwd.resolve())


@dataclass(frozen=True)
class AppInfo:
    spec: AppSpec
    python: str
    python_version: str
    interface: str  # asgi or wsgi
    servers: dict[str, bool]
    rss_mb: float  # the interpreter with the app imported: a floor for one worker's memory
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path = Path(".")  # where benchlab tune ran: the deploy command starts from there

    @property
    def missing_servers(self) -> list[str]:
        wanted = WSGI_SERVERS if self.interface == "wsgi" else ASGI_SERVERS
        return [name for name in wanted if not self.servers.get(name)]


WSGI_SERVERS = ("gunicorn", "gevent", "waitress", "granian", "uwsgi")
ASGI_SERVERS = ("uvicorn", "gunicorn", "uvicorn-worker", "granian", "hypercorn")
PIP_NAMES = {"uwsgi": "pyuwsgi", "uvicorn-worker": "uvicorn-worker"}


def install_hint(python: str, names: list[str]) -> str:
    packages = " ".join(PIP_NAMES.get(n, n) for n in names)
    return f"{python} -m pip install {packages}"


def probe(
    spec: AppSpec, python: str, env: dict[str, str], interface: str | None, cwd: Path
) -> AppInfo:
    """Run the user's interpreter on the app; every problem is one line naming its fix."""
    executable = Path(python)
    if not executable.exists() or not os.access(executable, os.X_OK):
        raise UserError(f"--python {python}: no such interpreter; give the path of a python")
    try:
        done = subprocess.run(
            [python, str(PROBE), spec.module, spec.attr],
            cwd=spec.directory, env={**os.environ, **env}, capture_output=True, text=True,
            timeout=PROBE_TIMEOUT_S, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise UserError(
            f"APP '{spec.text}': importing it took over {PROBE_TIMEOUT_S} s in {python}; "
            "does the module start something at import?"
        ) from None
    except OSError as exc:
        raise UserError(f"--python {python}: cannot run it ({exc.strerror})") from None
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(
            f"--python {python}: it could not run benchlab's probe (Python 3.8 or newer is "
            f"needed): {last}"
        )
    data = json.loads(lines[-1])
    if "error" in data:
        raise UserError(f"APP '{spec.text}': {data['error']} (run from {spec.directory})")
    found = data.get("interface")
    if interface is None and found is None:
        raise UserError(
            f"APP '{spec.text}': '{spec.attr}' is a {data.get('kind')}, not an ASGI or WSGI "
            "application; point at the app object (or force it with --interface asgi|wsgi)"
        )
    info = AppInfo(
        spec=spec,
        python=python,
        python_version=data["python"],
        interface=interface or found,
        servers=data["servers"],
        rss_mb=float(data.get("rss_mb") or 0.0),
        env=env,
        cwd=cwd,
    )
    return info
