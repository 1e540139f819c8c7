"""What the summary says of a cell beside its record's shown fields (store/records.py,
CELL_SHOWN) and its figures (core/figures.py), declared once: each field's key in the JSON
(its column in the CSV), its JSON type, what it means, and how the JSON and the CSV write it.
The cell's JSON (`CellSummary.to_json`), its published schema (report/json_schemas.py) and
the CSV (report/csvfile.py) are made of these declarations."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchlab.analysis.combine import FigureValue
from benchlab.analysis.stats import Estimate, Ratio
from benchlab.analysis.timelines import TrialTimelineJson
from benchlab.core import figures as F
from benchlab.core.request_errors import ERROR_KINDS

if TYPE_CHECKING:
    from benchlab.analysis.summary import CellSummary

# A field's CSV columns with their values in one cell's row.
CsvValues = Callable[["CellSummary"], Mapping[str, object]]


@dataclass(frozen=True)
class CellField:
    """One thing the summary says of a cell beside its record's shown fields and its figures:
    its key in the JSON (and its column in the CSV), its JSON type (the schema's), what it
    means, and how the JSON and the CSV write it. The JSON writer, its schema
    (report/json_schemas.py) and the CSV (report/csvfile.py) read these declarations."""

    name: str
    json_type: Any
    json: Callable[[CellSummary], Any]
    doc: str = ""
    # The CSV's columns and their values; None: not in the CSV.
    csv: CsvValues | None = None
    csv_columns: tuple[str, ...] = ()  # () : the one named `name`
    # A key older documents lack (the schema does not require it); ... : required.
    default: Any = ...
    only_when: Callable[[CellSummary], bool] | None = None  # written only then

    def written(self, cell: CellSummary) -> bool:
        return self.only_when is None or self.only_when(cell)

    @property
    def columns(self) -> tuple[str, ...]:
        if self.csv is None:
            return ()
        return self.csv_columns or (self.name,)

    def csv_values(self, cell: CellSummary) -> Mapping[str, object]:
        return {} if self.csv is None else self.csv(cell)


def _csv(name: str, value: Callable[[CellSummary], object]) -> CsvValues:
    return lambda cell: {name: value(cell)}


def _errors_csv(cell: CellSummary) -> Mapping[str, object]:
    errors = cell.result.errors
    return {
        "errors": errors["total"],
        **{f"errors_{k}": v for k, v in errors.items() if k != "total"},
    }


# Before a cell's figures in its JSON (and CSV row), in their order.
BEFORE_FIGURES: tuple[CellField, ...] = (
    CellField(
        "sentinel", bool, lambda c: c.result.is_sentinel, default=False,
        doc="The run's sentinel (either launch): a reference measured in every round, not ranked.",
    ),
    CellField(
        "aa_copy", bool, lambda c: c.result.is_aa_copy, default=False,
        doc="The sentinel's second launch (an A/A pair): not ranked, it measures the noise.",
    ),
    CellField(
        "trials", int, lambda c: c.result.trials, csv=_csv("trials", lambda c: c.result.trials),
        doc="Trials measured (a capacity search: its replicates).",
    ),
    CellField(
        "ranked_by", str, lambda c: c.result.figure.key, doc="The figure the cell is ranked by."
    ),
)  # fmt: skip

# After a cell's figures, in their order.
AFTER_FIGURES: tuple[CellField, ...] = (
    CellField(
        "errors", dict[str, int], lambda c: dict(c.result.errors), csv=_errors_csv,
        csv_columns=("errors", *(f"errors_{k}" for k in ERROR_KINDS)),
        doc="Failed requests by kind, and their total (a hold's refused opens, where refusing "
        "ended it, are its finding: hold_refused).",
    ),
    CellField(
        "latency_source", str | None, lambda c: c.result.latency_source,
        doc="merged histogram, or median of the trials' percentiles.",
    ),
    CellField(
        "latency_interval_ms", dict[str, Any],
        lambda c: {k: figure_json(e) for k, e in c.result.latency_intervals.items()},
        doc="Each percentile's median over the trials, with its interval.",
    ),
    CellField(
        "latency_percentiles_ms", dict[str, Any] | None, lambda c: dict(c.result.percentiles),
        doc="The latency curve: quantile -> ms.",
    ),
    CellField(
        "curve", list[dict[str, Any]],
        lambda c: [dataclasses.asdict(p) for p in c.result.curve],
        doc="Each fixed-rate trial (a search's probes too): rate asked, achieved, p50, p99.",
    ),
    CellField("cpu_source", str | None, lambda c: c.result.cpu_source),
    CellField("facts", dict[str, Any] | None, lambda c: dict(c.result.facts)),
    CellField("verdicts", list[str], lambda c: [v.name for v in c.verdicts], csv=lambda c: {
        "verdicts": " | ".join(f"{v.name}: {v.sentence}" for v in c.verdicts)
    }),
    CellField(
        "verdict_sentences", dict[str, str], lambda c: {v.name: v.sentence for v in c.verdicts}
    ),
    CellField(
        "status", str, lambda c: c.result.status, csv=_csv("status", lambda c: c.result.status),
        doc="ok, failed, pending (not measured), incomplete (some trials kept).",
    ),
    CellField(
        # the CSV's: "json 60% p99 5.3 ms · db 30% …" (the JSON has them as numbers)
        "mix", list[dict[str, Any]] | None, lambda c: [m.to_json() for m in c.result.mix] or None,
        csv=_csv("mix", lambda c: " · ".join(m.text() for m in c.result.mix)),
        doc="A mix of requests: each part's share of the requests, its errors and latency.",
    ),
    CellField(
        "load_hosts", list[dict[str, Any]],
        lambda c: [dataclasses.asdict(h) for h in c.result.load_hosts],
        doc="Each load host's share, when several loaded the cell.",
    ),
    CellField(
        "replicates", list[dict[str, Any]],
        lambda c: [dataclasses.asdict(r) for r in c.result.replicates],
        doc="Each capacity-search replicate: what it found, its bracket, its probes.",
    ),
    CellField(
        "hold_stop", str | None, lambda c: c.result.hold_stop, default=None,
        csv=_csv("hold_stop", lambda c: c.result.hold_stop),
        doc="A WebSocket hold: why its steps ended in most trials (refused, stalled, dropped, "
        "memory, steps: its last step reached, the server still holding); null otherwise.",
    ),
    CellField(
        "hold_refused", int | None, lambda c: c.result.hold_refused, default=None,
        csv=_csv("hold_refused", lambda c: c.result.hold_refused),
        doc="A WebSocket hold whose server refused an upgrade: the opens it refused by then, "
        "median over the trials that stopped so (the hold's finding: not in `errors`).",
    ),
    CellField(
        "rate_unit", str, lambda c: c.result.rate_unit, default=F.REQ_S,
        csv=_csv("rate_unit", lambda c: c.result.rate_unit),
        doc="What the cell's rates (throughput, target, achieved, sent, capacity, closed-loop) "
        "count a second: req/s, or msg/s for a WebSocket scenario's messages.",
    ),
    CellField(
        "timeline", list[TrialTimelineJson],
        lambda c: [dataclasses.asdict(t.as_json()) for t in c.result.timelines], default=[],
        doc="Each fixed-rate trial the cell's figures come from, second by second; empty for "
        "other cells and for trials stored before schema 9 of the results store.",
    ),
    CellField(
        "trial_values", list[dict[str, Any]] | None,
        lambda c: [trial.to_json() for trial in c.result.trial_records], default=None,
        only_when=lambda c: bool(c.result.trial_records),
        doc="Each trial's stored values: with `report -f json --trials` only.",
    ),
)  # fmt: skip
CELL_FIELDS = (*BEFORE_FIGURES, *AFTER_FIGURES)


def figure_json(value: FigureValue) -> Any:
    if isinstance(value, Estimate):
        return {
            "median": value.median,
            "low": value.low if value.n > 1 else None,
            "high": value.high if value.n > 1 else None,
            "confidence": value.confidence if value.n > 1 else None,
            "n": value.n,
        }
    if isinstance(value, Ratio):
        return {"value": value.value, "low": value.low, "high": value.high}
    return value
