"""The endpoint contract (DESIGN.md): what each scenario requests and what it must answer."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Scenario:
    name: str
    path: str
    content_type: str
    body: bytes
    description: str


PLAINTEXT = Scenario(
    name="plaintext",
    path="/plaintext",
    content_type="text/plain",
    body=b"Hello, World!",
    description="GET /plaintext: text/plain 'Hello, World!'",
)
JSON = Scenario(
    name="json",
    path="/json",
    content_type="application/json",
    body=b'{"code":0,"message":"ok","data":{}}',
    description='GET /json: application/json {"code":0,"message":"ok","data":{}}',
)

SCENARIOS: dict[str, Scenario] = {s.name: s for s in (PLAINTEXT, JSON)}
