"""What every command that puts load on this machine shares: the claim on it, the progress
shown (or streamed), and the command line stored with its run."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from benchlab.cli.app import console, progress
from benchlab.cli.options import PROGRESS_STYLES
from benchlab.core.errors import UserError

if TYPE_CHECKING:
    from rich.console import Console

    from benchlab.cli.formats import Destination
    from benchlab.runner import Reporter


def claim(allow_concurrent: bool) -> bool:
    """This machine for one run (stale runs cleaned first); whether another run shares it."""
    from benchlab.runner.recovery import claim_machine

    return claim_machine(allow_concurrent, progress.print)


@dataclass(frozen=True)
class Progress:
    """How a run shows itself going (--progress, --progress-file): a bar or lines on stderr,
    or the stream of its events on stdout (then stdout holds the stream alone, and the
    answer's table goes to stderr); and the stream to a file beside either."""

    style: str = "auto"
    file: Path | None = None

    @property
    def streams_on_stdout(self) -> bool:
        return self.style == "json"

    def checked(self, where: Destination, store: Path) -> Progress:
        """Itself, or refused before anything runs: an unknown style, a document that would
        share stdout with the stream, a file the stream cannot be written to (the results
        store `store` among them)."""
        from benchlab.system.outputs import check_stream_place

        if self.style not in PROGRESS_STYLES:
            raise UserError(f"--progress '{self.style}': use one of {', '.join(PROGRESS_STYLES)}")
        if self.streams_on_stdout and where.path is None and where.format != "table":
            raise UserError(
                f"--progress json writes the stream on stdout; -f {where.format} would share "
                "it: give the report a file (-o FILE), or the stream one (--progress-file FILE)"
            )
        if self.file is not None:
            check_stream_place(self.file, "--progress-file", [store])
        return self

    @property
    def screen(self) -> Console:
        """Where the answer's table and its lines go: stdout, unless the stream holds it."""
        return progress if self.streams_on_stdout else console

    def reporter(self) -> Reporter:
        from benchlab.report.progress import BarReporter, LineReporter
        from benchlab.report.stream import Reporters, StreamReporter
        from benchlab.system.outputs import open_stream

        shown: list[Reporter] = []
        if self.streams_on_stdout:
            shown.append(StreamReporter(_stdout_lines(sys.stdout.buffer), _warn))
        elif self.style == "auto" and progress.is_terminal:
            shown.append(BarReporter(progress))
        else:
            shown.append(LineReporter(progress))
        if self.file is not None:
            opened = open_stream(self.file, "--progress-file")
            shown.append(StreamReporter(opened.write, _warn))
        return shown[0] if len(shown) == 1 else Reporters(*shown)


def _stdout_lines(out: BinaryIO) -> Callable[[bytes], None]:
    def write(line: bytes) -> None:
        try:
            out.write(line)
            out.flush()
        except BrokenPipeError:
            # Its reader is gone (`| head`): stdout goes nowhere from now on, so that nothing
            # written to it later (nor its flush at exit) fails again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
            raise

    return write


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)  # a warning: said under --quiet too


def command_line() -> str:
    """The command as the user typed it, stored with the run to reproduce it: what it was
    given as secrets (tune's --env values, --setup) hidden."""
    from benchlab.tune.user_env import masked_command

    return "benchlab " + masked_command(sys.argv[1:])
