"""The WebSocket section of the terminal report (phase A of issue 60: a table of its own):
each stack's three figures, each a median over trials with its interval [low–high] — idle
connections held and RSS per 1,000, echo p50/p99 at the fixed rate and the capacity under
the [slo], broadcast p99 — and the checks its trials failed."""

from __future__ import annotations

from rich.console import Console

from benchlab.analysis.stats import Estimate
from benchlab.analysis.websocket import WsStack, websocket_view
from benchlab.core import figures as F
from benchlab.report.terminal import Layout, text_table
from benchlab.store import Store

COLUMNS = (
    Layout("stack"),
    Layout("held\nconns", right=True, wrap=False),
    Layout("RSS/1k\nMB", right=True, wrap=False),
    Layout("echo p50\nms", right=True, wrap=False),
    Layout("echo p99\nms", right=True, wrap=False),
    Layout("capacity\nmsg/s", right=True, wrap=False),
    Layout("bcast p99\nms", right=True, wrap=False),
    Layout("checks"),
)


def estimate_text(figure: F.Figure, value: Estimate | None) -> str:
    """The median and its interval: 2,000 [1,500–2,000]; one trial: the value alone."""
    if value is None:
        return "–"
    if value.n < 2 or value.low == value.high:
        return figure.format(value.median)
    return f"{figure.format(value.median)} [{figure.format(value.low)}–{figure.format(value.high)}]"


def _row(stack: WsStack) -> list[str]:
    figures = stack.figures
    label = stack.label + (" (ceiling)" if stack.ceiling else "")
    problems = stack.problems()
    failed = [f"{scenario} failed" for scenario in stack.failed]
    return [
        label,
        *(estimate_text(f, figures.get(f.key)) for f in (F.CONNECTIONS_HELD, F.RSS_PER_1000,
                                                          F.ECHO_P50, F.ECHO_P99, F.CAPACITY,
                                                          F.BROADCAST_P99)),
        ", ".join(dict.fromkeys([*failed, *problems])) or "valid",
    ]  # fmt: skip


def render_websocket(store: Store, run_id: str, console: Console) -> bool:
    """The section, when the run has WebSocket cells (False: it has none, nothing printed)."""
    stacks = websocket_view(store, run_id)
    if not stacks:
        return False
    rate = next((s.echo_rate for s in stacks if s.echo_rate), None)
    receivers = next((s.receivers for s in stacks if s.receivers), None)
    stops = ", ".join(f"{s.label}: {s.hold_stop}" for s in stacks if s.hold_stop)
    console.print(
        "WebSocket · jmeter · median over trials [interval]"
        + (f" · echo at {rate:,.0f} msg/s" if rate else "")
        + (f" · broadcast to {receivers} receivers" if receivers else ""),
        markup=False, highlight=False,
    )  # fmt: skip
    console.print(text_table(COLUMNS, [_row(s) for s in stacks]))
    console.print(f"  holds ended by: {stops}", markup=False, highlight=False)
    for stack in stacks:
        for scenario, reason in stack.failed.items():
            console.print(f"  {stack.label} {scenario}: {reason}", markup=False, highlight=False)
        for scenario, checks in stack.checks.items():
            for check in checks:
                if not check.ok:
                    console.print(
                        f"  {stack.label} {scenario} {check.name}: {check.detail}",
                        markup=False, highlight=False,
                    )  # fmt: skip
    return True
