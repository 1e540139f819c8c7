"""Load tool adapters: each runs its tool and returns one LoadResult."""

from benchlab.load.result import Errors, Latency, LoadResult
from benchlab.load.wrk import LoadRequest, LoadToolError, run_wrk

__all__ = ["Errors", "Latency", "LoadRequest", "LoadResult", "LoadToolError", "run_wrk"]
