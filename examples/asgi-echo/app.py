"""A bare ASGI app with a WebSocket echo, for `benchlab tune --request 'WS /echo'`: GET /
answers "ok"; WS /echo sends each message back after holding the event loop 2 ms (a fixed
cost per message, as a handler's parsing and work would be): one worker serves at most 500
messages a second, whatever the machine.

    benchlab tune examples/asgi-echo/app.py:app --request 'WS /echo' --slo-p99-ms 50
"""

import time

PAUSE_S = 0.002


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    elif scope["type"] == "http":
        await receive()
        headers = [(b"content-type", b"text/plain")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"ok"})
    elif scope["type"] == "websocket" and scope["path"] == "/echo":
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            time.sleep(PAUSE_S)  # the work, holding the loop as synchronous code does
            if message.get("text") is not None:
                await send({"type": "websocket.send", "text": message["text"]})
            else:
                await send({"type": "websocket.send", "bytes": message["bytes"]})
    elif scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
