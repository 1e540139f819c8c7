"""Where benchlab keeps what it builds (Go stacks, vegeta) and what it remembers between
runs (step costs, the noise record, the journals of running benchlabs): outside the
repository, builds by content or version, so a rebuild happens only when the sources or
the pin change."""

from __future__ import annotations

import os
from pathlib import Path

from benchlab.core import environment

CACHE_VARIABLE = environment.CACHE
# Root's builds: where the unprivileged user the stacks run as can execute them (root's home
# is closed to others).
ROOT_BUILDS = Path("/var/cache/benchlab")


def state_dir() -> Path:
    """benchlab's own memory: $BENCHLAB_CACHE, else $XDG_CACHE_HOME/benchlab, else
    ~/.cache/benchlab (the XDG base directory default)."""
    chosen = os.environ.get(CACHE_VARIABLE)
    if chosen:
        return Path(chosen)
    xdg = os.environ.get(environment.XDG_CACHE_HOME)
    # The specification: a relative path is invalid and is ignored.
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "benchlab"


def cache_dir() -> Path:
    """The built programs: the state directory's bin (~/.cache/benchlab/bin), and for root
    /var/cache/benchlab/bin (stacks run as nobody then, and must reach their binary)."""
    if os.environ.get(CACHE_VARIABLE) or os.geteuid() != 0:
        return state_dir() / "bin"
    return ROOT_BUILDS / "bin"
