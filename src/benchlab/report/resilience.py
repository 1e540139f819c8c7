"""The report's resilience section: what a run's checks found, stack by stack — its
HTTP/1.1 parsing (`conform`), its answers beside slow clients (`slow_clients`), its stop
under load (`drain`), and its resident memory through its longest trials — one table per
check and one sentence per stack. Each check's result is read from the cells' facts, as
stored; sections.py makes the section of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchlab.analysis.summary import CellSummary, RunSummary
from benchlab.analysis.verdicts import LEAKS
from benchlab.core import figures as F
from benchlab.core.text import one_line
from benchlab.resilience.drain import Drain
from benchlab.resilience.facts import NotChecked
from benchlab.resilience.slow_clients import SLOW_CONNECTIONS, SlowClients

NONE = "–"


@dataclass(frozen=True)
class CheckTable:
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def checked_stacks(summary: RunSummary) -> list[CellSummary]:
    """Each stack's first cell, for the stacks the run checked beyond speed."""
    firsts: dict[str, CellSummary] = {}
    for cell in summary.cells:
        if not cell.result.is_aa_copy:
            firsts.setdefault(cell.record.stack, cell)
    return [
        c
        for c in firsts.values()
        if c.result.conformance is not None
        or c.result.drain is not None
        or c.result.slow_clients is not None
    ]


def _longest(summary: RunSummary, stack: str) -> CellSummary:
    """The stack's cell with the longest trials: a soak, where the recipe has one."""
    cells = [c for c in summary.cells if c.record.stack == stack and not c.result.is_aa_copy]
    return max(cells, key=lambda c: c.record.duration_s)


def _conformance_row(cell: CellSummary) -> tuple[str, ...] | None:
    found = cell.result.conformance
    if found is None:
        return None
    unranking, cautions = found.get("unranking") or [], found.get("cautions") or []
    verdict = "nonconformant" if unranking else "input-limits" if cautions else "conformant"
    return (cell.record.stack, verdict, "; ".join([*unranking, *cautions]) or NONE)


def _not_checked(cell: CellSummary, why: NotChecked, columns: int) -> tuple[str, ...]:
    return (cell.record.stack, *[NONE] * (columns - 2), f"not checked: {one_line(why.problem)}")


def _drain_row(cell: CellSummary) -> tuple[str, ...] | None:
    stop = cell.result.drain
    if stop is None:
        return None
    if isinstance(stop, NotChecked):
        return _not_checked(cell, stop, 7)
    in_flight = "none sent" if not stop.long_sent else stop.in_flight or "answered"
    return (
        cell.record.stack, stop.signal, in_flight, f"{stop.failed_before} of {stop.sent_before}",
        f"{stop.answered_after}/{stop.refused_after}/{stop.failed_after}",
        "killed" if stop.exit_s is None else f"{stop.exit_s:.2f} s", stop.verdict,
    )  # fmt: skip


def _p99_text(value: float | None) -> str:
    return "no answer" if value is None else f"{value:,.1f}"


def _slow_rows(cell: CellSummary) -> list[tuple[str, ...]]:
    found = cell.result.slow_clients
    if found is None:
        return []
    if isinstance(found, NotChecked):
        return [
            (
                cell.record.stack,
                NONE,
                NONE,
                NONE,
                NONE,
                NONE,
                f"not checked: {one_line(found.problem)}",
            )
        ]
    rows: list[tuple[str, ...]] = []
    for result in found.results:
        ratio = result.p99_ratio
        rows.append((
            cell.record.stack, f"{result.mode} to {result.slow_path}",
            f"{_p99_text(result.p99_ms(False))} → {_p99_text(result.p99_ms(True))}",
            NONE if ratio is None else f"×{ratio.text()}",
            f"×{result.throughput_ratio.text()}", f"{result.failed_added.median:+.1%}",
            "harmed" if result.harmed else "unaffected",
        ))  # fmt: skip
    rows += [(cell.record.stack, mode, NONE, NONE, NONE, NONE, f"not checked: {why}")
             for mode, why in found.skipped]  # fmt: skip
    return rows


def _memory_row(summary: RunSummary, cell: CellSummary) -> tuple[str, ...] | None:
    longest = _longest(summary, cell.record.stack)
    slope, low = longest.value(F.RSS_SLOPE), longest.value(F.RSS_SLOPE_LOW)
    rss, growth = longest.value(F.SERVER_RSS), longest.value(F.RSS_GROWTH)
    if slope is None or low is None or rss is None or growth is None:
        return None
    high = 2 * slope - low  # the interval is symmetric about the slope (memory_trend.py)
    leaks = any(v.name == LEAKS.name for v in longest.verdicts)
    return (
        cell.record.stack, f"{longest.record.duration_s:g} s", f"{rss:,.1f}", f"{growth:+,.2f}",
        f"{slope:+,.2f} [{low:+,.2f} to {high:+,.2f}]", "leaks" if leaks else "flat",
    )  # fmt: skip


# Each table: its title, its columns, and its rows from one stack's cell.
Rows = Callable[[RunSummary, CellSummary], list[tuple[str, ...]]]
TABLES: tuple[tuple[str, tuple[str, ...], Rows], ...] = (
    (
        "HTTP/1.1 parsing (each request shape whole and split at every byte)",
        ("stack", "verdict", "what failed"),
        lambda s, c: [r] if (r := _conformance_row(c)) else [],
    ),
    (
        f"Slow clients ({SLOW_CONNECTIONS} beside a fixed rate; median [range] over rounds)",
        ("stack", "slow clients", "p99 ms without → with", "p99 with ÷ without",
         "answered with ÷ without", "failed added", "verdict"),
        lambda s, c: _slow_rows(c),
    ),
    (
        "Stopped under load (its stop signal to its main process)",
        ("stack", "signal", "in flight", "before: failed", "after: ok/refused/failed", "exit",
         "verdict"),
        lambda s, c: [r] if (r := _drain_row(c)) else [],
    ),
    (
        "Resident memory through its longest trials (median trial; slope with its 95% interval)",
        ("stack", "trial", "RSS MB", "growth MB", "slope MB/min", "verdict"),
        lambda s, c: [r] if (r := _memory_row(s, c)) else [],
    ),
)  # fmt: skip


def check_tables(summary: RunSummary) -> list[CheckTable]:
    """One table per check the run made, a row per stack (per mode, for slow clients)."""
    stacks = checked_stacks(summary)
    tables = []
    for title, header, rows_of in TABLES:
        rows = [tuple(row) for cell in stacks for row in rows_of(summary, cell)]
        if rows:
            tables.append(CheckTable(title, header, tuple(rows)))
    return tables


def stack_sentences(summary: RunSummary) -> list[str]:
    """One sentence per checked stack: every check's answer, the proxy it needs."""
    lines = []
    for cell in checked_stacks(summary):
        parts = []
        if (row := _conformance_row(cell)) is not None:
            parts.append(row[1] if row[2] == NONE else f"{row[1]} ({row[2]})")
        found, stop = cell.result.slow_clients, cell.result.drain
        if isinstance(found, SlowClients):
            proxy = " — it needs a buffering proxy in front" if found.needs_proxy else ""
            parts.append(found.sentence() + proxy)
        elif isinstance(found, NotChecked):
            parts.append(f"slow clients not checked ({one_line(found.problem)})")
        if isinstance(stop, Drain):
            parts.append(f"stopped under load, it {stop.sentence()}")
        elif isinstance(stop, NotChecked):
            parts.append(f"stop under load not checked ({one_line(stop.problem)})")
        if (memory := _memory_row(summary, cell)) is not None:
            parts.append(f"memory {memory[-1]} ({memory[3]} MB over {memory[1]})")
        if parts:
            lines.append(f"{cell.record.stack}: {'; '.join(parts)}")
    return lines
