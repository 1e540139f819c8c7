"""A server's own counters, where it keeps them: granian's Prometheus metrics (`--metrics`),
read over HTTP before and after a trial. They say what the process sees from inside and no
client can: how long its threads waited for the GIL, and how long they were busy.

granian's workers send their counters to the exporter once per scrape interval (1 s at the
least): a reading lags the trial by up to a second, so only ratios of counters read together
(waiting ÷ busy) are figures, never a counter divided by the trial's duration.
"""

from __future__ import annotations

import time
import urllib.request
from dataclasses import dataclass

from benchlab.core.bounded import Unbounded, chunks_of, read_bounded

READ_TIMEOUT_S = 2.0  # for the whole answer
MOST_BYTES = 2**20  # a page of counters is a few kilobytes
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy's


@dataclass(frozen=True)
class ThreadTimes:
    """Cumulative microseconds over every worker's threads: waiting for the GIL with a
    request in hand, and busy with one (the wait included)."""

    gil_wait_us: int
    busy_us: int

    def since(self, before: ThreadTimes) -> ThreadTimes:
        return ThreadTimes(self.gil_wait_us - before.gil_wait_us, self.busy_us - before.busy_us)


@dataclass(frozen=True)
class CounterSource:
    """How a server is told to keep its counters (environment variables, so that the
    command line stays the one a user deploys) and how they are read."""

    name: str  # as a report names them: "granian's metrics"
    env: tuple[tuple[str, str], ...]  # "{address}" and "{port}" filled in per launch
    path: str
    wait_metric: str
    busy_metric: str

    def environment(self, address: str, port: int) -> dict[str, str]:
        return {k: v.format(address=address, port=port) for k, v in self.env}

    def read(self, address: str, port: int) -> ThreadTimes | None:
        """The counters now; None when the server does not answer with them (yet)."""
        url = f"http://{address}:{port}{self.path}"
        deadline = time.monotonic() + READ_TIMEOUT_S
        try:
            with _DIRECT.open(url, timeout=READ_TIMEOUT_S) as answer:
                text = read_bounded(chunks_of(answer.read1), deadline, MOST_BYTES).decode()
        except (OSError, ValueError, Unbounded):
            return None
        return self.parse(text)

    def parse(self, text: str) -> ThreadTimes | None:
        # Imported here: 50 ms that every other command would pay at its start.
        from prometheus_client.parser import text_string_to_metric_families

        totals = {self.wait_metric: 0.0, self.busy_metric: 0.0}
        seen = set()
        # By family: the parser names a counter's samples with "_total" added.
        for family in text_string_to_metric_families(text):
            if family.name in totals:
                totals[family.name] += sum(sample.value for sample in family.samples)
                seen.add(family.name)
        if seen != set(totals):
            return None
        return ThreadTimes(round(totals[self.wait_metric]), round(totals[self.busy_metric]))


GRANIAN_METRICS = CounterSource(
    "granian's metrics",
    (
        ("GRANIAN_METRICS_ENABLED", "true"),
        ("GRANIAN_METRICS_ADDRESS", "{address}"),
        ("GRANIAN_METRICS_PORT", "{port}"),
        ("GRANIAN_METRICS_SCRAPE_INTERVAL", "1"),
    ),
    "/metrics",
    "granian_py_wait_cumulative",
    "granian_blocking_busy_cumulative",
)
