"""A real run gated by a threshold, as CI would: `benchlab run quick --threshold 'p99<1ms'`
(no stack answers 64 connections in under a millisecond at the 99th percentile: each cell's
whole interval breaks it) exits with the threshold's own code and names the cells; the same
run with `'p99<1000ms'` (a second is a hundred times what the slowest of them takes) exits 0.
Each run is shortened to 1-s trials; a threshold on a stored run: test_cli_contract."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchlab.core.errors import ExitCode
from tests.conftest import benchlab


def _run(results: Path, page: Path, threshold: str, tmp: Path) -> tuple[int, str, str]:
    done = benchlab(
        "run", "quick", "--duration", "1", "--results", str(results), "--html", str(page),
        "--threshold", threshold, env={"TMPDIR": str(tmp)}, timeout=900,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


@pytest.mark.slow
@pytest.mark.alone
def test_run_quick_gated_by_a_threshold_exits_7_naming_the_cells_and_0_when_kept(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    results = tmp_path / "r.db"
    code, out, err = _run(results, tmp_path / "broken.html", "p99<1ms", isolated_tmp)
    assert code == ExitCode.THRESHOLD, out + err
    fail = [line for line in err.splitlines() if line.startswith("FAIL: ")]
    assert len(fail) == 1 and err.rstrip().endswith(fail[0]), err
    found = re.fullmatch(r"FAIL: threshold p99<1 ms broken by (\d+) cells: (.*)", fail[0])
    assert found is not None, fail
    # The cells named are those the stored run's JSON judges failed, and they are every cell.
    stored = benchlab("report", "--results", str(results), "-f", "json", "--threshold", "p99<1ms")
    assert stored.returncode == ExitCode.THRESHOLD
    document = json.loads(stored.stdout)
    (judged,) = document["thresholds"]
    failed = [c["cell"] for c in judged["cells"] if c["outcome"] == "failed"]
    assert len(failed) == int(found.group(1)) == len(document["cells"]) == 12
    for cell in document["cells"]:
        assert f"{cell['stack_label']} {cell['scenario']} wrk c=64" in found.group(2)
        p99 = cell["latency_interval_ms"]["p99"]
        assert p99["low"] > 1.0, cell["key"]  # the whole interval over the bound
    assert "p99<1 ms: FAILED in 12 of 12 cells" in " ".join(out.split())
    assert "p99<1 ms" in (tmp_path / "broken.html").read_text().replace("&lt;", "<")

    code, out, err = _run(results, tmp_path / "kept.html", "p99<1000ms", isolated_tmp)
    assert code == ExitCode.SUCCESS, out + err
    assert "FAIL" not in err
    assert "p99<1000 ms: kept by all 12 cells measured" in " ".join(out.split())
