"""The WebSocket contract checked before measuring, as verify.py checks HTTP answers: the
echo sends back each frame it got, byte for byte and in order; every other member of a room
receives a posted frame exactly once, and the poster none; the server's counters
(GET /ws/counters: frames in, frames out, deliveries) count exactly what was exchanged, so
that a load tool's counts can be checked against them."""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from dataclasses import dataclass

from websockets.exceptions import WebSocketException
from websockets.sync.client import ClientConnection, connect

from benchlab.http.wire import ExchangeError, exchange

ECHO_PATH = "/ws/echo"
ROOM_PREFIX = "/ws/room/"
COUNTERS_PATH = "/ws/counters"
# Frames the echo must send back: ASCII, a multi-byte text, one of 32 KiB.
ECHO_FRAMES = ("hello", "ünïcödé ✓ 漢字", "x" * 32 * 1024)
MEMBERS = 3
# The most a frame, and the counters' answer, may hold: a frame more is the server's fault.
FRAME_MOST = 2**20
COUNTERS_MOST = 2**16
# How long a member waits for a frame that should come, and for one that should not.
EXPECT_S = 5.0
QUIET_S = 0.3


@dataclass(frozen=True)
class WsCounters:
    frames_in: int
    frames_out: int
    deliveries: int

    def since(self, before: WsCounters) -> WsCounters:
        return WsCounters(
            self.frames_in - before.frames_in,
            self.frames_out - before.frames_out,
            self.deliveries - before.deliveries,
        )


class ContractBroken(Exception):
    """What the server did against the contract, in one sentence."""


def read_counters(host: str, port: int, timeout: float = 10.0) -> WsCounters:
    """The server's counters, read within `timeout` in all and COUNTERS_MOST bytes."""
    try:
        reply = exchange(host, port, "GET", COUNTERS_PATH, timeout=timeout, most=COUNTERS_MOST)
    except ExchangeError as exc:
        raise ContractBroken(f"GET {COUNTERS_PATH}: {exc}") from None
    body = reply.body
    try:
        data = json.loads(body)
        return WsCounters(int(data["frames_in"]), int(data["frames_out"]), int(data["deliveries"]))
    except (ValueError, KeyError, TypeError):
        raise ContractBroken(
            f"GET {COUNTERS_PATH} answered {reply.status} {body[:120]!r}, not the counters"
        ) from None


def verify_websocket(
    host: str, port: int, timeout: float = 10.0, echo_path: str | None = None
) -> str | None:
    """None when the echo, a room and the counters honour the contract, else the first
    reason they do not. `echo_path`: a user's own echo endpoint (benchlab tune), whose echo
    alone is checked: its app has no rooms and no counters."""
    if echo_path is not None:
        try:
            _check_echo(host, port, timeout, echo_path)
        except ContractBroken as exc:
            return str(exc)
        except (OSError, WebSocketException) as exc:
            return f"WebSocket {echo_path}: {type(exc).__name__}: {exc}"
        return None
    try:
        before = read_counters(host, port, timeout)
        _check_echo(host, port, timeout)
        posted, delivered = _check_room(host, port, timeout)
        counted = read_counters(host, port, timeout).since(before)
    except ContractBroken as exc:
        return str(exc)
    except (OSError, WebSocketException) as exc:
        return f"WebSocket: {type(exc).__name__}: {exc}"
    expected = WsCounters(len(ECHO_FRAMES) + posted, len(ECHO_FRAMES) + delivered, delivered)
    if counted != expected:
        return (
            f"GET {COUNTERS_PATH} counted {counted} for what was exchanged, not {expected}: "
            "a load tool's counts could not be checked against it"
        )
    return None


def _url(host: str, port: int, path: str) -> str:
    return f"ws://{host}:{port}{path}"


def _check_echo(host: str, port: int, timeout: float, path: str = ECHO_PATH) -> None:
    with connect(_url(host, port, path), open_timeout=timeout, max_size=FRAME_MOST) as ws:
        for frame in ECHO_FRAMES:
            ws.send(frame)
        for index, frame in enumerate(ECHO_FRAMES):
            got = _receive(ws, f"{path}: echo of frame {index + 1}")
            if got != frame:
                raise ContractBroken(
                    f"{path}: frame {index + 1} came back as {_shown(got)}, not {_shown(frame)}"
                )
        _nothing_more(ws, f"{path}: after {len(ECHO_FRAMES)} echoes")


def _check_room(host: str, port: int, timeout: float) -> tuple[int, int]:
    """Each member posts once; the others each receive it once, the poster none. The frames
    posted and delivered."""
    path = ROOM_PREFIX + "verify-" + secrets.token_hex(4)
    with contextlib.ExitStack() as open_members:
        members = [
            open_members.enter_context(connect(_url(host, port, path), open_timeout=timeout))
            for _ in range(MEMBERS)
        ]
        time.sleep(QUIET_S)  # the server has registered every member
        for index, poster in enumerate(members):
            frame = f"post {index} {secrets.token_hex(8)}"
            poster.send(frame)
            for other, member in enumerate(members):
                if member is poster:
                    continue
                got = _receive(member, f"{path}: member {other + 1}, post of member {index + 1}")
                if got != frame:
                    raise ContractBroken(
                        f"{path}: member {other + 1} received {_shown(got)} for member "
                        f"{index + 1}'s post {_shown(frame)}"
                    )
        for index, member in enumerate(members):
            _nothing_more(member, f"{path}: member {index + 1} after every post")
    return MEMBERS, MEMBERS * (MEMBERS - 1)


def _receive(ws: ClientConnection, what: str) -> str | bytes:
    try:
        return ws.recv(timeout=EXPECT_S)
    except TimeoutError:
        raise ContractBroken(f"{what}: nothing came within {EXPECT_S:g} s") from None


def _nothing_more(ws: ClientConnection, what: str) -> None:
    try:
        extra = ws.recv(timeout=QUIET_S)
    except TimeoutError:
        return
    raise ContractBroken(f"{what}: one frame too many, {_shown(extra)} (sent twice?)")


def _shown(frame: str | bytes) -> str:
    text = repr(frame)
    return text if len(text) <= 40 else f"{text[:30]}… ({len(frame):,} long)"
