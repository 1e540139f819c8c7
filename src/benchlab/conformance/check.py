"""A server's conformance: every shape sent whole and split at every byte offset, one
request at a time, and whether the server still answers afterwards."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchlab.conformance.probe import Fault, Probed, Wrong, probe, still_answers
from benchlab.conformance.shapes import CATALOGUE_SHAPES, Shape, ShapeSet, answered_as

# A shape stops after this many failures: the first offsets say what is wrong, and a server
# that hangs would otherwise cost a timeout per offset.
MAX_FAILURES = 5


@dataclass(frozen=True)
class Failure:
    offset: int | None  # None: sent whole
    wrong: Wrong

    @property
    def problem(self) -> str:
        return str(self.wrong)

    def where(self) -> str:
        return "sent whole" if self.offset is None else f"split after byte {self.offset}"

    def line(self, shape: Shape) -> str:
        """What the server did wrong, then the shape, where, and what showed it."""
        return f"{self.wrong.fault.value} ({shape.name}, {self.where()}: {self.wrong.detail})"


@dataclass(frozen=True)
class ShapeResult:
    shape: Shape
    sent: int  # probes made: whole, then each offset (fewer when it stopped early)
    failures: tuple[Failure, ...] = ()
    stopped: bool = False  # it stopped at MAX_FAILURES: more offsets may fail
    notes: tuple[str, ...] = ()  # right, but worth saying: each note once
    # A user's app's own answer to the shape sent whole, where it is not the one asked for
    # (the status of each answer): what the shape split at each byte had to get.
    apps_own: tuple[int, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        return {
            "shape": self.shape.name,
            "sent": self.sent,
            "passed": self.passed,
            "failures": [
                {"offset": f.offset, "fault": f.wrong.fault.name.lower(), "problem": f.problem}
                for f in self.failures
            ],
            "stopped_early": self.stopped,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Conformance:
    results: tuple[ShapeResult, ...]
    down_after: str | None = None  # the server stopped answering: why

    @property
    def failed_shapes(self) -> tuple[str, ...]:
        return tuple(r.shape.name for r in self.results if not r.passed)

    @property
    def conformant(self) -> bool:
        return not self.failed_shapes and self.down_after is None

    @property
    def ranks(self) -> bool:
        """Whether a run may rank the stack: no shape a benchmark client sends failed, and
        the server kept answering."""
        return not self.failures(unranking=True) and self.down_after is None

    def facts(self) -> dict[str, Any]:
        """What a run keeps of it with each of the stack's cells (the verdicts read it): the
        failures in words, what the server did wrong in each unranking one (a Fault's name),
        and a user's app's own answers to shapes sent whole."""
        down = [] if self.down_after is None else [f"stopped answering {self.down_after}"]
        return {
            "requests": self.requests,
            "unranking": [*self.failures(unranking=True), *down],
            "cautions": self.failures(unranking=False),
            "faults": sorted({r.failures[0].wrong.fault.name for r in self._failed(True)}),
            "apps_own": [
                f"{r.shape.name} answered {' and '.join(map(str, r.apps_own))}"
                for r in self.results
                if r.apps_own
            ],
        }

    @property
    def requests(self) -> int:
        return sum(r.sent for r in self.results)

    @property
    def notes(self) -> tuple[str, ...]:
        """Each note once, with the first shape that showed it."""
        seen: dict[str, str] = {}
        for result in self.results:
            for note in result.notes:
                seen.setdefault(note, result.shape.name)
        return tuple(f"{note} ({shape})" for note, shape in seen.items())

    def _failed(self, unranking: bool) -> list[ShapeResult]:
        """The failed shapes whose failure does (or does not) keep the stack out of a
        ranking."""
        return [r for r in self.results if r.failures and r.shape.unranks == unranking]

    def failures(self, unranking: bool) -> list[str]:
        """One line per failed shape whose failure does (or does not) keep the stack out of
        a ranking: what the server did wrong, the shape, where it first failed, and why."""
        return [r.failures[0].line(r.shape) for r in self._failed(unranking)]

    def first_failure(self) -> str | None:
        """One line: the first shape that failed, where, and why."""
        if self.down_after is not None:
            return f"stopped answering: {self.down_after}"
        for result in self.results:
            if result.failures:
                return result.failures[0].line(result.shape)
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "conformant": self.conformant,
            "requests": self.requests,
            "down_after": self.down_after,
            "notes": list(self.notes),
            "shapes": [r.to_json() for r in self.results],
        }


def offsets(shape: Shape) -> list[int | None]:
    """Whole first, then every split point: after byte 1 … after the last but one."""
    return [None, *(range(1, len(shape.raw)) if shape.split else ())]


# Each answer a probe waits for, beyond the app's own time: a connection, the request's
# bytes in two segments, the answer read. Measured: the 480 probes (984 answers) of a
# 2-byte WSGI answer under gunicorn took 2.9 s; of a 20-ms and a 50-ms answer under
# gunicorn's gevent worker, 24.5 and 46.7 s (552 probes, 1,144 answers).
EXCHANGE_S = 0.003


def expected_s(shapes: ShapeSet, answer_s: float) -> float:
    """About how long check_server takes when the app answers in `answer_s`: every answer
    of every probe and each shape's check that the server still answers, one at a time (at
    most: an answer refused by the server does not wait for the app)."""
    answers = sum(
        len(offsets(shape)) * (len(shape.answers) + int(shape.follow_up)) + 1
        for shape in shapes.shapes
    )
    return answers * (answer_s + EXCHANGE_S)


def check_server(
    host: str,
    port: int,
    shapes: ShapeSet | tuple[Shape, ...] = CATALOGUE_SHAPES,
    progress: Callable[[str], None] = lambda _: None,
) -> Conformance:
    """Every shape, whole and split at each offset; a tuple of the catalogue's shapes is
    followed by their plain GET, a ShapeSet (a user's app's) by its own."""
    asked = (
        shapes
        if isinstance(shapes, ShapeSet)
        else dataclasses.replace(CATALOGUE_SHAPES, shapes=shapes)
    )
    results = []
    for shape in asked.shapes:
        results.append(_check_shape(host, port, shape, asked))
        result = results[-1]
        progress(f"{shape.name}: {result.sent - len(result.failures)}/{result.sent} right")
        down = still_answers(host, port, asked)
        if down is not None:
            return Conformance(tuple(results), down_after=f"after {shape.name}: {down}")
    return Conformance(tuple(results))


def _check_shape(host: str, port: int, shape: Shape, asked: ShapeSet) -> ShapeResult:
    """One shape whole, then split at each offset. A user's app's own answer to it sent
    whole, well framed, is the app's, not a fault of the server's: the shape split must get
    that answer too."""
    failures: list[Failure] = []
    notes: dict[str, None] = {}
    sent, judged = 0, shape
    own: tuple[int, ...] = ()
    every = offsets(shape)
    for offset in every:
        sent += 1
        probed = probe(host, port, judged, offset, asked)
        if offset is None and _apps_own(probed, asked):
            own, judged = probed.statuses, answered_as(shape, probed.statuses)
            sent += 1
            probed = probe(host, port, judged, offset, asked)  # the rest of it checked too
        if probed.note is not None:
            notes[probed.note] = None
        if probed.wrong is not None:
            failures.append(Failure(offset, probed.wrong))
            if len(failures) >= MAX_FAILURES:
                break
    stopped = len(failures) >= MAX_FAILURES and sent < len(every) + bool(own)
    return ShapeResult(shape, sent, tuple(failures), stopped, tuple(notes), own)


def _apps_own(probed: Probed, asked: ShapeSet) -> bool:
    return (
        asked.apps_own
        and probed.wrong is not None
        and probed.wrong.fault is Fault.WRONG_ANSWER
        and bool(probed.statuses)
    )
