"""Load tool adapters: each runs its tool and returns one LoadResult."""

from __future__ import annotations

from pathlib import Path

from benchlab.load.ab import ApacheBench
from benchlab.load.base import LoadRequest, LoadTool, LoadToolError, run_load
from benchlab.load.hey import Hey
from benchlab.load.result import Errors, Latency, LoadResult
from benchlab.load.siege import Siege
from benchlab.load.wrk import Wrk
from benchlab.process import ProcessRegistry

TOOLS: dict[str, LoadTool] = {tool.name: tool for tool in (Wrk(), ApacheBench(), Hey(), Siege())}


def run_tool(request: LoadRequest, registry: ProcessRegistry, workdir: Path) -> LoadResult:
    """Run the request's tool pinned to its cores; one LoadResult whatever the tool."""
    return run_load(TOOLS[request.tool], request, registry, workdir)


__all__ = [
    "TOOLS", "Errors", "Latency", "LoadRequest", "LoadResult", "LoadTool", "LoadToolError",
    "run_tool",
]  # fmt: skip
