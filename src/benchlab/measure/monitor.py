"""Sampling of a server's whole process tree during a trial: CPU % and peak RSS."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import psutil

from benchlab.measure.memory_trend import MemoryTrend, memory_trend

SAMPLE_INTERVAL_S = 0.2
MAX_RSS_SAMPLES = 2_000  # kept a trial (memory bounded however long it runs)
JOIN_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class CoreSteal:
    """Share of the cores' time the hypervisor gave to someone else (steal), in %."""

    server_pct: float | None
    load_pct: float | None


class StealSampler:
    """CPU steal on given cores between enter and exit, from /proc/stat (via psutil).

    On a shared virtual machine, steal is time the cores were taken away: a trial with
    much of it measured the neighbours as much as the server.
    """

    def __init__(self, server_cores: tuple[int, ...], load_cores: tuple[int, ...]) -> None:
        self._groups = {"server": server_cores, "load": load_cores}
        self._start: list = []
        self.result = CoreSteal(None, None)

    def __enter__(self) -> StealSampler:
        self._start = psutil.cpu_times(percpu=True)
        return self

    def __exit__(self, *exc: object) -> None:
        end = psutil.cpu_times(percpu=True)
        shares = {}
        for name, cores in self._groups.items():
            steal = total = 0.0
            for core in cores:
                if core >= len(end) or not hasattr(end[core], "steal"):
                    continue
                before, after = self._start[core], end[core]
                steal += after.steal - before.steal
                total += sum(after) - sum(before)
            shares[name] = 100.0 * steal / total if total > 0 else None
        self.result = CoreSteal(shares["server"], shares["load"])


@dataclass(frozen=True)
class TreeUsage:
    cpu_pct: float  # 100 = one core busy for the whole trial
    peak_rss_mb: float
    processes: int
    cpu_s: float  # CPU time of the whole tree during the trial, counted, not sampled
    cpu_source: str  # how: "cgroup v2", "cgroup v1", "process tree"
    memory: MemoryTrend | None = None  # how its RSS moved during the trial


class CountedTree(Protocol):
    """A server's processes as a trial counts them: a launch's (system/process.py), or a
    running server's watched by its pid or control group (system/watch.py)."""

    def cpu_seconds(self) -> tuple[float, str]: ...
    def memory_sample(self) -> tuple[int, set[tuple[int, float]]]: ...


class ProcessTreeSampler:
    """Counts the tree's CPU time between enter and exit (its control group's counter where
    there is one) and samples its resident memory in a background thread."""

    def __init__(self, process: CountedTree, interval: float = SAMPLE_INTERVAL_S) -> None:
        self._process = process
        self._interval = interval
        self._seen: set[tuple[int, float]] = set()
        self._peak_rss = 0
        self._rss: list[tuple[float, int]] = []  # (seconds since enter, RSS bytes)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tree-sampler", daemon=True)
        self._started_at = 0.0
        self._ended_at = 0.0
        self._cpu_before = 0.0
        self._cpu_after = 0.0
        self._cpu_source = ""

    def __enter__(self) -> ProcessTreeSampler:
        self._started_at = time.monotonic()
        self._cpu_before, self._cpu_source = self._process.cpu_seconds()
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        self._cpu_after, _ = self._process.cpu_seconds()
        self._ended_at = time.monotonic()

    def usage(self) -> TreeUsage:
        wall = max(self._ended_at - self._started_at, 1e-9)
        used = max(self._cpu_after - self._cpu_before, 0.0)
        return TreeUsage(
            cpu_pct=100.0 * used / wall,
            peak_rss_mb=self._peak_rss / 2**20,
            processes=len(self._seen),
            cpu_s=used,
            cpu_source=self._cpu_source,
            memory=memory_trend(self._rss),
        )

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    def _sample(self) -> None:
        try:
            rss, seen = self._process.memory_sample()
        except Exception:
            return  # a host that did not answer this once: the next sample counts
        self._seen |= seen
        self._peak_rss = max(self._peak_rss, rss)
        self._rss.append((time.monotonic() - self._started_at, rss))
        if len(self._rss) > MAX_RSS_SAMPLES:  # a long soak: every other sample, evenly thinned
            self._rss = self._rss[::2]


class PeakSampler:
    """Polls counting probes (database sessions in use, pgbouncer's active server
    connections) in a thread and keeps the peak of each; a probe that fails stops counting
    and says why, and never ends the trial."""

    def __init__(self, probes: dict[str, Callable[[], int] | None], interval: float = 0.05) -> None:
        self._probes = {name: probe for name, probe in probes.items() if probe is not None}
        self.peaks: dict[str, int | None] = {name: None for name in probes}
        self.errors: dict[str, str] = {}
        self._interval = interval
        self._stop = threading.Event()
        self._until: float | None = None
        self._thread = threading.Thread(target=self._loop, name="peak-sampler", daemon=True)

    def __enter__(self) -> PeakSampler:
        if self._probes:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            # A probe stuck on a stopped database must not hold the run (its queries time
            # out on their own: see services); the thread is a daemon, left to end alone.
            self._thread.join(timeout=JOIN_TIMEOUT_S)
            if self._thread.is_alive():
                for name in self._probes:
                    self.errors.setdefault(name, f"no answer within {JOIN_TIMEOUT_S:g} s")

    def count_until(self, deadline: float) -> None:
        """Counts nothing after `deadline` (time.monotonic()): when a load tool stops, the
        requests it leaves cancel their queries and some drivers replace those sessions, a
        burst that belongs to no measured request."""
        self._until = deadline

    def _loop(self) -> None:
        while True:
            if self._until is not None and time.monotonic() > self._until:
                return
            for name, probe in list(self._probes.items()):
                try:
                    value = probe()
                except Exception as exc:
                    self.errors[name] = f"{type(exc).__name__}: {exc}"
                    del self._probes[name]
                    continue
                current = self.peaks[name]
                self.peaks[name] = value if current is None else max(current, value)
            if not self._probes or self._stop.wait(self._interval):
                return
