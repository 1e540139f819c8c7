"""A server of known capacity, started as a user starts theirs (outside benchlab): one gunicorn
worker of one thread that burns SERVICE_S of CPU a request, so it serves at most MOST a
second. tune's subjects (tests/test_tune_subjects.py) and its kept runs
(tests/test_tune_kept.py, tests/killed_tunes.py) measure it by its URL and by --command."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from benchlab.http.verify import wait_until_answering
from benchlab.recipe import default_cores

VENV_BIN = Path(sys.executable).parent
SERVICE_S = 0.005  # CPU a request: one worker serves at most 200 a second
MOST = 1 / SERVICE_S

BURNS = f"""
import time


def app(environ, start_response):
    # {SERVICE_S * 1000:g} ms of this process's CPU a request, whatever the machine.
    end = time.process_time() + {SERVICE_S}
    while time.process_time() < end:
        pass
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "4")])
    return [b"done"]
"""

# BURNS by --command over --grid's threads: one gunicorn worker of gthread (connections
# kept alive), as known_server starts it; its threads share one interpreter lock, so one
# thread or two carry what one worker's CPU allows on any machine.
BURNS_COMMAND = (
    f"{VENV_BIN / 'gunicorn'} -w 1 -k gthread --threads {{threads}} -b {{host}}:{{port}} burn:app"
)


@contextlib.contextmanager
def known_server(
    where: Path, prefix: tuple[str, ...] = (), address: str = "127.0.0.1"
) -> Iterator[tuple[int, int]]:
    """One gunicorn worker of one thread serving BURNS (a request at a time, its connections
    kept alive), pinned to the server cores, started as a user starts it (outside
    benchlab); `prefix` enters a namespace. Its port and main pid."""
    (where / "burn.py").write_text(BURNS)
    port = free_port(prefix)
    cores = ",".join(str(c) for c in default_cores().server)
    served = shlex.split(BURNS_COMMAND.format(threads=1, host=address, port=port))
    argv = [*prefix, "taskset", "--cpu-list", cores, *served, "--chdir", str(where)]
    log = (where / "server.log").open("wb")
    server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        problem = wait_until_answering(address, port, lambda: server.poll() is None, 20)
        assert problem is None, (problem, (where / "server.log").read_text())
        yield port, server.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


def free_port(prefix: tuple[str, ...]) -> int:
    program = "import socket; s = socket.socket(); s.bind(('', 0)); print(s.getsockname()[1])"
    done = subprocess.run([*prefix, sys.executable, "-c", program], capture_output=True,
                          text=True, check=True)  # fmt: skip
    return int(done.stdout)
