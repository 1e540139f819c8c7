"""The watch that keeps tests sharing the machine from measuring (tests/alone.py): it sees a
load tool and a benchlab holding the run lock in the worker's tree, and nothing else."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchlab.runner.recovery import RUN_LOCK_FILE
from tests.alone import WATCH_INTERVAL_S, LoadWatch

HOLD_THE_LOCK = """
import fcntl, sys, time
with open(sys.argv[1], "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    print("held", flush=True)
    time.sleep(30)
"""


def _seen_while(argv: list[str], ready: str | None = None) -> set[str]:
    watch = LoadWatch()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        if ready is not None:
            assert process.stdout is not None and process.stdout.readline().strip() == ready
        time.sleep(WATCH_INTERVAL_S * 4)
        return watch.take()
    finally:
        process.kill()
        process.wait()
        watch.stop()


# It starts a process the watch takes for a load tool: beside other tests, their watch would
# blame it on them.
@pytest.mark.slow
@pytest.mark.alone
def test_the_watch_sees_a_load_tool_and_the_run_lock_and_not_a_plain_process(
    tmp_path: Path,
) -> None:
    fake_wrk = tmp_path / "wrk"
    shutil.copy(shutil.which("sleep") or "/bin/sleep", fake_wrk)
    assert _seen_while([str(fake_wrk), "30"]) == {"wrk"}
    assert _seen_while(["sleep", "30"]) == set()
    lock = tmp_path / RUN_LOCK_FILE
    held = _seen_while([sys.executable, "-c", HOLD_THE_LOCK, str(lock)], ready="held")
    assert held == {"benchlab's run lock"}
    other = _seen_while([sys.executable, "-c", HOLD_THE_LOCK, str(tmp_path / "x.lock")], "held")
    assert other == set()
