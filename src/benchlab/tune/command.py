"""A server started by a command (`tune --command 'TEMPLATE' --grid knob=v1,v2`): any
language, any server; each point of the grid is a candidate, its knobs put in the
template's `{knob}` placeholders.

The port it must answer on is benchlab's to choose (a free one each start): the template's
`{port}` placeholder gets it, and so does `PORT` in its environment (the convention of
Node's, Go's and most platforms' servers), so a template without `{port}` must read
`$PORT`. `{host}` is the address benchlab loads it on (127.0.0.1). A literal brace is
written twice (`{{`, `}}`), as in Python's str.format.

Each candidate runs as a Python app's does: `bash -c` its command in the directory tune was
typed in, its own session, as the owner of that directory when benchlab is root (checked as
an app's owner is: `command_owner`), pinned to
the server cores in a control group of its own (its CPU and memory counted there, and
`--cpus`/`--memory` enforced there), stopped with its whole session. What is printed is
the command that deploys it: the template with its knobs and port 8000 (`PORT=8000` first
when the template reads `$PORT`), and the proof replays exactly that, on benchlab's port.
"""

from __future__ import annotations

import itertools
import os
import shlex
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchlab.analysis.tune_options import SubjectKind
from benchlab.core.errors import UserError
from benchlab.hosts import machine
from benchlab.runner.launch import bounded_start_s
from benchlab.stacks import Launch, LaunchContext, Stack
from benchlab.system import users
from benchlab.system.cpu_account import Limits
from benchlab.system.trusted_path import owners, refusal, walk
from benchlab.system.users import STACK_USER_VARIABLE, stack_user
from benchlab.tune.app import one_owner
from benchlab.tune.candidates import DEPLOY_PORT, SCENARIO, START_CEILING_S, Candidate
from benchlab.tune.subject import Described
from benchlab.tune.user_env import deploy_assignments

PORT_VARIABLE = "PORT"
OWN_FIELDS = ("port", "host")
MAX_CANDIDATES = 32
# A command's start: its runtime, its imports, its own set-up; bounded as a Python app's.
TYPICAL_START_S = 2.0


def parse_grid(given: list[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """--grid knob=v1,v2 (repeatable): each knob and its values, in the order given."""
    found: dict[str, tuple[str, ...]] = {}
    for text in given:
        name, sep, values = text.partition("=")
        name = name.strip()
        parts = tuple(v.strip() for v in values.split(",") if v.strip())
        if not sep or not name.isidentifier() or not parts:
            raise UserError(
                f"--grid {text!r}: give a knob and its values, e.g. --grid workers=1,2,4 (the "
                "knob a name the template holds as {workers})"
            )
        if name in OWN_FIELDS:
            raise UserError(f"--grid {text!r}: {{{name}}} is benchlab's to fill; name it otherwise")
        if name in found:
            raise UserError(f"--grid {name}: given twice; give its values once, comma-separated")
        found[name] = parts
    return tuple(found.items())


def _fields(template: str) -> list[str]:
    try:
        return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise UserError(
            f"--command {template!r}: {exc}; a literal brace is written twice ({{{{ or }}}})"
        ) from None


def check_template(template: str, grid: tuple[tuple[str, tuple[str, ...]], ...]) -> None:
    """Every placeholder is a knob of the grid or benchlab's own, and every knob is used."""
    if not template.strip():
        raise UserError("--command '': give the command that starts your server")
    knobs = {name for name, _ in grid}
    for name in _fields(template):
        if name not in knobs and name not in OWN_FIELDS:
            knobs_text = ", ".join(sorted(knobs)) or "none given"
            raise UserError(
                f"--command: {{{name}}} is neither a knob of --grid ({knobs_text}) "
                "nor {port} or {host}; add --grid "
                f"{name or 'KNOB'}=VALUES, or write a literal brace twice ({{{{ }}}})"
            )
    unused = knobs - set(_fields(template))
    if unused:
        name = sorted(unused)[0]
        raise UserError(
            f"--grid {name}: the template has no {{{name}}}; put it where its value goes"
        )
    points = 1
    for _, values in grid:
        points *= len(values)
    if points > MAX_CANDIDATES:
        raise UserError(
            f"--grid: {points} candidates; at most {MAX_CANDIDATES} (each is launched and "
            "measured): give fewer values"
        )


def _size(value: str, index: int) -> float:
    """A knob's value as what it gives the server: its number, or its place in the grid."""
    try:
        return float(value)
    except ValueError:
        return float(index)


@dataclass(frozen=True)
class CommandTemplate:
    """A server started from `template`, one candidate per point of `grid`."""

    template: str
    grid: tuple[tuple[str, tuple[str, ...]], ...]
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)  # --env
    env_file: Path | None = None  # --env-file: the deploy command reads it too ...
    env_from_file: dict[str, str] = field(default_factory=dict)  # ... and what it holds
    # Whom it runs as when benchlab is root (command_owner, checked as it was prepared); None
    # when benchlab is not root.
    runs_as: str | None = None

    @property
    def kind(self) -> SubjectKind:
        return SubjectKind.COMMAND

    @property
    def shown(self) -> str:
        return self.template

    @property
    def owner(self) -> str | None:
        return self.runs_as

    @property
    def address(self) -> str | None:
        return None

    @property
    def checks_slow_clients(self) -> bool:
        return True

    def points(self) -> list[tuple[tuple[str, str], ...]]:
        names = [name for name, _ in self.grid]
        return [tuple(zip(names, values, strict=True)) for values in
                itertools.product(*(values for _, values in self.grid))]  # fmt: skip

    def candidates(self, cores: int, memory_mb: float | None) -> list[Candidate]:
        found = []
        for point in self.points():
            name = _name(point)
            size = tuple(_size(value, dict(self.grid)[knob].index(value)) for knob, value in point)
            found.append(Candidate(name, name, size=size))
        return found

    def filled(self, knobs: tuple[tuple[str, str], ...], host: str, port: int) -> str:
        return self.template.format(**dict(knobs), host=host, port=port)

    def deploy(self, knobs: tuple[tuple[str, str], ...], host: str, port: int) -> str:
        """The command that deploys the candidate, run from where tune ran: the --env-file
        read first (the shell's `set -a`), the --env values by name, PORT when the template
        reads it from there."""
        steps = []
        if self.env_file is not None:
            env_file = shlex.quote(_relative(self.env_file, self.cwd))
            steps.append(f"set -a && . {'./' if '/' not in env_file else ''}{env_file} && set +a")
        uses_port = "port" in _fields(self.template)
        assignments = " ".join(
            filter(None, (deploy_assignments(self.env), "" if uses_port else f"PORT={port}"))
        )
        command = self.filled(knobs, host, port)
        steps.append(f"{assignments} {command}" if assignments else command)
        return " && ".join(steps)

    def stack(self, knobs: tuple[tuple[str, str], ...], limits: Limits | None) -> Stack:
        def launch(ctx: LaunchContext) -> Launch:
            # The --env values in its environment, where the command's `KEY="$KEY"` reads
            # them (never in its argv, which every local user can read); PORT as well.
            env = {**self.env, PORT_VARIABLE: str(ctx.port)}
            return Launch(
                argv=["bash", "-c", self.deploy(knobs, ctx.host, ctx.port)], env=env, cwd=self.cwd
            )

        name = _name(knobs)
        return Stack(
            name=name, framework=f"your server ({self.template})", server="your command",
            worker_model=", ".join(f"{k}={v}" for k, v in knobs) or "as the command starts it",
            scenarios=(SCENARIO,), launch=launch, fixed_workers=True,
            start_timeout=bounded_start_s(TYPICAL_START_S, START_CEILING_S),
            deploy=lambda _workers, _threads: self.deploy(knobs, "0.0.0.0", DEPLOY_PORT),
            isolated_env=True, limits=limits, shown_as=name,
        )  # fmt: skip

    def catalogue(self, limits: Limits | None) -> dict[str, Stack]:
        return {_name(point): self.stack(point, limits) for point in self.points()}

    def announce(self, say: Callable[[str], None], runs_as: str) -> None:
        grid = "; ".join(f"{name} = {', '.join(values)}" for name, values in self.grid)
        say(
            f"your command: {self.template}; run as {runs_as} in {self.cwd}, told its port by "
            f"{{port}} and ${PORT_VARIABLE}" + (f"; its grid: {grid}" if grid else "")
        )

    def described(self) -> Described:
        return Described(
            given=self.template, subject=self.template, directory=str(self.cwd),
            interface="http", app_commit=machine.git_commit(self.cwd, stack_user(self.owner)),
        )  # fmt: skip


def named_files(
    template: str, grid: tuple[tuple[str, tuple[str, ...]], ...], cwd: Path
) -> list[Path]:
    """The files a template names, as every point of its grid fills it: each word of the
    shell's (and each value of a `KEY=VALUE` word) that is a file, from `cwd` or absolute
    (`./server`, `bin/app.js`, `/opt/app/server`)."""
    found: dict[Path, None] = {}
    points = [dict(zip([k for k, _ in grid], values, strict=True))
              for values in itertools.product(*(v for _, v in grid))]  # fmt: skip
    for knobs in points:
        try:
            words = shlex.split(template.format(**knobs, host="127.0.0.1", port=DEPLOY_PORT))
        except ValueError:  # an unbalanced quote: bash will say so when it starts
            continue
        for word in words:
            for text in (word, word.partition("=")[2]):
                if text and (cwd / text).is_file():
                    found[Path(os.path.normpath(cwd / text))] = None
    return list(found)


def command_owner(
    template: str, grid: tuple[tuple[str, tuple[str, ...]], ...], cwd: Path,
    env_file: Path | None = None,
) -> str | None:  # fmt: skip
    """Whom a command runs as when benchlab is root, decided as an app's owner is
    (tune/app.app_owner): the owner of the directory tune was typed in and of every file
    the template names in it (the env file too), root included; None when benchlab is not
    root. Refused in one line when those files have another owner, or when a step from /
    to that directory or to any file the template names (its own, or one it runs from
    elsewhere) is held by someone else or writable by others (but /tmp's kind): as root, a
    file someone else could have written is never run."""
    if os.geteuid() != 0:
        return None
    fix = f"run benchlab as the server's user, or set {STACK_USER_VARIABLE}=NAME to choose"
    named = named_files(template, grid, cwd) + ([env_file] if env_file is not None else [])
    if os.environ.get(STACK_USER_VARIABLE):
        owner = users.stack_user() or "root"  # the user named (checked there)
    else:
        inside = [p for p in named if p.is_relative_to(cwd)]
        runs = "a command as the one user who owns its directory and the files it names there"
        owner = one_owner(cwd, inside, "--command", runs, fix)
    for path in (cwd, *named):
        found = walk(path, owners(owner))
        if found.step is not None:
            what = "--command: the directory tune runs in" if path == cwd else "--command: the file"
            raise refusal(
                path, found.step, what,
                f"benchlab, as root, runs your command as {owner} (the owner of that directory): "
                f"give it to {owner} and root alone, or {fix}", owner,
            )  # fmt: skip
    return owner


def _name(knobs: tuple[tuple[str, str], ...]) -> str:
    """A candidate's name: its knobs as the grid gives them (`procs=1`), or `command`."""
    return " ".join(f"{k}={v}" for k, v in knobs) or "command"


def _relative(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd.resolve())) or "."
    except ValueError:
        return str(path)
