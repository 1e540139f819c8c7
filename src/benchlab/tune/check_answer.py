"""`tune --check-answer FILE`: a stored answer (a tune's `-f json` report) proved again on
this machine — its candidate's printed command replayed at its rate to run at, for the
proof's length, judged in every window as the first proof was — so that CI can catch an app
change that breaks the rate (exit 1 when it no longer holds)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from benchlab.analysis.target import Target
from benchlab.core.errors import UserError
from benchlab.tune.proof import Replayed, Searched, replay_at

if TYPE_CHECKING:
    from benchlab.recipe import Cell
    from benchlab.runner import Measurer
    from benchlab.tune.candidates import Candidate
    from benchlab.tune.session import TuneSession


class TuneRequestLike(Protocol):
    # Read-only (properties), as a frozen dataclass's fields are.
    @property
    def connections(self) -> int: ...
    @property
    def proof_s(self) -> int: ...


@dataclass(frozen=True)
class StoredAnswer:
    path: Path
    candidate: str  # the candidate's kind, as tune names it (gunicorn-gthread)
    workers: int
    threads: int | None
    rate: float  # the rate to run at it was proved at
    slo_p99_ms: float
    target: Target

    def describe(self) -> str:
        per = "" if self.threads is None else f" t={self.threads}"
        return f"{self.candidate} w={self.workers}{per} at {self.rate:,.0f} req/s"


def read_answer(path: Path) -> StoredAnswer:
    """The answer of a tune's JSON report; one line, naming the key, when it is not one."""
    where = f"--check-answer {path}"
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise UserError(f"{where}: cannot read it ({exc.strerror})") from None
    except ValueError:
        raise UserError(f"{where}: not JSON; give what `benchlab tune -f json -o` wrote") from None
    best = data.get("recommendation") if isinstance(data, dict) else None
    if not isinstance(best, dict):
        raise UserError(
            f"{where}: no 'recommendation' in it (a tune that found no answer, or another "
            "report); give the JSON of a tune that recommended a command"
        )
    slo = data.get("slo") or {}
    try:
        rate = float(best["run_at_rps"])
        found = StoredAnswer(
            path, str(best["candidate"]), int(best["workers"]),
            None if best.get("threads") is None else int(best["threads"]), rate,
            float(slo["p99_ms"]),
            Target(**{k: data["target"][k] for k in ("cpus", "memory_mb")})
            if data.get("target")
            else Target(),
        )  # fmt: skip
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(
            f"{where}: key {exc} missing or not a number in its recommendation; give the JSON "
            "of a tune that proved a rate to run at"
        ) from None
    if found.rate <= 0:
        raise UserError(f"{where}: its rate to run at is {rate:g}: there is nothing to prove")
    return found


def prove_stored(
    session: TuneSession, measurer: Measurer, answer: StoredAnswer, found: list[Candidate],
    cells: list[Cell], request: TuneRequestLike, say: Callable[[str], None],
) -> Replayed | None:  # fmt: skip
    """The stored answer's command replayed at its rate for the proof's length, judged by the
    proof's rule; None when it could not run (the reason is the run's)."""
    entry = next(
        (Searched(c, cell) for c, cell in zip(found, cells, strict=True)
         if (c.stack, c.workers, c.threads) == (answer.candidate, answer.workers,
                                                    answer.threads)),
        None,
    )  # fmt: skip
    if entry is None:
        raise UserError(
            f"--check-answer {answer.path}: its candidate {answer.describe()} is not one this "
            "app's environment offers now (its server is missing?)"
        )
    say(f"check-answer: {answer.describe()} replayed for {request.proof_s} s")
    return replay_at(
        session, measurer, entry, answer.rate, session.plan.cores, request.connections,
        request.proof_s, 0, extends_plan=False,
    )  # fmt: skip
