"""FastAPI reference app (DESIGN.md endpoint contract)."""

from fastapi import FastAPI
from fastapi.responses import JSONResponse, PlainTextResponse

app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)


@app.get("/plaintext")
async def plaintext() -> PlainTextResponse:
    return PlainTextResponse("Hello, World!")


@app.get("/json")
async def json_endpoint() -> JSONResponse:
    return JSONResponse({"code": 0, "message": "ok", "data": {}})
