"""The wrk adapter on real wrk runs against real servers."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from benchlab.hosts.generators import run_tool
from benchlab.load import LoadRequest, LoadToolError
from benchlab.load.wrk import parse_wrk_output
from benchlab.runner import HOST
from benchlab.system.process import ProcessRegistry
from tests.servers import running_stack, scripted_server


def _request(port: int, path: str, connections: int = 8) -> LoadRequest:
    return LoadRequest(
        url=f"http://{HOST}:{port}{path}",
        connections=connections,
        threads=1,
        duration_s=1,
        timeout_s=2,
        cores=(1,),
        tool="wrk",
    )


@pytest.mark.slow
@pytest.mark.alone
def test_wrk_against_nginx_gives_a_complete_result(tmp_path: Path) -> None:
    registry = ProcessRegistry()
    with running_stack("nginx-static", tmp_path) as (_, port):
        result = run_tool(_request(port, "/plaintext"), registry, tmp_path)
    assert result.tool == "wrk"
    assert result.requests > 100
    assert 0.9 < result.duration_s < 2.0  # -d 1: wrk stops on its own timer
    assert result.throughput_rps == pytest.approx(result.requests / result.duration_s)
    lat = result.latency
    assert lat.min is not None and lat.p50 is not None and lat.p99 is not None
    assert 0 < lat.min <= lat.p50 <= lat.p90 <= lat.p99 <= lat.p999 <= lat.max
    assert set(lat.percentiles) == {"50", "75", "90", "95", "99", "99.9", "99.99"}
    # Every response of /plaintext carries the 13-byte body, plus headers.
    assert result.bytes > result.requests * 13
    assert result.errors.total == 0
    # One wrk thread: never much over one core, whatever the machine.
    assert result.load_cpu_pct is not None and 1 < result.load_cpu_pct < 150


@pytest.mark.slow
@pytest.mark.alone
def test_non_2xx_responses_are_counted_as_errors(tmp_path: Path) -> None:
    registry = ProcessRegistry()
    failing = {"/boom": (500, {"Content-Length": "4", "Date": "x"}, b"boom")}
    with scripted_server(failing) as port:
        result = run_tool(_request(port, "/boom", connections=2), registry, tmp_path)
    assert result.requests > 0
    assert result.errors.non_2xx == result.requests


# It starts wrk, if only for an instant: the watch of tests sharing the machine sees it
# there once in a few runs (tests/alone.py).
@pytest.mark.slow
@pytest.mark.alone
def test_nothing_listening_is_a_clear_load_tool_error(tmp_path: Path) -> None:
    with scripted_server({}) as port:
        pass  # closed again: nothing listens on the port now
    with pytest.raises(LoadToolError, match="unable to connect"):
        run_tool(_request(port, "/"), ProcessRegistry(), tmp_path)


@pytest.mark.alone
@pytest.mark.slow
def test_a_server_that_goes_away_mid_run_gives_socket_errors(tmp_path: Path) -> None:
    closing = {"/bye": (200, {"Content-Length": "2", "Date": "x", "Connection": "close"}, b"ok")}
    request = LoadRequest(**{**_request(0, "/bye", 2).__dict__, "duration_s": 2})
    with scripted_server(closing) as port:
        request = LoadRequest(**{**request.__dict__, "url": f"http://{HOST}:{port}/bye"})
        result_box: list = []
        worker = threading.Thread(
            target=lambda: result_box.append(run_tool(request, ProcessRegistry(), tmp_path))
        )
        worker.start()
        time.sleep(0.7)
    worker.join(timeout=30)
    result = result_box[0]
    assert result.requests > 0  # answered while the server was up
    # Refused reconnects: wrk's non-blocking connect reports ECONNREFUSED on the first
    # write, so wrk counts them as write errors (and rarely as connect errors).
    assert result.errors.connect + result.errors.write > 100


def test_output_without_the_json_line_is_an_error() -> None:
    with pytest.raises(LoadToolError, match="no JSON summary"):
        parse_wrk_output("Running 1s test @ http://127.0.0.1:1/\n  1 threads and 1 connections\n")
