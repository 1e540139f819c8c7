"""The request shapes a stack must parse, each declared once: the exact bytes sent, the
answers they must get (checked as the scenarios' answers are), and whether the server must
then close the connection. Every stack of the catalogue serves /plaintext and /json, so
every shape asks for those.

A shape is sent whole and, where `split` says so, split at every byte offset into two TCP
segments (HttpArena's gate: a server that reads a request line or a header in one `recv`
fails at some offset)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from benchlab.http.scenarios import SCENARIOS, Expectation

PLAINTEXT = SCENARIOS["plaintext"].expectations()[0]
JSON = SCENARIOS["json"].expectations()[0]
HOST_LINE = b"Host: 127.0.0.1\r\n"
# As long as a large cookie or token a browser sends, shorter than most servers' limit
# (8 KiB in uvicorn, gunicorn, nginx's default buffer; uWSGI's default buffer is 4 KiB).
LONG_VALUE_BYTES = 4000
# Past any limit a server sets on a request's headers (nginx's default 8 KiB a line,
# gunicorn's 8190 bytes, h11's 16 KiB, Go's net/http 1 MiB): a server that takes it holds
# whatever a client sends in memory. It must be refused, and the server must not crash or
# hang.
OVERSIZED_VALUE_BYTES = 4 * 1024 * 1024
REFUSALS = (400, 413, 414, 431, 494)  # 494: nginx's own "request header too large"


@dataclass(frozen=True)
class Answer:
    """One answer a shape must get: to `method` (HEAD has no body), checked against
    `expect` as a scenario's answer, or, with `statuses`, any status among them."""

    method: str
    expect: Expectation | None
    statuses: tuple[int, ...] = ()
    http10: bool = False  # asked as HTTP/1.0: a body may end with the connection


@dataclass(frozen=True)
class Shape:
    name: str
    what: str  # one line for the report
    raw: bytes
    answers: tuple[Answer, ...]
    split: bool = True  # also sent split at every byte offset
    closes: bool = False  # the server must close the connection after its answer
    # A plain GET on the same connection afterwards must get its own answer (the shape's
    # bytes were framed right); unless the server said it would close.
    follow_up: bool = True
    # Closing the connection without an answer is a refusal too (said in a note): the
    # server protected itself, though the client learns no status.
    close_refuses: bool = False
    # A failure keeps the stack out of a run's ranking: the shape is how benchmark clients
    # frame requests, so a server that gets it wrong can look fast by doing less (or by
    # answering wrong). False: a limit or a malformed request, which tells of robustness
    # (shown as a caution), not of what the figures measured.
    unranks: bool = True


def request_bytes(
    line: str, *headers: str, body: bytes = b"", host: bool = True, more: tuple[str, ...] = ()
) -> bytes:
    """The request's bytes: its line, Host, `headers`, the request's own `more` headers."""
    head = line.encode() + b"\r\n" + (HOST_LINE if host else b"")
    head += b"".join(h.encode() + b"\r\n" for h in (*headers, *more))
    return head + b"\r\n" + body


@dataclass(frozen=True)
class ShapeSet:
    """The shapes one server is sent, and the plain GET that follows a shape on the same
    connection (and, on a fresh one, says the server is still up)."""

    shapes: tuple[Shape, ...]
    follow_up: bytes
    answer: Answer
    # A user's app (tune): what it answers to a shape sent whole is its own (Django answers
    # an HTTP/1.0 request without Host 400, by its host check), not the server's framing;
    # the shape split at each byte must then get that answer. The catalogue's app answers
    # as the contract says, so a server that answers otherwise is wrong.
    apps_own: bool = False


def shapes_for(get: Expectation, second: Expectation | None = None) -> ShapeSet:
    """Every shape, asking for `get` (a GET) and, pipelined after it, `second` (default
    `get` again). The catalogue's stacks are asked for /plaintext and /json and their
    answers checked as the contract's; a user's app (tune) for its own request, with its
    own headers, its answers checked as its request says, and any status where the shape
    asks something the app may not route (a POST, a HEAD): an app may answer a POST to a
    GET page with a 500 of its own (Datasette does), which says nothing of the server's
    framing; the connection staying in step does."""
    path, more = get.path, tuple(f"{name}: {value}" for name, value in get.headers)
    routed = (200, 404, 405) if get.contract else tuple(range(200, 600))
    answer = Answer("GET", get)
    follow = request_bytes(f"GET {path} HTTP/1.1", more=more)
    after = second or get
    return ShapeSet(
        (*_framed(path, more, answer, after, routed), *_ended(path, more, get, answer, routed)),
        follow,
        answer,
        apps_own=not get.contract,
    )


def answered_as(shape: Shape, statuses: tuple[int, ...]) -> Shape:
    """`shape` whose answers are judged by the statuses the app gave it sent whole (each
    answer it got; the rest as they were)."""
    answers = tuple(
        dataclasses.replace(answer, expect=None, statuses=(statuses[index],))
        if index < len(statuses) else answer
        for index, answer in enumerate(shape.answers)
    )  # fmt: skip
    return dataclasses.replace(shape, answers=answers)


def _framed(
    path: str, more: tuple[str, ...], answer: Answer, after: Expectation, routed: tuple[int, ...]
) -> tuple[Shape, ...]:
    """The shapes whose framing keeps the connection in step: a GET, with a body, POSTs,
    two pipelined."""
    follow = request_bytes(f"GET {path} HTTP/1.1", more=more)
    return (
        Shape("get", "a plain GET", follow, (answer,)),
        Shape(
            "get-with-body",
            "a GET with a body (Content-Length): the body must be read past, not taken as the "
            "next request",
            request_bytes(f"GET {path} HTTP/1.1", "Content-Length: 5", body=b"hello", more=more),
            (answer,),
        ),
        Shape(
            "post-content-length",
            "a POST with Content-Length (the app may refuse it; the connection stays in step)",
            request_bytes(
                f"POST {path} HTTP/1.1", "Content-Length: 13", body=b"Hello, World!", more=more
            ),
            (Answer("POST", None, statuses=routed),),
        ),
        Shape(
            "post-chunked",
            "a chunked POST (the app may refuse it; the connection stays in step)",
            request_bytes(
                f"POST {path} HTTP/1.1",
                "Transfer-Encoding: chunked",
                body=b"5\r\nHello\r\n8\r\n, World!\r\n0\r\n\r\n",
                more=more,
            ),
            (Answer("POST", None, statuses=routed),),
        ),
        Shape(
            "pipelined",
            "two requests in one write, answered in order",
            follow + request_bytes(f"GET {after.path} HTTP/1.1", more=more),
            (answer, Answer("GET", after)),
        ),
    )


def _ended(
    path: str, more: tuple[str, ...], get: Expectation, answer: Answer, routed: tuple[int, ...]
) -> tuple[Shape, ...]:
    """HEAD, the shapes after which the server must close, the malformed and the large."""
    return (
        Shape(
            "head",
            "HEAD: the status and headers, no body (405 too: some frameworks route GET only)",
            request_bytes(f"HEAD {path} HTTP/1.1", more=more),
            (Answer("HEAD", None, statuses=routed),),
        ),
        Shape(
            "connection-close",
            "Connection: close: answered, then the server closes",
            request_bytes(f"GET {path} HTTP/1.1", "Connection: close", more=more),
            (answer,),
            closes=True,
        ),
        Shape(
            "http-1.0",
            "HTTP/1.0 without Host or keep-alive: answered, then the server closes",
            request_bytes(f"GET {path} HTTP/1.0", host=False, more=more),
            (Answer("GET", get, http10=True),),
            closes=True,
        ),
        Shape(
            "bad-request-line",
            "a request line with a space in its target: refused with a 4xx",
            request_bytes("GET /plain text HTTP/1.1"),
            (Answer("GET", None, statuses=tuple(range(400, 500))),),
            follow_up=False,  # after a malformed request a server may close without saying so
            unranks=False,
        ),
        Shape(
            "long-header",
            f"a {LONG_VALUE_BYTES:,}-byte header value, under most servers' limit (8 KiB: "
            "nginx, gunicorn, uvicorn)",
            request_bytes(f"GET {path} HTTP/1.1", "X-Long: " + "a" * LONG_VALUE_BYTES, more=more),
            (answer,),
            split=False,
            unranks=False,
        ),
        Shape(
            "oversized-header",
            f"a {OVERSIZED_VALUE_BYTES // 1024 // 1024} MiB header value: refused (400, 431…), "
            "the server still up",
            request_bytes(
                f"GET {path} HTTP/1.1", "X-Big: " + "a" * OVERSIZED_VALUE_BYTES, more=more
            ),
            (Answer("GET", None, statuses=REFUSALS),),
            split=False,
            follow_up=False,
            close_refuses=True,
            unranks=False,
        ),
    )


CATALOGUE_SHAPES = shapes_for(PLAINTEXT, JSON)  # every catalogue stack serves both
SHAPES: tuple[Shape, ...] = CATALOGUE_SHAPES.shapes
SHAPES_BY_NAME = {shape.name: shape for shape in SHAPES}
