"""The WebSocket contract (ws_rooms.py) for apps on Starlette's WebSocket API (Starlette,
FastAPI): the routes each adds to its own."""

from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocketDisconnect
from ws_rooms import COUNTERS, deliver, join, leave, others


async def _send(websocket, message: dict) -> None:
    """A received frame sent on as it came: text as text, bytes as bytes."""
    if message.get("text") is not None:
        await websocket.send_text(message["text"])
    else:
        await websocket.send_bytes(message.get("bytes") or b"")


async def echo(websocket) -> None:
    await websocket.accept()
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            COUNTERS.frames_in += 1
            await _send(websocket, message)
            COUNTERS.frames_out += 1
    except WebSocketDisconnect:
        return


async def room(websocket) -> None:
    name = websocket.path_params["name"]
    await websocket.accept()
    join(name, websocket)
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            COUNTERS.frames_in += 1
            await deliver(others(name, websocket), lambda peer, m=message: _send(peer, m))
    except WebSocketDisconnect:
        return
    finally:
        leave(name, websocket)


async def counters(request) -> Response:
    return Response(COUNTERS.body(), media_type="application/json")


ROUTES = [
    WebSocketRoute("/ws/echo", echo),
    WebSocketRoute("/ws/room/{name}", room),
    Route("/ws/counters", counters),
]
