"""A load tool's CPU over its load window: its CPU time read as the window starts and as it
ends (or as the tool exits, if it ends first), over the wall time between the two readings.

Not its whole life: what a tool does before and after its load is no part of it, and
counted over the duration the tool reports it reads as more CPU than its cores can give.
Measured (issue 66): wrk pinned to one core, 500 connections for 2 s against sanic, lived
2.9-3.6 s for a reported 2.1 s; its done() hook, which walks the whole latency histogram
(20-26 thousand distinct latencies), used 0.6-0.8 s of CPU after the load had ended. A
share read this way is at most the cores the tool was pinned to (within the readings'
clock ticks), so one above them is the harness's error (load/result.py `overdrawn`)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from benchlab.system.process import ManagedProcess


@dataclass(frozen=True)
class _Reading:
    at: float  # monotonic seconds
    cpu_s: float | None  # the tool's CPU time so far (None: it could not be read)


class CpuWindow:
    """Opened when the load starts, closed when it ends: `pct()` is the tool's CPU over it
    (100 = one core busy throughout)."""

    def __init__(self, process: ManagedProcess) -> None:
        self.process = process
        self.start = self._read()
        self.end: _Reading | None = None

    def _read(self) -> _Reading:
        # wait(0), not alive(): it reaps an exited tool keeping its rusage, which alive()'s
        # poll() would lose.
        if self.process.wait(0.0) is None:
            seconds: float | None = self.process.cpu_seconds()[0]
        else:
            seconds = self.process.tool_cpu_seconds()
        return _Reading(time.monotonic(), seconds)

    def close(self) -> None:
        """The window ends now (the first call counts)."""
        if self.end is None:
            self.end = self._read()

    def pct(self) -> float | None:
        """CPU over the window as a share of one core; None before it closed or unread."""
        if self.end is None or self.start.cpu_s is None or self.end.cpu_s is None:
            return None
        wall = self.end.at - self.start.at
        return 100.0 * max(self.end.cpu_s - self.start.cpu_s, 0.0) / wall if wall > 0 else None
