"""Does tune's answer need a buffering proxy in front (issue 40)? The recommended
candidate's command as printed, started once more, serves the app's own requests at a fixed
rate without and with 32 slow clients trickling their headers (slowhttptest), in alternating
rounds, as `benchlab slow-clients` does a catalogue stack. The rate is that check's 100 req/s,
or half the rate to run at when that is lower: the check measures slow clients, not an
overload. What it found is kept in the facts of the candidate's search cell, where the
answer reads it."""

from __future__ import annotations

from collections.abc import Callable

from benchlab.recipe import CoreAssignment
from benchlab.resilience import slow_clients
from benchlab.resilience.facts import SLOW_CLIENTS, NotChecked, attempted
from benchlab.runner import Measurer, Session
from benchlab.runner.executor import Checked
from benchlab.safe_files import new_dir
from benchlab.tune.candidates import SCENARIO
from benchlab.tune.proof import Searched, proof_cell

MODES = ["headers"]  # a slow body holds a worker only where the app reads the body
ROUNDS = 3
LAUNCH_S = 3.0  # a start and its check that it answers


def check_cost_s() -> float:
    return LAUNCH_S + slow_clients.expected_s(len(MODES), ROUNDS)


def check_rate(run_at: float | None) -> float:
    """The check's rate: its own, or half the rate to run at when that is lower."""
    if not run_at:
        return float(slow_clients.RATE)
    return max(1.0, min(float(slow_clients.RATE), run_at / 2))


def check_answer(
    session: Session, measurer: Measurer, entry: Searched, cores: CoreAssignment,
    connections: int, run_at: float | None, say: Callable[[str], None],
) -> None:  # fmt: skip
    """Slow clients beside the answer's printed command; said, and kept with its cell."""
    label = session.label_of(entry.cell)
    if session.seconds_left() < check_cost_s():
        say(f"slow clients: no budget left to check {label} (about {check_cost_s():.0f} s)")
        return
    rate = check_rate(run_at)
    cell = proof_cell(entry.candidate, cores, rate, connections)
    workdir = new_dir(session.workroot / "proxy-check", 0o711)
    say(f"slow clients: {label}'s command at {rate:,.0f} req/s, without and with them")
    with measurer.started(cell, workdir) as up:
        if up.problem is not None:
            found = NotChecked(up.problem).to_json()
        else:
            requests = tuple(session.scenarios[SCENARIO].load_mix(None))
            checked = Checked(
                session.catalogue[cell.stack], up.server, session.server_address, up.port,
                new_dir(workdir / "slow", 0o700), cores.load, requests, rate,
            )  # fmt: skip
            found = attempted(
                lambda: session.executor.slow_clients(session.registry, checked, MODES, ROUNDS)
            )
    session.add_cell_facts(entry.cell, {SLOW_CLIENTS: found})
    result = slow_clients.SlowClients.from_json(found) if "problem" not in found else None
    if result is None:
        say(f"slow clients: {label} not checked ({found['problem']})")
    else:
        need = "needs a buffering proxy in front" if result.needs_proxy else "needs no proxy"
        say(f"slow clients: {label} {need}: {result.sentence()}")
