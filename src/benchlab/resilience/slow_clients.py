"""Slow clients (issue 40): what a few slow clients cost everyone else. At a fixed rate well
under a stack's capacity, the same load with and without SLOW_CONNECTIONS slow clients held
open beside it (slowhttptest, the kept tool for it: headers trickled, or a body sent
slowly), in interleaved rounds; each round's p99 and throughput with them ÷ without, and
the share of requests that failed each way.

gunicorn's docs say its sync workers need a buffering proxy in front because a slow client
holds a worker for its whole request; this measures, server by server, whether that is so."""

from __future__ import annotations

import dataclasses
import os
import re
import statistics
import time
from dataclasses import dataclass
from typing import Any

from benchlab.core.errors import LoadToolError
from benchlab.hosts.generators import run_tool
from benchlab.http.dataset import file_name
from benchlab.load import LoadRequest
from benchlab.load.result import LoadResult
from benchlab.resilience.target import CheckTarget

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


def missing() -> str | None:
    """Why the slow clients cannot be sent from this machine (None: they can)."""
    if os.access(SLOWHTTPTEST, os.X_OK):
        return None
    return f"{SLOWHTTPTEST} is missing: apt-get install slowhttptest (or ./lab setup)"


def expected_s(modes: int, rounds: int) -> float:
    """What one stack's check takes: each round's two trials, and the slow clients' start."""
    return modes * rounds * (2 * (TRIAL_S + 1.0) + SETTLE_S)


# slowhttptest's last words when the server closed every slow connection it held: the
# server's doing (a defence, or an answer that did not wait for them), not the tool failing.
ALL_CLOSED = "No open connections left"
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # its colours

# The answer slow readers ask for: far larger than the kernel's socket buffers, so a server
# writing it waits on the reader (a few bytes' answer the buffers take whatever it reads).
READ_KB = 1024
READ_PATH = f"/static/{file_name(READ_KB)}"


@dataclass(frozen=True)
class SlowMode:
    name: str
    flag: str  # slowhttptest's
    what: str
    extra: tuple[str, ...] = ()
    # Where the slow clients send, by the stack's scenarios: a slow body holds a worker only
    # where the app reads the body (upload's does; plaintext's handler answers first).
    reads_body: bool = False
    # It asks for READ_PATH, a file benchlab writes for the stack's static handler.
    reads_file: bool = False

    def applies_to(self, scenarios: tuple[str, ...]) -> bool:
        """Whether a stack serving these scenarios can be sent this mode at all."""
        return not self.reads_file or "static" in scenarios

    def path(self, target: CheckTarget) -> str | None:
        """Where its slow clients send (None: nowhere on this stack, as checked here)."""
        if self.reads_file:
            return (
                READ_PATH
                if target.serves_read_file and self.applies_to(target.stack.scenarios)
                else None
            )
        if self.reads_body and "upload" in target.stack.scenarios:
            return "/upload"
        return target.path


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
        # A window of 512-1024 bytes, 32 bytes read every 5 s: slowhttptest's own example.
        SlowMode(
            "read",
            "-X",
            f"a {READ_KB // 1024} MiB answer read slowly (slow read)",
            ("-w", "512", "-y", "1024", "-n", "5", "-z", "32", "-k", "1"),
            reads_file=True,
        ),
    )
}


@dataclass(frozen=True)
class Trial:
    p99_ms: float | None  # None: no request was answered
    answered_rps: float  # answers (2xx, 3xx) a second of the trial
    failed_share: float  # of the requests sent
    # With slow clients: the server closed every one of their connections before the trial
    # ended (it defends itself, or answers without waiting for what they trickle).
    slow_closed: bool = False

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
        closed = sum(w.slow_closed for w in self.with_slow)
        return (
            f"{head} by {SLOW_CONNECTIONS} slow clients ({mode.what}, to {self.slow_path}): "
            f"{p99}, answered "
            f"×{self.throughput_ratio.median:.2f}, failed {failed.median:+.1%} of requests"
            + (f"; it closed their connections in {closed} of {len(self.with_slow)} rounds"
               if closed else "")
        )  # fmt: skip

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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SlowResult:
        rounds = data["rounds"]
        return cls(
            data["mode"],
            tuple(Trial(**r["without"]) for r in rounds),
            tuple(Trial(**r["with_slow_clients"]) for r in rounds),
            data["slow_path"],
        )


@dataclass(frozen=True)
class SlowClients:
    connections: int
    rate: float
    results: tuple[SlowResult, ...]
    skipped: tuple[tuple[str, str], ...] = ()  # (mode, why it could not be sent here)

    @property
    def needs_proxy(self) -> bool:
        return any(r.harmed for r in self.results)

    def sentence(self) -> str:
        skipped = [f"{mode}: not checked ({why})" for mode, why in self.skipped]
        return "; ".join([*(r.sentence() for r in self.results), *skipped])

    def to_json(self) -> dict[str, Any]:
        return {
            "connections": self.connections, "rate": self.rate,
            "needs_proxy": self.needs_proxy, "modes": [r.to_json() for r in self.results],
            "skipped": [{"mode": mode, "why": why} for mode, why in self.skipped],
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SlowClients:
        """The result `to_json` wrote (a run keeps it in its cells' facts): every figure is
        derived again from the rounds."""
        modes = tuple(SlowResult.from_json(m) for m in data["modes"])
        skipped = tuple((s["mode"], s["why"]) for s in data.get("skipped", ()))
        return cls(data["connections"], data["rate"], modes, skipped)


def _trial(target: CheckTarget, name: str) -> Trial:
    request = LoadRequest(
        url=f"{target.url}{target.path}", connections=64, threads=1, duration_s=TRIAL_S,
        timeout_s=TIMEOUT_S, cores=target.load_cores, tool="vegeta",
        rate=target.rate or RATE, targets=target.targets(),
    )  # fmt: skip
    directory = target.workdir / name
    directory.mkdir()
    return Trial.of(run_tool(request, target.registry, directory))


def _with_slow_clients(target: CheckTarget, mode: SlowMode, path: str, name: str) -> Trial:
    log = target.workdir / f"{name}.slowhttptest.log"
    argv = [
        SLOWHTTPTEST, mode.flag, "-c", str(SLOW_CONNECTIONS), "-r", str(SLOW_CONNECTIONS * 4),
        "-i", str(FOLLOW_UP_S), "-l", str(TRIAL_S + TIMEOUT_S + 10), "-x", "8", "-p", "3",
        *mode.extra, "-u", f"{target.url}{path}",
    ]  # fmt: skip
    slow = target.registry.start(argv, cores=target.load_cores, log_path=log)
    try:
        time.sleep(SETTLE_S)
        trial = _trial(target, name)
        if slow.alive():
            return trial
        said = " / ".join(ANSI.sub("", slow.log_tail(5)).split("\n")) or "(no output)"
        if slow.returncode == 0 and ALL_CLOSED in said:
            return dataclasses.replace(trial, slow_closed=True)
        # Else the trial was one more without them: not a round without harm.
        raise LoadToolError(
            f"slowhttptest ({mode.name}) exited with code {slow.returncode} during the "
            f"trial: {said}"
        )
    finally:
        target.registry.stop(slow, grace=1.0)


def with_and_without(target: CheckTarget, modes: list[str], rounds: int) -> SlowClients:
    """Each mode's rounds on a started stack, each a trial without the slow clients and one
    with them, in alternating order."""
    results, skipped = [], []
    for mode in modes:
        without, with_slow = [], []
        path = MODES[mode].path(target)
        if path is None:
            skipped.append((mode, f"needs a stack that serves static files ({READ_PATH})"))
            continue
        for r in range(rounds):
            trials = {}
            # Alternate which goes first, so a drift within the rounds falls on both sides.
            for slow in (False, True) if r % 2 == 0 else (True, False):
                name = f"{mode}-{r}-{'with' if slow else 'without'}"
                trials[slow] = (
                    _with_slow_clients(target, MODES[mode], path, name)
                    if slow
                    else _trial(target, name)
                )
            without.append(trials[False])
            with_slow.append(trials[True])
        results.append(SlowResult(mode, tuple(without), tuple(with_slow), path))
    return SlowClients(SLOW_CONNECTIONS, target.rate or RATE, tuple(results), tuple(skipped))
