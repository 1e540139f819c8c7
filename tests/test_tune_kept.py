"""A tune of a command or of an endpoint is kept like every run (issue 67 item 4): killed
with SIGKILL (no handler runs) and resumed, its finished trials kept and what it left
cleaned; then, beside a second tune of the same subject, on history and compare (the same
candidate paired across the two), and in the trackers' exports (Bencher's BMF and
github-action-benchmark's) under names that are the same in both runs and hold no run's own
key of a cell."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import benchlab
from tests.killed_tunes import KilledTune, connect

SCHEMAS = Path(__file__).parent / "schemas"


def _killed_and_resumed(tune: KilledTune) -> dict:
    """The tune, SIGKILLed once a first-pass trial was stored and resumed to its end: the
    same run, complete, its finished trials not measured again, nothing it started left
    running. The resumed tune's JSON."""
    assert tune.status_when_killed == "running"  # no handler ran
    resumed = tune.resumed
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    said = " ".join(resumed.stderr.split())
    assert "cleaned up after a benchlab killed while running" in said, said
    report = tune.report
    assert report is not None
    assert report["run"]["id"] == tune.run_id and report["run"]["status"] == "complete"
    assert all(tune.after[key] == n for key, n in tune.kept.items()), (tune.kept, tune.after)
    assert report["recommendation"] is not None, report["candidates"]
    assert tune.left_living == [], "what the killed tune started still runs"
    return report


def _kept_like_every_run(tune: KilledTune) -> None:
    """A second tune of the same subject (--quick: its first pass), then history, compare
    and the trackers' exports of the two."""
    again, cwd, results = tune.again, tune.cwd, tune.results
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    db = connect(results)
    runs = [tuple(r) for r in db.execute("SELECT id, recipe_name FROM runs ORDER BY started_at")]
    assert len(runs) == 2 and runs[0][1] == runs[1][1], runs
    (first, recipe), (second, _) = runs
    keys = {r[0] for r in db.execute("SELECT key FROM cells")}
    labels = {r[0] for r in db.execute("SELECT stack_label FROM cells WHERE run_id = ?", (second,))}
    stores = ["--results", str(results)]

    history = benchlab("history", recipe, *stores, "-f", "json", cwd=cwd)
    assert history.returncode == 0, history.stdout + history.stderr
    series = json.loads(history.stdout)["series"]
    paired = [s for s in series if len(s["points"]) == 2]
    assert paired, series  # each candidate's first pass, in both runs
    assert {label for label in labels if any(label in s["cell"]["name"] for s in paired)} == labels

    compared = benchlab("compare", first, second, *stores, "-f", "json", cwd=cwd)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    cells = json.loads(compared.stdout)["cells"]
    both = [c for c in cells if c["verdict"] not in ("missing in A", "missing in B")]
    assert {c["stack"] for c in both} >= labels, cells

    exported: dict[str, list[set[str]]] = {}
    for fmt, schema in (("bmf", "bmf.json"), ("gab-bigger", "github-action-benchmark.json")):
        for run_id in (first, second):
            done = benchlab("report", run_id, *stores, "-f", fmt, cwd=cwd)
            assert done.returncode == 0, done.stdout + done.stderr
            data = json.loads(done.stdout)
            jsonschema.validate(data, json.loads((SCHEMAS / schema).read_text()))
            names = set(data) if fmt == "bmf" else {entry["name"] for entry in data}
            assert not any(key in name for key in keys for name in names), names
            exported.setdefault(fmt, []).append(names)
        full, quick = exported[fmt]
        # Stable names: each candidate's first pass is named the same in both runs.
        assert quick and quick <= full, (fmt, full, quick)
        assert all(any(label in name for name in quick) for label in labels), (fmt, quick)


@pytest.mark.alone
@pytest.mark.slow
def test_a_command_tune_killed_resumes_and_is_kept_like_every_run(
    command_tune_killed: KilledTune,
) -> None:
    report = _killed_and_resumed(command_tune_killed)
    assert report["subject"]["kind"] == "command"
    _kept_like_every_run(command_tune_killed)


@pytest.mark.alone
@pytest.mark.slow
def test_an_endpoint_tune_killed_resumes_and_is_kept_like_every_run(
    endpoint_tune_killed: KilledTune,
) -> None:
    report = _killed_and_resumed(endpoint_tune_killed)
    assert report["subject"]["kind"] == "endpoint"
    assert endpoint_tune_killed.endpoint_alive, "the endpoint is not benchlab's to stop"
    _kept_like_every_run(endpoint_tune_killed)
