"""What a tune was asked and what it tuned, stored with its run (`RunOptions.tune`) and read
back by its reports, its history and a resume: one typed object, one reader for every store
(`from_json`, which reads the untyped dict stored before it, too)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from benchlab.analysis.target import Target
from benchlab.core import figures as F


class SubjectKind(StrEnum):
    """What a tune measures (DESIGN: subject)."""

    PYTHON_APP = "python-app"  # an ASGI/WSGI app, served by each candidate server
    COMMAND = "command"  # a server started from a command template, over a grid of its knobs
    ENDPOINT = "endpoint"  # a server already running, by its URL: nothing started

    @property
    def words(self) -> str:
        return {
            SubjectKind.PYTHON_APP: "a Python app",
            SubjectKind.COMMAND: "a server started by a command",
            SubjectKind.ENDPOINT: "an endpoint already running",
        }[self]


@dataclass(frozen=True)
class TuneOptions:
    """A tune's options, stored with its run."""

    key: str = ""  # what makes two tunes the same search (a resume continues only its own)
    subject_kind: SubjectKind = SubjectKind.PYTHON_APP
    # The subject as the user gave it: the APP argument, the command template, the URL.
    given: str = ""
    # The subject as the answer names it: module:attr(args), the template, the URL.
    subject: str = ""
    directory: str = ""  # where the app is imported from, or the command runs
    interface: str = ""  # asgi, wsgi; "http" for a command or an endpoint
    python: str = ""  # a Python app's interpreter
    python_version: str = ""
    slo_p99_ms: float = 0.0
    requests: tuple[str, ...] = ()  # as the user wrote them
    budget_min: float = 0.0
    rate_unit: str = F.REQ_S  # what its rates count a second (a WebSocket echo's: messages)
    missing_servers: tuple[str, ...] = ()
    quick: bool = False
    check_only: bool = False
    setup: str | None = None  # masked: whether a --setup command ran (it may hold secrets)
    reset_between: str | None = None  # masked, as --setup
    deploy_target: Target = field(default_factory=Target)  # what the answer is for
    rate: float | None = None  # --rate: the load to hold at the least cost
    env: tuple[str, ...] = ()  # the --env keys (never their values)
    env_file_keys: tuple[str, ...] = ()
    # The code under test: its repository's commit and dirty state, and its environment's
    # server and framework versions.
    app_commit: str | None = None
    app_versions: dict[str, str] = field(default_factory=dict)
    # Why the subject's CPU and memory were not measured (an endpoint nothing watched);
    # None: they were.
    unmeasured: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TuneOptions:
        """A stored tune's options, whatever version stored them: a key it lacks takes the
        default, a key this version does not know is left out; before subjects, the app's
        `module:attr` was stored as `target`."""
        known = {f.name for f in dataclasses.fields(cls)}
        given = {k: v for k, v in data.items() if k in known}
        if "subject" not in data and "target" in data:
            given["subject"] = str(data["target"])
        if "given" not in data and "app" in data:
            given["given"] = str(data["app"])
        for name in ("requests", "missing_servers", "env", "env_file_keys"):
            if name in given:
                given[name] = tuple(given[name] or ())
        given["subject_kind"] = SubjectKind(given.get("subject_kind") or SubjectKind.PYTHON_APP)
        given["deploy_target"] = Target(**(given.get("deploy_target") or {}))
        given["app_versions"] = dict(given.get("app_versions") or {})
        return cls(**given)
