"""The endpoint contract (DESIGN.md): what each scenario requests and what it must answer."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.core.service_kinds import DATABASES, Service
from benchlab.http.dataset import HUI_ID, HUI_ROLE, file_bytes, file_name, gzip_document

HUI_BODY = (
    f'{{"code":0,"message":"ok","data":{{"id":{HUI_ID},"username":"hui","role":"{HUI_ROLE}"}}}}'
).encode()
NOT_FOUND_BODY = b'{"code":404,"message":"not found","data":{}}'


@dataclass(frozen=True)
class Expectation:
    """One request and the answer it must get: the contract's exact answer (media type,
    Content-Length, Date, body byte for byte), or — for a user's own app — a status and,
    optionally, a substring of the body or a key of its JSON."""

    path: str
    content_type: str | None
    body: bytes | None  # the exact body; None: not checked
    status: int = 200
    method: str = "GET"
    headers: tuple[tuple[str, str], ...] = ()
    request_body: bytes | None = None
    body_contains: bytes | None = None
    json_key: str | None = None  # a dotted path that must exist in the JSON body
    contract: bool = True  # the reference contract's framing checks apply
    weight: int = 1  # share of the load mix (a user's requests)
    # How the body is judged, beyond status and framing (verify.py): "exact" (byte for
    # byte), "fortunes" (the table's rows, escaped), "worlds" (`rows` world rows, each as
    # the database holds it when read back), "gzip" (compressed, then exact).
    answer: str = "exact"
    rows: int = 0
    writes: bool = False  # worlds: each answer must have written its rows (updates)

    @property
    def plain_get(self) -> bool:
        """What every load tool can send: a GET with no header or body of its own."""
        return self.method == "GET" and not self.headers and self.request_body is None

    def describe(self) -> str:
        return f"{self.method} {self.path}"


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    needs_database: bool = False
    needs_cache: bool = False
    # Benchlab's cold-cache rule: the cache emptied before each cell's check and load (the
    # contract's cache-aside scenario). Never for a user's app: its Redis holds its state.
    cold_cache: bool = True
    # A user's own requests (benchlab tune), instead of the contract's.
    requests: tuple[Expectation, ...] = ()
    param: str | None = None  # the recipe's [params] key whose value goes into the URL
    param_label: str = ""  # how the value is named in reports: delay, sleep, cpu
    unit: str = "ms"
    # The databases whose apps serve it (the API scenarios: PostgreSQL's only).
    databases: tuple[str, ...] = tuple(database.recipe_name for database in DATABASES)
    needs_files: bool = False  # benchlab writes the files it serves ($BENCHLAB_STATIC_DIR)
    parts: tuple[MixPart, ...] = ()  # a mix: other scenarios' requests, by weight
    # A WebSocket load (runner/websocket.py measures it, a WebSocket tool drives it): which
    # of the three figures' loads. None: an HTTP scenario.
    websocket: str | None = None
    # A user's own echo endpoint (benchlab tune --request 'WS /path'), instead of the
    # contract's /ws/echo: only its echo is verified (the app has no rooms, no counters),
    # and a search takes no fixed-rate echo beside it (the app's rate is what is searched).
    echo_path: str | None = None
    # A WebSocket scenario's own figure, by the modes its cells take (the first: unless the
    # recipe's [slo] asks for a search it has): what they are ranked by, as HTTP's cells by
    # their mode's figure. Empty: an HTTP scenario (the recipe's mode, the mode's figure).
    ranked_by: tuple[tuple[Mode, F.Figure], ...] = ()

    @property
    def rate_unit(self) -> str:
        """What its rates count a second (capacity, throughput, target, achieved, sent):
        a WebSocket scenario's messages, an HTTP scenario's requests."""
        return F.MSG_S if self.websocket else F.REQ_S

    def mode_for(self, asked: Mode) -> Mode:
        """The mode its cells take where the recipe's load profile makes `asked`."""
        modes = [mode for mode, _ in self.ranked_by]
        return asked if not modes or asked in modes else modes[0]

    def figure_for(self, mode: Mode) -> F.Figure | None:
        """Its own figure in `mode`; None: the mode's (an HTTP scenario)."""
        return dict(self.ranked_by).get(mode)

    def file_sizes(self, value: int | None) -> set[int]:
        """The KiB of each file the scenario serves (the static scenario's, or a mix's)."""
        if self.parts:
            return {k for p in self.parts for k in SCENARIOS[p.scenario].file_sizes(p.value)}
        return {value} if self.needs_files and value is not None else set()

    def part_of(self, value: int | None = None) -> dict[str, str]:
        """A mix's parts by the request the load tool sends for each ("GET /json")."""
        return {SCENARIOS[p.scenario].load_mix(p.value)[0].describe(): p.label for p in self.parts}

    def param_text(self, value: int | None) -> str:
        return "" if value is None or not self.param else f"{self.param_label}={value}{self.unit}"

    def expectations(self, value: int | None = None) -> list[Expectation]:
        """The requests verification makes; the first is also the one the load tool sends."""
        if self.requests:
            return list(self.requests)
        if self.parts:
            return [e for p in self.parts for e in SCENARIOS[p.scenario].expectations(p.value)]
        return _EXPECTATIONS[self.name](value)

    def load_mix(self, value: int | None = None) -> list[Expectation]:
        """What the load tool sends: the first contract request, a mix's parts (each its
        scenario's first request) by weight, or the user's weighted mix."""
        if self.parts:
            return [
                dataclasses.replace(SCENARIOS[p.scenario].load_mix(p.value)[0], weight=p.weight)
                for p in self.parts
            ]
        return list(self.requests) if self.requests else self.expectations(value)[:1]


MIX_PREFIX = "mix:"


@dataclass(frozen=True)
class MixPart:
    """One scenario of a mix: its share (`weight` of every sum-of-weights requests) and its
    parameter's value."""

    scenario: str
    weight: int
    value: int | None = None

    @property
    def label(self) -> str:
        shown = SCENARIOS[self.scenario].param_text(self.value)
        return f"{self.scenario} {shown}" if shown else self.scenario

    @property
    def token(self) -> str:
        value = "" if self.value is None else f"={self.value}"
        return f"{self.scenario}{value}*{self.weight}"


def mix_name(parts: tuple[MixPart, ...]) -> str:
    """A mix's scenario name, which says all of it: "mix:json*6+db*3+updates=5*1"."""
    return MIX_PREFIX + "+".join(p.token for p in parts)


def _parse_mix(name: str) -> tuple[MixPart, ...]:
    parts = []
    for token in name[len(MIX_PREFIX) :].split("+"):
        head, _, weight = token.rpartition("*")
        scenario, _, value = head.partition("=")
        if scenario not in _BASE or not weight.isdigit():
            raise KeyError(name)
        parts.append(MixPart(scenario, int(weight), int(value) if value else None))
    return tuple(parts)


def _composed(name: str) -> Scenario:
    parts = _parse_mix(name)
    members = [_BASE[p.scenario] for p in parts]
    databases = set(members[0].databases).intersection(*(m.databases for m in members))
    total = sum(p.weight for p in parts)
    return Scenario(
        name=name,
        description=f"a mix, of every {total} requests: "
        + ", ".join(f"{p.weight} {p.label}" for p in parts),
        needs_database=any(m.needs_database for m in members),
        needs_cache=any(m.needs_cache for m in members),
        databases=tuple(sorted(databases)),
        needs_files=any(m.needs_files for m in members),
        parts=parts,
    )


class ScenarioCatalogue(Mapping[str, Scenario]):
    """The contract's scenarios by name; a mix's name ("mix:…") gives its composed scenario
    too, though iterating lists the contract's only."""

    def __init__(self, base: dict[str, Scenario]) -> None:
        self._base = base
        self._mixes: dict[str, Scenario] = {}

    def __getitem__(self, name: str) -> Scenario:
        if name in self._base:
            return self._base[name]
        if not name.startswith(MIX_PREFIX):
            raise KeyError(name)
        if name not in self._mixes:
            self._mixes[name] = _composed(name)
        return self._mixes[name]

    def __contains__(self, name: object) -> bool:
        try:
            self[name]  # type: ignore[index]
        except (KeyError, TypeError):
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self._base)

    def __len__(self) -> int:
        return len(self._base)


def _not_found(path: str) -> Expectation:
    return Expectation(path, "application/json", NOT_FOUND_BODY, status=404)


_EXPECTATIONS = {
    "plaintext": lambda _: [Expectation("/plaintext", "text/plain", b"Hello, World!")],
    "json": lambda _: [
        Expectation("/json", "application/json", b'{"code":0,"message":"ok","data":{}}')
    ],
    "db": lambda _: [
        Expectation("/db?username=hui", "application/json", HUI_BODY),
        _not_found("/db?username=nobody"),
    ],
    "db-delay": lambda ms: [
        Expectation(f"/db-delay?username=hui&ms={ms}", "application/json", HUI_BODY),
        _not_found(f"/db-delay?username=nobody&ms={ms}"),
    ],
    # Twice: the first answer comes from a miss (database), the second from a hit (Redis).
    "cache": lambda _: [
        Expectation("/cache/hui", "application/json", HUI_BODY),
        Expectation("/cache/hui", "application/json", HUI_BODY),
        _not_found("/cache/nobody"),
    ],
    "sleep": lambda ms: [Expectation(f"/sleep?ms={ms}", "text/plain", b"ok")],
    "cpu": lambda us: [Expectation(f"/cpu?us={us}", "text/plain", b"ok")],
    "fortunes": lambda _: [Expectation("/fortunes", "text/html", None, answer="fortunes")],
    "queries": lambda n: [
        Expectation(f"/queries?n={n}", "application/json", None, answer="worlds", rows=n)
    ],
    "updates": lambda n: [
        Expectation(
            f"/updates?n={n}", "application/json", None, answer="worlds", rows=n, writes=True
        )
    ],
    "static": lambda kb: [
        Expectation(f"/static/{file_name(kb)}", "application/octet-stream", file_bytes(kb))
    ],
    "upload": lambda kb: [
        Expectation(
            "/upload",
            "application/json",
            upload_answer(file_bytes(kb)),
            method="POST",
            headers=(("Content-Type", "application/octet-stream"),),
            request_body=file_bytes(kb),
        )
    ],
    # Asked for gzip, then not: the framework must compress only when asked.
    # The WebSocket scenarios are verified over WebSocket (ws_verify.py); their one HTTP
    # request is the counters the load tool's counts are checked against.
    **dict.fromkeys(
        ("ws-hold", "ws-echo", "ws-broadcast"),
        lambda _: [Expectation("/ws/counters", "application/json", None, answer="ws-counters")],
    ),
    "json-gzip": lambda _: [
        Expectation(
            "/gzip/json",
            "application/json",
            gzip_document(),
            headers=(("Accept-Encoding", "gzip"),),
            answer="gzip",
        ),
        Expectation("/gzip/json", "application/json", gzip_document()),
    ],
}


def upload_answer(body: bytes) -> bytes:
    import hashlib

    return f'{{"bytes":{len(body)},"sha256":"{hashlib.sha256(body).hexdigest()}"}}'.encode()


# The API scenarios (docs/scenarios.md): served by the FastAPI, Flask, Django and Gin apps.
API_SCENARIOS = ("fortunes", "queries", "updates", "static", "upload", "json-gzip")
# The WebSocket scenarios, one a figure: connections held, message latency, broadcast.
HOLD, ECHO, BROADCAST = "hold", "echo", "broadcast"
WEBSOCKET_SCENARIOS = ("ws-hold", "ws-echo", "ws-broadcast")
ON_POSTGRES = (Service.POSTGRESQL.recipe_name,)

_BASE: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("plaintext", "GET /plaintext: text/plain 'Hello, World!'"),
        Scenario("json", 'GET /json: application/json {"code":0,"message":"ok","data":{}}'),
        Scenario("db", "GET /db?username=hui: one row by a bound parameter", needs_database=True),
        Scenario(
            "db-delay",
            "GET /db-delay?username=hui&ms=N: the query holds its session N ms",
            needs_database=True,
            param="db_delay_ms",
            param_label="delay",
        ),
        Scenario(
            "cache",
            "GET /cache/hui: Redis cache-aside, 180 s TTL",
            needs_database=True,
            needs_cache=True,
        ),
        Scenario(
            "sleep",
            "GET /sleep?ms=N: 'ok' after N ms without a CPU",
            param="sleep_ms",
            param_label="sleep",
        ),
        Scenario(
            "cpu",
            "GET /cpu?us=N: 'ok' after burning N µs of CPU time",
            param="cpu_us",
            param_label="cpu",
            unit="µs",
        ),
        Scenario(
            "fortunes",
            "GET /fortunes: the fortune table, one row added, sorted, through a template",
            needs_database=True,
            databases=ON_POSTGRES,
        ),
        Scenario(
            "queries",
            "GET /queries?n=N: N single-row queries, a JSON array",
            needs_database=True,
            param="queries",
            param_label="n",
            unit="",
            databases=ON_POSTGRES,
        ),
        Scenario(
            "updates",
            "GET /updates?n=N: N rows read and written back in one transaction",
            needs_database=True,
            param="updates",
            param_label="n",
            unit="",
            databases=ON_POSTGRES,
        ),
        Scenario(
            "static",
            "GET /static/Kk.bin: a K-KiB file from the framework's static handler",
            param="file_kb",
            param_label="file",
            unit="KiB",
            needs_files=True,
        ),
        Scenario(
            "upload",
            "POST /upload of K KiB: its byte count and SHA-256",
            param="body_kb",
            param_label="body",
            unit="KiB",
        ),
        Scenario(
            "json-gzip",
            "GET /gzip/json, Accept-Encoding: gzip: a 4.9-KB JSON document, compressed",
        ),
        Scenario(
            "ws-hold",
            "idle WebSocket connections to /ws/echo, opened in steps until the server refuses, "
            "stalls or passes the memory limit: connections held, RSS per 1,000",
            websocket=HOLD,
            ranked_by=((Mode.CLOSED, F.CONNECTIONS_HELD),),
        ),
        Scenario(
            "ws-echo",
            "text frames to /ws/echo at a fixed rate over C connections, each sent back as it "
            "came: round-trip p50/p99 from each message's due time",
            websocket=ECHO,
            ranked_by=((Mode.RATE, F.ECHO_P99), (Mode.SLO, F.CAPACITY)),
        ),
        Scenario(
            "ws-broadcast",
            "one member of /ws/room/NAME posts, N others each receive it once: time from the "
            "post to the last receiver, p99 over rounds",
            websocket=BROADCAST,
            ranked_by=((Mode.RATE, F.BROADCAST_P99),),
        ),
    )
}
SCENARIOS = ScenarioCatalogue(_BASE)


def rate_unit_of(scenario: str) -> str:
    """What a cell of this scenario counts a second (Scenario.rate_unit); a user's own
    requests (benchlab tune), not in the catalogue: requests."""
    known = SCENARIOS.get(scenario)
    return known.rate_unit if known is not None else F.REQ_S
