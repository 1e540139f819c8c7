"""A WebSocket server that keeps the contract's shape with a quirk set by its environment,
for the known answers: WS_SLEEP_MS (each echo waits that long first), WS_BLOCK_MS (each
echo holds the event loop that long first: one message at a time), WS_MAX_CONNECTIONS
(an upgrade past that many open connections is refused), WS_FAULT ("drop": a room skips
its last other member; "duplicate": each echo is sent twice). Run: uvicorn ws_quirks:app."""

import asyncio
import json
import os
import time

from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute

SLEEP_S = int(os.environ.get("WS_SLEEP_MS", "0")) / 1000
BLOCK_S = int(os.environ.get("WS_BLOCK_MS", "0")) / 1000
MAX_CONNECTIONS = int(os.environ.get("WS_MAX_CONNECTIONS", "0"))
FAULT = os.environ.get("WS_FAULT", "")
COUNTS = {"frames_in": 0, "frames_out": 0, "deliveries": 0}
ROOMS: dict[str, list] = {}
OPEN = [0]


async def admitted(websocket) -> bool:
    if MAX_CONNECTIONS and OPEN[0] >= MAX_CONNECTIONS:
        await websocket.close(code=1013)  # before accept: the upgrade is refused (403)
        return False
    OPEN[0] += 1
    await websocket.accept()
    return True


async def echo(websocket) -> None:
    if not await admitted(websocket):
        return
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            COUNTS["frames_in"] += 1
            if SLEEP_S:
                await asyncio.sleep(SLEEP_S)
            if BLOCK_S:
                time.sleep(BLOCK_S)
            for _ in range(2 if FAULT == "duplicate" else 1):
                await websocket.send_text(message.get("text") or "")
                COUNTS["frames_out"] += 1
    finally:
        OPEN[0] -= 1


async def room(websocket) -> None:
    if not await admitted(websocket):
        return
    name = websocket.path_params["name"]
    members = ROOMS.setdefault(name, [])
    members.append(websocket)
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            COUNTS["frames_in"] += 1
            others = [m for m in members if m is not websocket]
            if FAULT == "drop":
                others = others[:-1]
            for peer in others:
                await peer.send_text(message.get("text") or "")
                COUNTS["frames_out"] += 1
                COUNTS["deliveries"] += 1
    finally:
        members.remove(websocket)
        OPEN[0] -= 1


async def counters(request) -> Response:
    return Response(json.dumps(COUNTS), media_type="application/json")


async def plaintext(request) -> Response:
    return Response(b"Hello, World!", media_type="text/plain")


app = Starlette(
    routes=[
        WebSocketRoute("/ws/echo", echo),
        WebSocketRoute("/ws/room/{name}", room),
        Route("/ws/counters", counters),
        Route("/plaintext", plaintext),
    ]
)
