"""The exit-code contract (docs/commands.md, "Exit codes"): one meaning per code, so CI can
tell a slower branch from a broken runner. The codes a real run ends with are asserted where
that run happens: 4 (partial) in test_failures and test_db_runs (a stack, PostgreSQL, Redis
killed mid-trial), 3 (harness) in test_machine_safety (a store that cannot be written), 130
in the signal tests, 1 in test_reading and test_ci_example, 5 in test_reading, 6 in
test_conformance, test_graceful_stop and test_slow_clients; here the mapping itself, fast,
and ./lab's."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from benchlab import cli
from benchlab.core.errors import (
    EXIT_MEANINGS,
    BenchlabError,
    ExitCode,
    LoadToolError,
    ServiceError,
    StoreError,
    UserError,
)
from tests.conftest import REPO, benchlab
from tests.stored_runs import QUICK_LIKE, with_machine, write_run


def test_the_docs_table_is_the_contract() -> None:
    """docs/commands.md's table is made from ExitCode (reference_docs.refresh_docs writes it
    again); each code has one meaning, and ./lab ends its failed set-up with the harness's."""
    from benchlab.reference_docs import refreshed

    page = (REPO / "docs" / "commands.md").read_text()
    begin, end = page.index("<!-- exit-codes:begin"), page.index("<!-- exit-codes:end -->")
    rows = [line for line in page[begin:end].splitlines() if line.startswith("| ")][2:]
    assert rows == [f"| {int(code)} | {meaning} |" for code, meaning in EXIT_MEANINGS.items()]
    assert refreshed(page) == page
    assert set(EXIT_MEANINGS) == set(ExitCode)
    assert len({int(code) for code in ExitCode}) == len(ExitCode)
    lab = (REPO / "lab").read_text()
    assert re.search(r"^HARNESS_FAILURE=(\d+)$", lab, re.MULTILINE).group(1) == str(
        int(ExitCode.HARNESS)
    )
    assert not re.search(r"\bexit 1\b", lab), "./lab ends with benchlab's codes, never 1"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("python", "said"),
    [
        ("/bin/false", "benchlab needs Python >= 3.11"),  # refused by name
        ("FAKE", "set-up failed (exit 7"),  # a step that fails on its own (venv)
    ],
)
def test_a_lab_set_up_that_fails_ends_with_the_harness_code(
    tmp_path: Path, python: str, said: str
) -> None:
    """A copy of ./lab with no environment made yet, its interpreter one that cannot make
    one: the set-up fails, with the harness failure's code (CI reads 1 as slower)."""
    for name in ("lab", "pyproject.toml", "requirements.lock"):
        shutil.copy(REPO / name, tmp_path / name)
    fake = tmp_path / "python3.11"
    fake.write_text(
        '#!/bin/sh\ncase "$1" in --version) echo Python 3.11.9;; -c) exit 0;; '
        "*) echo cannot make a venv >&2; exit 7;; esac\n"
    )
    fake.chmod(0o755)
    interpreter = str(fake) if python == "FAKE" else python
    done = subprocess.run(
        [str(tmp_path / "lab"), "doctor"], cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, "PYTHON": interpreter}, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == ExitCode.HARNESS, done.stderr
    assert said in done.stderr, done.stderr
    assert not (tmp_path / ".venv" / "bin" / "benchlab").exists()


@pytest.mark.parametrize(
    ("raised", "code"),
    [
        (UserError("recipes/x.toml: key 'trials': expected an integer"), ExitCode.BAD_INPUT),
        (ServiceError("postgresql (initdb): exit 1"), ExitCode.HARNESS),
        (LoadToolError("wrk exited with code 1"), ExitCode.HARNESS),
        (StoreError("results.db could not be written (database is locked)"), ExitCode.HARNESS),
        (RuntimeError("a bug"), ExitCode.HARNESS),  # never Python's 1, which reads as slower
    ],
)
def test_each_failure_ends_with_its_own_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], raised: Exception,
    code: ExitCode,
) -> None:  # fmt: skip
    def app(**_: object) -> None:  # called as the typer app is: app(standalone_mode=False)
        raise raised

    monkeypatch.setattr(cli, "app", app)
    with pytest.raises(SystemExit) as ended:
        cli.main()
    assert ended.value.code == code
    err = capsys.readouterr().err
    if isinstance(raised, BenchlabError):
        assert err == f"error: {raised}\n"  # one line, no traceback
    else:
        assert "Traceback" in err and "a bug: please report" in err


@pytest.mark.slow
def test_a_command_that_did_its_job_exits_0_and_each_failure_its_own_code(
    tmp_path: Path,
) -> None:
    baseline, branch = tmp_path / "a.db", tmp_path / "b.db"
    write_run(baseline)
    slower = {s: {k: v * (0.5 if s == "gin" else 1.0) for k, v in by.items()}
              for s, by in QUICK_LIKE.items()}  # fmt: skip
    write_run(branch, slower)
    args = ["compare", "latest", "latest", "--results", str(baseline), "--results-b", str(branch)]
    assert benchlab(*args).returncode == ExitCode.SUCCESS
    assert benchlab(*args, "--fail-above", "10").returncode == ExitCode.REGRESSION
    assert benchlab("run", "no-such-recipe").returncode == ExitCode.BAD_INPUT
    # The same runs, measured on another machine: not comparable under --strict (not 1).
    other = tmp_path / "other.db"
    write_run(other, slower, machine=with_machine(cpu="Intel Xeon", cores=96))
    differ = [*args[:-1], str(other), "--strict"]
    assert benchlab(*differ).returncode == ExitCode.NOT_COMPARABLE
    assert benchlab(*differ[:-1]).returncode == ExitCode.SUCCESS  # named, not failed
