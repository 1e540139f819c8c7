"""Free loopback ports (a host's own: Host.free_port)."""

from __future__ import annotations

from benchlab.system.process import LOOPBACK as HOST
from benchlab.system.process import free_port

__all__ = ["HOST", "free_port"]
