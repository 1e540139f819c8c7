"""A FastAPI service with the mistake of article 003 and its fix side by side: one endpoint
calls a blocking function inside `async def` (the whole event loop waits), its twin awaits.

    benchlab tune examples/fastapi-blocking/app.py:app --request 'GET /report/blocking'
    benchlab tune examples/fastapi-blocking/app.py:app --request 'GET /report/awaiting'
"""

import asyncio
import time

from fastapi import FastAPI

app = FastAPI()


def fetch_report_blocking() -> dict:
    time.sleep(0.050)  # a blocking client (requests, a sync driver) called from a coroutine
    return {"report": "ready"}


async def fetch_report() -> dict:
    await asyncio.sleep(0.050)  # the same wait, awaited: the loop serves others meanwhile
    return {"report": "ready"}


@app.get("/report/blocking")
async def report_blocking() -> dict:
    return fetch_report_blocking()


@app.get("/report/awaiting")
async def report_awaiting() -> dict:
    return await fetch_report()
