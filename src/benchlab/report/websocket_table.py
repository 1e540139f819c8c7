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
    Layout("stack", wrap=False),
    Layout("held\nconns", right=True, wrap=False),
    Layout("RSS/1k\nMB", right=True, wrap=False),
    Layout("echo p50\nms", right=True, wrap=False),
    Layout("echo p99\nms", right=True, wrap=False),
    Layout("capacity\nmsg/s", right=True, wrap=False),
    Layout("bcast p99\nms", right=True, wrap=False),
)


# Why a hold's steps ended, in words (ws_load.py's reasons).
STOPS = {
    "steps": "≥ the steps' last count, the server still holding (raise [websocket] hold_steps)",
    "refused": "until the server refused an upgrade",
    "stalled": "until opens stopped completing",
    "dropped": "until the server closed idle connections",
    "memory": "up to the memory limit (rss_limit_mb)",
}


def estimate_text(figure: F.Figure, value: Estimate | None, at_least: bool = False) -> str:
    """The median and how far its interval reaches from it, as the HTTP table writes it
    (4.00 ±25%; its bounds in the JSON); `at_least`: the steps ended before the server did."""
    if value is None:
        return "–"
    text = ("≥" if at_least else "") + figure.format(value.median)
    if value.n < 2 or value.median == 0:
        return text
    reach = max(value.high - value.median, value.median - value.low) / abs(value.median)
    return f"{text} ±{100 * reach:.0f}%" if reach > 0 else text


def _row(stack: WsStack) -> list[str]:
    figures = stack.figures
    label = stack.label + (" (ceiling)" if stack.ceiling else "")
    capped = stack.hold_stop == "steps"
    rest = (F.RSS_PER_1000, F.ECHO_P50, F.ECHO_P99, F.CAPACITY, F.BROADCAST_P99)
    return [
        label,
        estimate_text(F.CONNECTIONS_HELD, figures.get(F.CONNECTIONS_HELD.key), capped),
        *(estimate_text(f, figures.get(f.key)) for f in rest),
    ]


def render_websocket(store: Store, run_id: str, console: Console) -> bool:
    """The section, when the run has WebSocket cells (False: it has none, nothing printed)."""
    stacks = websocket_view(store, run_id)
    if not stacks:
        return False
    rate = next((s.echo_rate for s in stacks if s.echo_rate), None)
    receivers = next((s.receivers for s in stacks if s.receivers), None)
    by_stop: dict[str, list[str]] = {}
    for stack in stacks:
        if stack.hold_stop:
            by_stop.setdefault(stack.hold_stop, []).append(stack.label)
    console.print(
        "WebSocket · jmeter · median over trials ±how far its interval reaches"
        + (f" · echo at {rate:,.0f} msg/s" if rate else "")
        + (f" · broadcast to {receivers} receivers" if receivers else ""),
        markup=False, highlight=False,
    )  # fmt: skip
    console.print(text_table(COLUMNS, [_row(s) for s in stacks]))
    for stop, labels in by_stop.items():
        said = STOPS.get(stop, stop)
        console.print(f"  held: {said}: {', '.join(labels)}", markup=False, highlight=False)
    for stack in stacks:
        for scenario, reason in stack.failed.items():
            console.print(f"  {stack.label} {scenario}: {reason}", markup=False, highlight=False)
        for scenario, checks in stack.checks.items():
            for check in checks:
                if not check.ok:
                    console.print(
                        f"  {check.name}: {stack.label} {scenario}: {check.detail}",
                        markup=False, highlight=False,
                    )  # fmt: skip
    if not any(s.problems() or s.failed for s in stacks):
        console.print("  every check passed (counts, Little's law, schedule, the tool's limit)")
    return True
