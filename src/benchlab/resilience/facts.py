"""How a run keeps what its resilience checks found: in the facts of each cell of the
stack, under one key per check, as the result's JSON or why it could not be checked. The
runner writes them; the verdicts and the report read them back through these functions."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from benchlab.core.errors import BenchlabError, UserError
from benchlab.resilience.drain import Drain
from benchlab.resilience.slow_clients import SlowClients

DRAIN = "drain"
SLOW_CLIENTS = "slow_clients"
CHECK_WORDS = {SLOW_CLIENTS: "slow clients", DRAIN: "stop under load"}  # in progress lines
# tune's answer's HTTP/1.1 parsing (conformance/check.py's facts): apart from a run's
# `conformance`, whose verdicts keep a stack out of the ranking.
ANSWER_CONFORMANCE = "answer_conformance"


@dataclass(frozen=True)
class NotChecked:
    """Why a stack's check found nothing: it did not start, or the check itself failed."""

    problem: str

    def to_json(self) -> dict[str, Any]:
        return {"problem": self.problem}


def stop_check(facts: Mapping[str, Any]) -> Drain | NotChecked | None:
    """What the drain check found (None: the run did not ask for it)."""
    found = facts.get(DRAIN)
    if found is None:
        return None
    return NotChecked(found["problem"]) if "problem" in found else Drain.from_json(found)


def slow_client_check(facts: Mapping[str, Any]) -> SlowClients | NotChecked | None:
    """What the slow-client check found (None: the run did not ask for it)."""
    found = facts.get(SLOW_CLIENTS)
    if found is None:
        return None
    return NotChecked(found["problem"]) if "problem" in found else SlowClients.from_json(found)


def attempted(
    check: Callable[[], Drain | SlowClients], redacted: Callable[[str], str]
) -> dict[str, Any]:
    """The check's result as its facts, or why it failed, without the run's secrets (a log
    tail may print them): one stack's failed check is that stack's, and the run goes on (a
    mistake of the user's, or Ctrl-C, still stops it)."""
    try:
        return check().to_json()
    except UserError:
        raise
    except BenchlabError as exc:
        return NotChecked(redacted(str(exc))).to_json()
    except Exception as exc:
        return NotChecked(redacted(f"{type(exc).__name__}: {exc}")).to_json()
