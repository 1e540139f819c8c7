"""Load tool adapters: each runs its tool and returns one LoadResult. TOOLS is the one list of
them: the recipe, the preflight, `doctor` and the machine description all read it."""

from __future__ import annotations

from pathlib import Path

from benchlab.load.ab import ApacheBench
from benchlab.load.base import LoadRequest, LoadTool, LoadToolError, run_load
from benchlab.load.hey import Hey
from benchlab.load.result import Errors, Latency, LoadResult
from benchlab.load.siege import Siege
from benchlab.load.vegeta import Vegeta
from benchlab.load.wrk import Wrk
from benchlab.process import ProcessRegistry

TOOLS: dict[str, LoadTool] = {
    tool.name: tool for tool in (Wrk(), ApacheBench(), Hey(), Siege(), Vegeta())
}
PACING_TOOLS = tuple(name for name, tool in TOOLS.items() if tool.can_pace)


def finer_than_timed(tool: str | None, latency_ms: float | None) -> bool:
    """Whether a latency is under what the tool can time (siege: hundredths of a second), so
    that the tool's figure for it says nothing (siege prints 0.00)."""
    known = TOOLS.get(tool) if tool else None
    return known is not None and latency_ms is not None and latency_ms < known.latency_resolution_ms


def run_tool(request: LoadRequest, registry: ProcessRegistry, workdir: Path) -> LoadResult:
    """Run the request's tool pinned to its cores; one LoadResult whatever the tool."""
    return run_load(TOOLS[request.tool], request, registry, workdir)


__all__ = [
    "PACING_TOOLS", "TOOLS", "Errors", "Latency", "LoadRequest", "LoadResult", "LoadTool",
    "LoadToolError", "finer_than_timed", "run_tool",
]  # fmt: skip
