"""Does tune's answer need a proxy in front (issue 40)? The recommended candidate's command
as printed, started once more, is sent every request shape of `benchlab conform` — asking
for the app's own first GET, with its headers, whole and split at every byte — and then
serves the app's own requests at a fixed rate without and with 32 slow clients trickling
their headers (slowhttptest), in alternating rounds, as `benchlab slow-clients` does a
catalogue stack. The rate is that check's 100 req/s, or half the rate to run at when that
is lower: the check measures slow clients, not an overload. What each found is kept in the
facts of the candidate's search cell (the parsing under its own key: the verdicts that
keep a run's stack out of its ranking do not apply to an answer), where the answer reads
it."""

from __future__ import annotations

from collections.abc import Callable

from benchlab.conformance.check import expected_s
from benchlab.conformance.findings import parsing_text
from benchlab.conformance.shapes import shapes_for
from benchlab.http.scenarios import Expectation
from benchlab.recipe import CoreAssignment
from benchlab.resilience import slow_clients
from benchlab.resilience.facts import (
    ANSWER_CONFORMANCE,
    SLOW_CLIENTS,
    NotChecked,
    attempted,
    slow_client_check,
)
from benchlab.runner import Measurer
from benchlab.runner.executor import CheckedStack
from benchlab.system.safe_files import new_dir
from benchlab.tune.candidates import SCENARIO
from benchlab.tune.proof import Searched, proof_cell
from benchlab.tune.session import TuneSession

MODES = ["headers"]  # a slow body holds a worker only where the app reads the body
ROUNDS = 3
LAUNCH_S = 3.0  # a start and its check that it answers
# Every shape at every offset, one request at a time, before the app's answer time is
# known (a plan's room for the check): an answer of about 2 ms.
CONFORM_S = 6.0


def check_cost_s(parsing_s: float = CONFORM_S) -> float:
    return LAUNCH_S + parsing_s + slow_clients.expected_s(len(MODES), ROUNDS)


def parsing_cost_s(requests: tuple[Expectation, ...], answer_s: float) -> float:
    """The parsing check's time for an app that answers its first GET in `answer_s`: each
    of its 1,000-odd answers waits for the app (20 s at 20 ms)."""
    get = _first_get(requests)
    return 0.0 if get is None else expected_s(shapes_for(get), answer_s)


def check_rate(run_at: float | None) -> float:
    """The check's rate: its own, or half the rate to run at when that is lower."""
    if not run_at:
        return float(slow_clients.RATE)
    return max(1.0, min(float(slow_clients.RATE), run_at / 2))


def check_answer(
    session: TuneSession, measurer: Measurer, entry: Searched, cores: CoreAssignment,
    connections: int, run_at: float | None, answer_s: float, say: Callable[[str], None],
) -> None:  # fmt: skip
    """Slow clients beside the answer's printed command; said, and kept with its cell.
    `answer_s`: how long the app took to answer one request alone (the first pass's)."""
    label = session.cells.label_of(entry.cell)
    requests = tuple(session.scenarios[SCENARIO].load_mix(None))
    cost = check_cost_s(parsing_cost_s(requests, answer_s))
    if session.clock.seconds_left() < cost:
        say(f"slow clients: no budget left to check {label} (about {cost:.0f} s)")
        return
    if (missing := slow_clients.missing()) is not None:
        say(f"slow clients: not checked ({missing})")
        return
    rate = check_rate(run_at)
    cell = proof_cell(entry.candidate, cores, rate, connections)
    workdir = new_dir(session.workroot / "proxy-check", 0o711)
    say(f"checking {label}'s command: its HTTP/1.1 parsing, then slow clients at {rate:,.0f} "
        f"req/s (about {cost:.0f} s)")  # fmt: skip
    with measurer.started(cell, workdir) as up:
        if up.problem is not None:
            found, parsing = NotChecked(session.redacted(up.problem)).to_json(), None
        else:
            parsing = _parsing(session, up.stack_port, requests)
            checked = CheckedStack(
                session.catalogue[cell.stack], up.server, session.server_address, up.port,
                new_dir(workdir / "slow", 0o700), cores.load, requests, rate,
            )  # fmt: skip
            found = attempted(
                lambda: session.executor.measure.slow_clients(
                    session.registry, checked, MODES, ROUNDS
                ),
                session.redacted,
            )
    facts = {SLOW_CLIENTS: found} | ({ANSWER_CONFORMANCE: parsing} if parsing else {})
    session.cells.add_facts(entry.cell, facts)
    if parsing is not None:
        say(f"parsing: {label} {parsing_text(parsing)}")
    result = slow_client_check(facts)
    if isinstance(result, NotChecked):
        say(f"slow clients: {label} not checked ({result.problem})")
    elif result is not None:
        need = "needs a buffering proxy in front" if result.needs_proxy else "needs no proxy"
        say(f"slow clients: {label} {need}: {result.sentence()}")


BEHIND_PROXY = "served behind a proxy: --behind-proxy"


def not_asked(session: TuneSession, entry: Searched, say: Callable[[str], None]) -> None:
    """The answer served behind a proxy (--behind-proxy): not checked, and kept so."""
    session.cells.add_facts(entry.cell, {SLOW_CLIENTS: NotChecked(BEHIND_PROXY).to_json()})
    say(f"slow clients: {session.cells.label_of(entry.cell)} not checked ({BEHIND_PROXY})")


def _first_get(requests: tuple[Expectation, ...]) -> Expectation | None:
    return next((r for r in requests if r.method == "GET" and r.request_body is None), None)


def _parsing(session: TuneSession, port: int, requests: tuple[Expectation, ...]) -> dict | None:
    """Every shape asking for the app's first GET (None: it has no GET request to ask)."""
    get = _first_get(requests)
    if get is None:
        return None
    return session.executor.observe.conform(session.server_address, port, shapes_for(get)).facts()
