"""Open a page in Debian's headless Chromium and ask it what a reader would see, over the
DevTools protocol: console errors, values computed in the page, and a screenshot."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
from websockets.sync.client import ClientConnection, connect

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--disable-default-apps", "--metrics-recording-only",
    "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
)  # fmt: skip


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    def __init__(self, socket: ClientConnection) -> None:
        self._socket = socket
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message_id = self._next_id
        self._socket.send(json.dumps({"id": message_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self._socket.recv(timeout=max(deadline - time.monotonic(), 0.1)))
            if message.get("id") == message_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, event: str, timeout: float = 30.0) -> dict[str, Any]:
        for seen in self.events:
            if seen.get("method") == event:
                return seen
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = json.loads(self._socket.recv(timeout=max(deadline - time.monotonic(), 0.1)))
            self.events.append(message)
            if message.get("method") == event:
                return message
        raise TimeoutError(event)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"])
        return result["result"].get("value")

    def console_errors(self) -> list[str]:
        """Uncaught exceptions, console.error calls and browser errors (blocked or failed loads,
        security policy violations)."""
        errors = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                errors.append(json.dumps(params["exceptionDetails"])[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                errors.append(json.dumps(params.get("args"))[:500])
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                errors.append(params["entry"].get("text", "")[:500])
        return errors

    def screenshot(self, path: Path) -> None:
        height = self.evaluate("document.documentElement.scrollHeight")
        width = self.evaluate("document.documentElement.scrollWidth")
        shot = self.call(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))


# Chromium starts in 0.2-1.4 s here, yet once on CI (2026-11-27) it never wrote its port in
# 30 s: a fresh profile and a second start, then give up with what it printed.
START_ATTEMPTS = 2
START_TIMEOUT_S = 30


@contextlib.contextmanager
def open_page(html: Path, width: int = 1280, height: int = 900) -> Iterator[Page]:
    """The page loaded (every script run) in a fresh profile; Chromium stopped afterwards."""
    chromium = chromium_path()
    assert chromium, "chromium is not installed (./lab setup installs it)"
    process, profile, port = _launch(chromium)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            targets = json.load(answer)
        url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        with connect(url, max_size=2**28, open_timeout=10) as socket:
            page = Page(socket)
            for domain in ("Page", "Runtime", "Log"):
                page.call(f"{domain}.enable")
            page.call(
                "Emulation.setDeviceMetricsOverride",
                width=width, height=height, deviceScaleFactor=1, mobile=width < 600,
            )  # fmt: skip
            page.call("Page.navigate", url=html.resolve().as_uri())
            page.wait_for("Page.loadEventFired")
            yield page
    finally:
        _stop(process, profile)


def _launch(chromium: str) -> tuple[subprocess.Popen, Path, int]:
    """Chromium listening for DevTools: its process, its profile and its port."""
    for attempt in range(1, START_ATTEMPTS + 1):
        profile = Path(tempfile.mkdtemp(prefix="bl-chromium-"))
        process = _start(chromium, profile)
        try:
            return process, profile, _debugging_port(profile, process)
        except (TimeoutError, RuntimeError):
            _stop(process, profile)
            if attempt == START_ATTEMPTS:
                raise
    raise AssertionError("unreachable: the last attempt returns or raises")


def _start(chromium: str, profile: Path) -> subprocess.Popen:
    with (profile / "chromium.log").open("wb") as log:
        return subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
            # Its singleton socket directory (org.chromium.Chromium.*) goes inside the profile.
            env={**os.environ, "TMPDIR": str(profile)},
        )


def _stop(process: subprocess.Popen, profile: Path) -> None:
    # The whole group: the renderer and zygote outlive the browser process otherwise,
    # and write into the profile after it is removed.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    _wait_for_group_to_end(process.pid)
    shutil.rmtree(profile, ignore_errors=True)


def _wait_for_group_to_end(group: int, timeout: float = 10) -> None:
    """Until no process of the group runs. A killed one's zombie writes nothing: it waits
    for this machine's PID 1 to reap it, which here takes one to ten seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _running_in_group(group):
            return
        time.sleep(0.05)


def _running_in_group(group: int) -> bool:
    for proc in psutil.process_iter(["status"]):
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if proc.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(proc.pid) == group:
                return True
    return False


def _debugging_port(profile: Path, process: subprocess.Popen) -> int:
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if marker.exists() and marker.read_text().strip():
            return int(marker.read_text().split()[0])
        if process.poll() is not None:
            code = process.returncode
            raise RuntimeError(
                f"chromium exited with {code} before it listened: {_log_tail(profile)}"
            )
        time.sleep(0.1)
    raise TimeoutError(
        f"chromium did not open its debugging port within {START_TIMEOUT_S} s: {_log_tail(profile)}"
    )


def _log_tail(profile: Path, lines: int = 5) -> str:
    log = profile / "chromium.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    return " | ".join(text.strip().splitlines()[-lines:]) or "(nothing on stderr)"
