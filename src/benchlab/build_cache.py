"""Where benchlab keeps what it builds (Go stacks, vegeta): outside the repository, by
content or version, so a rebuild happens only when the sources or the pin change."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    root = os.environ.get("BENCHLAB_CACHE") or Path.home() / ".cache" / "benchlab"
    return Path(root) / "bin"
