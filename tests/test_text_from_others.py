"""Text from an app, a server, a log or a store stays text (issue 65): no markup is read in
it on a terminal, a Markdown cell or reason keeps to its line, a CSV cell is never a
formula, and an answer read from a server is bounded in size and time."""

from __future__ import annotations

import io
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from benchlab.core.bounded import TooLate, Unbounded, chunks_of, read_bounded
from benchlab.core.text import SafeConsole
from benchlab.report.csvfile import inert
from benchlab.report.markdown import table_lines


def test_a_console_reads_no_markup_in_what_it_is_given() -> None:
    said = "Python 3.11 [link=https://evil.example]click[/link] and a stray [/]"
    plain, terminal = io.StringIO(), io.StringIO()
    SafeConsole(file=plain, width=200).print(said)
    assert plain.getvalue() == said + "\n"
    SafeConsole(file=terminal, width=200, force_terminal=True).print(said)
    assert "\x1b]8;" not in terminal.getvalue(), "a hyperlink (OSC 8) reached the terminal"


def test_a_markdown_cell_keeps_to_its_line() -> None:
    (_header, _rule, row) = table_lines(["stack", "note"], [["gin", "died\n## injected\n| x |"]])
    assert "\n" not in row and "## injected" in row and "\\|" in row


def test_a_csv_cell_is_never_a_formula() -> None:
    assert inert('=HYPERLINK("http://x")') == '\'=HYPERLINK("http://x")'
    assert [inert(v) for v in ("+1", "-cmd", "@SUM(A1)", "gin")] == [
        "'+1",
        "'-cmd",
        "'@SUM(A1)",
        "gin",
    ]
    assert inert(-1.5) == -1.5  # numbers stay numbers


@pytest.fixture
def endless() -> Iterator[int]:
    """A server that sends an answer without end."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    stop = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            while not stop.is_set():
                try:
                    conn.sendall(b"x" * 4096)
                except OSError:
                    return
                time.sleep(0.001)

    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1]
    stop.set()
    listener.close()


def test_a_read_from_a_server_stops_at_its_size(endless: int) -> None:
    with socket.create_connection(("127.0.0.1", endless), timeout=2) as conn:
        began = time.monotonic()
        with pytest.raises(Unbounded):
            read_bounded(chunks_of(conn.recv), time.monotonic() + 30, 2**16)
        assert time.monotonic() - began < 5


def test_a_read_stops_at_its_deadline() -> None:
    def slow() -> Iterator[bytes]:
        while True:
            time.sleep(0.05)
            yield b"x"

    began = time.monotonic()
    with pytest.raises(TooLate):
        read_bounded(slow(), time.monotonic() + 0.3, 2**20)
    assert time.monotonic() - began < 1
