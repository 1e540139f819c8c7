"""A running vegeta attack followed as it goes, by vegeta's own report: its results file
(gob, written a result at a time) is copied as it grows into `vegeta report -type json
-every 1s`, whose report of everything so far comes back once a second.

Each byte of the file is read once, as it is written (never the whole file again), and the
counting is vegeta's own, in Go (about 0.7 µs a result on this project's machine); the
trial's figures are still read from the whole file after the attack (request_records.py),
and nothing here touches that file but to read it. The report process runs on benchlab's
own cores, beside the thread that feeds it, and ends when its input closes: when the trial
ends, or when benchlab dies."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from benchlab.load.live import LIVE_EVERY_S, Follow, LiveLoad

READ_BYTES = 1 << 20
POLL_S = 0.2  # how often the file is looked at for what vegeta wrote since
STOP_TIMEOUT_S = 5.0


def live_load(report: dict[str, Any], elapsed_s: float, duration_s: float) -> LiveLoad:
    """vegeta's JSON report (`report -type json`) as a running trial's figures: its errors
    are its responses outside 2xx-3xx (status 0: no response), as vegeta counts success."""
    codes: dict[str, int] = report.get("status_codes") or {}
    failed = sum(count for code, count in codes.items() if not 200 <= int(code) < 400)
    return LiveLoad(
        elapsed_s=elapsed_s, duration_s=duration_s, requests=int(report["requests"]),
        errors=failed, achieved_rps=float(report["throughput"]),
    )  # fmt: skip


class VegetaFollower:
    """`with VegetaFollower(vegeta, results, duration_s, follow):` around a running attack
    that writes `results`: `follow` gets its figures so far, once a second."""

    def __init__(self, vegeta: str, results: Path, duration_s: float, follow: Follow) -> None:
        self.vegeta = vegeta
        self.results = results
        self.duration_s = duration_s
        self.follow = follow
        self.stopped = threading.Event()
        self.process: subprocess.Popen[bytes] | None = None
        self.threads: list[threading.Thread] = []
        self.began = 0.0

    def __enter__(self) -> VegetaFollower:
        self.began = time.monotonic()
        self.process = subprocess.Popen(
            [self.vegeta, "report", "-type=json", f"-every={LIVE_EVERY_S:g}s"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True, cwd=self.results.parent,  # the trial's own directory
        )  # fmt: skip
        assert self.process.stdin is not None and self.process.stdout is not None
        self.threads = [
            threading.Thread(target=self._copy, args=(self.process.stdin,), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True),
        ]
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stopped.set()
        process = self.process
        assert process is not None
        self.threads[0].join(STOP_TIMEOUT_S)  # the copy closes vegeta report's input
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        self.threads[1].join(STOP_TIMEOUT_S)

    def _copy(self, into: IO[bytes]) -> None:
        """What vegeta writes, into the report's input as it comes; closed at the end."""
        try:
            handle = self._opened()
            if handle is None:
                return
            with os.fdopen(handle, "rb", buffering=0) as results:
                while not self.stopped.is_set():
                    chunk = results.read(READ_BYTES)
                    if chunk:
                        into.write(chunk)
                        into.flush()
                    else:
                        self.stopped.wait(POLL_S)
        except (BrokenPipeError, OSError):
            pass  # the report ended: the trial goes on without a live figure
        finally:
            with contextlib.suppress(OSError):
                into.close()

    def _opened(self) -> int | None:
        """The results file once vegeta has made it (never through a link)."""
        while not self.stopped.is_set():
            try:
                return os.open(self.results, os.O_RDONLY | os.O_NOFOLLOW)
            except FileNotFoundError:
                self.stopped.wait(POLL_S)
        return None

    def _read(self, reports: IO[bytes]) -> None:
        """Each report vegeta writes (after a screen-clearing sequence: its output is
        stdout), handed on while the trial runs."""
        for line in reports:
            text = line.decode(errors="replace")
            start = text.find("{")
            if start < 0 or self.stopped.is_set():
                continue
            try:
                report = json.loads(text[start:])
            except json.JSONDecodeError:
                continue
            elapsed = min(time.monotonic() - self.began, self.duration_s)
            self.follow(live_load(report, elapsed, self.duration_s))
