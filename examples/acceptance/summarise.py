"""One Markdown row per tuned app: its recommendation, the rate to run at, the proof, the
independent replay and the time the tune took (from what tune-all.sh wrote)."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _row(out: Path, name: str) -> str:
    report_path = out / f"{name}.json"
    timed = out / f"{name}.seconds"
    seconds = int(timed.read_text()) if timed.exists() else 0
    took = f"{seconds // 60}m{seconds % 60:02d}s"
    if not report_path.exists():
        return f"| {name} | no answer (see {name}.log) | | | | {took} |"
    report = json.loads(report_path.read_text())
    best = report["recommendation"]
    slo_ms = (report.get("slo") or {}).get("p99_ms")
    if best is None:
        return f"| {name} | none | | | | {took} |"
    label = f"{best['server']} {best['worker_class']} w={best['workers']}" + (
        f" t={best['threads']}" if best["threads"] else ""
    )
    capacity = best["capacity_rps"]
    if capacity is None:
        shown = f"provisional: {best['closed_loop_rps']:,.0f} closed-loop"
    else:
        bound = "" if capacity["bracketed"] else "≥ "
        interval = f" [{capacity['low']:,.0f}–{capacity['high']:,.0f}]" if capacity["low"] else ""
        shown = f"{bound}{capacity['median']:,.0f}{interval}"
    proof = best.get("proof")
    proved = "not run" if proof is None else "; ".join(_step(s, slo_ms) for s in proof["steps"])
    run_at = f"{best['run_at_rps']:,.0f}" if best.get("run_at_rps") else "–"
    replay_path = out / f"{name}.replay"
    replayed = replay_path.read_text().strip().split(" — ", 1)[-1] if replay_path.exists() else "–"
    return f"| {name} | {label} | {shown} | {run_at} | {proved} | {replayed} | {took} |"


def _step(step: dict, slo_ms: float | None) -> str:
    """'1,351/s p99 34.1 ms, 30 of 30 windows: held'."""
    windows = step.get("windows_p99_ms") or []
    held = sum(1 for w in windows if slo_ms is None or w <= slo_ms)
    counted = f", {held} of {len(windows)} windows" if windows else ""
    verdict = "held" if step["held"] else "missed"
    return f"{step['rate']:,.0f}/s p99 {step['p99_ms'] or 0:,.1f} ms{counted}: {verdict}"


def main() -> None:
    out = Path(sys.argv[1])
    print(
        "| app | recommended | capacity req/s | run at | proof | independent replay | tune time |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in sys.argv[2:]:
        print(_row(out, name))


if __name__ == "__main__":
    main()
