"""benchlab tune --request 'WS PATH': a user's ASGI app tuned for its WebSocket echo, with
the real load tool, on an app whose limit is known (examples/asgi-echo: 2 ms a message on
one event loop, at most 500 messages a second)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import benchlab

ECHO_APP = "examples/asgi-echo/app.py:app"
PAUSE_MS = 2.0  # the app's own hold of its event loop per message


@pytest.mark.slow
@pytest.mark.alone
def test_an_asgi_apps_websocket_echo_is_tuned_in_messages_a_second_under_its_limit(
    tmp_path: Path,
) -> None:
    out = tmp_path / "tune.json"
    result = benchlab(
        "tune", ECHO_APP, "--request", "WS /echo", "--servers", "uvicorn", "--workers", "1",
        "--slo-p99-ms", "50", "--budget", "4", "--proof", "10",
        "--results", str(tmp_path / "r.db"), "-f", "json", "-o", str(out), timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    said = result.stdout + result.stderr
    assert "msg/s" in said and " req/s" not in said, said
    report = json.loads(out.read_text())
    assert {cell["rate_unit"] for cell in report["cells"]} == {"msg/s"}
    recommendation = report["recommendation"]
    most = 1000 / PAUSE_MS  # one event loop, 2 ms a message: no server passes it
    closed = recommendation["closed_loop_rps"]
    capacity = recommendation["capacity_rps"]["median"]
    # The closed loop is the app's bound (JMeter's whole milliseconds: a little over it).
    assert closed <= 1.05 * most, closed
    # Each connection's messages spread over its period, the app is far from its bound at
    # half the closed loop: the capacity under 50 ms is most of it (measured in this tune).
    assert 0.5 * closed <= capacity <= most, (capacity, closed)
    proof = recommendation["proof"]
    assert proof["held"] and proof["rate"] <= capacity, proof
    assert proof["windows_p99_ms"] and max(proof["windows_p99_ms"]) <= 50, proof
