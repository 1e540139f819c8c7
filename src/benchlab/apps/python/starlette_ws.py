"""The WebSocket contract (ws_rooms.py) for apps on Starlette's WebSocket API (Starlette,
FastAPI): the routes each adds to its own."""

from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocketDisconnect
from ws_rooms import COUNTERS, join, leave, others


async def echo(websocket) -> None:
    await websocket.accept()
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            COUNTERS.frames_in += 1
            if message.get("text") is not None:
                await websocket.send_text(message["text"])
            else:
                await websocket.send_bytes(message.get("bytes") or b"")
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
            for peer in others(name, websocket):
                try:
                    if message.get("text") is not None:
                        await peer.send_text(message["text"])
                    else:
                        await peer.send_bytes(message.get("bytes") or b"")
                except Exception:  # a member that left meanwhile
                    continue
                COUNTERS.frames_out += 1
                COUNTERS.deliveries += 1
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
