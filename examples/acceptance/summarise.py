"""The acceptance table from what tune-all.sh wrote: one row per app and user (the answer,
its capacity, the rate to run at, its proof, each replayed window's p99, held or not, the
tune's time), the two tunes' rates to run at and their ratio, and the figures of the
summary (answers that held every window, the median and largest ratio).

    .venv/bin/python examples/acceptance/summarise.py results/acceptance \
        --users root benchacc -- httpbin kinto
"""

from __future__ import annotations

import argparse
import json
import statistics
from datetime import datetime
from pathlib import Path


def _load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


def _answer(best: dict) -> str:
    label = f"{best['server']} {best['worker_class']} w={best['workers']}"
    return label + (f" t={best['threads']}" if best.get("threads") else "")


def _capacity(best: dict) -> str:
    capacity = best.get("capacity_rps")
    if capacity is None:
        return f"provisional: {best['closed_loop_rps']:,.0f} closed-loop"
    bound = "" if capacity["bracketed"] else "≥ "
    interval = f" [{capacity['low']:,.0f}–{capacity['high']:,.0f}]" if capacity["low"] else ""
    return f"{bound}{capacity['median']:,.0f}{interval}"


def _proof(best: dict, slo_ms: float | None) -> str:
    proof = best.get("proof")
    if proof is None:
        return "not run"
    steps = []
    for step in proof["steps"]:
        windows = step.get("windows_p99_ms") or []
        held = sum(1 for w in windows if slo_ms is None or w <= slo_ms)
        verdict = "held" if step["held"] else "missed"
        worst = f", ≤ {max(windows):,.0f} ms" if windows and step["held"] else ""
        steps.append(f"{step['rate']:,.0f}/s: {held} of {len(windows)}{worst}, {verdict}")
    return "; ".join(steps)


def _replay(replay: dict | None) -> tuple[str, str]:
    if replay is None:
        return "nothing to replay", "–"
    windows = replay["windows"]
    shown = [f"{w['p99_ms']:,.1f}" if w["held"] else f"**{w['p99_ms']:,.1f}**" for w in windows]
    failed = sum(w["failed"] for w in windows)
    text = f"{', '.join(shown[:3])}; {', '.join(shown[3:])}"
    if failed:
        text += f" ({failed} failed)"
    held = sum(1 for w in windows if w["held"])
    verdict = f"{held} of {len(windows)}" + (" held" if replay["held"] else " missed")
    return text, (f"**{verdict}**" if replay["held"] else verdict)


def _took(report: dict | None, timed: Path) -> str:
    """The tune's own time (its run's start to end as stored), without the wait for the
    machine's lock that the wall clock of tune-all.sh includes (NAME.seconds)."""
    run = (report or {}).get("run") or {}
    if run.get("started_at") and run.get("ended_at"):
        began, ended = (datetime.fromisoformat(run[k]) for k in ("started_at", "ended_at"))
        seconds = round((ended - began).total_seconds())
    else:
        seconds = int(timed.read_text()) if timed.exists() else 0
    return f"{seconds // 60}m{seconds % 60:02d}s"


def _repeat(out: Path, user: str, name: str) -> dict | None:
    """The range the tune said a second tune would give (recommendation.repeat)."""
    report = _load(out / user / f"{name}.json")
    return ((report or {}).get("recommendation") or {}).get("repeat")


def _row(out: Path, user: str, name: str) -> tuple[str, float | None, bool | None]:
    """The table's row, the rate to run at, and whether the replay held every window."""
    report = _load(out / user / f"{name}.json")
    took = _took(report, out / user / f"{name}.seconds")
    if report is None:
        missing = f"no answer (see {user}/{name}.log)"
        return f"| {name} | {user} | {missing} | | | | | | {took} |", None, None
    best = report.get("recommendation")
    if best is None:
        return f"| {name} | {user} | none | | | | | | {took} |", None, None
    slo_ms = (report.get("slo") or {}).get("p99_ms")
    rate = best.get("run_at_rps")
    replay = _load(out / user / f"{name}.replay.json")
    windows, held = _replay(replay)
    run_at = f"{rate:,.0f}" if rate else "–"
    row = (
        f"| {name} | {user} | {_answer(best)} | {_capacity(best)} | {run_at} | "
        f"{_proof(best, slo_ms)} | {windows} | {held} | {took} |"
    )
    return row, rate, (replay["held"] if replay else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--users", nargs="+", default=["root"])
    parser.add_argument("apps", nargs="+")
    args = parser.parse_args()
    replayed = "replay p99 ms (3 × 10 s; 60 s in 10-s windows)"
    print(f"| app | user | answer | capacity req/s | run at | proof (60 s) | {replayed} "
          "| windows held | tune time |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    pairs: list[tuple[str, list[float | None]]] = []
    replays: list[bool] = []
    for name in args.apps:
        rates = []
        for user in args.users:
            row, rate, held = _row(args.out, user, name)
            print(row)
            rates.append(rate)
            if held is not None:
                replays.append(held)
        pairs.append((name, rates))
    print()
    users = " / ".join(args.users)
    print(f"| app | run at as {users} | ratio (higher ÷ lower) | each one's repeat range "
          "(basis) | the other's rate within it |")  # fmt: skip
    print("|---|---|---|---|---|")
    ratios = []
    within: list[bool] = []
    for name, rates in pairs:
        shown = " / ".join(f"{r:,.0f}" if r else "–" for r in rates)
        said = [_repeat(args.out, user, name) for user in args.users]
        ranges = " / ".join(
            f"{r['low_rps']:,.0f}–{r['high_rps']:,.0f} ({r['basis']})" if r else "–" for r in said
        )
        inside = []
        if len(rates) == 2:
            for mine, other in ((said[0], rates[1]), (said[1], rates[0])):
                if mine and other:
                    hit = mine["low_rps"] <= other <= mine["high_rps"]
                    within.append(hit)
                    inside.append("yes" if hit else "**no**")
        if len(rates) == 2 and all(rates):
            ratio = max(rates) / min(rates)  # type: ignore[type-var,operator]
            ratios.append(ratio)
            print(f"| {name} | {shown} | {ratio:.2f} | {ranges} | {' / '.join(inside)} |")
        else:
            print(f"| {name} | {shown} | – | {ranges} | {' / '.join(inside)} |")
    print()
    print(f"answers replayed: {len(replays)}, held every window: {sum(replays)}")
    if within:
        print(
            f"second tunes within the first's stated repeat range: {sum(within)} of {len(within)}"
        )
    if ratios:
        print(
            f"pairs with both rates: {len(ratios)}, ratio median {statistics.median(ratios):.2f}, "
            f"largest {max(ratios):.2f}"
        )


if __name__ == "__main__":
    main()
