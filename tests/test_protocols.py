"""TLS and HTTP/2: servers started over the protocol a cell asks for answer over it (the
negotiated protocol and TLS version checked, a silent downgrade caught), h2load measures
HTTP/2 by the same rules as every tool, nginx terminates TLS and HTTP/2 in front of a stack,
and a recipe asking for a protocol nothing in it can speak is refused in one line."""

from __future__ import annotations

import dataclasses
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlab.core.errors import LoadToolError
from benchlab.hosts.generators import run_tool
from benchlab.http.protocols import PROTOCOLS
from benchlab.http.scenarios import SCENARIOS
from benchlab.http.tls import TlsFiles, make_certificates
from benchlab.http.verify import verify, wait_until_answering
from benchlab.http.wire import Wire, exchange
from benchlab.load import LoadRequest
from benchlab.runner import HOST, free_port, start_stack
from benchlab.services.nginx_proxy import start_proxy
from benchlab.stacks import CATALOGUE, LaunchContext
from benchlab.system.process import ProcessRegistry
from tests.conftest import benchlab, short_tmp, write_recipe

JSON = SCENARIOS["json"].expectations()


@pytest.fixture(scope="module")
def certificates() -> Iterator[TlsFiles]:
    directory = short_tmp()
    yield make_certificates(directory / "tls", ("127.0.0.1",))
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def registry(isolated_tmp: Path) -> Iterator[ProcessRegistry]:
    # Depends on isolated_tmp so that its processes stop before their directories go.
    processes = ProcessRegistry()
    yield processes
    processes.stop_all()


def _serve(
    registry: ProcessRegistry, root: Path, name: str, protocol: str, tls: TlsFiles, stack=None
) -> tuple[int, Wire]:
    """The stack started for `protocol`, answering over it, working in a directory under
    `root` (a test's isolated_tmp, removed after it)."""
    stack = stack or CATALOGUE[name]
    if stack.build is not None:
        stack.build()
    workdir = root / f"{name}-{protocol}"
    spoken = PROTOCOLS[protocol]
    ctx = LaunchContext(
        HOST, free_port(), workdir, (0,), 1, 4 if stack.concurrency else None, protocol,
        tls if spoken.tls else None,
    )  # fmt: skip
    env = {"BENCHLAB_FLAVOUR": stack.flavours[0]} if stack.flavours else {}
    process = start_stack(registry, stack, ctx, (0,), env)
    wire = Wire(spoken, tls.ca if spoken.tls else None)
    problem = wait_until_answering(HOST, ctx.port, process.alive, 20, wire=wire)
    assert problem is None, f"{name} over {protocol}: {problem}: {process.log_tail()}"
    return ctx.port, wire


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stack", "protocol", "negotiated"),
    [
        ("gin", "h1-tls", "HTTP/1.1 over TLSv1.3"),
        ("gin", "h2", "HTTP/2 over TLSv1.3"),
        ("gin", "h2c", "HTTP/2"),
        ("fastapi+granian", "h2", "HTTP/2 over TLSv1.3"),
        ("starlette+gunicorn-asgi", "h1-tls", "HTTP/1.1 over TLSv1.3"),
        ("flask+gunicorn-gthread", "h1-tls", "HTTP/1.1 over TLSv1.3"),
    ],
)
def test_a_stack_answers_over_the_protocol_it_was_started_for(
    registry, isolated_tmp: Path, certificates, stack: str, protocol: str, negotiated: str
) -> None:
    port, wire = _serve(registry, isolated_tmp, stack, protocol, certificates)
    assert exchange(HOST, port, "GET", "/json", wire=wire).negotiated == negotiated
    assert verify(HOST, port, JSON, wire=wire) is None


@pytest.mark.slow
def test_a_server_that_falls_back_to_http1_is_caught_not_measured(
    registry, isolated_tmp: Path, certificates
) -> None:
    # uvicorn over TLS offers http/1.1 only: a stack that claimed h2 would be measured over
    # HTTP/1.1 without anyone seeing it. Verification sees it.
    claims_h2 = dataclasses.replace(CATALOGUE["fastapi+uvicorn"], protocols=("h1", "h1-tls", "h2"))
    port, wire = _serve(registry, isolated_tmp, "fastapi+uvicorn", "h2", certificates, claims_h2)
    problem = verify(HOST, port, JSON, wire=wire)
    assert problem is not None and "negotiated HTTP/1.1, not HTTP/2" in problem, problem
    # And the catalogue does not claim it: the plan leaves that pair out, saying why.
    why = CATALOGUE["fastapi+uvicorn"].why_not_protocol("h2")
    assert why is not None and "uvicorn" in why and 'proxy = "nginx"' in why


@pytest.mark.slow
def test_nginx_terminates_tls_and_http2_in_front_of_a_plain_stack(
    registry, isolated_tmp: Path, certificates
) -> None:
    upstream, _ = _serve(registry, isolated_tmp, "flask+gunicorn-gthread", "h1", certificates)
    workdir = isolated_tmp / "proxy"
    workdir.mkdir()
    _, port = start_proxy(registry, workdir, (0,), upstream, protocol="h2", tls=certificates)
    wire = Wire(PROTOCOLS["h2"], certificates.ca)
    assert exchange(HOST, port, "GET", "/json", wire=wire).negotiated == "HTTP/2 over TLSv1.3"
    assert verify(HOST, port, JSON, wire=wire) is None


def _h2load(port: int, protocol: str, path: str, connections: int = 8) -> LoadRequest:
    scheme = PROTOCOLS[protocol].scheme
    return LoadRequest(
        url=f"{scheme}://{HOST}:{port}{path}", connections=connections, threads=1,
        duration_s=2, timeout_s=2, cores=(1,), tool="h2load", protocol=protocol,
    )  # fmt: skip


@pytest.mark.alone
@pytest.mark.parametrize("protocol", ["h2", "h2c"])
@pytest.mark.slow
def test_h2load_measures_http2_by_the_rules_every_tool_follows(
    registry, isolated_tmp: Path, certificates, protocol: str, tmp_path: Path
) -> None:
    port, _ = _serve(registry, isolated_tmp, "gin", protocol, certificates)
    result = run_tool(_h2load(port, protocol, "/json"), ProcessRegistry(), tmp_path)
    assert result.requests > 100 and result.errors.total == 0, result
    lat = result.latency
    ordered = [lat.min, lat.p50, lat.p90, lat.p99, lat.max]
    assert None not in ordered and ordered == sorted(ordered)
    assert result.histogram is not None and result.bytes > result.requests * 35
    # Little's law in a closed loop: requests in flight = throughput × mean latency, and
    # each of the 8 connections holds one stream.
    in_flight = result.requests / result.duration_s * (lat.mean or 0) / 1000
    assert 8 * 0.5 < in_flight < 8 * 1.2, in_flight
    # Answers that are not 2xx are counted as such (a /sleep without its ms is a 400).
    bad = run_tool(_h2load(port, protocol, "/sleep", 2), ProcessRegistry(), tmp_path)
    assert bad.requests > 0 and bad.errors.non_2xx == bad.requests, bad.errors


def _recipe(tmp_path: Path, stacks: list[str], load: str) -> Path:
    return write_recipe(
        tmp_path,
        f'name = "p"\nstacks = {json.dumps(stacks)}\nscenarios = ["json"]\n{load}',
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stacks", "load", "message"),
    [
        (["gin"], '[[load]]\nprotocol = "h2"', "key 'load[0].protocol': wrk does not speak h2"),
        (
            ["fastapi+uvicorn"],
            '[[load]]\ntool = "h2load"\nprotocol = "h2"',
            "key 'load[0].protocol': no stack of the recipe speaks h2",
        ),
        (["gin"], '[[load]]\nprotocol = "h3"', "key 'load[0].protocol': expected one of 'h1'"),
    ],
)
def test_a_protocol_nothing_can_speak_is_refused_in_one_line(
    tmp_path: Path, stacks: list[str], load: str, message: str
) -> None:
    done = benchlab("run", str(_recipe(tmp_path, stacks, load)), "--dry-run")
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.slow
def test_the_plan_says_which_stacks_cannot_take_part_and_why(tmp_path: Path) -> None:
    load = '[[load]]\ntool = "h2load"\nprotocol = "h2"'
    done = benchlab("run", str(_recipe(tmp_path, ["gin", "fastapi+uvicorn"], load)), "--dry-run")
    assert "plan: 1 cells" in done.stdout, done.stdout
    assert "not measured: fastapi+uvicorn over h2: uvicorn" in done.stdout.replace("\n", " ")


class _CountingServer(http.server.ThreadingHTTPServer):
    """A real HTTP/1.1 server that counts the connections it accepts."""

    accepted = 0

    def process_request(self, request, client_address) -> None:
        type(self).accepted += 1
        super().process_request(request, client_address)


class _Ok(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        self.send_response_only(200)
        self.send_header("Content-Length", "2")
        self.send_header("Date", "x")
        # ab's HTTP/1.0 keep-alive waits for the server to close unless the answer says so.
        asked = self.headers.get("Connection", "").lower()
        if asked in ("keep-alive", "close"):
            self.send_header("Connection", asked)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.alone
@pytest.mark.parametrize("tool", ["wrk", "vegeta", "hey", "ab"])
@pytest.mark.slow
def test_without_keep_alive_every_request_has_a_connection_of_its_own(
    tool: str, tmp_path: Path
) -> None:
    for close_each in (False, True):
        server = type("Counting", (_CountingServer,), {"accepted": 0})((HOST, 0), _Ok)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            request = LoadRequest(
                url=f"http://{HOST}:{server.server_address[1]}/", connections=2, threads=1,
                duration_s=1, timeout_s=2, cores=(1,), tool=tool, close_each=close_each,
            )  # fmt: skip
            result = run_tool(request, ProcessRegistry(), tmp_path)
        finally:
            server.shutdown()
            server.server_close()
        assert result.requests > 20, result
        if close_each:
            assert type(server).accepted >= result.requests, (type(server).accepted, result)
        else:
            assert type(server).accepted <= 2 + 2, (type(server).accepted, result)


def test_h2load_is_not_pointed_at_a_server_that_closes_each_connection(tmp_path: Path) -> None:
    # Over HTTP/1.1, h2load waits on a connection the server closed (gunicorn's sync
    # workers close after every answer): the cell fails at once, naming the tools that work.
    request = dataclasses.replace(_h2load(1, "h1", "/json"), keep_alive=False)
    with pytest.raises(LoadToolError, match=r"does not reconnect.*use wrk or vegeta"):
        run_tool(request, ProcessRegistry(), tmp_path)


@pytest.mark.slow
def test_keepalive_false_and_exclusions_by_it(tmp_path: Path) -> None:
    refused = benchlab(
        "run", str(_recipe(tmp_path, ["gin"], '[[load]]\ntool = "h2load"\nkeepalive = false')),
        "--dry-run",
    )  # fmt: skip
    assert refused.returncode == 2 and "key 'load[0].keepalive'" in refused.stderr
    # Without keep-alive for JSON only: the other scenario is excluded there, not elsewhere.
    load = (
        "[[load]]\n[[load]]\nkeepalive = false\n"
        '[[exclude]]\nscenario = "plaintext"\nkeepalive = false\n'
    )
    path = write_recipe(
        tmp_path, f'name = "k"\nstacks = ["gin"]\nscenarios = ["json", "plaintext"]\n{load}'
    )
    assert "plan: 3 cells" in benchlab("run", str(path), "--dry-run").stdout
