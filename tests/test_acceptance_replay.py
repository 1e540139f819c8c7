"""examples/acceptance/replay.py, the independent replay of tune's answers, reads tune's own
request parser and prints vegeta's targets from it: when that parser changes shape, this
fails here rather than in the next acceptance run."""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO


def _replay() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "acceptance_replay", REPO / "examples" / "acceptance" / "replay.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_replay_sends_tunes_requests_each_as_often_as_its_weight(tmp_path: Path) -> None:
    replay = _replay()
    requests_file = tmp_path / "requests.toml"
    requests_file.write_text(
        '[[request]]\nmethod = "POST"\npath = "/items"\nbody = \'{"name": "x"}\'\n'
        'headers = { "Content-Type" = "application/json" }\nweight = 3\n'
    )
    asked = argparse.Namespace(request=["GET /items?page=2"], requests_file=requests_file)
    first = replay.vegeta_targets(asked, "http://127.0.0.1:8123", tmp_path / "targets.json")
    targets = [json.loads(line) for line in (tmp_path / "targets.json").read_text().splitlines()]
    assert first == "/items?page=2"
    assert [(t["method"], t["url"]) for t in targets] == [
        ("GET", "http://127.0.0.1:8123/items?page=2"),
        *[("POST", "http://127.0.0.1:8123/items")] * 3,
    ]
    assert "body" not in targets[0]
    assert {base64.b64decode(t["body"]) for t in targets[1:]} == {b'{"name": "x"}'}
    assert targets[1]["header"] == {"Content-Type": ["application/json"]}


def test_the_replay_refuses_a_websocket_echo_it_cannot_send(tmp_path: Path) -> None:
    asked = argparse.Namespace(request=["WS /echo"], requests_file=None)
    with pytest.raises(SystemExit, match="vegeta replays HTTP requests only"):
        _replay().vegeta_targets(asked, "http://127.0.0.1:8123", tmp_path / "targets.json")


def test_the_printed_command_is_moved_to_loopback_and_nothing_else() -> None:
    replay = _replay()
    gunicorn = "gunicorn app:app --bind 0.0.0.0:8000 --workers 2"
    uvicorn = "uvicorn app:app --host 0.0.0.0 --port 8000 --workers 1"
    assert replay.on_loopback(gunicorn, 9001) == (
        "gunicorn app:app --bind 127.0.0.1:9001 --workers 2"
    )
    assert replay.on_loopback(uvicorn, 9001) == (
        "uvicorn app:app --host 127.0.0.1 --port 9001 --workers 1"
    )
    # A command's answer: the port it is told by $PORT, or its {port} filled with 8000.
    go = "PORT=8000 GOMAXPROCS=1 ./server"
    assert replay.on_loopback(go, 9001) == "PORT=9001 GOMAXPROCS=1 ./server"
    addr = "BENCHLAB_ADDR=0.0.0.0:8000 GOMAXPROCS=1 ./server"
    assert replay.on_loopback(addr, 9001) == "BENCHLAB_ADDR=127.0.0.1:9001 GOMAXPROCS=1 ./server"
    assert replay.on_loopback("SUPPORT=80001 x", 9001) == "SUPPORT=80001 x"
