"""What a program reading benchlab's JSON can rely on (issue 39): every JSON output says what
format it is and which version, and the trackers' exports validate against their formats'
own schemas (tests/schemas/, each with where it was published) and carry the report's figures."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from benchlab.analysis.noise import NoiseComponents
from benchlab.analysis.stats import Estimate
from benchlab.analysis.summary import summarise
from benchlab.checks.one_stack import StackCheck
from benchlab.checks.selfcheck import SelfCheck
from benchlab.cli.drain import _json as drain_json
from benchlab.cli.selfcheck import cost_json, noise_json
from benchlab.cli.slow_clients import _json as slow_json
from benchlab.report import json_formats as jf
from benchlab.report.jsonfile import render_json
from benchlab.report.stream_events import STREAM_LINE, CellFailed
from benchlab.resilience.drain import Drain
from benchlab.resilience.slow_clients import SlowClients, SlowResult, Trial
from tests.conftest import REPO, benchlab, check_against_schema
from tests.stored_runs import QUICK_LIKE, write_run
from tests.test_proof_rule import _tune_with_a_proof

SCHEMAS = Path(__file__).parent / "schemas"


def _stamped(text: str) -> tuple[str, int]:
    data = json.loads(text)
    assert list(data)[:2] == ["format", "format_version"], list(data)[:4]
    return data["format"], data["format_version"]


@pytest.mark.alone  # its conform check takes the machine's run lock
@pytest.mark.slow
def test_every_json_output_says_its_format_and_version(tmp_path: Path) -> None:
    results = tmp_path / "results.db"
    first = write_run(results)
    second = write_run(results)
    store = ["--results", str(results)]
    outputs = {
        jf.RUN: benchlab("report", first, *store, "-f", "json").stdout,
        jf.COMPARE: benchlab("compare", first, second, *store, "-f", "json").stdout,
        jf.HISTORY: benchlab("history", "quick", *store, "-f", "json").stdout,
        jf.RUNS: benchlab("runs", *store, "-f", "json").stdout,
        jf.STACKS: benchlab("stacks", "-f", "json").stdout,
        jf.CONFORM: benchlab("conform", "nginx-static", "-f", "json", "-q").stdout,
        jf.RECIPES: benchlab("recipes", "-f", "json").stdout,
        jf.DOCTOR: benchlab("doctor", "-f", "json").stdout,
        jf.PLAN: benchlab("run", "quick", "--dry-run", "-f", "json").stdout,
    }
    tune_store, tune_run, _ = _tune_with_a_proof(tmp_path / "tune", 1000.0, [1040.0, 1000.0])
    outputs[jf.TUNE] = render_json(summarise(tune_store, tune_run))
    # drain's document as its command writes it, of a stop whose counts the test sets (a
    # real stop is test_graceful_stop's).
    stopped = Drain("SIGTERM", 20, None, 39, 0, 61, 1, 60, 0, 0.34, ("connection refused",))
    outputs[jf.DRAIN] = drain_json([StackCheck("starlette+uvicorn", stopped)])
    calm, held = Trial(2.1, 100.0, 0.0), Trial(None, 0.0, 1.0)
    measured = SlowClients(32, 100, (SlowResult("headers", (calm, calm), (held, held)),))
    outputs[jf.SLOW_CLIENTS] = slow_json([StackCheck("flask+gunicorn", measured)])
    # selfcheck's documents as its command writes them, of figures the test sets (a real
    # selfcheck is test_cli's; its noise check, test_noise's).
    outputs[jf.SELFCHECK] = cost_json(_selfcheck())
    # A stream is a line per event; one line of it here (a real run's whole stream, every
    # kind of event, is test_stream's).
    failed = CellFailed(at="2026-11-29T00:00:00Z", run_id=first, cell="k", reason="why")
    outputs[jf.STREAM] = STREAM_LINE.dump_json(failed).decode()
    noise = noise_json(NoiseComponents(0.03, 0.08, 0.01, 0.02, 6), tmp_path / "noise.json")
    check_against_schema(noise)
    assert set(outputs) == set(jf.FORMATS), "a JSON format no output is checked for"
    for declared, text in outputs.items():
        assert _stamped(text) == (declared.name, declared.version)
        check_against_schema(text)
    assert [r["id"] for r in json.loads(outputs[jf.RUNS])["runs"]] == [second, first]
    assert len({f.name for f in jf.FORMATS}) == len(jf.FORMATS)
    gin = next(s for s in json.loads(outputs[jf.STACKS])["stacks"] if s["name"] == "gin")
    assert gin["available"] is True and "json" in gin["scenarios"], gin


def _selfcheck() -> SelfCheck:
    """A selfcheck's answer whose figures the test sets."""
    bare, harness = Estimate(9000, 8800, 9100, 0.75, 3), Estimate(8700, 8500, 8900, 0.75, 3)
    return SelfCheck(bare, harness, Estimate(0.967, 0.95, 0.98, 0.75, 3), "taskset wrk")


def _report_cells(results: Path) -> dict[str, dict]:
    """The run's cells in its JSON report, by the name a tracker gives each."""
    from benchlab.report.trackers import benchmark_names
    from benchlab.store import Store

    names = benchmark_names(summarise(Store(results, create=False), None))
    report = json.loads(benchlab("report", "--results", str(results), "-f", "json").stdout)
    return {names[c["key"]]: c for c in report["cells"]}


@pytest.mark.slow
def test_the_bmf_export_validates_and_carries_each_cells_throughput_and_p99(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results.db"
    write_run(results)
    out = tmp_path / "bmf.json"  # a .json file, named as the format: no contradiction
    written = benchlab("report", "--results", str(results), "-f", "bmf", "-o", str(out))
    assert written.returncode == 0, written.stderr
    bmf = json.loads(out.read_text())
    jsonschema.validate(bmf, json.loads((SCHEMAS / "bmf.json").read_text()))
    cells = _report_cells(results)
    assert set(bmf) == set(cells) and len(cells) == sum(len(s) for s in QUICK_LIKE.values())
    assert "quick · json wrk c=64 · gin w=1" in bmf  # recipe · grid point · stack
    for name, measures in bmf.items():
        throughput = cells[name]["throughput_rps"]
        assert measures["throughput"] == {
            "value": throughput["median"],
            "lower_value": throughput["low"],
            "upper_value": throughput["high"],
        }
        # The latency says its percentile; in nanoseconds, as Bencher's latency Measure.
        assert set(measures) == {"throughput", "latency_p99"}
        assert measures["latency_p99"]["value"] == cells[name]["latency_ms"]["p99"] * 1_000_000


TRACKED = """
name = "tracked"
stacks = ["gin", "sanic"]
scenarios = ["json", "plaintext"]
trials = {trials}
warmup = 0
[[load]]
connections = 8
duration = {duration}
"""


def test_a_trackers_names_survive_a_changed_duration_or_trial_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same recipe at 2 s x 3 trials and at 5 s x 4: a tracker must see the same series
    (the names embedded the cell's key, whose `d2` became `d5`: a new series in Bencher)."""
    from benchlab.report.trackers import render_bigger_is_better, render_bmf
    from tests.inprocess import FakeExecutor, FakeStack, Figures, run_inprocess

    monkeypatch.setenv("BENCHLAB_CACHE", str(tmp_path / "cache"))
    stacks = {"gin": FakeStack({"json": Figures(40_000.0)}), "sanic": FakeStack()}
    names, keys, gab = [], [], []
    for directory, trials, duration in (("short", 3, 2), ("long", 4, 5)):
        (tmp_path / directory).mkdir()
        run = run_inprocess(
            tmp_path / directory, TRACKED.format(trials=trials, duration=duration),
            FakeExecutor(stacks),
        )  # fmt: skip
        summary = summarise(run.store, run.run_id)
        names.append(set(json.loads(render_bmf(summary))))
        gab.append({e["name"] for e in json.loads(render_bigger_is_better(summary))})
        keys.append({cell.record.key for cell in summary.cells})
    assert keys[0] != keys[1]  # the cells' own keys do change with the duration
    assert names[0] == names[1] and len(names[0]) == 4, names
    assert gab[0] == gab[1] and "tracked · json wrk c=8 · gin w=1 (throughput)" in gab[0]


@pytest.mark.slow
def test_the_github_action_benchmark_exports_validate_and_split_by_direction(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results.db"
    write_run(results)
    schema = json.loads((SCHEMAS / "github-action-benchmark.json").read_text())
    cells = _report_cells(results)
    bigger = json.loads(benchlab("report", "--results", str(results), "-f", "gab-bigger").stdout)
    smaller = json.loads(benchlab("report", "--results", str(results), "-f", "gab-smaller").stdout)
    for entries in (bigger, smaller):
        jsonschema.validate(entries, schema)
        assert len(entries) == len(cells) and len({e["name"] for e in entries}) == len(cells)
    assert {e["unit"] for e in bigger} == {"req/s"} and {e["unit"] for e in smaller} == {"ms"}
    assert all(e["name"].endswith(" (p99)") for e in smaller), smaller[0]
    for entry in bigger:
        name = entry["name"].removesuffix(" (throughput)")
        assert entry["value"] == cells[name]["throughput_rps"]["median"], entry
        assert entry["range"].startswith("± "), entry
    # A format named for a file of another kind is refused with the fix.
    wrong = benchlab("report", "--results", str(results), "-f", "bmf", "-o", str(tmp_path / "x.md"))
    assert wrong.returncode == 2 and "write to" in wrong.stderr and "x.json" in wrong.stderr


def test_the_docs_list_every_json_format_with_its_version() -> None:
    docs = (Path(__file__).parent.parent / "docs" / "results.md").read_text()
    for declared in jf.FORMATS:
        assert f"| `{declared.name}` | {declared.version} |" in docs, declared.name


@pytest.mark.slow
def test_compare_and_history_write_to_o_in_the_format_its_extension_names(
    tmp_path: Path,
) -> None:
    """One way to ask for output: -o FILE, the format from its extension, on every command
    that writes (report and tune did; compare had no -o, history wrote its table to x.html)."""
    results = tmp_path / "results.db"
    first, second = write_run(results), write_run(results)
    store = ["--results", str(results)]
    for name, fmt, check in (
        ("cmp.md", "md", lambda text: text.startswith("# benchlab compare")),
        ("cmp.json", "json", lambda text: _stamped(text) == (jf.COMPARE.name, jf.COMPARE.version)),
        ("cmp.txt", "table", lambda text: text.startswith("A: run ")),
        ("cmp.html", "html", lambda text: text.startswith("<!doctype html>") and "<td>" in text),
    ):
        done = benchlab("compare", first, second, *store, "-o", str(tmp_path / name))
        assert done.returncode == 0 and done.stdout == "", done
        assert done.stderr == f"wrote {tmp_path / name} ({fmt})\n", done.stderr
        assert check((tmp_path / name).read_text()), name
    page = tmp_path / "history.html"
    assert benchlab("history", "quick", *store, "-o", str(page)).returncode == 0
    assert page.read_text().startswith("<!doctype html>")
    clash = benchlab("compare", first, second, *store, "-f", "md", "-o", str(tmp_path / "x.json"))
    assert clash.returncode == 2 and "write to" in clash.stderr


def test_the_recipe_schema_for_editors_is_current_and_accepts_every_bundled_recipe() -> None:
    import tomllib

    from benchlab.recipe.files import bundled_recipes
    from benchlab.recipe.schema import recipe_json_schema

    published = json.loads((REPO / "docs" / "recipe.schema.json").read_text())
    # Regenerate with: the line in docs/recipes.md ("A JSON Schema for editors").
    assert published == recipe_json_schema(), "docs/recipe.schema.json is out of date"
    validator = jsonschema.Draft202012Validator(published)
    for recipe in bundled_recipes():
        errors = list(validator.iter_errors(tomllib.loads(recipe.read_text())))
        assert errors == [], (recipe.name, [e.message for e in errors][:3])
    wrong = list(validator.iter_errors({"name": "x", "trials": "three"}))
    assert any("trials" in list(map(str, e.absolute_path)) for e in wrong)


@pytest.mark.slow
def test_a_runs_json_carries_each_trials_values_when_asked(tmp_path: Path) -> None:
    from benchlab.store import Store
    from tests.conftest import error_line

    results = tmp_path / "results.db"
    run_id = write_run(results)
    store = ["--results", str(results)]
    plain = json.loads(benchlab("report", run_id, *store, "-f", "json").stdout)
    assert all("trial_values" not in cell for cell in plain["cells"])  # opt-in: no weight
    data = json.loads(benchlab("report", run_id, *store, "-f", "json", "--trials").stdout)
    stored = Store(results, create=False)
    for cell, record in zip(data["cells"], stored.cells(stored.run(run_id).id), strict=True):
        trials = stored.trials(record.id)
        assert len(cell["trial_values"]) == cell["trials"] == len(trials) > 0
        for value, trial in zip(cell["trial_values"], trials, strict=True):
            assert value["throughput_rps"] == trial.throughput_rps
            assert value["round"] == trial.round
            assert "latency_histogram" not in value
            assert value["latency_percentiles"] == json.loads(trial.latency_percentiles)
    refused = benchlab("report", run_id, *store, "--trials")
    assert refused.returncode == 2
    assert "--trials" in error_line(refused.stderr) and "-f json" in refused.stderr


@pytest.mark.slow
def test_the_published_schemas_are_current_and_catch_a_renamed_key(tmp_path: Path) -> None:
    """docs/schemas/ holds what the models generate (make them again with the command in
    docs/results.md); every output the tests make is checked against them (conftest's
    `benchlab`); a key renamed or left out fails, one added passes."""
    import jsonschema

    from benchlab.report.json_schemas import json_schema, schema_file

    for fmt in jf.FORMATS:
        published = json.loads((REPO / "docs" / "schemas" / schema_file(fmt)).read_text())
        assert published == json_schema(fmt), f"docs/schemas/{schema_file(fmt)} is out of date"
    results = tmp_path / "results.db"
    text = benchlab("report", write_run(results), "--results", str(results), "-f", "json").stdout
    check_against_schema(text)
    published = json_schema(jf.RUN)
    document = json.loads(text)
    document["cells"][0]["a_later_key"] = 1
    jsonschema.validate(document, published)  # added within a version: allowed
    document["cells"][0]["throughput"] = document["cells"][0].pop("throughput_rps")
    try:
        jsonschema.validate(document, published)
    except jsonschema.ValidationError as error:
        assert "throughput_rps" in error.message
    else:
        raise AssertionError("a renamed figure passed the schema")


def test_a_cells_shown_fields_are_declared_once_on_its_record(tmp_path: Path) -> None:
    """CellRecord's shown fields (store/records.py, CELL_SHOWN: one rename map) are the JSON
    cell's keys, its schema's, the CSV's first columns, and the summary reads them on the
    record itself (`cell.record`: no accessor restates them)."""
    import csv
    import io

    from benchlab.analysis.summary import summarise
    from benchlab.report.csvfile import render_csv
    from benchlab.report.json_schemas import json_schema
    from benchlab.store import CELL_SHOWN, Store

    results = tmp_path / "results.db"
    run_id = write_run(results)
    store = Store(results)
    summary = summarise(store, run_id)
    records = {r.key: r for r in store.cells(run_id)}
    cells = {c["key"]: c for c in json.loads(render_json(summary))["cells"]}
    rows = list(csv.DictReader(io.StringIO(render_csv(summary))))
    schema = json_schema(jf.RUN, closed=True)["$defs"]["Cell"]
    assert CELL_SHOWN["rate_share"] == "rate_share_pct"  # the one rename
    assert list(rows[0])[: len(CELL_SHOWN)] == list(CELL_SHOWN.values())
    for field, name in CELL_SHOWN.items():
        assert name in schema["required"], name
        for cell in summary.cells:
            stored = getattr(records[cell.record.key], field)
            assert getattr(cell.record, field) == stored
            assert cells[cell.record.key][name] == stored
    with pytest.raises(AttributeError):
        _ = summary.cells[0].rate_share  # type: ignore[attr-defined]  # on the record only
