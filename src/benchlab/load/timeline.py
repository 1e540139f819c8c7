"""Latency over time in a fixed-rate trial, what `vegeta plot` draws: for each second of the
trial, the p50 and p99 of the requests sent in it (counted from their due time, as the trial's
own latency is), and the successful answers and the failures that came back in it. A pause
of the server shows as a second whose p99 stands out; a queue building, as a p99 that climbs
while the achieved rate stays under the rate asked.

Computed while the records are read (request_records.py's second pass): one histogram per
step, of two significant digits (histogram.COARSE_DIGITS). A trial longer than MAX_STEPS
seconds gets steps of several seconds, so both the memory (at most MAX_STEPS histograms of
27 KB) and the stored series (a few numbers a step: a 60-s trial is about 1.3 KB of JSON) stay
bounded however long it runs.
"""

from __future__ import annotations

import math

import numpy
from hdrh.histogram import HdrHistogram

from benchlab.core.latency_timeline import Timeline
from benchlab.load import histogram

MAX_STEPS = 600
SIGNIFICANT = 3  # digits a latency keeps in the series (its histogram keeps two or three)
NS = 1_000_000_000


def _rounded(value: float | None) -> float | None:
    """A latency at the precision its histogram holds (no more digits than it knows)."""
    return None if value is None else float(f"{value:.{SIGNIFICANT}g}")


class TimelineTally:
    """A trial's steps, fed in chunks of requests: the latencies by the step each was sent in,
    the answers and failures by the step each came back in (those after the last step, the
    trial's tail, are left out: they are in the trial's totals)."""

    def __init__(self, first_sent_ns: int, span_ns: int) -> None:
        step_s = max(1, math.ceil(span_ns / NS / MAX_STEPS))
        self.step_s = step_s
        self.step_ns = step_s * NS
        # A last step of under half a step is folded into the one before.
        self.steps = max(1, round(span_ns / self.step_ns))
        self.first_sent_ns = first_sent_ns
        self.histograms: dict[int, HdrHistogram] = {}
        self.succeeded = numpy.zeros(self.steps, dtype=numpy.int64)
        self.failed = numpy.zeros(self.steps, dtype=numpy.int64)

    def add(
        self,
        sent_ns: numpy.ndarray,
        came_ns: numpy.ndarray,
        latency_us: numpy.ndarray,
        timed: numpy.ndarray,
        succeeded: numpy.ndarray,
        failed: numpy.ndarray,
    ) -> None:
        """One chunk: when each request was sent and when its answer (or failure) came, ns
        since the epoch; its latency from its due time, µs; whether its latency counts
        (`timed`), it succeeded, or it failed (boolean masks)."""
        sent_step = numpy.minimum((sent_ns - self.first_sent_ns) // self.step_ns, self.steps - 1)
        steps, values = sent_step[timed], latency_us[timed]
        order = numpy.argsort(steps, kind="stable")
        steps, values = steps[order], values[order]
        starts = numpy.flatnonzero(numpy.diff(steps)) + 1
        for part_steps, part_values in zip(
            numpy.split(steps, starts), numpy.split(values, starts), strict=True
        ):
            if part_steps.size:
                histogram.record_many(self._histogram(int(part_steps[0])), part_values)
        came_step = (came_ns - self.first_sent_ns) // self.step_ns
        inside = came_step < self.steps
        for counts, mask in ((self.succeeded, succeeded), (self.failed, failed)):
            counts += numpy.bincount(came_step[mask & inside], minlength=self.steps)

    def _histogram(self, step: int) -> HdrHistogram:
        found = self.histograms.get(step)
        if found is None:
            found = self.histograms[step] = histogram.new(histogram.COARSE_DIGITS)
        return found

    def timeline(self) -> Timeline:
        quantiles = [
            (
                (histogram.quantile_ms(h, 50), histogram.quantile_ms(h, 99))
                if (h := self.histograms.get(step)) is not None
                else (None, None)
            )
            for step in range(self.steps)
        ]
        return Timeline(
            step_s=self.step_s,
            p50_ms=tuple(_rounded(p50) for p50, _ in quantiles),
            p99_ms=tuple(_rounded(p99) for _, p99 in quantiles),
            achieved_rps=tuple(round(int(n) / self.step_s, 2) for n in self.succeeded),
            errors=tuple(int(n) for n in self.failed),
        )
