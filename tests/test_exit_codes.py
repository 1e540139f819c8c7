"""The exit-code contract (docs/commands.md, "Exit codes"): one meaning per code, so CI can
tell a slower branch from a broken runner. The codes a real run ends with are asserted where
that run happens: 4 (partial) in test_failures and test_db_runs (a stack, PostgreSQL, Redis
killed mid-trial), 3 (harness) in test_machine_safety (a store that cannot be written), 130
in the signal tests, 1 in test_reading and test_ci_example; here the mapping itself, fast."""

from __future__ import annotations

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
from tests.stored_runs import QUICK_LIKE, write_run


def test_the_docs_table_is_the_contract() -> None:
    page = (REPO / "docs" / "commands.md").read_text()
    begin, end = page.index("<!-- exit-codes:begin"), page.index("<!-- exit-codes:end -->")
    rows = [line for line in page[begin:end].splitlines() if line.startswith("| ")][2:]
    assert rows == [f"| {int(code)} | {meaning} |" for code, meaning in EXIT_MEANINGS.items()]
    assert set(EXIT_MEANINGS) == set(ExitCode)
    assert len({int(code) for code in ExitCode}) == len(ExitCode)


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
    def app() -> None:
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
def test_a_command_that_did_its_job_exits_0_and_a_regression_exits_1(tmp_path: Path) -> None:
    baseline, branch = tmp_path / "a.db", tmp_path / "b.db"
    write_run(baseline)
    slower = {s: {k: v * (0.5 if s == "gin" else 1.0) for k, v in by.items()}
              for s, by in QUICK_LIKE.items()}  # fmt: skip
    write_run(branch, slower)
    args = ["compare", "latest", "latest", "--results", str(baseline), "--results-b", str(branch)]
    assert benchlab(*args).returncode == ExitCode.SUCCESS
    assert benchlab(*args, "--fail-above", "10").returncode == ExitCode.REGRESSION
    assert benchlab("run", "no-such-recipe").returncode == ExitCode.BAD_INPUT
