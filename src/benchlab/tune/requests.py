"""The user's requests: `--request 'GET /items?id=7'` (repeatable) or `[[request]]` tables
in a TOML file, each with its check (status, and optionally a substring or a JSON key of
the body) and a weight in the load mix."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchlab.core.errors import UserError
from benchlab.http.scenarios import Expectation
from benchlab.recipe.files import read_toml
from benchlab.recipe.messages import describe_validation_error

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
WS = "WS"  # --request 'WS /path': a WebSocket echo endpoint
# What may go on the request line and in a header as sent (RFC 3986, RFC 9110): anything
# else is refused here, not met as an exception mid-run after the services started.
PATH = re.compile(r"/[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")
HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")


def check_path(path: str, where: str) -> None:
    if PATH.fullmatch(path):
        return
    if not path.startswith("/"):
        raise UserError(f"{where}: the path {path!r} must start with '/'")
    encoded = quote(path, safe="/?#[]@!$&'()*+,;=%:~")
    raise UserError(
        f"{where}: the path {path!r} has characters a request line cannot carry (spaces, "
        f"controls, non-ASCII); percent-encode them: {encoded}"
    )


def check_header(name: str, value: str, where: str) -> None:
    if not HEADER_NAME.fullmatch(name):
        raise UserError(
            f"{where}: header name {name!r} is not a token (letters, digits and !#$%&'*+-.^_`|~)"
        )
    if not HEADER_VALUE.fullmatch(value):
        raise UserError(
            f"{where}: the value of header '{name}' holds a line break, a control or a "
            "non-ASCII character; send plain ASCII text"
        )


class RequestSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    method: str = "GET"
    path: str  # checked by check_path, which says what is wrong with it
    headers: dict[str, str] = Field(default_factory=dict)
    body: str | None = None
    weight: Annotated[int, Field(ge=1, le=100)] = 1
    status: Annotated[int, Field(ge=100, le=599)] = 200
    contains: str | None = None
    json_key: str | None = None


class RequestsFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    request: Annotated[list[RequestSpec], Field(min_length=1)]


@dataclass(frozen=True)
class EchoEndpoint:
    """--request 'WS /path': a WebSocket endpoint of the app that sends each text message
    back; the tune's load is its echo, judged by the p99 of each message's round trip."""

    path: str

    def describe(self) -> str:
        return f"{WS} {self.path}"


def parse_request(text: str, status: int, contains: str | None) -> Expectation | EchoEndpoint:
    """'GET /items?id=7' (a method is optional: GET); 'WS /echo': a WebSocket echo."""
    parts = text.split()
    if len(parts) == 1:
        parts = ["GET", *parts]
    if len(parts) != 2 or not parts[1].startswith("/"):
        websocket = bool(parts) and parts[0].upper() == WS
        example = f"{WS} /echo" if websocket else "GET /items?id=7"
        raise UserError(f"--request {text!r}: give a method and a path, e.g. --request '{example}'")
    if parts[0].upper() == WS:
        check_path(parts[1], f"--request {text!r}")
        return EchoEndpoint(parts[1])
    method = parts[0].upper()
    if method not in METHODS:
        raise UserError(
            f"--request {text!r}: {parts[0]!r} is not a method; use one of {', '.join(METHODS)}, "
            f"or {WS} for a WebSocket echo"
        )
    check_path(parts[1], f"--request {text!r}")
    return Expectation(
        path=parts[1], content_type=None, body=None, status=status, method=method,
        body_contains=contains.encode() if contains else None, contract=False,
    )  # fmt: skip


def load_requests(path: Path) -> list[Expectation]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"--requests-file {path}: cannot read it ({exc.strerror})") from None
    data = read_toml(path, text)
    try:
        parsed = RequestsFile.model_validate(data)
    except ValidationError as exc:
        raise UserError(describe_validation_error(path, exc, RequestsFile)) from None
    out = []
    for i, spec in enumerate(parsed.request):
        method = spec.method.upper()
        if method not in METHODS:
            raise UserError(
                f"{path}: key 'request[{i}].method': {spec.method!r} is not one of "
                f"{', '.join(METHODS)}"
            )
        check_path(spec.path, f"{path}: key 'request[{i}].path'")
        for name, value in spec.headers.items():
            check_header(name, value, f"{path}: key 'request[{i}].headers'")
        out.append(
            Expectation(
                path=spec.path, content_type=None, body=None, status=spec.status, method=method,
                headers=tuple(spec.headers.items()),
                request_body=spec.body.encode() if spec.body is not None else None,
                body_contains=spec.contains.encode() if spec.contains else None,
                json_key=spec.json_key, contract=False, weight=spec.weight,
            )
        )  # fmt: skip
    return out
