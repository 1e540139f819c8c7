"""A tune run's answer in every format: the recommendation on top, then every candidate."""

from __future__ import annotations

from typing import Any

from benchlab.analysis import tune_choice
from benchlab.analysis.capacity import RUN_AT_SPARE_PCT
from benchlab.analysis.recommendation import (
    CandidateResult,
    Proof,
    ProofStep,
    Recommendation,
    candidate_order,
    recommend,
    tune_rate_unit,
)
from benchlab.analysis.repeat import MACHINE
from benchlab.analysis.summary import RunSummary
from benchlab.analysis.target import Target
from benchlab.analysis.tune_options import SubjectKind, TuneOptions
from benchlab.conformance.findings import parsing_text
from benchlab.core import figures as F
from benchlab.core.text import one_line
from benchlab.resilience.facts import NotChecked
from benchlab.resilience.slow_clients import SlowClients
from benchlab.store import CELL_CHECKED

# What a proof replays: the answer's printed command, started afresh.
PRINTED = "the command as printed, fresh and warmed up"

# A tune report's two sections, titled once for every format.
RECOMMENDATION_TITLE = "Recommendation"
CANDIDATES_TITLE = "Candidates"


def is_tune(summary: RunSummary) -> bool:
    return summary.options.tune is not None


def is_check_only(summary: RunSummary) -> bool:
    """A tune --check-only: candidates started and checked, nothing measured."""
    return summary.options.tune is not None and summary.options.tune.check_only


def capacity_text(c: CandidateResult) -> str:
    e = c.capacity
    if e is None:
        return "–"
    at_least = "" if c.bracketed else "≥ "
    if e.n == 1:
        return f"{at_least}{e.median:,.0f} (1 replicate)"
    return f"{at_least}{e.median:,.0f} [{e.low:,.0f}–{e.high:,.0f}]"


def _step_text(step: ProofStep, unit: str, slo_ms: float | None = None) -> str:
    delivered = "–" if step.delivered is None else f"{100 * step.delivered:.0f} %"
    return (
        f"{F.THROUGHPUT.format(step.rate)} {unit}: p99 {F.P99.format(step.p99_ms)} ms"
        f"{windows_text(step, slo_ms)}, {step.errors:,} errors, {delivered} delivered"
    )


def windows_text(step: ProofStep, slo_ms: float | None) -> str:
    """Its windows in a few words: how many held, and the range of their p99s (all of them
    are in the JSON)."""
    windows = step.windows_p99_ms
    if not windows:
        return ""
    held = sum(1 for w in windows if slo_ms is None or w <= slo_ms)
    seconds = step.duration_s / len(windows)
    if len(windows) <= 4:  # stored before issue 38: four windows, each shown
        shown = ", ".join(F.P99.format(w) for w in windows)
        return f" (its {seconds:g}-s windows: {shown} ms; {held} of {len(windows)} held)"
    return (
        f" (its {len(windows)} {seconds:.0f}-s windows: p99 {F.P99.format(min(windows))}–"
        f"{F.P99.format(max(windows))} ms; {held} of {len(windows)} held)"
    )


def proof_text(
    proof: Proof, unit: str, slo_ms: float | None = None, replayed: str = PRINTED
) -> str:
    """What the replay of the printed command showed, missed steps first (its rates in
    `unit`, the recommendation's); `replayed`: what was replayed (an endpoint: itself)."""
    final = proof.final
    seconds = f"{final.duration_s:g} s"
    earlier = [s for s in proof.steps if s is not final]  # each missed: a proof stops at a hold
    before = "".join(f"{F.THROUGHPUT.format(s.rate)} {unit} missed ({s.missed}); " for s in earlier)
    if final.held:
        return f"{replayed}, for {seconds}: {before}{_step_text(final, unit, slo_ms)} — held"
    return (
        f"{replayed}, for {seconds}: {before}"
        f"{_step_text(final, unit, slo_ms)} — missed ({final.missed}); no rate tried held: run "
        f"below {F.THROUGHPUT.format(final.rate)} {unit}, or raise --budget for more steps down"
    )


def margin_text(recommendation: Recommendation) -> str | None:
    """What holding every window cost, and how far the search's replicates spread."""
    run_at, margin, found = recommendation.run_at, recommendation.margin_pct, recommendation.best
    unit = recommendation.rate_unit
    if run_at is None or margin is None or found.capacity is None:
        return None
    held = [c for c in found.replicates if c > 0]
    spread = (
        f"; its {len(held)} replicates held {F.THROUGHPUT.format(min(held))}–"
        f"{F.THROUGHPUT.format(max(held))} {unit}"
        if len(held) > 1
        else ""
    )
    return (
        f"{F.THROUGHPUT.format(run_at)} {unit} is {margin:.0f} % under the capacity's median "
        f"({F.THROUGHPUT.format(found.capacity.median)} {unit}), the price of holding the "
        f"target in every window with at least {RUN_AT_SPARE_PCT} % of the "
        f"capacity spare{spread}"
    )


def repeat_text(recommendation: Recommendation) -> str | None:
    """Where a second tune of the app on this machine would put the rate to run at."""
    found = recommendation.repeat
    if found is None:
        return None
    basis = (
        "this machine's measured run-to-run noise"
        if found.basis == MACHINE
        else "its replicates' spread only, a lower bound: `benchlab selfcheck --noise` "
        "measures this machine's"
    )
    return (
        f"a second tune here would say {F.THROUGHPUT.format(found.low_rps)}–"
        f"{F.THROUGHPUT.format(found.high_rps)} {recommendation.rate_unit} 95 % of the time (up to "
        f"{found.spread_pct:.0f} % apart; from {basis})"
    )


def scaling_text(summary: RunSummary, recommendation: Recommendation) -> str:
    """What another core might add, from how the best kind's first pass went from 1 worker to
    more than the server has cores (tune_choice.more_workers_carry_more); each figure is one
    candidate's own."""
    _, results = recommend(summary)
    best = recommendation.best
    same = [
        c for c in results
        if c.server == best.server and c.worker_class == best.worker_class
        and c.threads == best.threads and c.first_pass is not None
    ]  # fmt: skip
    one = next((c for c in same if c.workers == 1), None)
    most = max(same, key=lambda c: c.workers, default=None)
    cores = len(summary.run.server_cores)
    if one is None or most is None or most.workers <= cores:
        return ""
    one_pass, most_pass = one.first_pass, most.first_pass
    assert one_pass is not None and most_pass is not None  # `same` kept those with one
    unit = recommendation.rate_unit
    served = (
        f"; on {cores} core(s), {most.workers} workers served {most_pass.closed_rps:,.0f} {unit} "
        f"in a closed loop and 1 worker {one_pass.closed_rps:,.0f}"
    )
    if not tune_choice.more_workers_carry_more(one_pass, most_pass):
        return (
            f"{served}, so the app is bound by CPU: another core would add up to about "
            f"{F.THROUGHPUT.format((recommendation.run_at or 0) / cores)} {unit}"
        )
    return (
        f"{served}: the app waits more than it computes, so more workers or threads come "
        "before more cores"
    )


def recommendation_lines(summary: RunSummary) -> list[str]:
    """Plain lines: what to deploy and why."""
    tune = _options(summary)
    recommendation, results = recommend(summary)
    slo = f"p99 ≤ {tune.slo_p99_ms:g} ms"
    # The app, and the machine it is answered for when that is a container's limits.
    app = " ".join(filter(None, (tune.subject, tune.deploy_target.describe())))
    if is_check_only(summary):
        return check_only_lines(tune.subject, results)
    if recommendation is None:
        failed = [c for c in results if c.status == "failed"]
        why = f"; {failed[0].label}: {one_line(failed[0].reason or '')}" if failed else ""
        return [f"No candidate held {slo} at any rate searched{why}."]
    best, unit = recommendation.best, recommendation.rate_unit
    head = _head(recommendation, app, slo)
    deploy = (
        f"  deploy: {best.command}"
        if best.command
        else f"  endpoint: {tune.given}, already running: measured as it runs (nothing deployed)"
    )
    lines = [head, deploy, *_target_lines(tune.deploy_target)]
    if tune.unmeasured:
        lines.append(f"  CPU and memory: {tune.unmeasured}")
    if recommendation.proof is not None:
        slo_ms = tune.slo_p99_ms
        replayed = (
            "the endpoint as it runs, warmed up"
            if tune.subject_kind is SubjectKind.ENDPOINT
            else PRINTED
        )
        lines.append(f"  proof: {proof_text(recommendation.proof, unit, slo_ms, replayed)}")
        margin = margin_text(recommendation)
        if margin:
            lines.append(f"  margin: {margin}")
    repeat = repeat_text(recommendation)
    if repeat:
        lines.append(f"  repeat: {repeat}")
    elif not recommendation.provisional:
        lines.append("  proof: not run (the budget ended first); the rate to run at is the one "
                     "every search replicate held")  # fmt: skip
    if recommendation.best.parsing is not None:
        lines.append(f"  parsing: {parsing_text(recommendation.best.parsing)}")
    if (proxy := proxy_text(recommendation.best.slow_clients)) is not None:
        lines.append(f"  proxy: {proxy}")
    lines.append(f"  why: {one_line(recommendation.reason)}")
    goal, most = recommendation.goal_rps, recommendation.run_at
    if goal is not None and not recommendation.holds_goal and most is not None and most >= goal:
        lines.append(
            f"  goal: the replays at {F.THROUGHPUT.format(goal)} {unit} of the cheaper candidates "
            f"missed; this one, searched, holds {F.THROUGHPUT.format(most)} {unit}, more than "
            "asked"
        )
    lines += _short_lines(summary, recommendation, slo)
    if recommendation.missing:
        lines.append(f"  provisional: {recommendation.missing}")
    if recommendation.equals:
        lines.append(
            "  as good within the noise (cheapest first): "
            + "; ".join(
                f"{c.label} ({capacity_text(c)} {unit}, {F.SERVER_RSS.format(c.rss_mb)} MB, "
                f"{F.CPU_PER_REQUEST.format(c.cpu_us_per_request)} µs CPU/req)"
                for c in recommendation.equals
            )
        )
    lines += [f"  the app: {finding}" for finding in recommendation.findings]
    return lines


def _head(recommendation: Recommendation, app: str, slo: str) -> str:
    """The answer's first line: what to deploy, for what, and what it holds."""
    best, unit = recommendation.best, recommendation.rate_unit
    if recommendation.holds_goal:
        head = (
            f"Cheapest that holds {F.THROUGHPUT.format(recommendation.goal_rps)} {unit} for "
            f"{app} with {slo}: {best.label} ({best.workers} worker(s), "
            f"{F.SERVER_RSS.format(best.rss_mb)} MB, "
            f"{F.CPU_PER_REQUEST.format(best.cpu_us_per_request)} µs CPU/req)"
        )
    elif recommendation.provisional:
        head = (
            f"Provisional recommendation for {app}: {best.label} — "
            f"{F.THROUGHPUT.format(best.closed_rps)} {unit} in a closed loop; no capacity "
            f"with {slo} measured"
        )
    else:
        run_at = recommendation.run_at
        at = f"; run it at up to {F.THROUGHPUT.format(run_at)} {unit}" if run_at else ""
        head = (
            f"Recommended for {app}: {best.label} — capacity "
            f"{capacity_text(best)} {unit} with {slo}{at}"
        )
    return head


def check_only_lines(target: object, results: list[CandidateResult]) -> list[str]:
    """A check that measured nothing: which candidates answered right, each with the command
    that deploys it, and why the others did not."""
    checked = [c for c in results if c.status == CELL_CHECKED]
    lines = [
        f"Checked {target}: {len(checked)} of {len(results)} candidate(s) answered right; "
        "nothing was measured (--check-only): run without it for the answer"
    ]
    lines += [f"  {c.label}: {c.command}" for c in checked]
    lines += [f"  {c.label}: {one_line(c.reason or '')}" for c in results
              if c.status != CELL_CHECKED]  # fmt: skip
    return lines


def proxy_text(found: SlowClients | NotChecked | None) -> str | None:
    """Whether the answer needs a buffering proxy in front, by its check beside slow
    clients (None: not checked, the budget ended first)."""
    if found is None:
        return None
    if isinstance(found, NotChecked):
        return f"not checked beside slow clients ({found.problem})"
    if found.needs_proxy:
        return f"put a buffering proxy (nginx) in front: {found.sentence()} (in every round)"
    return f"none needed beside slow clients: {found.sentence()}"


def candidate_header(summary: RunSummary) -> list[str]:
    """The candidates table's header, its rates in the tune's unit."""
    unit = tune_rate_unit(summary)
    return [
        "candidate", "status", f"closed-loop {unit}", f"capacity {unit}", "p99 ms",
        "CPU/req µs", "RSS MB", "verdicts",
    ]  # fmt: skip


def candidate_rows(summary: RunSummary) -> list[list[str]]:
    _, results = recommend(summary)
    ordered = candidate_order(summary, results)
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
    tune = _options(summary)
    return {
        "recommendation": recommendation.to_json() if recommendation else None,
        "candidates": [c.to_json() for c in results],
        # The code under test: the app's commit, and its environment's server and framework
        # versions (benchlab's own are in the machine record).
        "app": {"commit": tune.app_commit, "versions": tune.app_versions},
        "target": _target_json(tune.deploy_target),
        "subject": {
            "kind": tune.subject_kind.value, "given": tune.given, "name": tune.subject,
            "unmeasured": tune.unmeasured,
        },
    }  # fmt: skip


def _short_lines(summary: RunSummary, recommendation: Recommendation, slo: str) -> list[str]:
    """What --rate asked that nothing held, and by how much."""
    short, goal = recommendation.short_pct, recommendation.goal_rps
    if short is None or goal is None:
        return []
    most, unit = recommendation.run_at, recommendation.rate_unit
    return [
        f"  short: nothing here held {F.THROUGHPUT.format(goal)} {unit} "
        + (
            f"with {slo}; the most that holds is {F.THROUGHPUT.format(most)} {unit}, "
            f"{short:.0f} % short"
            if most
            else f"with {slo}, nor any rate its proof tried"
        )
        + scaling_text(summary, recommendation)
    ]


def _target_lines(target: Target) -> list[str]:
    """How to give a container the machine the answer is for."""
    if not target.limited:
        return []
    return [
        f"  container: docker run {target.docker_flags()} …",
        f"  kubernetes: {target.kubernetes()}",
    ]


def _options(summary: RunSummary) -> TuneOptions:
    """The tune's options (a tune's report is asked only of a tune)."""
    assert summary.options.tune is not None, "a tune's run"
    return summary.options.tune


def _target_json(target: Target) -> dict[str, Any] | None:
    if not target.limited:
        return None
    return {**target.as_json(), "docker": target.docker_flags(), "kubernetes": target.kubernetes()}


def tune_markdown(summary: RunSummary) -> list[str]:
    out = [f"## {RECOMMENDATION_TITLE}", ""]
    recommendation, _ = recommend(summary)
    lines = recommendation_lines(summary)
    out.append(lines[0])
    if is_check_only(summary):
        return [*out, "", *(f"- {line.strip()}" for line in lines[1:]), ""]
    if recommendation is not None and recommendation.best.command:
        out += ["", "```sh", recommendation.best.command, "```", ""]
        out += [f"- {line.strip()}" for line in lines[2:]]
    elif recommendation is not None:
        out += ["", *(f"- {line.strip()}" for line in lines[1:])]
    out += ["", f"## {CANDIDATES_TITLE}", ""]
    header = candidate_header(summary)
    out += [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
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
        "command": (recommendation.best.command or None) if recommendation else None,
        "header": candidate_header(summary),
        "rows": candidate_rows(summary),
    }


__all__ = [
    "Recommendation", "candidate_rows", "is_check_only", "is_tune", "recommendation_context",
    "recommendation_lines", "tune_json", "tune_markdown",
]  # fmt: skip
