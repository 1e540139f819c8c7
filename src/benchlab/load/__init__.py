"""Load tool adapters: each runs its tool and returns one LoadResult. TOOLS is the one list of
them, and each tool declares its own traits (base.LoadTool): the recipe, the preflight,
`doctor`, the plan's estimates and the machine description all read them there.

Running a tool (on one host or several) is hosts/generators.py's: it needs the hosts, which need
this package's declarations, so it is not imported here."""

from __future__ import annotations

from collections.abc import Callable

from benchlab.core.errors import LoadToolError, UserError
from benchlab.load.ab import ApacheBench
from benchlab.load.base import LoadRequest, LoadTool
from benchlab.load.h2load import H2load
from benchlab.load.hey import Hey
from benchlab.load.jmeter import JMeter
from benchlab.load.result import Latency, LoadResult
from benchlab.load.siege import Siege
from benchlab.load.vegeta import Vegeta
from benchlab.load.wrk import Wrk

TOOLS: dict[str, LoadTool] = {
    tool.name: tool for tool in (Wrk(), ApacheBench(), Hey(), Siege(), Vegeta(), H2load(), JMeter())
}
# The tool of a load profile that names none.
DEFAULT_TOOL = next(name for name, tool in TOOLS.items() if tool.is_default)
# The tool to name for fixed rates, capacity searches and mixes of requests.
RATE_TOOL = next(name for name, tool in TOOLS.items() if tool.can_pace and not tool.websocket)
# The tool of the WebSocket loads (a user's echo as the reference app's).
WEBSOCKET_TOOL = next(name for name, tool in TOOLS.items() if tool.websocket)
# The tools whose generators on several hosts merge into one exact result.
MERGEABLE_TOOLS = tuple(name for name, tool in TOOLS.items() if tool.merges_exactly)


def make_ready(tool: LoadTool, say: Callable[[str], object]) -> None:
    """The tool on this machine before anything starts: one benchlab builds (vegeta) is built
    on its first use, once, into benchlab's cache, so that an installed benchlab needs no
    separate build step; a Debian package's absence names its apt command."""
    if tool.executable() is not None:
        return
    if tool.build is None:
        raise UserError(f"load tool '{tool.name}' is not installed: {tool.install}")
    say(f"building {tool.name} {tool.pinned_version} into benchlab's cache (its first use, once)")
    tool.build()


def finer_than_timed(tool: str | None, latency_ms: float | None) -> bool:
    """Whether a latency is under what the tool can time (siege: hundredths of a second), so
    that the tool's figure for it says nothing (siege prints 0.00)."""
    known = TOOLS.get(tool) if tool else None
    return known is not None and latency_ms is not None and latency_ms < known.latency_resolution_ms


__all__ = [
    "DEFAULT_TOOL", "MERGEABLE_TOOLS", "RATE_TOOL", "TOOLS", "WEBSOCKET_TOOL", "Latency",
    "LoadRequest", "LoadResult", "LoadTool", "LoadToolError", "finer_than_timed",
    "make_ready",
]  # fmt: skip
