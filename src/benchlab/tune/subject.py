"""What a tune measures (DESIGN: subject), in three kinds behind one interface: a Python app
served by each candidate server (this module's `PythonApp`), a server started from a
command template over a grid of its knobs (command.py), or an endpoint already running
(endpoint.py). Each gives its candidates, the stacks that start them (an endpoint's starts
nothing), whom they run as and where the load goes; the first pass, the capacity search,
the proof, the store's rows and the reports are the same for all three (driver.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from benchlab.analysis.tune_options import SubjectKind
from benchlab.core.errors import UserError
from benchlab.hosts import machine
from benchlab.stacks import Stack
from benchlab.system.cpu_account import Limits
from benchlab.system.users import stack_user
from benchlab.tune import app as app_module
from benchlab.tune.app import AppInfo, AppSpec
from benchlab.tune.candidates import Candidate, candidates, catalogue, skipped_servers


@dataclass(frozen=True)
class Described:
    """What a subject adds to the tune's stored options (TuneOptions)."""

    given: str  # as the user gave it
    subject: str  # as the answer names it
    directory: str
    interface: str
    python: str = ""
    python_version: str = ""
    missing_servers: tuple[str, ...] = ()
    app_commit: str | None = None
    app_versions: dict[str, str] = field(default_factory=dict)
    unmeasured: str | None = None  # why its CPU and memory are not measured


class Subject(Protocol):
    """One kind of thing a tune measures."""

    @property
    def kind(self) -> SubjectKind: ...

    @property
    def shown(self) -> str:
        """The subject as the answer names it."""
        ...

    @property
    def owner(self) -> str | None:
        """Whom its candidates run as when benchlab is root: the owner of its files."""
        ...

    @property
    def address(self) -> str | None:
        """Where its load goes (an endpoint's host); None: where benchlab starts it."""
        ...

    @property
    def checks_slow_clients(self) -> bool:
        """Whether the answer is checked beside slow clients (a server benchlab starts)."""
        ...

    def candidates(self, cores: int, memory_mb: float | None) -> list[Candidate]:
        """Its candidates, for `cores` server cores and `memory_mb` free (None: a memory
        limit decides); one line and exit 2 when there is none."""
        ...

    def catalogue(self, limits: Limits | None) -> dict[str, Stack]:
        """The stacks that start its candidates (and replay their printed commands)."""
        ...

    def announce(self, say: Callable[[str], None], runs_as: str) -> None:
        """What was found of it, before the plan."""
        ...

    def described(self) -> Described: ...


@dataclass(frozen=True)
class PythonApp:
    """An ASGI/WSGI app, served by every server its environment has (candidates.py)."""

    spec: AppSpec
    info: AppInfo
    servers: list[str] | None = None  # --servers
    workers: list[int] | None = None
    threads: list[int] | None = None
    greenlets: list[int] | None = None
    python_source: str = "--python"  # why `info.python` is the app's interpreter
    # Whom it runs as when benchlab is root (app.app_owner, checked as it was found); None
    # when benchlab is not root.
    runs_as: str | None = None

    @property
    def kind(self) -> SubjectKind:
        return SubjectKind.PYTHON_APP

    @property
    def shown(self) -> str:
        return self.spec.factory_target

    @property
    def owner(self) -> str | None:
        return self.runs_as

    @property
    def address(self) -> str | None:
        return None

    @property
    def checks_slow_clients(self) -> bool:
        return True

    def candidates(self, cores: int, memory_mb: float | None) -> list[Candidate]:
        found = candidates(
            self.info, cores, memory_mb, self.servers, self.workers, self.threads, self.greenlets
        )
        if not found:
            raise self._no_server()
        return found

    def catalogue(self, limits: Limits | None) -> dict[str, Stack]:
        return catalogue(self.info, limits)

    def announce(self, say: Callable[[str], None], runs_as: str) -> None:
        spec, info = self.spec, self.info
        say(
            f"{spec.factory_target}: {info.interface.upper()} app, Python {info.python_version} "
            f"({info.python}: {self.python_source}), imported from {spec.directory}, run as "
            f"{runs_as}; servers "
            "here: " + ", ".join(n for n, ok in info.servers.items() if ok and n != "uvloop")
        )
        missing = info.missing_servers
        if missing:
            say(f"not in that environment (not tried): {', '.join(missing)}; to add them: "
                f"{app_module.install_hint(info.python, missing)}")  # fmt: skip
        for server, why in skipped_servers(info).items():
            say(f"not tried: {server}: {why}")

    def described(self) -> Described:
        return Described(
            given=self.spec.text, subject=self.spec.factory_target,
            directory=str(self.spec.directory), interface=self.info.interface,
            python=self.info.python, python_version=self.info.python_version,
            missing_servers=tuple(self.info.missing_servers),
            # The code under test is the app's: its repository's commit and dirty state.
            app_commit=machine.git_commit(self.spec.directory, stack_user(self.runs_as)),
            app_versions=self.info.versions,
        )  # fmt: skip

    def _no_server(self) -> UserError:
        info, spec = self.info, self.spec
        wanted = app_module.WSGI_SERVERS if info.interface == "wsgi" else app_module.ASGI_SERVERS
        narrowed = f"; --servers {','.join(self.servers)}" if self.servers else ""
        skipped = "".join(f"; not tried: {s} ({why})" for s, why in skipped_servers(info).items())
        return UserError(
            f"--python {info.python}: no {info.interface.upper()} server to run "
            f"{spec.factory_target} in that environment (looked for {', '.join(wanted)}"
            f"{narrowed}{skipped}); add one: "
            f"{app_module.install_hint(info.python, info.missing_servers[:2] or ['gunicorn'])}"
        )
