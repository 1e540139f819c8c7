"""What a stack is: how to check it can run here, build it, and the command that launches it."""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

APPS_DIR = Path(__file__).resolve().parent.parent / "apps"
LISTEN_BACKLOG = 2048  # the same for every server that lets us set it (DESIGN: fair settings)
ALL_SCENARIOS = ("plaintext", "json", "db", "db-delay", "cache", "sleep")


@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str = ""
    fix: str = ""


@dataclass(frozen=True)
class LaunchContext:
    """Everything a stack needs to build its command line."""

    host: str
    port: int
    workdir: Path
    server_cores: tuple[int, ...]
    workers: int


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None


@dataclass(frozen=True)
class Stack:
    name: str
    framework: str
    server: str
    worker_model: str
    scenarios: tuple[str, ...]
    launch: Callable[[LaunchContext], Launch]
    flavours: tuple[str, ...] = ()  # driver flavours (sync, async); the first is the default
    needs_modules: tuple[str, ...] = ()
    needs_programs: tuple[str, ...] = ()
    fix: str = "run ./lab setup"
    note: str = ""
    build: Callable[[], None] | None = None
    start_timeout: float = 30.0

    def availability(self) -> Availability:
        for program in self.needs_programs:
            if shutil.which(program) is None:
                return Availability(False, f"'{program}' is not installed", self.fix)
        for module in self.needs_modules:
            if importlib.util.find_spec(module) is None:
                return Availability(
                    False, f"Python package '{module}' is missing", "run ./lab setup"
                )
        return Availability(True)

    def label(self, workers: int, flavour: str | None = None) -> str:
        note = f" ({self.note})" if self.note else ""
        shown = f"[{flavour}]" if flavour else ""
        return f"{self.name}{shown} w={workers}{note}"
