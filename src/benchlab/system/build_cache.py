"""Where benchlab keeps what it builds (Go stacks, vegeta) and what it remembers between
runs (step costs, the noise record, the journals of running benchlabs): outside the
repository, builds by content or version, so a rebuild happens only when the sources or
the pin change."""

from __future__ import annotations

import os
from pathlib import Path

from benchlab.core import environment
from benchlab.core.errors import UserError
from benchlab.system.trusted_path import is_trusted, trusted_tree

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
    /var/cache/benchlab/bin (stacks run as benchlab's own account then, and must reach
    their binary)."""
    if os.environ.get(CACHE_VARIABLE) or os.geteuid() != 0:
        return state_dir() / "bin"
    return ROOT_BUILDS / "bin"


def trusted(path: Path, tree: bool = False) -> bool:
    """Whether a cached build at `path` may be used: there, and no one but root (or this user)
    can have changed it, its directories, or — a whole toolchain, `tree` — anything in it.
    What is there is trusted on inspection, never on existence: a binary another user could
    replace would run as root (vegeta) or as the stacks."""
    if tree:
        return trusted_tree(path)
    return path.exists() and is_trusted(path)


def usable_cache() -> Path:
    """The build cache, made if missing; refused in one line when another user can change it
    (a binary built there would then be theirs to swap)."""
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o755)
    if not is_trusted(directory):
        raise UserError(
            f"{directory}: another user can change it or a directory above it, so benchlab "
            "neither builds nor runs anything there; give it to you alone (chown, chmod go-w) "
            f"or set {CACHE_VARIABLE}"
        )
    return directory
