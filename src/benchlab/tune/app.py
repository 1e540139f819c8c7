"""The user's app as benchlab tune sees it: where it is, what it is, which servers its
Python environment has. Everything is learnt by running the user's own interpreter on the
probe (probe_app.py, passed as `-c` code so that nothing of benchlab's is on its path);
benchlab never imports the app itself nor installs anything into that environment.

APP is found the way its own server would find it: `package.module:app` from the directory
the command was typed in, `path/to/module.py:app` by its file (a file inside a package is
imported by its dotted name from the first directory above without an `__init__.py`, as
pytest finds a rootdir), and `module:create_app(...)` or `--factory` for an application
factory, called with literal arguments only, as gunicorn accepts them.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchlab.core.environment import VIRTUAL_ENV
from benchlab.core.errors import UserError
from benchlab.stacks.servers import tune_packages, tune_servers
from benchlab.system import users
from benchlab.system.process import environment
from benchlab.system.trusted_path import opened_to_others, owners, refusal, user_name, walk
from benchlab.system.users import STACK_USER_VARIABLE

PROBE = Path(__file__).with_name("probe_app.py")
PROBE_TIMEOUT_S = 120


@dataclass(frozen=True)
class AppSpec:
    """APP as given, resolved: the module to import from `directory`, the attribute, and
    the factory call's argument text (`None`: the attribute is the app itself)."""

    text: str
    module: str
    attr: str
    directory: Path  # the app's root: first on its path, the servers' working directory
    call: str | None = None  # a factory's arguments as written: "()", "('prod', debug=False)"
    file: Path | None = None  # the module's file, when APP names it (path/to/module.py:app)

    @property
    def target(self) -> str:
        """module:attr, the form every server takes for the app object itself."""
        return f"{self.module}:{self.attr}"

    @property
    def factory_target(self) -> str:
        """module:attr(args), the form gunicorn and hypercorn take for a factory."""
        return f"{self.target}{self.call or ''}"


def _attribute(text: str, attr_text: str, factory: bool) -> tuple[str, str | None]:
    """The attribute's name and, for a factory, its call's argument text."""
    try:
        expression = ast.parse(attr_text.strip(), mode="eval").body
    except SyntaxError:
        expression = None
    if isinstance(expression, ast.Name):
        return expression.id, "()" if factory else None
    if isinstance(expression, ast.Call) and isinstance(expression.func, ast.Name):
        try:
            for argument in [*expression.args, *(k.value for k in expression.keywords)]:
                ast.literal_eval(argument)
        except ValueError:
            raise UserError(
                f"APP '{text}': the factory's arguments must be literals (strings, numbers, "
                "True/False/None, lists, dicts), as gunicorn accepts them"
            ) from None
        if any(k.arg is None for k in expression.keywords):
            raise UserError(f"APP '{text}': '**' is not allowed in the factory's arguments")
        return expression.func.id, attr_text.strip()[len(expression.func.id) :].strip()
    raise UserError(
        f"APP '{text}': '{attr_text}' is neither a Python name (app) nor a factory call "
        "(create_app() or create_app('prod')); the part after ':' is"
    )


def package_root(path: Path) -> tuple[Path, str]:
    """The directory to import a .py file from and its dotted name there: upwards from the
    file, every directory with an `__init__.py` is a package of its name."""
    parts = [path.stem]
    directory = path.parent
    while (directory / "__init__.py").is_file() and directory.parent != directory:
        parts.insert(0, directory.name)
        directory = directory.parent
    return directory, ".".join(parts)


def parse_app(text: str, cwd: Path, factory: bool = False) -> AppSpec:
    module_part, sep, attr_text = text.partition(":")
    if not sep or not module_part or not attr_text:
        raise UserError(
            f"APP '{text}': give the module and the app's name, as path/to/module.py:app, "
            "package.module:app or package.module:create_app()"
        )
    attr, call = _attribute(text, attr_text, factory)
    if module_part.endswith(".py") or "/" in module_part:
        path = (cwd / module_part).resolve()
        if path.suffix != ".py":
            path = path.with_suffix(".py")
        if not path.is_file():
            raise UserError(f"APP '{text}': no file {path}; give the path of the module's .py file")
        directory, module = package_root(path)
        return AppSpec(text, module, attr, directory, call, path)
    if not all(part.isidentifier() for part in module_part.split(".")):
        raise UserError(
            f"APP '{text}': '{module_part}' is neither a module path (a.b.c) nor a .py file"
        )
    return AppSpec(text, module_part, attr, cwd.resolve(), call)


@dataclass(frozen=True)
class AppInfo:
    spec: AppSpec
    python: str
    python_version: str
    interface: str  # asgi or wsgi
    servers: dict[str, bool]
    rss_mb: float  # the interpreter with the app imported: a floor for one worker's memory
    load_s: float = 0.0  # the probe's time: an interpreter started, the app imported
    env: dict[str, str] = field(default_factory=dict)  # --env
    cwd: Path = Path(".")  # where benchlab tune ran: the deploy command starts from there
    env_file: Path | None = None  # --env-file: the deploy command reads it too ...
    env_from_file: dict[str, str] = field(default_factory=dict)  # ... and what it holds
    # The app environment's versions of its servers and of its framework: what defines a cell.
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def missing_servers(self) -> list[str]:
        wanted = WSGI_SERVERS if self.interface == "wsgi" else ASGI_SERVERS
        return [name for name in wanted if not self.servers.get(name)]


WSGI_SERVERS = tune_servers("wsgi")
ASGI_SERVERS = tune_servers("asgi")
# What the probe looks for (by import) and the distributions pip installs, where they differ.
PROBED = {package.name: package.module for package in tune_packages()}
PIP_NAMES = {p.name: p.distribution for p in tune_packages() if p.distribution != p.name}


def user_environment(env: Mapping[str, str]) -> dict[str, str]:
    """What the user's app sees: the user's environment without benchlab's own variables,
    and what the user asked for (--env, --env-file) on top."""
    return {**environment(without_benchlab=True), **env}


def run_app_python(
    user: str | None, argv: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """`argv` (the app's interpreter) run to its end with the app's environment: as benchlab
    with the user's environment and `env` on top, or as `user` with `env` only (and none of
    root's, see users.py); stdin closed, output captured as text."""
    if user is None:
        return subprocess.run(
            argv, cwd=cwd, env=user_environment(env), capture_output=True, text=True,
            stdin=subprocess.DEVNULL, timeout=timeout, check=False,
        )  # fmt: skip
    done = users.run(user, argv, cwd=cwd, env=env, timeout=timeout)
    out, err = (part.decode(errors="replace") for part in (done.stdout, done.stderr))
    return subprocess.CompletedProcess(done.args, done.returncode, out, err)


# What marks a project's root: the search for its virtualenv goes no higher.
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def app_python(app: str, cwd: Path, given: str | None, factory: bool) -> tuple[str, str]:
    """The interpreter of the app's own environment, and why it is the one: --python; the
    active virtualenv; a .venv or venv beside the app or up to its project's root; else
    benchlab's own (an app of benchlab's examples, or one whose packages benchlab has).

    The search upwards stays inside what the app's owner (or root) holds: it stops at a
    directory of another user's, or one others can write (/tmp: anyone can put a .venv
    there), and says where it stopped. Whether the interpreter found may run as the user the
    app runs as is `app_owner`'s to decide."""
    if given:
        return given, "--python"
    # A venv is there when its python is, even where it leads this user may not go (a link
    # into another's home): check_interpreter says so. Path.exists would raise there.
    active = os.environ.get(VIRTUAL_ENV)
    if active and os.path.lexists(Path(active) / "bin" / "python"):
        return str(Path(active) / "bin" / "python"), "the active virtualenv, $VIRTUAL_ENV"
    try:
        start = parse_app(app, cwd, factory).directory
    except UserError:
        start = cwd.resolve()  # the app's own mistake is told by the probe, in its words
    own = "benchlab's own: no virtualenv active or beside the app"
    holders = frozenset({0, os.geteuid(), _uid(start)})
    for directory in (start, *start.parents):
        info = os.stat(directory)
        if info.st_uid not in holders or opened_to_others(info):
            held = (
                "other users can write"
                if opened_to_others(info)
                else (f"{user_name(info.st_uid)}'s")
            )
            return sys.executable, f"{own} (the search stopped at {directory}: {held})"
        for name in (".venv", "venv"):
            python = directory / name / "bin" / "python"
            if os.path.lexists(python):
                return str(python), f"the virtualenv {directory / name}, found from the app"
        if any(os.path.lexists(directory / marker) for marker in PROJECT_MARKERS):
            break
    return sys.executable, own


def _uid(path: Path) -> int:
    try:
        return path.stat().st_uid
    except OSError:
        return os.geteuid()


def app_path(python: str) -> str:
    """PATH with the app's interpreter's directory first, as an activated venv has it; then
    the user's PATH, or the system's when benchlab is root (root's own is none of the app's
    business, and may name directories its user cannot reach)."""
    rest = users.PLAIN_PATH if os.geteuid() == 0 else os.environ.get("PATH", os.defpath)
    return f"{Path(python).parent}{os.pathsep}{rest}"


def install_hint(python: str, names: list[str]) -> str:
    packages = " ".join(PIP_NAMES.get(n, n) for n in names)
    return f"{python} -m pip install {packages}"


class ProbeFailed(UserError):
    """The app could not be imported; `traceback` is the whole chain, for --verbose."""

    def __init__(self, message: str, traceback: str) -> None:
        super().__init__(message)
        self.traceback = traceback


def app_owner(spec: AppSpec, python: str, cwd: Path) -> str | None:
    """Whom the app runs as when benchlab is root: the owner of its file and of its
    directory — as its owner runs it in production, writing where it writes (a SQLite file,
    uploads, a key beside it) — root included; None when benchlab is not root (it runs as
    benchlab's own user). Refused in one line when the two owners differ, when a directory
    on the way to the app, or to the directory tune was typed in (its deploy command and
    --setup start there), is held by someone else or writable by others (but /tmp's kind:
    sticky and root's), or when the interpreter is not held by root or that owner alone."""
    if os.geteuid() != 0:
        return None
    fix = f"run benchlab as the app's user, or set {STACK_USER_VARIABLE}=NAME to choose"
    if os.environ.get(STACK_USER_VARIABLE):
        owner = users.stack_user() or "root"  # the user named (checked there)
    else:
        files = [spec.file] if spec.file is not None else []
        runs = "an app as the one user who owns its file and its directory"
        owner = one_owner(spec.directory, files, f"APP '{spec.text}'", runs, fix)
    places = ((spec.directory, "the app's directory"), (cwd, "the directory tune runs in"))
    for path, what in places:
        found = walk(path, owners(owner))
        if found.step is not None:
            raise refusal(
                path, found.step, f"APP '{spec.text}': {what}",
                f"benchlab, as root, runs it as {owner} (the owner of the app's files): "
                f"move the app where only {owner} and root can change it, or {fix}", owner,
            )  # fmt: skip
    check_interpreter(python)  # one that is missing is said as such, not as untrusted
    found = walk(Path(python), owners(owner))
    if found.step is not None:
        raise refusal(
            Path(python), found.step, "the app's interpreter",
            f"benchlab, as root, runs the app as {owner} and so runs only an interpreter "
            f"root or {owner} alone holds: give another with --python (benchlab's own is "
            f"{sys.executable}), or {fix}", owner,
        )  # fmt: skip
    return owner


def check_interpreter(python: str) -> None:
    """An interpreter that is not there, not executable, or that this user cannot reach
    (it, or where its links lead), refused in one line."""
    missing = f"--python {python}: no such interpreter; give the path of a python"
    try:
        Path(python).stat()  # through its links, as running it would go
    except FileNotFoundError:
        raise UserError(missing) from None
    except OSError as exc:
        raise UserError(
            f"{python}: the app's interpreter cannot be reached ({exc.strerror}): it or a "
            "link of it leads where this user may not go; give one it can run with --python"
        ) from None
    if not os.access(python, os.X_OK):
        raise UserError(missing)


def one_owner(directory: Path, files: Sequence[Path], what: str, runs: str, fix: str) -> str:
    """The one user who owns `directory` and `files` (whom root runs `runs` as: "an app as
    the one user who owns its file and its directory"); a uid with no name here, or two
    owners, refused in one line that starts with `what`."""
    owned = {directory: directory.stat().st_uid} | {path: path.stat().st_uid for path in files}
    if len(set(owned.values())) > 1:
        shown = " and ".join(f"{path} is {user_name(uid)}'s" for path, uid in owned.items())
        raise UserError(
            f"{what}: {shown}; benchlab, as root, runs {runs}: give them to that user (chown), "
            f"or {fix}"
        )
    name = user_name(owned[directory])
    if name.startswith("uid "):
        raise UserError(
            f"{what}: {directory} belongs to {name}, which has no name on this machine, and "
            f"benchlab, as root, runs {runs}: chown it, or {fix}"
        )
    return name


def _check_reachable(spec: AppSpec, python: str, user: str) -> None:
    """Root runs the app as `user`: it must reach the app's directory and its interpreter."""
    for path, what in ((spec.directory, "the app's directory"), (Path(python), "--python")):
        test = ["test", "-r", str(path), "-a", "-x", str(path)]
        if users.run(user, test, timeout=PROBE_TIMEOUT_S).returncode != 0:
            raise UserError(
                f"APP '{spec.text}': benchlab is root and runs your app as {user} (the owner of "
                f"its files), who cannot reach {what} {path}: run "
                f"benchlab as the app's user, give the app's directory to the user it should "
                f"run as, or set {STACK_USER_VARIABLE}=root"
            )


def _permission_hint(error: str, user: str | None) -> str:
    """What to do when the app may not read or write a path it needs, as the user it runs as."""
    if "PermissionError" not in error or user is None:
        return ""
    return (
        f"; benchlab is root and runs your app as {user}, the owner of its files, who may not "
        f"read or write that path: give it to {user} (chown), run benchlab as the user the app "
        f"runs as in production, or set {STACK_USER_VARIABLE}=NAME (root: as root)"
    )


def _module_hint(error: str, python: str) -> str:
    """A module the app needs is not in the environment it was imported in."""
    if "No module named" not in error:
        return ""
    return (
        f"; it was imported by {python}: if your app has an environment of its own, give its "
        "interpreter with --python (e.g. --python .venv/bin/python), or install the module there"
    )


def _no_probe(python: str, user: str | None, stderr: str) -> UserError:
    last = (stderr.strip().splitlines() or ["no output"])[-1]
    who = (
        f" as {user} (benchlab is root and runs your app as its files' owner;"
        f" {STACK_USER_VARIABLE}=NAME chooses)"
        if user
        else ""
    )
    return UserError(
        f"--python {python}: it could not run benchlab's probe{who} (Python 3.8 or newer "
        f"is needed, and the app readable): {last}"
    )


def probe(
    spec: AppSpec,
    python: str,
    env: dict[str, str],
    interface: str | None,
    cwd: Path,
    env_file: tuple[Path, dict[str, str]] | None = None,
    user: str | None = None,
    services: dict[str, str] | None = None,
) -> AppInfo:
    """Run the user's interpreter on the app, as `user` (who its servers will run as), with
    the environment its candidates will get; every problem is one line naming its fix.
    `env`: --env; `env_file`: --env-file's path and values (--env wins over them);
    `services`: the --with services' addresses, fixed before they start."""
    from_file = env_file[1] if env_file else {}
    check_interpreter(python)
    if user is not None:
        _check_reachable(spec, python, user)
    request = json.dumps(
        {
            "module": spec.module, "attr": spec.attr, "call": spec.call, "servers": PROBED,
            "distributions": PIP_NAMES,
        }
    )  # fmt: skip
    began = time.monotonic()
    try:
        done = run_app_python(
            user, [python, "-c", PROBE.read_text(), request], spec.directory,
            {**from_file, **env, **(services or {})}, PROBE_TIMEOUT_S,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise UserError(
            f"APP '{spec.text}': importing it took over {PROBE_TIMEOUT_S} s in {python}; "
            "does the module start something at import?"
        ) from None
    except OSError as exc:
        raise UserError(f"--python {python}: cannot run it ({exc.strerror})") from None
    lines = [line for line in done.stdout.splitlines() if line.startswith('{"probe"')]
    if not lines:
        raise _no_probe(python, user, done.stderr)
    data = json.loads(lines[-1])
    if "error" in data:
        raise ProbeFailed(
            f"APP '{spec.text}': {data['error']} (imported from {spec.directory})"
            + _permission_hint(data["error"], user)
            + _module_hint(data["error"], python),
            data.get("traceback", ""),
        )
    found = data.get("interface")
    if interface is None and found is None:
        what = "returned" if spec.call is not None else "is"
        hint = (
            ""
            if spec.call is not None or data.get("kind") != "function"
            else "; if it builds the app, call it as a factory: "
            f"'{spec.module}:{spec.attr}()' or --factory"
        )
        raise UserError(
            f"APP '{spec.text}': '{spec.factory_target}' {what} a {data.get('kind')}, not an "
            f"ASGI or WSGI application; point at the app object (or force it with --interface "
            f"asgi|wsgi){hint}"
        )
    return AppInfo(
        spec=spec,
        python=python,
        python_version=data["python"],
        interface=interface or found,
        servers=data["servers"],
        rss_mb=float(data.get("rss_mb") or 0.0),
        load_s=time.monotonic() - began,
        env=env,
        cwd=cwd,
        env_file=env_file[0] if env_file else None,
        env_from_file=from_file,
        versions=data.get("versions") or {},
    )
