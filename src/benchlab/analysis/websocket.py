"""The view of a run's WebSocket cells: each stack's three figures (connections held with
RSS per 1,000; echo p50/p99 at the fixed rate and the capacity under the [slo]; broadcast
p99), each a median over trials with its interval, made by the figure registry
(core/figures.py through analysis/combine.py), and the checks each cell's trials pass or
fail: the tool's counts against the server's own, Little's law, the schedule kept, and
whether the tool rather than the server was the limit (against the Go ceiling)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from benchlab.analysis.combine import combine
from benchlab.analysis.stats import Estimate
from benchlab.core import figures as F
from benchlab.core.modes import Mode
from benchlab.http.scenarios import BROADCAST, ECHO, HOLD, SCENARIOS
from benchlab.stacks import CATALOGUE
from benchlab.store import CellRecord, Store, TrialRecord

COUNT_TOLERANCE = 0.001  # the tool's count and the server's agree within 0.1 %
LATE_SHARE = 0.001  # more messages than this sent over a period late: the schedule slipped
# Little's law for the echo: λ × mean round trip = messages in flight, at most one a
# connection; the load is open-loop only while each connection is mostly idle (the research's
# guard: in flight at most a tenth of the time, so a late send is rare).
IN_FLIGHT_SHARE = 0.1
TOOL_CPU_PCT = 90.0  # the tool's core this busy: it, not the server, set the pace
FLOOR_FACTOR = 1.5  # a broadcast within this of the ceiling's is at the tool's floor
# An echo capacity this near the ceiling's (or above it) is the tool's paced ceiling: JMeter
# held its schedule to about 5,300 msg/s against Go here, whose server had room to spare.
CEILING_SHARE = 0.8


@dataclass(frozen=True)
class Check:
    name: str  # counts, littles-law, schedule, client-bound
    ok: bool
    detail: str


@dataclass
class WsStack:
    label: str
    ceiling: bool
    figures: dict[str, Estimate | None] = field(default_factory=dict)
    hold_stop: str | None = None
    echo_rate: float | None = None
    receivers: int | None = None
    failed: dict[str, str] = field(default_factory=dict)  # scenario -> reason
    checks: dict[str, list[Check]] = field(default_factory=dict)  # scenario -> its checks

    def problems(self) -> list[str]:
        return [c.name for checks in self.checks.values() for c in checks if not c.ok]


def websocket_view(store: Store, run_id: str) -> list[WsStack]:
    """Every stack of the run's WebSocket cells, in the recipe's order, its ceiling first."""
    stacks: dict[str, WsStack] = {}
    for cell in store.cells(run_id):
        scenario = SCENARIOS.get(cell.scenario)
        if scenario is None or not scenario.websocket:
            continue
        known = CATALOGUE.get(cell.stack)
        entry = stacks.setdefault(
            cell.stack_label, WsStack(cell.stack_label, bool(known and known.websocket_ceiling))
        )
        if cell.status == "failed":
            entry.failed[cell.scenario] = cell.reason or "failed"
            continue
        trials = store.trials(cell.id)
        _add(entry, scenario.websocket, cell, trials, store)
    ordered = sorted(stacks.values(), key=lambda s: not s.ceiling)
    against_ceiling(ordered)
    return ordered


def _add(
    entry: WsStack, kind: str, cell: CellRecord, trials: list[TrialRecord], store: Store
) -> None:
    if kind == HOLD:
        figures = combine(trials, [], cell, cell.mode).figures
        for figure in (F.CONNECTIONS_HELD, F.RSS_PER_1000):
            entry.figures[figure.key] = figures.get(figure.key)
        stops = [t.ws_hold_stop for t in trials if t.ws_hold_stop]
        entry.hold_stop = max(set(stops), key=stops.count) if stops else None
        entry.checks[cell.scenario] = [_hold_counts(trials)]
    elif kind == ECHO:
        fixed = [t for t in trials if t.probe is None]
        capacities = store.capacities(cell.id) if cell.mode == Mode.SLO else []
        figures = combine(fixed, capacities, cell, cell.mode).figures
        for figure in (F.ECHO_P50, F.ECHO_P99, F.CAPACITY):
            entry.figures[figure.key] = figures.get(figure.key)
        entry.echo_rate = next((t.target_rate for t in fixed if t.target_rate), None)
        entry.checks[cell.scenario] = _echo_checks(fixed, cell.connections)
    elif kind == BROADCAST:
        figures = combine(trials, [], cell, cell.mode).figures
        entry.figures[F.BROADCAST_P99.key] = figures.get(F.BROADCAST_P99.key)
        sent = [t for t in trials if t.ws_tool_sent]
        entry.receivers = sent[0].requests // (sent[0].ws_tool_sent or 1) if sent else None
        entry.checks[cell.scenario] = _broadcast_checks(trials)


def _gap(tool: int | None, server: int | None) -> float | None:
    if tool is None or server is None:
        return None
    return abs(tool - server) / max(tool, server, 1)


def _counts_check(pairs: list[tuple[str, int | None, int | None]]) -> Check:
    """The tool's counts against the server's own, over every trial."""
    worst = None
    for what, tool, server in pairs:
        gap = _gap(tool, server)
        if gap is None:
            return Check("counts", False, f"{what}: the server's counters were not read")
        if worst is None or gap > worst[1]:
            worst = (what, gap, tool, server)
    if worst is None:
        return Check("counts", True, "no trial")
    what, gap, tool, server = worst
    detail = f"{what}: tool {tool:,} vs server {server:,} ({100 * gap:.2f}%)"
    return Check("counts", gap <= COUNT_TOLERANCE, detail)


def _hold_counts(trials: list[TrialRecord]) -> Check:
    """The tool's open connections against the kernel's established count at the last step
    (the steps are kept with the trial)."""
    pairs = []
    for trial in trials:
        steps = json.loads(trial.ws_hold_steps or "[]") or [{}]
        pairs.append(("connections", steps[-1].get("opened"), steps[-1].get("established")))
    return _counts_check(pairs)


def _echo_checks(trials: list[TrialRecord], connections: int) -> list[Check]:
    sent = sum(t.ws_tool_sent or 0 for t in trials)
    answered = sum(t.requests for t in trials)
    frames_in = _total(t.ws_server_frames_in for t in trials)
    frames_out = _total(t.ws_server_frames_out for t in trials)
    checks = [_counts_check([("messages sent", sent, frames_in),
                             ("echoes", answered, frames_out)])]  # fmt: skip
    in_flight = [
        (t.achieved_rps or 0) * (t.latency_mean_ms or 0) / 1000 / connections for t in trials
    ]
    worst = max(in_flight, default=0.0)
    checks.append(
        Check(
            "littles-law", worst <= IN_FLIGHT_SHARE,
            f"rate × mean round trip = {worst:.3f} messages in flight a connection "
            f"(≤ {IN_FLIGHT_SHARE:g} keeps each connection's sends on schedule)",
        )
    )  # fmt: skip
    late = max((t.ws_late_share or 0.0 for t in trials), default=0.0)
    cpu = max((t.load_cpu_pct or 0.0 for t in trials), default=0.0)
    checks.append(
        Check("schedule", late <= LATE_SHARE, f"{100 * late:.2f}% of messages sent a period late")
    )
    checks.append(
        Check("client-bound", cpu < TOOL_CPU_PCT and late <= LATE_SHARE,
              f"the tool's core {cpu:.0f}% busy, {100 * late:.2f}% sent late")
    )  # fmt: skip
    return checks


def _broadcast_checks(trials: list[TrialRecord]) -> list[Check]:
    posted = sum(t.ws_tool_sent or 0 for t in trials)
    delivered = sum(t.requests for t in trials)
    frames_in = _total(t.ws_server_frames_in for t in trials)
    deliveries = _total(t.ws_server_deliveries for t in trials)
    missing = sum(t.errors_read or 0 for t in trials) + sum(t.errors_other or 0 for t in trials)
    return [
        _counts_check([("posts", posted, frames_in), ("deliveries", delivered, deliveries)]),
        Check("exactly-once", missing == 0,
              f"{missing:,} (round, receiver) pairs missed or read twice"),
    ]  # fmt: skip


def _total(values) -> int | None:
    known = list(values)
    return None if any(v is None for v in known) else sum(known)


def against_ceiling(stacks: list[WsStack]) -> None:
    """What the Go ceiling shows of the tool: a hold that stalled where the ceiling's stalled
    too stopped at the tool's pace of opening (a thread a connection), not the server's; a
    broadcast no slower than the ceiling's (within FLOOR_FACTOR) measured the tool's floor
    (its threads' wake-ups)."""
    ceiling = next((s for s in stacks if s.ceiling), None)
    if ceiling is None:
        return
    if ceiling.hold_stop == "stalled":
        for stack in stacks:
            if stack.hold_stop == "stalled":
                stack.checks.setdefault("ws-hold", []).append(
                    Check("client-bound", False,
                          "its opens stalled, and so did the Go ceiling's: the tool's pace")
                )  # fmt: skip
    top = ceiling.figures.get(F.CAPACITY.key)
    for stack in stacks if top is not None else []:
        mine = stack.figures.get(F.CAPACITY.key)
        if mine is not None and mine.median >= CEILING_SHARE * top.median:
            stack.checks.setdefault("ws-echo", []).append(
                Check("client-bound", False,
                      f"capacity {mine.median:,.0f} msg/s against the ceiling's "
                      f"{top.median:,.0f}: the tool's paced limit")
            )  # fmt: skip
    floor = ceiling.figures.get(F.BROADCAST_P99.key)
    if floor is None:
        return
    for stack in stacks:
        mine = stack.figures.get(F.BROADCAST_P99.key)
        if mine is None:
            continue
        at_floor = mine.median <= FLOOR_FACTOR * floor.median
        stack.checks.setdefault("ws-broadcast", []).append(
            Check("client-bound", not at_floor,
                  f"p99 {mine.median:.0f} ms against the ceiling's {floor.median:.0f} ms")
        )  # fmt: skip
