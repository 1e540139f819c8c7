"""Real servers for tests, started through benchlab's own stack and process code."""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

from benchlab.http.verify import wait_until_answering
from benchlab.runner import HOST, free_port, start_stack
from benchlab.stacks import CATALOGUE, LaunchContext, Stack
from benchlab.system.process import ManagedProcess, ProcessRegistry

VENV_BIN = str(Path(sys.executable).parent)


@contextlib.contextmanager
def running_stack(
    name: str | Stack,
    workdir: Path,
    cores: tuple[int, ...] = (0,),
    workers: int = 1,
    env: dict[str, str] | None = None,
    threads: int | None = None,
) -> Iterator[tuple[ManagedProcess, int]]:
    """The catalogue's stack of that name, or `name` itself (a test's own stack), started."""
    stack = CATALOGUE[name] if isinstance(name, str) else name
    if stack.build is not None:
        stack.build()
    workdir.mkdir(parents=True, exist_ok=True)
    static = (env or {}).get("BENCHLAB_STATIC_DIR")
    ctx = LaunchContext(
        HOST, free_port(), workdir / "stack", cores, workers, threads,
        static_dir=Path(static) if static else None,
    )  # fmt: skip
    registry = ProcessRegistry()
    process = start_stack(registry, stack, ctx, cores, env)
    try:
        problem = wait_until_answering(HOST, ctx.port, process.alive, stack.start_timeout)
        assert problem is None, f"{stack.name}: {problem}: {process.log_tail()}"
        yield process, ctx.port
    finally:
        registry.stop_all()


class _Handler(http.server.BaseHTTPRequestHandler):
    """Answers by path: what a broken stack might send."""

    protocol_version = "HTTP/1.1"
    # TCP_NODELAY: headers and body go out in separate writes, and without it Nagle's
    # algorithm waits for the client's delayed ACK (about 40 ms a response).
    disable_nagle_algorithm = True
    responses_by_path: ClassVar[dict[str, tuple[int, dict[str, str], bytes]]] = {}

    def do_GET(self) -> None:
        status, headers, body = self.responses_by_path.get(self.path, (404, {}, b"no"))
        self.send_response_only(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def scripted_server(responses: dict[str, tuple[int, dict[str, str], bytes]]) -> Iterator[int]:
    """A real HTTP server on loopback whose answers the test chooses (a stack gone wrong)."""
    handler = type("Handler", (_Handler,), {"responses_by_path": responses})
    server = http.server.ThreadingHTTPServer((HOST, 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def served_by(command: str, where: Path, path: str) -> str:
    """Paste the printed deploy command into a shell in `where`; the body it answers."""
    port = free_port()
    command = command.replace("0.0.0.0:8000", f"127.0.0.1:{port}")
    command = command.replace("--host 0.0.0.0 --port 8000", f"--host 127.0.0.1 --port {port}")
    command = command.replace("--host=0.0.0.0 --port=8000", f"--host=127.0.0.1 --port={port}")
    # A runtime directory of its own: gunicorn (25.1+) would put its control socket in
    # ~/.gunicorn/ of whoever runs the suite.
    runtime = tempfile.TemporaryDirectory(prefix="bl-runtime-")
    server = subprocess.Popen(
        ["bash", "-c", command], cwd=where, start_new_session=True,
        env={**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}",
             "XDG_RUNTIME_DIR": runtime.name},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        problem = wait_until_answering("127.0.0.1", port, lambda: server.poll() is None, 30)
        assert problem is None, (command, problem)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
            return answer.read().decode()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(10)
        runtime.cleanup()
