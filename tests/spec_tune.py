"""A tune the suite measures once and judges twice (tests/conftest.py's session fixture): the
known server's app (tests/known_server.py: one gunicorn gthread worker of one thread, 5 ms of
CPU a request) tuned by its app spec under a quota of one CPU. tests/test_tune_subjects.py
compares its answer with the same app's by --command (tests/killed_tunes.py); tests/
test_tune_target.py judges it against its quota's share of 1 ÷ its CPU a request. One worker
of one thread uses one CPU at most: the quota is a target it meets, not one that slows it, so
the two are one measurement (two tunes of it were two and a half minutes of the suite)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import benchlab
from tests.killed_tunes import BUDGET_MIN, PROOF_S
from tests.known_server import BURNS

ONE_CPU = "1"


@dataclass(frozen=True)
class SpecTune:
    """The tune's store and the JSON it printed."""

    results: Path
    report: dict[str, Any]
    cpus: str | None  # the quota it ran under; None where no quota can be set (not root)


def spec_tune(where: Path) -> SpecTune:
    """BURNS by its app spec, one gthread worker of one thread, under one CPU (root sets a
    quota; a normal user's tune runs without one, and the quota's test is skipped)."""
    (where / "burn.py").write_text(BURNS)
    results = where / "r.db"
    cpus = ONE_CPU if os.geteuid() == 0 else None
    done = benchlab(
        "tune", "burn.py:app", "--python", sys.executable, "--servers", "gunicorn-gthread",
        "--workers", "1", "--threads", "1", *(("--cpus", cpus) if cpus else ()),
        "--check-body", "done", "--budget", BUDGET_MIN, "--proof", PROOF_S, "--behind-proxy",
        "--results", str(results), "-f", "json", cwd=where, timeout=420,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return SpecTune(results, json.loads(done.stdout), cpus)
