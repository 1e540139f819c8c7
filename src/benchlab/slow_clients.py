"""Slow clients (issue 40): what a few slow clients cost everyone else. At a fixed rate well
under a stack's capacity, the same load with and without SLOW_CONNECTIONS slow clients held
open beside it (slowhttptest, the kept tool for it: headers trickled, or a body sent
slowly), in interleaved rounds; each round's p99 and throughput with them ÷ without, and
the share of requests that failed each way.

gunicorn's docs say its sync workers need a buffering proxy in front because a slow client
holds a worker for its whole request; this measures, server by server, whether that is so."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchlab.errors import LoadToolError
from benchlab.hosts.generators import run_tool
from benchlab.load import LoadRequest
from benchlab.load.result import LoadResult
from benchlab.runner import HOST
from benchlab.stack_checks import StackCheck, Started, check_each
from benchlab.stacks import CATALOGUE

SLOWHTTPTEST = "/usr/bin/slowhttptest"
RATE = 100  # req/s of GET /plaintext: far under every stack's capacity here
TRIAL_S = 3
TIMEOUT_S = 2  # a request not answered in this long failed
SLOW_CONNECTIONS = 32  # more than any stack's default threads or greenlets a worker
SETTLE_S = 1.5  # for the slow clients to connect before the load starts
FOLLOW_UP_S = 1  # a slow client sends its next few bytes this often
ROUNDS = 3
# Harm: failures up by this share of the requests in every round, or a p99 at least
# P99_HARM times its own without the slow clients in every round (and over P99_FLOOR_MS:
# 0.5 ms doubling to 1 ms harms nobody).
FAILED_HARM = 0.01
P99_HARM = 2.0
P99_FLOOR_MS = 20.0


@dataclass(frozen=True)
class SlowMode:
    name: str
    flag: str  # slowhttptest's
    what: str
    extra: tuple[str, ...] = ()
    # Where the slow clients send, by the stack's scenarios: a slow body holds a worker only
    # where the app reads the body (upload's does; plaintext's handler answers first).
    reads_body: bool = False

    def path(self, scenarios: tuple[str, ...]) -> str:
        return "/upload" if self.reads_body and "upload" in scenarios else "/plaintext"


MODES = {
    m.name: m
    for m in (
        SlowMode("headers", "-H", "headers trickled (slowloris)"),
        SlowMode(
            "body",
            "-B",
            "a body sent slowly (R-U-Dead-Yet)",
            ("-s", "65536", "-f", "application/octet-stream"),
            reads_body=True,
        ),
    )
}


@dataclass(frozen=True)
class Trial:
    p99_ms: float | None  # None: no request was answered
    answered_rps: float  # answers (2xx, 3xx) a second of the trial
    failed_share: float  # of the requests sent

    @classmethod
    def of(cls, result: LoadResult) -> Trial:
        errors = result.errors
        sent = result.requests + errors.socket
        answered = result.requests - errors.non_2xx
        # Over the trial's length: the tool's own runs on to its last timeout.
        return cls(
            result.latency.p99 if result.requests else None,
            answered / TRIAL_S,
            errors.total / sent if sent else 1.0,
        )


@dataclass(frozen=True)
class Spread:
    """A figure over the rounds: its median and range."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        return cls(statistics.median(values), min(values), max(values))

    def text(self) -> str:
        return f"{self.median:.2f} [{self.low:.2f}–{self.high:.2f}]"

    def to_json(self) -> dict[str, float]:
        return {k: round(v, 4) for k, v in vars(self).items()}


def _round_harmed(without: Trial, with_slow: Trial) -> bool:
    if with_slow.failed_share - without.failed_share >= FAILED_HARM or with_slow.p99_ms is None:
        return True
    if not without.p99_ms:
        return False
    return with_slow.p99_ms >= P99_FLOOR_MS and with_slow.p99_ms / without.p99_ms >= P99_HARM


@dataclass(frozen=True)
class SlowResult:
    """One mode's rounds: each a trial without the slow clients and one with them."""

    mode: str
    without: tuple[Trial, ...]
    with_slow: tuple[Trial, ...]
    slow_path: str = "/plaintext"  # where the slow clients sent

    @property
    def rounds(self) -> list[tuple[Trial, Trial]]:
        """Each round's trial without the slow clients and with them."""
        return list(zip(self.without, self.with_slow, strict=True))

    def _p99_ratios(self) -> list[float] | None:
        pairs = self.rounds
        if any(w.p99_ms is None or not b.p99_ms for b, w in pairs):
            return None
        return [w.p99_ms / b.p99_ms for b, w in pairs]  # type: ignore[operator]

    @property
    def p99_ratio(self) -> Spread | None:
        ratios = self._p99_ratios()
        return None if ratios is None else Spread.of(ratios)

    def p99_ms(self, slow: bool) -> float | None:
        """The median p99 of its trials with the slow clients or without (None: no answer)."""
        p99s = [t.p99_ms for t in (self.with_slow if slow else self.without)]
        return None if None in p99s else statistics.median(p for p in p99s if p is not None)

    @property
    def throughput_ratio(self) -> Spread:
        return Spread.of(
            [w.answered_rps / b.answered_rps if b.answered_rps else 0.0
             for b, w in self.rounds]
        )  # fmt: skip

    @property
    def failed_added(self) -> Spread:
        return Spread.of(
            [w.failed_share - b.failed_share
             for b, w in self.rounds]
        )  # fmt: skip

    @property
    def harmed(self) -> bool:
        """Harmed in every round: failures up by FAILED_HARM, or no answer at all with the
        slow clients, or a p99 P99_HARM times its own and over P99_FLOOR_MS."""
        return all(_round_harmed(b, w) for b, w in self.rounds)

    def sentence(self) -> str:
        mode = MODES[self.mode]
        ratio = self.p99_ratio
        p99 = "no answer" if ratio is None else f"p99 ×{ratio.text()}"
        failed = self.failed_added
        head = "harmed" if self.harmed else "unaffected"
        return (
            f"{head} by {SLOW_CONNECTIONS} slow clients ({mode.what}, to {self.slow_path}): "
            f"{p99}, answered "
            f"×{self.throughput_ratio.median:.2f}, failed {failed.median:+.1%} of requests"
        )

    def to_json(self) -> dict[str, Any]:
        ratio = self.p99_ratio
        return {
            "mode": self.mode,
            "slow_path": self.slow_path,
            "harmed": self.harmed,
            "p99_ratio": None if ratio is None else ratio.to_json(),
            "throughput_ratio": self.throughput_ratio.to_json(),
            "failed_added": self.failed_added.to_json(),
            "rounds": [{"without": vars(b), "with_slow_clients": vars(w)} for b, w in self.rounds],
        }


@dataclass(frozen=True)
class SlowClients:
    connections: int
    rate: int
    results: tuple[SlowResult, ...]

    @property
    def needs_proxy(self) -> bool:
        return any(r.harmed for r in self.results)

    def sentence(self) -> str:
        return "; ".join(r.sentence() for r in self.results)

    def to_json(self) -> dict[str, Any]:
        return {
            "connections": self.connections, "rate": self.rate,
            "needs_proxy": self.needs_proxy, "modes": [r.to_json() for r in self.results],
        }  # fmt: skip


StackSlowClients = StackCheck[SlowClients]


def _trial(started: Started, load_cores: tuple[int, ...], name: str) -> Trial:
    request = LoadRequest(
        url=f"http://{HOST}:{started.port}/plaintext", connections=64, threads=1,
        duration_s=TRIAL_S, timeout_s=TIMEOUT_S, cores=load_cores, tool="vegeta", rate=RATE,
    )  # fmt: skip
    directory = started.workdir / name
    directory.mkdir()
    return Trial.of(run_tool(request, started.registry, directory))


def _with_slow_clients(
    started: Started, load_cores: tuple[int, ...], mode: SlowMode, path: str, name: str
) -> Trial:
    log = started.workdir / f"{name}.slowhttptest.log"
    argv = [
        SLOWHTTPTEST, mode.flag, "-c", str(SLOW_CONNECTIONS), "-r", str(SLOW_CONNECTIONS * 4),
        "-i", str(FOLLOW_UP_S), "-l", str(TRIAL_S + TIMEOUT_S + 10), "-x", "8", "-p", "3",
        *mode.extra, "-u", f"http://{HOST}:{started.port}{path}",
    ]  # fmt: skip
    slow = started.registry.start(argv, cores=load_cores, log_path=log)
    try:
        time.sleep(SETTLE_S)
        trial = _trial(started, load_cores, name)
        if not slow.alive():  # else the trial was one more without them
            raise LoadToolError(
                f"slowhttptest exited with code {slow.returncode} during the trial: "
                f"{slow.log_tail(3) or '(no output)'}"
            )
        return trial
    finally:
        started.registry.stop(slow, grace=1.0)


def measure(
    started: Started, load_cores: tuple[int, ...], modes: list[str], rounds: int
) -> SlowClients:
    results = []
    scenarios = CATALOGUE[started.name].scenarios
    for mode in modes:
        without, with_slow = [], []
        path = MODES[mode].path(scenarios)
        for r in range(rounds):
            trials = {}
            # Alternate which goes first, so a drift within the rounds falls on both sides.
            for slow in (False, True) if r % 2 == 0 else (True, False):
                name = f"{mode}-{r}-{'with' if slow else 'without'}"
                trials[slow] = (
                    _with_slow_clients(started, load_cores, MODES[mode], path, name)
                    if slow
                    else _trial(started, load_cores, name)
                )
            without.append(trials[False])
            with_slow.append(trials[True])
        results.append(SlowResult(mode, tuple(without), tuple(with_slow), path))
    return SlowClients(SLOW_CONNECTIONS, RATE, tuple(results))


def slow_clients_of_stacks(
    names: list[str], cores: tuple[int, ...], load_cores: tuple[int, ...],
    modes: list[str], rounds: int, progress: Callable[[str], None],
) -> list[StackSlowClients]:  # fmt: skip
    """Every stack in turn, one worker on `cores`; vegeta and slowhttptest on `load_cores`."""
    return check_each(
        names, cores, progress,
        lambda started: measure(started, load_cores, modes, rounds), SlowClients.sentence,
    )  # fmt: skip
