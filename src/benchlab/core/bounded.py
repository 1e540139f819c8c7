"""Reading what another program sends (a server's answer, its counters): never more than a
size, never past a deadline, so that a server that streams without end, or drips a byte at a
time, can neither fill benchlab's memory nor hold it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator


class Unbounded(Exception):
    """An answer that passed its size, or did not end by its deadline."""


class TooLate(Unbounded):
    """An answer that did not end by its deadline."""


def read_bounded(chunks: Iterable[bytes], deadline: float, most: int) -> bytes:
    """The chunks joined, until they end: `Unbounded` once they pass `most` bytes or the
    monotonic `deadline` (each chunk's own read has a timeout of its own: a read waits no
    longer than that past the deadline)."""
    body = bytearray()
    for chunk in chunks:
        body += chunk
        if len(body) > most:
            raise Unbounded(f"the answer passed {_size(most)}")
        if time.monotonic() > deadline:
            raise TooLate("the answer did not end within its time")
    return bytes(body)


def chunks_of(read1: Callable[[int], bytes], size: int = 2**16) -> Iterator[bytes]:
    """What each receive gives (`read1`), until the end."""
    while chunk := read1(size):
        yield chunk


def _size(most: int) -> str:
    return f"{most // 2**20} MiB" if most >= 2**20 else f"{most // 2**10} KiB"
