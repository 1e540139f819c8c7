"""The user's requests: `--request 'GET /items?id=7'` (repeatable) or `[[request]]` tables
in a TOML file, each with its check (status, and optionally a substring or a JSON key of
the body) and a weight in the load mix."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchlab.errors import UserError
from benchlab.scenarios import Expectation

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")


class RequestSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    method: str = "GET"
    path: Annotated[str, Field(pattern=r"^/")]
    headers: dict[str, str] = Field(default_factory=dict)
    body: str | None = None
    weight: Annotated[int, Field(ge=1, le=100)] = 1
    status: Annotated[int, Field(ge=100, le=599)] = 200
    contains: str | None = None
    json_key: str | None = None


class RequestsFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    request: Annotated[list[RequestSpec], Field(min_length=1)]


def parse_request(text: str, status: int, contains: str | None) -> Expectation:
    """'GET /items?id=7' (a method is optional: GET)."""
    parts = text.split()
    if len(parts) == 1:
        parts = ["GET", *parts]
    if len(parts) != 2 or not parts[1].startswith("/"):
        raise UserError(
            f"--request '{text}': give a method and a path, e.g. --request 'GET /items?id=7'"
        )
    method = parts[0].upper()
    if method not in METHODS:
        raise UserError(
            f"--request '{text}': '{parts[0]}' is not a method; use one of {', '.join(METHODS)}"
        )
    return Expectation(
        path=parts[1], content_type=None, body=None, status=status, method=method,
        body_contains=contains.encode() if contains else None, contract=False,
    )  # fmt: skip


def load_requests(path: Path) -> list[Expectation]:
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise UserError(f"--requests-file {path}: cannot read it ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML: {exc}; fix the syntax at that line") from None
    try:
        parsed = RequestsFile.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(p) for p in error["loc"])
        raise UserError(f"{path}: key '{key}': {error['msg'].lower()}") from None
    out = []
    for i, spec in enumerate(parsed.request):
        method = spec.method.upper()
        if method not in METHODS:
            raise UserError(
                f"{path}: key 'request[{i}].method': '{spec.method}' is not one of "
                f"{', '.join(METHODS)}"
            )
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
