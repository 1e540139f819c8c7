"""The shape of every JSON document benchlab writes, as models, and the JSON Schema of each
generated from them (published in docs/schemas/, one file per format and version; the tests
validate real outputs against them and keep the files current).

Every key a document has is required: a key renamed or removed fails validation, so it
cannot happen without a new format version. Keys a schema does not name are allowed (a
version may add some); the tests check with the closed variant that the schema names every
key benchlab writes. A cell's figures are generated from the figure registry
(`benchlab.core.figures`), so a new figure is in the schema as soon as it is in the reports. Deep
parts whose keys are data (a machine's tools, a mix's parts by request) are open objects."""

from __future__ import annotations

import dataclasses
import functools
import json
import operator
import types
import typing
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from benchlab.analysis import ranking
from benchlab.analysis.cell_fields import CELL_FIELDS
from benchlab.core import figures as F
from benchlab.recipe.schema import SlowClientMode
from benchlab.report.json_formats import (
    COMPARE,
    CONFORM,
    DOCTOR,
    DRAIN,
    FORMATS,
    HISTORY,
    PLAN,
    RECIPES,
    RUN,
    RUNS,
    SELFCHECK,
    SLOW_CLIENTS,
    STACKS,
    STREAM,
    TUNE,
    JsonFormat,
)
from benchlab.report.plan import PlannedCell
from benchlab.store import CELL_SHOWN, CellRecord

Number = float | None


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Estimate(_Closed):
    """A median over a cell's trials with its interval (none from a single trial)."""

    median: float
    low: Number
    high: Number
    confidence: Number
    n: int


class Capacity(Estimate):
    bracketed: bool
    """false: no rate tried missed the target, and the median is a lower bound."""


class Ratio(_Closed):
    """A ratio of two cells' figures with its interval."""

    value: float
    low: float
    high: float


def _figure_type(figure: F.Figure) -> Any:
    if figure is F.CAPACITY:
        return Capacity | None
    if figure.kind is F.Kind.ESTIMATE:
        return Estimate | None
    if figure.kind is F.Kind.RATIO:
        return Ratio | None
    return float | None


def _figure_fields() -> dict[str, Any]:
    """Every figure as a cell's JSON holds it: at the top, or in its group's object."""
    top: dict[str, Any] = {}
    groups: dict[str, dict[str, Any]] = {}
    for figure in F.FIGURES.values():
        field = (_figure_type(figure), ...)
        if figure.group:
            groups.setdefault(figure.group, {})[figure.key] = field
        else:
            top[figure.key] = field
    for group, fields in groups.items():
        model = create_model(f"Figures_{group}", __base__=_Closed, **fields)
        top[group] = (model, ...)
    return top


def _shown_fields() -> dict[str, Any]:
    """A stored cell's shown fields (store/records.py, CELL_SHOWN), each under its shown name
    and typed as its record declares it: the JSON writer writes exactly these."""
    hints = typing.get_type_hints(CellRecord)
    fields = {f.name: f for f in dataclasses.fields(CellRecord)}
    return {
        name: (hints[field], Field(..., description=fields[field].metadata["doc"] or None))
        for field, name in CELL_SHOWN.items()
    }


@functools.cache
def _model(record: type) -> type[BaseModel]:
    """A closed model of a record declared as a dataclass (a ranking's JSON, a trial's
    timeline), its nested records' models made too (once each): the record's fields are
    what its writer writes; its title is its name without "Json" ("PointRanking")."""
    hints = typing.get_type_hints(record)
    fields: dict[str, Any] = {
        f.name: (_nested(hints[f.name]), ...) for f in dataclasses.fields(record)
    }
    title = record.__name__.removesuffix("Json")
    return create_model(title, __base__=_Closed, __doc__=record.__doc__, **fields)


def _nested(hint: Any) -> Any:
    """A field's type with each record in it (a dataclass) replaced by its model."""
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _model(hint)
    args = typing.get_args(hint)
    if not args:
        return hint
    origin = typing.get_origin(hint)
    replaced = tuple(_nested(arg) for arg in args)
    if origin in (typing.Union, types.UnionType):
        return functools.reduce(operator.or_, replaced)
    return origin[replaced] if len(replaced) > 1 else origin[replaced[0]]


def _summary_fields() -> dict[str, Any]:
    """What the summary says of a cell beside its record (analysis/cell_fields.py, CELL_FIELDS),
    each typed and described as declared there; a key with a default is one older documents
    lack."""
    return {
        f.name: (_nested(f.json_type), Field(f.default, description=f.doc or None))
        for f in CELL_FIELDS
    }


Cell = create_model(
    "Cell", __base__=_Closed, **_summary_fields(), **_shown_fields(), **_figure_fields()
)


class RunInfo(_Closed):
    id: str
    recipe_name: str
    recipe_path: str
    question: str
    command: str
    status: str
    status_reason: str | None
    started_at: str
    ended_at: str | None
    git_commit: str | None
    machine: dict[str, Any]
    server_cores: list[int]
    load_cores: list[int]
    database: str | None
    services: dict[str, Any] | None


class _Document(_Closed):
    format: str
    format_version: int


PointRanking = _model(ranking.PointRankingJson)
Tier = _model(ranking.TierJson)


class Takeaway(_Closed):
    point: dict[str, Any]
    label: str
    sentence: str
    settings: str
    notes: list[str]
    tiers: list[Tier]  # type: ignore[valid-type]


Outcome = Literal["kept", "failed", "undecided", "not measured"]


class ThresholdCell(_Closed):
    """One cell against a threshold: its figure, the interval it was judged by, the outcome."""

    cell: str
    """The cell: its key in a run's or a tune's JSON (`cells[].key`); its name in a
    history's (`series[].cell.name`)."""
    outcome: Outcome
    """kept: the whole interval keeps the bound; failed: the whole interval breaks it;
    undecided: the interval straddles it."""
    value: Number
    """The figure as the cell's tables show it (a percentile: of the merged histogram)."""
    low: Number
    high: Number
    """The interval it was judged by (null: none: a single value, one trial)."""
    n: int
    """The trials (a tune's answer: its replay's windows) the interval is over."""
    sentence: str


class ThresholdResult(_Closed):
    """A threshold (`--threshold`, the recipe's [thresholds]) judged on every cell it
    applies to (a tune: on its answer's replay)."""

    threshold: str
    """As `--threshold` takes it: p99<200 ms."""
    figure: str
    """The figure's key (a cell's JSON key)."""
    name: str
    """The figure's name as it was written (rps, errors, p99)."""
    comparison: Literal["<", "<=", ">", ">="]
    bound: float
    unit: str
    """The bound's unit: the figure's (a share: %)."""
    outcome: Outcome
    """failed in one cell: failed; else undecided in one: undecided; else kept."""
    cells: list[ThresholdCell]


class _RunBody(_Document):
    run: RunInfo
    method: str
    ratio_method: str
    baseline: str | None
    target_half_width_pct: float
    evidence: str
    sentinel: str | None = None
    """The stack every cell is also divided by, round by round (recipe key `sentinel`)."""
    aa_noise_pct: Number = None
    """How far apart the sentinel's two launches could be, in % (recipe key `aa`)."""
    tool_agreement: list[str]
    protocol_costs: list[dict[str, Any]]
    hosts: list[dict[str, Any]]
    slo: dict[str, Any] | None
    ranked_by: str
    thresholds: list[ThresholdResult]
    """Each threshold judged (none given: empty); one failed: the command exited 7."""
    cells: list[Cell]  # type: ignore[valid-type]
    rankings: list[PointRanking]  # type: ignore[valid-type]
    rank_flips: list[dict[str, Any]]
    """Each win's ratio: how many times better the winner was (version 1: winner ÷ loser)."""


class RunDocument(_RunBody):
    format: Literal["benchlab-run"]
    format_version: Literal[2]
    takeaways: list[Takeaway]
    reading_guide: list[str]


class TuneDocument(_RunBody):
    format: Literal["benchlab-tune"]
    format_version: Literal[2]
    app: dict[str, Any]
    recommendation: dict[str, Any] | None
    candidates: list[dict[str, Any]]
    target: dict[str, Any] | None = None
    """What the answer is for (tune --cpus, --memory): cpus, memory_mb (null: this machine's
    server cores, no memory limit), and how to deploy there: docker's flags, a Kubernetes
    resources block."""
    subject: dict[str, Any] | None = None
    """What was tuned: kind (python-app, command, endpoint), given (as typed: the app, the
    command template, the URL), name (as the answer names it), unmeasured (why its CPU and
    memory were not measured, an endpoint nothing watched; null: they were)."""


class CompareSide(_Closed):
    id: str
    recipe: str
    status: str
    store: str
    git_commit: str | None
    machine: dict[str, Any]


class SeriesCell(_Closed):
    """A cell as history and compare match it across runs (analysis/series_key.py): the
    stack, the scenario and its load, not how long or how often it was measured."""

    name: str
    """The cell in words, its stack once with its scenario: "gin w=1 · json wrk c=64"."""
    stack: str
    point: dict[str, Any]
    """The grid point: the scenario and its load (tool, connections, parameter, rate)."""
    target: str | None
    """A capacity's target (its SLO); null otherwise."""
    twin: str | None
    """What tells apart two cells of one run that differ only in how long they were
    measured ("5 s"); null otherwise."""


class CompareCell(_Closed):
    cell: SeriesCell
    measured_otherwise: list[str]
    """How B measured the cell otherwise than A ("duration 2 s → 5 s"): compared all the
    same."""
    stack: str
    scenario: str
    connections: int
    params: str
    ratio: Ratio | dict[str, Any] | None
    verdict: str
    why: str
    to_sentinel: dict[str, Any] | None = None
    """B / A of the cell's ratio to the sentinel, when both runs measured one."""
    attribution: str | None = None
    """Whose change: stack, machine or undecided (with a sentinel in both runs)."""


class CompareDocument(_Document):
    format: Literal["benchlab-compare"]
    format_version: Literal[2]
    a: CompareSide
    b: CompareSide
    compared_by: str
    ratio_method: str
    evidence: str
    fail_above_pct: Number
    differences: list[Any]
    """What differs between the runs: kind machine, versions, conditions (steal) or settings
    (how long or how often the cells were measured)."""
    regressed: list[str]
    """The names of the cells --fail-above failed."""
    cells: list[CompareCell]


class Series(_Closed):
    cell: SeriesCell
    figure: str
    points: list[dict[str, Any]]
    change_points: list[dict[str, Any]]
    latest: dict[str, Any] | None


class HistoryDocument(_Document):
    format: Literal["benchlab-history"]
    format_version: Literal[2]
    recipe: str
    runs: int
    series: list[Series]
    thresholds: list[ThresholdResult]
    """The newest run's thresholds, judged (`history --threshold`, its recipe's)."""


class RunsEntry(_Closed):
    id: str
    name: str
    recipe: str
    status: str
    started_at: str
    ended_at: str | None
    machine: str | None
    git_commit: str | None
    cells: int


class RunsDocument(_Document):
    format: Literal["benchlab-runs"]
    format_version: Literal[1]
    runs: list[RunsEntry]


class StackEntry(_Closed):
    name: str
    framework: str
    server: str
    worker_model: str
    scenarios: list[str]
    protocols: list[str]
    available: bool
    reason: str | None
    fix: str | None


class StacksDocument(_Document):
    format: Literal["benchlab-stacks"]
    format_version: Literal[1]
    stacks: list[StackEntry]


class ConformFailure(_Closed):
    offset: int | None
    """The byte after which the request was split; null: sent whole."""
    fault: str
    """What the server did wrong: head_body, out_of_step, wrong_answer, no_answer, malformed,
    closed, not_closed, unreachable."""
    problem: str


class ConformShape(_Closed):
    shape: str
    sent: int
    passed: bool
    failures: list[ConformFailure]
    stopped_early: bool
    notes: list[str]


class ConformEntry(_Closed):
    stack: str
    conformant: bool | None
    """null: it could not be checked (see problem)."""
    requests: int
    down_after: str | None
    notes: list[str]
    problem: str | None
    shapes: list[ConformShape]


class ConformDocument(_Document):
    format: Literal["benchlab-conform"]
    format_version: Literal[1]
    stacks: list[ConformEntry]


class DrainCounts(_Closed):
    """One stop under load (benchlab drain)."""

    signal: str
    rate: int
    """Requests a second of the short requests."""
    in_flight: str | None
    """The long request in flight at the signal: null when answered, else how it failed."""
    sent_before: int
    failed_before: int
    sent_after: int
    answered_after: int
    refused_after: int
    failed_after: int
    exit_s: float | None
    """From the signal until the server's last process exited; null: killed after 10 s."""
    failures: list[str]
    long_sent: bool
    """false: no long request was held (the stack has no slow endpoint)."""
    drains: bool
    verdict: Literal["drains", "drops", "hangs"]
    """drops: a request it had taken failed; hangs: none did, but it did not exit."""


class DrainEntry(_Closed):
    stack: str
    problem: str | None
    """Why it could not be checked (then drain is null)."""
    drain: DrainCounts | None


class DrainDocument(_Document):
    format: Literal["benchlab-drain"]
    format_version: Literal[1]
    stacks: list[DrainEntry]


class SlowSpread(_Closed):
    """A figure over the rounds: its median and range."""

    median: float
    low: float
    high: float


class SlowTrial(_Closed):
    p99_ms: float | None
    """null: no request was answered."""
    answered_rps: float
    failed_share: float
    slow_closed: bool = False
    """With slow clients: the server closed all their connections before the trial ended
    (added within version 1)."""


class SlowRound(_Closed):
    without: SlowTrial
    with_slow_clients: SlowTrial


class SlowMode(_Closed):
    mode: SlowClientMode
    slow_path: str
    """Where the slow clients sent: /upload for a slow body where the app reads one, a 1 MiB
    static file for slow readers."""
    harmed: bool
    """Every round harmed: failures up by 1 % of the requests, none answered, or the p99 2x
    and over 20 ms."""
    p99_ratio: SlowSpread | None
    """With the slow clients ÷ without, round by round; null: a side had no answer."""
    throughput_ratio: SlowSpread
    failed_added: SlowSpread
    rounds: list[SlowRound]


class SlowSkipped(_Closed):
    mode: SlowClientMode
    why: str
    """Why the mode could not be sent to this stack (slow readers need a static file)."""


class SlowClientsCounts(_Closed):
    connections: int
    rate: float
    needs_proxy: bool
    modes: list[SlowMode]
    skipped: list[SlowSkipped] = []
    """Modes not sent to this stack (added within version 1: older documents lack it)."""


class SlowClientsEntry(_Closed):
    stack: str
    problem: str | None
    slow_clients: SlowClientsCounts | None


class SlowClientsDocument(_Document):
    format: Literal["benchlab-slow-clients"]
    format_version: Literal[1]
    stacks: list[SlowClientsEntry]


class RecipeEntry(_Closed):
    name: str
    """The name `benchlab run` takes."""
    question: str
    """Its question; for a recipe that asks none, what it measures."""
    stacks: list[str]
    scenarios: list[str]


class RecipesDocument(_Document):
    format: Literal["benchlab-recipes"]
    format_version: Literal[1]
    recipes: list[RecipeEntry]


class DoctorCheck(_Closed):
    name: str
    ok: bool
    required: bool
    """false: a warning; benchlab runs without it."""
    detail: str
    fix: str | None


class HostCheck(DoctorCheck):
    host: str


class BusyRun(_Closed):
    kind: str
    pid: int
    started_at: str


class DoctorDocument(_Document):
    format: Literal["benchlab-doctor"]
    format_version: Literal[1]
    ready: bool
    """Every required item here and on the recipe's hosts is ready."""
    checks: list[DoctorCheck]
    install: str | None
    """The one apt-get command that installs every missing Debian package."""
    hosts: list[HostCheck]
    cleaned: list[str]
    """What killed benchlabs left, cleaned now."""
    busy: list[BusyRun]
    """The benchlabs running on this machine now."""


class SelfcheckCost(_Closed):
    bare: Estimate
    """Bare wrk's requests a second."""
    benchlab: Estimate
    """The same through benchlab's measurement path."""
    ratio: Estimate
    """benchlab ÷ bare, pair by pair."""
    command: str


class SelfcheckNoise(_Closed):
    within_launch: float
    between_launches: float
    shared_by_round: float
    own_drift: float
    """Each a relative standard deviation of throughput (0.03: 3 %)."""
    pairing_helps: bool
    """true: ratios between cells are paired by round in the runs that follow."""
    kept_in: str


class SelfcheckDocument(_Document):
    format: Literal["benchlab-selfcheck"]
    format_version: Literal[1]
    cost: SelfcheckCost | None
    """The harness's cost (`selfcheck`); null with --noise."""
    noise: SelfcheckNoise | None
    """Where the variation comes from (`selfcheck --noise`); null without it."""


class PlanDocument(_Document):
    format: Literal["benchlab-plan"]
    format_version: Literal[1]
    recipe: str
    source: str
    """Where the recipe came from: its path, or "benchlab's own"."""
    question: str
    lines: list[str]
    """The plan in words, as a run prints it before it starts."""
    estimate_s: float
    """The recipe's rounds and checks, in seconds (within --budget)."""
    cells: list[PlannedCell]
    """Each cell as the run would measure it, and whether its stack runs here."""


MODELS: dict[JsonFormat, type[BaseModel]] = {
    RUN: RunDocument,
    TUNE: TuneDocument,
    COMPARE: CompareDocument,
    HISTORY: HistoryDocument,
    RUNS: RunsDocument,
    STACKS: StacksDocument,
    CONFORM: ConformDocument,
    DRAIN: DrainDocument,
    SLOW_CLIENTS: SlowClientsDocument,
    RECIPES: RecipesDocument,
    DOCTOR: DoctorDocument,
    SELFCHECK: SelfcheckDocument,
    PLAN: PlanDocument,
}
assert set(MODELS) | {STREAM} == set(FORMATS), "a JSON format without its model"


def schema_file(fmt: JsonFormat) -> str:
    """The published schema's file name in docs/schemas/."""
    return f"{fmt.name}-{fmt.version}.schema.json"


def json_schema(fmt: JsonFormat, closed: bool = False) -> dict[str, Any]:
    """The published schema: every key required, and keys it does not name allowed (a later
    benchlab may add some within the version). `closed`: no key it does not name either (the
    tests' check that the schema names every key benchlab writes)."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **_model_schema(fmt),
        "title": f"{fmt.name} {fmt.version}",
        "description": fmt.holds,
    }
    return schema if closed else _opened(schema)


def _model_schema(fmt: JsonFormat) -> dict[str, Any]:
    """The format's own schema: its document's model's, or for the stream, one line's (any
    of its events, told apart by `event`; every key written is required)."""
    if fmt is STREAM:
        from benchlab.report.stream_events import STREAM_LINE  # it reads this module's models

        return STREAM_LINE.json_schema(mode="serialization")
    return MODELS[fmt].model_json_schema()


def _opened(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: _opened(value)
            for key, value in node.items()
            if not (key == "additionalProperties" and value is False)
        }
    if isinstance(node, list):
        return [_opened(item) for item in node]
    return node


def write_schemas(directory: Path) -> None:
    """Each format's published schema into `directory` (docs/schemas/)."""
    for fmt in FORMATS:
        text = json.dumps(json_schema(fmt), indent=2, sort_keys=True) + "\n"
        (Path(directory) / schema_file(fmt)).write_text(text)
