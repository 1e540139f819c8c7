"""`report --histogram CELL`: one cell's latency histogram in HdrHistogram's own formats,
read back by libraries benchlab did not write. HdrHistogram's Java library (the reference
implementation, from Maven Central as JMeter's jars are) reads the interval log and writes
from it, with its own HistogramLogProcessor, the very .hgrm benchlab wrote; the Python
package's HistogramLogReader reads the log to the report's p99. The README's store holds
real wrk histograms."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from benchlab.core.errors import ExitCode
from benchlab.load import histogram
from benchlab.store import Store
from benchlab.system.build_cache import usable_cache
from tests.conftest import REPO
from tests.stored_runs import write_run

README_STORE = REPO / "tests" / "data" / "readme-quick.db"
CELL = "gin json"  # the README store's gin w=1 json wrk c=64
# HdrHistogram's Java library, pinned, and the Maven plugin that copies it (pinned too: Maven
# would otherwise take the newest).
JAVA_HDRHISTOGRAM = "org.hdrhistogram:HdrHistogram:2.2.2"
COPY_GOAL = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "readme.db"
    shutil.copy(README_STORE, path)
    return path


def _report_p99_ms(invoke, store: Path, stack: str, scenario: str) -> float:
    report = json.loads(invoke("report", "--results", str(store), "-f", "json").out)
    (cell,) = [c for c in report["cells"] if c["stack"] == stack and c["scenario"] == scenario]
    return cell["latency_ms"]["p99"]


def _written(invoke, store: Path, path: Path) -> str:
    done = invoke("report", "--results", str(store), "--histogram", CELL, "-o", str(path))
    assert done.code == 0 and done.err == f"wrote {path} ({path.suffix[1:]})\n", done
    return path.read_text()


@pytest.fixture(scope="module")
def java_hdrhistogram(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """HdrHistogram's Java jar, copied from Maven Central into benchlab's Maven repository
    (./lab installs Java and Maven for JMeter)."""
    for program in ("java", "mvn"):
        assert shutil.which(program), f"{program} is missing: ./lab setup installs it"
    jars = tmp_path_factory.mktemp("hdrhistogram-java")
    fetched = subprocess.run(
        ["mvn", "-B", "-q", f"-Dmaven.repo.local={usable_cache() / 'maven-repository'}",
         COPY_GOAL, f"-Dartifact={JAVA_HDRHISTOGRAM}", f"-DoutputDirectory={jars}"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    (jar,) = jars.glob("HdrHistogram-*.jar")
    return jar


@pytest.mark.slow
def test_hdrhistograms_java_library_reads_the_log_and_writes_the_same_hgrm(
    invoke, store: Path, tmp_path: Path, java_hdrhistogram: Path
) -> None:
    ours = _written(invoke, store, tmp_path / "gin.hgrm")
    _written(invoke, store, tmp_path / "gin.hlog")
    processed = subprocess.run(
        ["java", "-cp", str(java_hdrhistogram), "org.HdrHistogram.HistogramLogProcessor",
         "-i", str(tmp_path / "gin.hlog"), "-o", str(tmp_path / "java"),
         "-outputValueUnitRatio", "1000"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert processed.returncode == 0, processed.stdout + processed.stderr
    # Its .hgrm of the log's histograms merged, below the two lines it adds (the range and
    # the log's start time), is ours to the byte: rows, levels, counts, mean, deviation, max.
    theirs = (tmp_path / "java.hgrm").read_text().splitlines(keepends=True)
    assert theirs[0].startswith("#[Overall percentile distribution") and "StartTime" in theirs[1]
    assert "".join(theirs[2:]) == ours
    assert ours.count("\n") > 50  # a distribution, not a header alone
    # Its interval lines: one per trial, and the running total's p99 is the report's.
    intervals = [line for line in (tmp_path / "java").read_text().splitlines() if " T:" in line]
    assert len(intervals) == 3, intervals
    totals = re.search(r"T:\d+ \(\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)", intervals[-1])
    assert totals is not None, intervals[-1]
    assert float(totals.group(3)) == _report_p99_ms(invoke, store, "gin", "json")


def test_hdrhistograms_python_reader_reads_the_log_to_the_reports_p99(
    invoke, store: Path, tmp_path: Path
) -> None:
    _written(invoke, store, tmp_path / "gin.hlog")
    reader = HistogramLogReader(str(tmp_path / "gin.hlog"), histogram.new())
    intervals: list[HdrHistogram] = []
    while (found := reader.get_next_interval_histogram()) is not None:
        intervals.append(found)
    reader.close()
    read = Store(store, create=False)
    (cell,) = [c for c in read.cells(read.run(None).id) if (c.stack, c.scenario) == ("gin", "json")]
    trials = read.trials(cell.id)
    assert [i.get_total_count() for i in intervals] == [
        histogram.decode(t.latency_histogram).get_total_count() for t in trials
    ]
    starts = [i.get_start_time_stamp() for i in intervals]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    merged = histogram.new()
    for interval in intervals:
        merged.add(interval)
    p99_us = merged.get_value_at_percentile(99)
    # Within one bucket of the report's p99 (here: its very value, in ms).
    report_us = round(_report_p99_ms(invoke, store, "gin", "json") * 1000)
    assert merged.values_are_equivalent(p99_us, report_us), (p99_us, report_us)


def test_a_cell_is_named_by_the_words_the_report_shows_it_by(
    invoke, store: Path, tmp_path: Path
) -> None:
    results = ["report", "--results", str(store)]
    # Words of its name, a part of a stack's name, its whole name: one cell each.
    for words in (
        "fastapi json",
        "nginx-static plaintext",
        "gin w=1 json wrk c=64",
        "ceiling json",
    ):
        done = invoke(*results, "--histogram", words)
        assert done.code == 0 and done.out.split()[:1] == ["Value"], (words, done)
    # Several cells, none, no name, a format that is no histogram's: one line, exit 2.
    refusals = {
        ("--histogram", "gin"): "2 cells match: 'gin w=1 plaintext wrk c=64', 'gin w=1 json",
        ("--histogram", "gni json"): "(did you mean 'gin json'?)",
        ("-o", str(tmp_path / "x.hgrm")): "name it with --histogram CELL",
        ("-f", "hlog"): "name it with --histogram CELL",
        ("--histogram", CELL, "-f", "json"): "written as hgrm or hlog, not json",
        ("--histogram", CELL, "-o", str(tmp_path / "x.md")): "not md; drop -f, or write to",
        ("--histogram", CELL, "--threshold", "p99<10ms"): "--threshold is for a whole run's",
        ("--histogram", CELL, "--wide"): "--wide is for a whole run's report",
    }
    for args, said in refusals.items():
        refused = invoke(*results, *args)
        assert refused.code == ExitCode.BAD_INPUT and refused.out == "", (args, refused)
        assert refused.err.count("\n") == 1 and said in refused.err, (args, refused.err)
    assert list(tmp_path.iterdir()) == [store], "nothing written on a refusal"


def test_a_cell_whose_tool_kept_no_histogram_says_so(invoke, tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    write_run(path)  # trials with the tool's own percentiles, no histogram
    done = invoke("report", "--results", str(path), "--histogram", "gin json")
    assert done.code == ExitCode.BAD_INPUT and done.err.count("\n") == 1, done
    assert "kept no latency histogram (wrk gives none for json, or a benchlab" in done.err
