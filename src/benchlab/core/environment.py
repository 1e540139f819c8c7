"""Every environment variable benchlab reads, declared once: its name and what it changes.
The modules that read one take its name from here; the docs' reference lists them all."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variable:
    name: str
    meaning: str  # one line for the reference page: what it changes, and its default


VARIABLES: dict[str, Variable] = {}


def _declare(name: str, meaning: str) -> str:
    VARIABLES[name] = Variable(name, meaning)
    return name


RESULTS = _declare(
    "BENCHLAB_RESULTS",
    "the results store every command reads and writes when `--results` is not given "
    "(default `results/benchlab.db`)",
)
CACHE = _declare(
    "BENCHLAB_CACHE",
    "benchlab's own cache: builds, the Go toolchain, step costs, the noise record, services "
    "(default `$XDG_CACHE_HOME/benchlab`, else `~/.cache/benchlab`; builds as root: "
    "`/var/cache/benchlab`)",
)
XDG_CACHE_HOME = _declare(
    "XDG_CACHE_HOME",
    "where benchlab's cache goes when `BENCHLAB_CACHE` is not set (`$XDG_CACHE_HOME/benchlab`)",
)
STACK_USER = _declare(
    "BENCHLAB_STACK_USER",
    "as root, the user the stacks (and a tuned app) run as (default `benchlab-stack`, a "
    "system account benchlab makes; a tuned app: "
    "the owner of its files; `root`: they stay root)",
)
SSH_CONFIG = _declare(
    "BENCHLAB_SSH_CONFIG",
    "an ssh config file (`ssh -F`) for the `ssh://` hosts of a recipe's `[hosts]`",
)
NOISE_RECORD = _declare(
    "BENCHLAB_NOISE_RECORD",
    "the file `selfcheck --noise` writes and runs read to choose paired ratios "
    "(default `noise.json` in the cache)",
)
STORE_TIMEOUT = _declare(
    "BENCHLAB_STORE_TIMEOUT_S",
    "seconds a write waits for a results store another program has locked (default 30)",
)
VIRTUAL_ENV = _declare(
    "VIRTUAL_ENV",
    "an active virtualenv: `tune` imports and serves the app with its interpreter when "
    "`--python` is not given",
)
NO_COLOR = _declare("NO_COLOR", "no colours in the terminal (as `--no-color`)")
COLUMNS = _declare(
    "COLUMNS",
    "the width tables fit (default: the terminal's; piped or logged output: 100)",
)
