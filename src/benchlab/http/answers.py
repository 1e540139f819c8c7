"""How an answer's body is judged, for the scenarios whose body is not one fixed string:
the fortunes page (parsed, its markup row escaped), world rows (each as the database holds
it, read back just after the answer), a compressed document (decompressed, then exact)."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable, Mapping
from html.parser import HTMLParser
from typing import Protocol

from benchlab.http.dataset import ADDED_FORTUNE, FORTUNES, WORLD_COUNT

READBACK_MISS = "but the database holds"
NOT_WRITTEN = "no row it answered was written"
# The world rows' numbers as the database holds them now, by id (None: every row).
ReadWorlds = Callable[[list[int] | None], Mapping[int, int]]


class Expected(Protocol):
    # Read-only (properties), as a frozen dataclass's fields are (scenarios.Expectation).
    @property
    def answer(self) -> str: ...
    @property
    def body(self) -> bytes | None: ...
    @property
    def rows(self) -> int: ...
    @property
    def writes(self) -> bool: ...


def judge_body(
    expected: Expected,
    headers: Mapping[str, str],
    body: bytes,
    read_worlds: ReadWorlds | None,
    before: Mapping[int, int] | None = None,
) -> str | None:
    """None when the body is right, else what is wrong (without the request's name).
    `before`: the world rows as they were before the request, for one that writes."""
    if expected.answer == "fortunes":
        return fortunes_problem(body)
    if expected.answer == "worlds":
        return worlds_problem(body, expected.rows, read_worlds, before)
    encoding = headers.get("content-encoding", "").strip().lower()
    if expected.answer == "gzip":
        if encoding != "gzip":
            return f"Content-Encoding {encoding or 'none'!r} when gzip was asked for"
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError, zlib.error) as exc:
            return f"a body that does not decompress as gzip ({exc})"
    elif encoding not in ("", "identity"):
        return f"Content-Encoding {encoding!r} when no compression was asked for"
    if body != expected.body:
        return f"body {body[:120]!r}, expected {(expected.body or b'')[:120]!r}"
    return None


EXPECTED_FORTUNES = sorted((*FORTUNES, ADDED_FORTUNE), key=lambda row: row[1])


class _TableRows(HTMLParser):
    """The text of each <td> of each <tr>, entities decoded."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self.rows:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def fortunes_problem(body: bytes) -> str | None:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return "a fortunes page that is not UTF-8"
    if "<script>" in text:
        return "the fortune holding markup was not escaped (the page contains <script>)"
    parser = _TableRows()
    parser.feed(text)
    rows = [tuple(cells) for cells in parser.rows if cells]
    expected = [(str(i), message) for i, message in EXPECTED_FORTUNES]
    if rows != expected:
        for n, (got, want) in enumerate(zip(rows, expected, strict=False)):
            if got != want:
                return f"fortunes row {n + 1} is {got!r}, expected {want!r}"
        return f"{len(rows)} fortunes rows, expected {len(expected)}"
    return None


def worlds_problem(
    body: bytes,
    count: int,
    read_worlds: ReadWorlds | None,
    before: Mapping[int, int] | None = None,
) -> str | None:
    """Each row as the database holds it just after the answer; for a request that writes,
    not every row as it was before (a new random number equals the old one 1 time in
    10,000: all of them at once, never)."""
    try:
        rows = json.loads(body)
    except ValueError:
        return f"body {body[:120]!r} is not JSON"
    if not isinstance(rows, list) or len(rows) != count:
        return f"expected a JSON array of {count} rows, got {body[:120]!r}"
    pairs: list[tuple[int, int]] = []
    for row in rows:
        if not isinstance(row, dict) or set(row) != {"id", "randomNumber"}:
            return f"row {row!r} is not {{'id': …, 'randomNumber': …}}"
        world_id, number = row["id"], row["randomNumber"]
        if not all(isinstance(v, int) and 1 <= v <= WORLD_COUNT for v in (world_id, number)):
            return f"row {row!r} is outside 1 … {WORLD_COUNT}"
        pairs.append((world_id, number))
    if read_worlds is None:
        return "no database to read the rows back from"
    held = read_worlds(sorted({i for i, _ in pairs}))
    for world_id, number in pairs:
        if held.get(world_id) != number:
            return (
                f"row {world_id} answered randomNumber {number}, {READBACK_MISS} "
                f"{held.get(world_id)}"
            )
    if before is not None and all(before.get(i) == n for i, n in pairs):
        return f"{NOT_WRITTEN}: every row holds the number it held before the request"
    return None
