"""A conformance check's facts (check.py's `Conformance.facts`, kept with a cell) in words:
what the server did wrong, and what to put in front of it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchlab.conformance.probe import Fault

# What to do about a fault that a proxy in front mends in its own way (measured: nginx 1.22
# in front of waitress 3.0.2, upstream keep-alive on, answers HEAD without the body waitress
# sends, and the next answer on the connection right).
REMEDIES = {
    Fault.HEAD_BODY: (
        "a client reads that body as the start of the next answer on the connection; nginx "
        "in front answers HEAD without it"
    ),
}
PARSING_PROXY = "put a proxy that parses requests (nginx) in front"


def parsing_text(found: Mapping[str, Any]) -> str:
    """A conformance check's facts in words: what failed, and what to do about it; a user's
    app's own answers to shapes sent whole are said apart (not the server's framing)."""
    unranking, cautions = found.get("unranking") or [], found.get("cautions") or []
    own = found.get("apps_own") or []
    aside = (
        f" (the app's own answers to requests sent whole, not the server's framing: "
        f"{', '.join(own)})"
        if own
        else ""
    )
    if unranking:
        faults = {Fault[name] for name in found.get("faults") or [] if name in Fault.__members__}
        advice = [REMEDIES[fault] for fault in sorted(faults & REMEDIES.keys(), key=str)]
        if not faults or faults - REMEDIES.keys():
            advice.append(PARSING_PROXY)
        return f"{'; '.join(unranking)}: {'; '.join(advice)}{aside}"
    if cautions:
        return (
            f"mishandles a malformed request or a header's size ({'; '.join(cautions)}): a "
            f"proxy that enforces limits (nginx) in front{aside}"
        )
    return (
        f"every request shape right, whole and split at every byte ({found['requests']:,}){aside}"
    )
