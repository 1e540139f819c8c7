"""A tune run's answer in every format: the recommendation on top, then every candidate."""

from __future__ import annotations

from typing import Any

from benchlab import figures as F
from benchlab.analysis.recommendation import (
    CandidateResult,
    Proof,
    ProofStep,
    Recommendation,
    recommend,
)
from benchlab.analysis.summary import RunSummary

# A tune report's two sections, titled once for every format.
RECOMMENDATION_TITLE = "Recommendation"
CANDIDATES_TITLE = "Candidates"


def is_tune(summary: RunSummary) -> bool:
    return summary.options.tune is not None


def capacity_text(c: CandidateResult) -> str:
    e = c.capacity
    if e is None:
        return "–"
    at_least = "" if c.bracketed else "≥ "
    if e.n == 1:
        return f"{at_least}{e.median:,.0f} (1 replicate)"
    return f"{at_least}{e.median:,.0f} [{e.low:,.0f}–{e.high:,.0f}]"


def _step_text(step: ProofStep, slo_ms: float | None = None) -> str:
    delivered = "–" if step.delivered is None else f"{100 * step.delivered:.0f} %"
    windows = ""
    if step.windows_p99_ms:
        shown = ", ".join(F.P99.format(w) for w in step.windows_p99_ms)
        held = sum(1 for w in step.windows_p99_ms if slo_ms is None or w <= slo_ms)
        seconds = step.duration_s / len(step.windows_p99_ms)
        windows = (
            f" (its {seconds:g}-s windows: {shown} ms; {held} of {len(step.windows_p99_ms)} held)"
        )
    return (
        f"{F.THROUGHPUT.format(step.rate)} req/s: p99 {F.P99.format(step.p99_ms)} ms{windows}, "
        f"{step.errors:,} errors, {delivered} delivered"
    )


def proof_text(proof: Proof, slo_ms: float | None = None) -> str:
    """What the replay of the printed command showed, missed steps first."""
    final = proof.final
    seconds = f"{final.duration_s:g} s"
    earlier = [s for s in proof.steps if s is not final]  # each missed: a proof stops at a hold
    before = "".join(f"{F.THROUGHPUT.format(s.rate)} req/s missed ({s.missed}); " for s in earlier)
    if final.held:
        return (
            f"the command as printed, fresh and warmed up, for {seconds}: {before}"
            f"{_step_text(final, slo_ms)} — held"
        )
    return (
        f"the command as printed, fresh and warmed up, for {seconds}: {before}"
        f"{_step_text(final, slo_ms)} — missed ({final.missed}); no rate tried held: run below "
        f"{F.THROUGHPUT.format(final.rate)} req/s, or raise --budget for more steps down"
    )


def recommendation_lines(summary: RunSummary) -> list[str]:
    """Plain lines: what to deploy and why."""
    tune = summary.options.tune or {}
    recommendation, results = recommend(summary)
    slo = f"p99 ≤ {tune.get('slo_p99_ms', 0):g} ms"
    if recommendation is None:
        failed = [c for c in results if c.status == "failed"]
        why = f"; {failed[0].label}: {failed[0].reason}" if failed else ""
        return [f"No candidate held {slo} at any rate searched{why}."]
    best = recommendation.best
    if recommendation.provisional:
        head = (
            f"Provisional recommendation for {tune.get('target')}: {best.label} — "
            f"{F.THROUGHPUT.format(best.closed_rps)} req/s in a closed loop; no capacity "
            f"with {slo} measured"
        )
    else:
        run_at = recommendation.run_at
        at = f"; run it at up to {F.THROUGHPUT.format(run_at)} req/s" if run_at else ""
        head = (
            f"Recommended for {tune.get('target')}: {best.label} — capacity "
            f"{capacity_text(best)} req/s with {slo}{at}"
        )
    lines = [head, f"  deploy: {best.command}"]
    if recommendation.proof is not None:
        slo_ms = tune.get("slo_p99_ms")
        lines.append(f"  proof: {proof_text(recommendation.proof, slo_ms)}")
    elif not recommendation.provisional:
        lines.append("  proof: not run (the budget ended first); the rate to run at is the one "
                     "every search replicate held")  # fmt: skip
    lines.append(f"  why: {recommendation.reason}")
    if recommendation.missing:
        lines.append(f"  provisional: {recommendation.missing}")
    if recommendation.equals:
        lines.append(
            "  as good within the noise (cheapest first): "
            + "; ".join(
                f"{c.label} ({capacity_text(c)} req/s, {F.SERVER_RSS.format(c.rss_mb)} MB, "
                f"{F.CPU_PER_REQUEST.format(c.cpu_us_per_request)} µs CPU/req)"
                for c in recommendation.equals
            )
        )
    lines += [f"  the app: {finding}" for finding in recommendation.findings]
    return lines


CANDIDATE_HEADER = [
    "candidate", "status", "closed-loop req/s", "capacity req/s", "p99 ms", "CPU/req µs",
    "RSS MB", "verdicts",
]  # fmt: skip


def candidate_rows(summary: RunSummary) -> list[list[str]]:
    _, results = recommend(summary)
    ordered = sorted(
        results,
        key=lambda c: (c.capacity.median if c.capacity else -1.0, c.closed_rps or 0.0),
        reverse=True,
    )
    return [
        [
            c.label,
            c.status,
            F.THROUGHPUT.format(c.closed_rps),
            capacity_text(c),
            F.P99.format(c.p99_ms),
            F.CPU_PER_REQUEST.format(c.cpu_us_per_request),
            F.SERVER_RSS.format(c.rss_mb),
            ", ".join(c.verdicts) or "–",
        ]
        for c in ordered
    ]


def tune_json(summary: RunSummary) -> dict[str, Any]:
    recommendation, results = recommend(summary)
    tune = summary.options.tune or {}
    return {
        "recommendation": recommendation.to_json() if recommendation else None,
        "candidates": [c.to_json() for c in results],
        # The code under test: the app's commit, and its environment's server and framework
        # versions (benchlab's own are in the machine record).
        "app": {"commit": tune.get("app_commit"), "versions": tune.get("app_versions") or {}},
    }


def tune_markdown(summary: RunSummary) -> list[str]:
    out = [f"## {RECOMMENDATION_TITLE}", ""]
    recommendation, _ = recommend(summary)
    lines = recommendation_lines(summary)
    out.append(lines[0])
    if recommendation is not None:
        out += ["", "```sh", recommendation.best.command, "```", ""]
        out += [f"- {line.strip()}" for line in lines[2:]]
    out += ["", f"## {CANDIDATES_TITLE}", ""]
    out += [
        "| " + " | ".join(CANDIDATE_HEADER) + " |",
        "|" + "|".join("---" for _ in CANDIDATE_HEADER) + "|",
    ]
    out += [
        "| " + " | ".join(v.replace("|", "\\|") for v in row) + " |"
        for row in candidate_rows(summary)
    ]
    return [*out, ""]


def recommendation_context(summary: RunSummary) -> dict[str, Any] | None:
    """For the HTML page: the recommendation block and the candidates table."""
    if not is_tune(summary):
        return None
    recommendation, _ = recommend(summary)
    return {
        "title": RECOMMENDATION_TITLE,
        "candidates_title": CANDIDATES_TITLE,
        "lines": recommendation_lines(summary),
        "command": recommendation.best.command if recommendation else None,
        "header": CANDIDATE_HEADER,
        "rows": candidate_rows(summary),
    }


__all__ = [
    "Recommendation", "candidate_rows", "is_tune", "recommendation_context",
    "recommendation_lines", "tune_json", "tune_markdown",
]  # fmt: skip
