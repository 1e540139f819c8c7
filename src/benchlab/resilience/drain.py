"""Graceful shutdown under load (issue 40): a started stack, served a fixed rate of short
requests with one long request in flight, then sent its stop signal
(to its main process, as systemd's KillMode=mixed and `docker stop` do). What becomes of
the request in flight, of the requests sent before and after the signal, and how long the
server takes to exit.

A server that drains answers every request it had accepted, refuses new connections, and
exits. One that does not drops what it was serving: the deploy that stops it fails the
requests in flight, whatever a load balancer does in front. Behind benchlab's nginx the
load goes to nginx and the signal to the stack: what nginx's clients see."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import http.client
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlab.core.errors import LoadToolError
from benchlab.hosts.generators import run_tool
from benchlab.http.wire import ExchangeError, ExchangeTimeout, exchange
from benchlab.load import LoadRequest
from benchlab.load.request_records import CODE, ERROR, SENT, SUCCESS_HIGH, SUCCESS_LOW
from benchlab.load.vegeta import kept_records
from benchlab.resilience.target import CheckTarget
from benchlab.system.process import ManagedProcess

RATE = 20  # req/s of SHORT_MS requests: a fifth of a one-at-a-time worker's time
SHORT_MS = 10
LOAD_S = 5  # the load's length; the signal SIGNAL_AT_S into it
SIGNAL_AT_S = 2.0
LONG_MS = 500  # the request in flight at the signal, sent LONG_LEAD_S before it
LONG_LEAD_S = 0.2
EXIT_LIMIT_S = 10.0  # a server still running this long after its signal hangs (then is killed)
CONNECTIONS = 16


def expected_s() -> float:
    """What one check takes: its load, and the exit it may wait for."""
    return LOAD_S + 2.0


@dataclass(frozen=True)
class Drain:
    """What one stop under load did."""

    signal: str  # its name: SIGTERM, SIGQUIT
    rate: int
    in_flight: str | None  # the long request: None answered, else how it failed
    sent_before: int  # short requests sent before the signal
    failed_before: int  # of them, not answered
    sent_after: int
    answered_after: int
    refused_after: int  # connection refused: the listener was closed, as it should be
    failed_after: int  # anything else (reset, EOF, timeout, 5xx)
    exit_s: float | None  # None: still running after EXIT_LIMIT_S (then killed)
    failures: tuple[str, ...] = ()  # the distinct errors of the failed requests
    # Whether a long request was held in flight (not for a stack with no slow endpoint:
    # nginx-static answers fixed bytes at once).
    long_sent: bool = True

    @property
    def drains(self) -> bool:
        """Every request it had taken was answered, and it exited in time."""
        return self.in_flight is None and self.failed_before == 0 and self.exit_s is not None

    @property
    def verdict(self) -> str:
        """drains; drops (a request it had taken failed); hangs (none failed, no exit)."""
        if self.drains:
            return "drains"
        return "hangs" if self.in_flight is None and self.failed_before == 0 else "drops"

    def sentence(self) -> str:
        if self.drains:
            held = "the request in flight and " if self.long_sent else ""
            return (
                f"drains: {held}all {self.sent_before} sent before {self.signal} answered; "
                f"exited in {self.exit_s:.2f} s"
            )
        lost = []
        if self.in_flight is not None:
            lost.append(f"the request in flight ({self.in_flight})")
        if self.failed_before:
            lost.append(f"{self.failed_before} of {self.sent_before} sent before {self.signal}")
        exit_part = (
            f"exited in {self.exit_s:.2f} s"
            if self.exit_s is not None
            else f"still running {EXIT_LIMIT_S:g} s after {self.signal} (killed)"
        )
        if not lost:
            return f"answers every request it took but does not exit: {exit_part}"
        return f"drops {' and '.join(lost)}; {exit_part}"

    def to_json(self) -> dict[str, Any]:
        exit_s = None if self.exit_s is None else round(self.exit_s, 3)
        return {
            **dataclasses.asdict(self), "exit_s": exit_s, "failures": list(self.failures),
            "drains": self.drains, "verdict": self.verdict,
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Drain:
        """The result `to_json` wrote (a run keeps it in its cells' facts)."""
        names = {f.name for f in dataclasses.fields(cls)}
        fields = {k: v for k, v in data.items() if k in names}
        return cls(**{**fields, "failures": tuple(fields.get("failures", ()))})


# The long request's answer is "ok": anything much longer is not the reference app's.
LONG_ANSWER_MOST = 2**16


def _long_request(address: str, port: int, outcome: list[str | None]) -> None:
    """GET /sleep?ms=LONG_MS on its own connection, within EXIT_LIMIT_S in all; None when
    answered right."""
    try:
        reply = exchange(
            address, port, "GET", f"/sleep?ms={LONG_MS}", timeout=EXIT_LIMIT_S,
            most=LONG_ANSWER_MOST,
        )  # fmt: skip
    except ExchangeError as exc:
        outcome.append(_lost(exc))
        return
    outcome.append(None if reply.status == 200 and reply.body == b"ok" else f"{reply.status}")


def _lost(failed: ExchangeError) -> str:
    """Why the long request got no answer, in the words the drain's verdict uses."""
    cause = failed.__cause__
    if isinstance(cause, http.client.RemoteDisconnected):
        return "closed without an answer"
    if isinstance(cause, ConnectionResetError):
        return "connection reset"
    if isinstance(failed, ExchangeTimeout) or isinstance(cause, TimeoutError):
        return f"no answer in {EXIT_LIMIT_S:g} s"
    return str(failed)


def _exit_seconds(server: ManagedProcess, since: float) -> float | None:
    while time.monotonic() - since < EXIT_LIMIT_S:
        if not server.survives():
            return time.monotonic() - since
        time.sleep(0.01)
    return None


def _signal_under_load(target: CheckTarget, long: bool) -> tuple[int, str | None, float | None]:
    """At SIGNAL_AT_S, `stop` to the server's main process (the long request sent just
    before when `long`); its wall time (ns), the long request's outcome, the exit time."""
    outcome: list[str | None] = []
    time.sleep(SIGNAL_AT_S - (LONG_LEAD_S if long else 0.0))
    server = target.server
    sender = threading.Thread(
        target=_long_request, args=(target.address, target.port, outcome), daemon=True
    )
    if long:
        sender.start()
        time.sleep(LONG_LEAD_S)
    server.remember_tree()  # its workers too: the exit is the last one's
    signalled_ns, since = time.time_ns(), time.monotonic()
    with contextlib.suppress(ProcessLookupError):
        os.kill(server.pid, target.stack.stop_signal)
    exit_s = _exit_seconds(server, since)
    if long:
        sender.join(EXIT_LIMIT_S)
    return signalled_ns, (outcome[0] if outcome else "no answer") if long else None, exit_s


def _count(records: Path, signalled_ns: int) -> dict[str, Any]:
    counts = dict.fromkeys(("sent_before", "failed_before", "refused_before", "sent_after",
                            "answered_after", "refused_after", "failed_after"), 0)  # fmt: skip
    failures: set[str] = set()
    for line in kept_records(records)():
        if not line.strip():
            continue
        fields = next(csv.reader([line]))
        sent, code, error = int(fields[SENT]), int(fields[CODE]), fields[ERROR]
        answered = SUCCESS_LOW <= code < SUCCESS_HIGH
        # A refused connection was never taken: vegeta stamps a request before it dials,
        # so one stamped just before the signal may meet the listener already closed.
        refused = not answered and "connection refused" in error
        if sent < signalled_ns:
            counts["sent_before"] += 1
            counts["failed_before"] += not answered and not refused
            counts["refused_before"] += refused
        else:
            counts["sent_after"] += 1
            counts["answered_after"] += answered
            counts["refused_after"] += refused
            counts["failed_after"] += not answered and not refused
        if not answered:
            failures.add(_error_kind(error, code))
    return {**counts, "failures": tuple(sorted(failures))}


def _error_kind(error: str, code: int) -> str:
    """The error without its addresses: `connection reset by peer`, `HTTP 503`."""
    if not error:
        return f"HTTP {code}"
    return error.rsplit(": ", 1)[-1]


def stop_under_load(target: CheckTarget) -> Drain:
    """The stop under load of a started stack: sent its stop signal; one that hangs is still
    running when this returns (whoever started it stops it)."""
    stack = target.stack
    long = "sleep" in stack.scenarios
    path = f"/sleep?ms={SHORT_MS}" if long else "/plaintext"
    request = LoadRequest(
        url=f"{target.url}{path}", connections=CONNECTIONS, threads=1,
        duration_s=LOAD_S, timeout_s=int(EXIT_LIMIT_S), cores=target.load_cores, tool="vegeta",
        rate=RATE, name="drain",
    )  # fmt: skip
    result: list[tuple[int, str | None, float | None]] = []
    stopper = threading.Thread(
        target=lambda: result.append(_signal_under_load(target, long)), daemon=True
    )
    stopper.start()
    try:
        run_tool(request, target.registry, target.workdir)
    finally:  # the signal is never sent after the check has ended
        stopper.join(EXIT_LIMIT_S + SIGNAL_AT_S + 1)
    if not result:
        raise LoadToolError("the stop signal was not sent in time")  # never seen: a guard
    signalled_ns, in_flight, exit_s = result[0]
    counts = _count(target.workdir / "vegeta.bin", signalled_ns)
    if counts["sent_before"] == 0:
        raise LoadToolError(f"vegeta sent nothing in the {SIGNAL_AT_S:g} s before the signal")
    if counts.pop("refused_before") == counts["sent_before"]:
        raise LoadToolError("every request before the signal was refused: it was not serving")
    return Drain(stack.stop_signal.name, RATE, in_flight, exit_s=exit_s, long_sent=long, **counts)
