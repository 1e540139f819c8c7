"""The contract every command keeps with a script, checked on the command table itself (the
typer app cli/__init__.py registers), so a command added without one fails here:

- it has a contract (cli/contract.py) and its -h shows examples that parse and its exit codes;
- a command that writes a document takes -f/--format and -o/--output: the format named, else
  -o's extension, else the table; an unknown format, a contradiction and an extension whose
  format it does not write are one line and exit 2, before it does anything; what it writes
  to -o is that format, confirmed as `wrote PATH (FORMAT)` on stderr, stdout left empty;
- a command that reads a results store takes --results, else $BENCHLAB_RESULTS;
- every command takes --no-color and -q/--quiet after its name; with -q it says nothing on
  stderr (not even `wrote`), where it answers here;
- a command with --dry-run writes its plan in every format its contract names (a tracker's
  refused in one line);
- a usage error (an unknown or typo'd option, a missing argument, an unknown command) is one
  line with the closest option or command, exit 2; bare help (`benchlab`) exits 0;
- the exit codes its code can end with are the ones its contract declares.

In process (benchlab's own entry point, main(), with sys.argv set) wherever the answer needs
no load: the reading commands on stored runs, recipes, stacks, doctor. The commands that
measure (conform, drain, slow-clients, selfcheck) answer here from results the test sets, their
measurement replaced (their real runs: test_conformance, test_graceful_stop,
test_slow_clients, test_cli); run and tune are checked up to where they would start measuring
(their -o and -f on real runs: test_cli's and test_tune's)."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer.main

from benchlab import cli
from benchlab.cli.app import console, progress
from benchlab.cli.contract import CONTRACTS, EVERY_COMMAND
from benchlab.cli.formats import extensions
from benchlab.core import environment
from benchlab.core.errors import ExitCode
from benchlab.report.exporters import EXPORTERS, HISTOGRAMS
from tests.conftest import REPO, check_against_schema
from tests.stored_runs import write_run


def _commands() -> dict[str, Any]:
    """Every command of the table by the name a user types after `benchlab`."""
    found: dict[str, Any] = {}

    def walk(group: Any, prefix: str) -> None:
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                walk(command, f"{prefix}{name} ")
            else:
                found[f"{prefix}{name}"] = command

    walk(typer.main.get_command(cli.app), "")
    return found


COMMANDS = _commands()


def _option(command: Any, flag: str) -> Any | None:
    return next((p for p in command.params if flag in getattr(p, "opts", ())), None)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("contract") / "r.db"
    write_run(path)
    write_run(path)
    return path


def _fake_measurements(monkeypatch: pytest.MonkeyPatch) -> None:
    """The measuring commands' checks answer with results the test sets; nothing takes the
    machine or starts a server (what is checked is what each command does with an answer)."""
    from benchlab.checks import catalogue, one_stack, selfcheck
    from benchlab.checks.one_stack import StackCheck
    from benchlab.resilience import slow_clients
    from benchlab.resilience.drain import Drain
    from benchlab.resilience.slow_clients import SlowClients, SlowResult, Trial
    from tests.test_json_outputs import _selfcheck

    stopped = Drain("SIGTERM", 20, None, 39, 0, 61, 1, 60, 0, 0.34, ("connection refused",))
    calm, held = Trial(2.1, 100.0, 0.0), Trial(2.2, 100.0, 0.0)
    measured = SlowClients(32, 100, (SlowResult("headers", (calm, calm), (held, held)),))
    monkeypatch.setattr(
        catalogue, "conform_stacks", lambda names, *_: [StackCheck(names[0], None, "not here")]
    )
    monkeypatch.setattr(
        one_stack, "drain_stacks", lambda names, *_: [StackCheck(names[0], stopped)]
    )
    monkeypatch.setattr(
        one_stack, "slow_clients_of_stacks", lambda names, *_: [StackCheck(names[0], measured)]
    )
    monkeypatch.setattr(slow_clients, "missing", lambda: None)
    monkeypatch.setattr(selfcheck, "run_selfcheck", lambda **_: _selfcheck())
    monkeypatch.setattr("benchlab.load.make_ready", lambda *_: None)
    for module in ("benchlab.cli.stack_names", "benchlab.cli.selfcheck"):  # the modules, not
        monkeypatch.setattr(importlib.import_module(module), "claim", lambda _: False)  # commands


# The writing commands that measure before they answer: checked up to that point here.
MEASURE_FIRST = {"run", "tune"}


# The arguments that make each other writing command answer (with the test's store), and the
# exit code it answers with.
def _answering(store: Path) -> dict[str, tuple[list[str], int]]:
    results = ["--results", str(store)]
    return {
        "report": (results, 0),
        "recipes": ([], 0),
        "runs": (results, 0),
        "stacks": ([], 0),
        "doctor": ([], 0),
        "history": (["quick", *results], 0),
        "compare": (["latest~1", "latest", *results], 0),
        "conform": (["nginx-static"], ExitCode.HARNESS),  # "not here": not checked
        "drain": (["gin"], ExitCode.SUCCESS),
        "slow-clients": (["gin", "--mode", "headers"], ExitCode.SUCCESS),
        "selfcheck": ([], 0),
    }


# What the command needs before its options (tune: an app).
LEADING = {"tune": ["app.py:app"], "history": ["quick"], "compare": ["a", "b"]}


def test_every_command_in_the_table_has_a_contract_and_no_contract_lacks_its_command() -> None:
    assert set(COMMANDS) == set(CONTRACTS)
    for name, contract in CONTRACTS.items():
        assert contract.examples, name
        assert bool(contract.formats) != bool(contract.no_document), name
        assert all(f in EXPORTERS for f in contract.formats), name


@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_the_options_are_what_the_contract_says(name: str) -> None:
    command, contract = COMMANDS[name], CONTRACTS[name]
    fmt, output = _option(command, "--format"), _option(command, "--output")
    if contract.formats:
        assert fmt is not None and "-f" in fmt.opts, name
        assert output is not None and "-o" in output.opts, name
        assert fmt.metavar == "|".join(contract.formats), name
        # Every extension -o's help names is one it infers a format from.
        named = {word.rstrip(",;)") for word in output.help.split() if word.startswith(".")}
        inferred = set(extensions(contract.formats))
        assert named <= inferred, (name, named - inferred)
    else:
        assert fmt is None and output is None, f"{name} writes a document: give it a contract"
    results = _option(command, "--results")
    assert (results is not None) == contract.reads_store, name
    if results is not None and not results.multiple:
        assert results.envvar == environment.RESULTS, name
    assert _option(command, "--no-color") is not None, name


@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_the_help_shows_examples_that_parse_and_the_exit_codes(name: str) -> None:
    command, contract = COMMANDS[name], CONTRACTS[name]
    epilog = " ".join((command.epilog or "").split())
    assert "Examples:" in epilog and "Exit codes:" in epilog, name
    for code, when in contract.exit_codes().items():
        assert f"{int(code)} {when}" in epilog, (name, code)
    for line, _ in contract.examples:
        words = shlex.split(line)
        assert words[: 1 + name.count(" ") + 1] == ["benchlab", *name.split()], line
        args = words[1 + name.count(" ") + 1 :]
        # Parsed as the command parses them (an unknown option or a bad value fails).
        command.make_context(name, args)


def _named_exit_codes(function: Any) -> set[ExitCode]:
    """The ExitCodes a function names, and the functions of its module it calls, theirs."""
    module = inspect.getmodule(function)
    tree = ast.parse(inspect.getsource(module))
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    pending, seen, named = [functions[function.__name__]], set(), set()
    while pending:
        node = pending.pop()
        if node.name in seen:
            continue
        seen.add(node.name)
        for inner in ast.walk(node):
            if isinstance(inner, ast.Attribute) and getattr(inner.value, "id", "") == "ExitCode":
                named.add(ExitCode[inner.attr])
            if isinstance(inner, ast.Call) and getattr(inner.func, "id", "") in functions:
                pending.append(functions[inner.func.id])
    return named


@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_the_exit_codes_a_command_can_end_with_are_declared(name: str) -> None:
    """Every ExitCode its code names (its function and those of its module it calls; for
    the commands that check stacks, the shared `finish`) is in its contract, beside those
    every command may end with."""
    named = _named_exit_codes(inspect.unwrap(COMMANDS[name].callback))
    if name in ("conform", "drain", "slow-clients"):
        from benchlab.cli import stack_names

        named |= _named_exit_codes(stack_names.finish)
    declared = CONTRACTS[name].exit_codes()
    assert named <= set(declared), (name, named - set(declared))
    assert set(EVERY_COMMAND) <= set(declared)


def _writers() -> list[str]:
    return sorted(name for name, c in CONTRACTS.items() if c.formats)


@pytest.mark.parametrize("name", _writers())
def test_a_wrong_format_a_contradiction_and_a_foreign_extension_are_one_line_exit_2(
    name: str, invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    contract = CONTRACTS[name]
    lead = [*name.split(), *LEADING.get(name, [])]
    unknown = invoke(*lead, "-f", "yaml")
    assert unknown.code == ExitCode.BAD_INPUT and unknown.out == "", unknown
    assert unknown.err == (
        f"error: --format 'yaml' is not known; use one of: {', '.join(contract.formats)}\n"
    )
    other = next(f for f in contract.formats if f != "table")
    clash = invoke(*lead, "-f", other, "-o", str(tmp_path / "x.txt"))
    assert clash.code == ExitCode.BAD_INPUT and clash.err.count("\n") == 1, clash
    assert f"the extension says table but --format is {other}" in clash.err
    foreign = [e for e in EXPORTERS.values() if e.name not in contract.formats and e.extensions]
    for exporter in foreign:
        path = tmp_path / f"x{exporter.extensions[0]}"
        refused = invoke(*lead, "-o", str(path))
        assert refused.code == ExitCode.BAD_INPUT and refused.err.count("\n") == 1, refused
        assert f"the extension says {exporter.name}, which this command does not write" in (
            refused.err
        )
        assert not path.exists()
    assert list(tmp_path.iterdir()) == [], "nothing written on a refusal"


def test_every_writing_command_answers_here_or_measures_first(tmp_path: Path) -> None:
    assert set(_writers()) == set(_answering(tmp_path)) | MEASURE_FIRST


# doctor asks the machine's tools for their versions: it starts processes.
STARTS_PROCESSES = {"doctor"}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.slow) if name in STARTS_PROCESSES else name
        for name in sorted(set(_writers()) - MEASURE_FIRST)
    ],
)
def test_o_writes_the_format_its_extension_names_and_says_so_on_stderr(
    name: str, invoke, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answering, code = _answering(store)[name]
    _fake_measurements(monkeypatch)
    for fmt in CONTRACTS[name].formats:
        args = answering
        if fmt in HISTOGRAMS:  # one cell's, from a store whose trials kept theirs
            args = ["--results", str(REPO / "tests" / "data" / "readme-quick.db")]
            args += ["--histogram", "gin json"]
        for ext in EXPORTERS[fmt].extensions[:1]:
            path = tmp_path / f"answer{ext}"
            done = invoke(*name.split(), *args, "-o", str(path))
            assert done.code == code, (fmt, done)
            assert done.err == f"wrote {path} ({fmt})\n" and done.out == "", (fmt, done)
            _looks_like(fmt, path.read_text())
            # -f says the same, to stdout.
            printed = invoke(*name.split(), *args, "-f", fmt)
            assert printed.code == code and printed.out, (fmt, printed)
            if fmt != "table":
                assert printed.out == path.read_bytes().decode() or fmt == "html", fmt
    # -q: not a word on stderr, not even the confirmation.
    quiet = invoke(*name.split(), *answering, "-q", "-o", str(tmp_path / "quiet.json"))
    assert quiet.code == code and quiet.err == "" and quiet.out == "", quiet
    assert (tmp_path / "quiet.json").exists()


# What a command's dry run needs before its options.
DRY_RUN_LEADING = {"run": ["quick"]}


def _dry_runs() -> list[str]:
    return sorted(name for name, command in COMMANDS.items() if _option(command, "--dry-run"))


@pytest.mark.parametrize("name", _dry_runs())
def test_a_dry_run_writes_its_plan_in_every_format_its_contract_names(
    name: str, invoke, tmp_path: Path
) -> None:
    """The plan is a dry run's answer: written in -f's format, or to -o's file in its
    extension's (its cells in all but the text); a tracker's format, which holds measured
    figures only, is refused in one line, exit 2, nothing written."""
    assert "run" in _dry_runs()
    lead = [*name.split(), *DRY_RUN_LEADING.get(name, []), "--dry-run"]
    for fmt in CONTRACTS[name].formats:
        if not EXPORTERS[fmt].extensions:  # a tracker's: bmf, gab-*
            refused = invoke(*lead, "-f", fmt)
            assert refused.code == ExitCode.BAD_INPUT and refused.out == "", (fmt, refused)
            assert refused.err.count("\n") == 1 and "holds no measured figure" in refused.err
            continue
        path = tmp_path / f"plan{EXPORTERS[fmt].extensions[0]}"
        written = invoke(*lead, "-o", str(path))
        assert written.code == 0 and written.out == "", (fmt, written)
        assert written.err == f"wrote {path} ({fmt})\n", (fmt, written)
        text = path.read_text()
        _looks_like(fmt, text)
        # The plan in words (the CSV: a row per cell, the quick recipe's 12).
        assert "plan: " in text or (fmt == "csv" and text.count("\n") == 13), fmt
        if fmt != "table":  # every cell, by its stack and scenario
            assert text.count("fastapi+uvicorn") >= 2 and "plaintext" in text, fmt
        printed = invoke(*lead, "-f", fmt)
        assert printed.code == 0, fmt
        if fmt == "table":  # wrapped at the terminal's width on stdout, a file's 100 in -o's
            assert printed.out.split() == text.split(), fmt
        else:
            assert printed.out == text, fmt
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"plan{EXPORTERS[f].extensions[0]}" for f in CONTRACTS[name].formats
        if EXPORTERS[f].extensions
    )  # fmt: skip


@pytest.mark.parametrize("name", _writers())
def test_o_never_writes_over_a_store_nor_into_a_missing_directory(
    name: str, invoke, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """-o is checked before the command does anything, the same on every command: the store
    it reads (its own --results) and any other SQLite database are refused, and so is a
    directory that does not exist (with the mkdir that makes it); nothing is written."""
    _fake_measurements(monkeypatch)
    lead = [*name.split(), *LEADING.get(name, [])]
    database = tmp_path / "other.db"
    database.write_bytes(store.read_bytes())
    before = database.read_bytes()
    targets = [database]
    if CONTRACTS[name].reads_store:
        own = tmp_path / "own.db"
        own.write_bytes(store.read_bytes())
        targets.append(own)
    for target in targets:
        results = ["--results", str(target)] if CONTRACTS[name].reads_store else []
        refused = invoke(*lead, *results, "-o", str(target))
        assert refused.code == ExitCode.BAD_INPUT and refused.err.count("\n") == 1, refused
        assert str(target) in refused.err and ("results store" in refused.err or "SQLite" in (
            refused.err)), refused.err  # fmt: skip
        assert target.read_bytes() == before, f"{name} -o wrote over {target}"
    missing = tmp_path / "no-such-dir" / "answer.json"
    refused = invoke(*lead, "-o", str(missing))
    assert refused.code == ExitCode.BAD_INPUT and refused.err.count("\n") == 1, refused
    assert f"mkdir -p {missing.parent}" in refused.err, refused.err
    assert not missing.parent.exists()


@pytest.mark.parametrize("name", sorted(set(_writers()) - MEASURE_FIRST - STARTS_PROCESSES))
def test_o_dash_is_stdout(
    name: str, invoke, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args, code = _answering(store)[name]
    _fake_measurements(monkeypatch)
    monkeypatch.chdir(tmp_path)
    printed = invoke(*name.split(), *args, "-f", "json", "-o", "-")
    assert printed.code == code and printed.out.lstrip().startswith("{"), printed
    assert "wrote" not in printed.err and not (tmp_path / "-").exists()


def _looks_like(fmt: str, text: str) -> None:
    if fmt == "json":
        assert json.loads(text)["format"].startswith("benchlab-")
        check_against_schema(text)
    elif fmt == "html":
        assert text.startswith("<!doctype html>"), text[:80]
    elif fmt == "md":
        assert text.startswith(("#", "|")), text[:80]
    elif fmt == "csv":
        assert text.count(",") > 3, text[:80]
    elif fmt == "hgrm":
        assert text.split()[:4] == ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
    elif fmt == "hlog":
        assert "#[Histogram log format version 1.3]" in text.splitlines(), text[:80]
    else:
        assert text.strip() and "\x1b[" not in text, text[:80]


@pytest.mark.parametrize("name", sorted(n for n, c in CONTRACTS.items() if c.reads_store))
def test_a_command_that_reads_a_store_reads_benchlab_results(
    name: str, invoke, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --results, the store $BENCHLAB_RESULTS names: read when it holds runs, named
    in the one-line error when it does not exist."""
    missing = tmp_path / "missing.db"
    monkeypatch.setenv(environment.RESULTS, str(missing))
    reading = {
        "report": [], "runs": [], "history": ["quick"], "compare": ["latest~1", "latest"],
        "run": ["--resume"], "tune": None,
    }[name]  # fmt: skip
    if reading is None:  # tune's store is read after the app's checks (issue 58's code)
        assert _option(COMMANDS[name], "--results").envvar == environment.RESULTS
        return
    gone = invoke(*name.split(), *reading)
    assert gone.code == ExitCode.BAD_INPUT and str(missing) in gone.err, gone
    if name == "run":
        return
    monkeypatch.setenv(environment.RESULTS, str(store))
    found = invoke(*name.split(), *reading, "-f", "json")
    assert found.code == 0, found
    check_against_schema(found.out)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.slow) if name in STARTS_PROCESSES else name
        for name in sorted(CONTRACTS)
    ],
)
def test_every_command_takes_q_and_says_nothing_on_stderr_with_it(
    name: str, invoke, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """-q/--quiet after any command's name (a command with nothing to silence accepts it
    and says as little as before): parsed by every command, and where the command answers
    here, its answer on stdout and not a byte on stderr."""
    command = COMMANDS[name]
    assert {"-q", "--quiet"} <= set(_option(command, "-q").opts), name
    monkeypatch.setattr(progress, "quiet", progress.quiet)  # parsing -q sets it: not for later
    leading = [*LEADING.get(name, [])]
    command.make_context(name, [*leading, "-q"] if name != "compare" else ["a", "b", "-q"])
    _fake_measurements(monkeypatch)
    answering = _answering(store)
    if name in answering:
        args, code = answering[name]
        done = invoke(*name.split(), *args, "-q")
        assert done.code == code and done.out and done.err == "", (name, done)
    elif name == "run":  # a dry run's plan: the answer on stdout, nothing beside it
        done = invoke("run", "quick", "--dry-run", "-q", "-o", str(tmp_path / "plan.json"))
        assert done.code == 0 and done.out == done.err == "", done
        assert (tmp_path / "plan.json").exists()


def _typo(option: str) -> str:
    """An option as a hurried hand types it: two letters swapped."""
    name = option.removeprefix("--")
    return f"--{name[1]}{name[0]}{name[2:]}"


@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_a_usage_error_is_one_line_with_the_closest_option_exit_2(name: str, invoke) -> None:
    """An unknown option, a typo'd one (did you mean), a missing argument and an unknown
    command: one line on stderr each (click's were four, the typo's hint "Possible options"),
    exit 2, nothing on stdout."""
    leading = ["a", "b"] if name == "compare" else LEADING.get(name, [])
    longest = max(
        (o for p in COMMANDS[name].params for o in getattr(p, "opts", ()) if o.startswith("--")),
        key=len,
    )  # the longest: no other option is as close to its typo
    for args, said in (
        (["--zzz"], "no such option --zzz"),
        ([_typo(longest)], f"no such option {_typo(longest)} (did you mean {longest}?)"),
    ):
        done = invoke(*name.split(), *leading, *args)
        assert done.code == ExitCode.BAD_INPUT and done.out == "", (name, args, done)
        assert done.err == f"error: benchlab {name}: {said}; benchlab {name} -h lists its options\n"
    required = [p for p in COMMANDS[name].params if getattr(p, "required", False)]
    if required:  # its arguments left out
        done = invoke(*name.split())
        assert done.code == ExitCode.BAD_INPUT and done.err.count("\n") == 1, (name, done)
        assert done.err.startswith(f"error: benchlab {name}: missing argument"), done.err
        assert "(usage: benchlab " in done.err, done.err


@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_a_hint_is_judged_on_the_names_not_the_dashes_they_share(name: str, invoke) -> None:
    """'--wat' is no typo of '--format' (doctor suggested it: the two dashes they share made
    them close); a hint names an option whose name is close to the word typed."""
    leading = ["a", "b"] if name == "compare" else LEADING.get(name, [])
    done = invoke(*name.split(), *leading, "--wat")
    assert done.code == ExitCode.BAD_INPUT and done.out == "", (name, done)
    assert "did you mean" not in done.err, (name, done.err)


def test_an_unknown_command_is_one_line_and_bare_help_exits_0(invoke) -> None:
    typo = invoke("reprot")
    assert typo.code == ExitCode.BAD_INPUT and typo.out == "", typo
    assert typo.err == (
        "error: benchlab: no such command 'reprot' (did you mean 'report'?); benchlab -h lists "
        "its commands\n"
    )
    for group in ([], ["services"]):  # asking for help is no mistake: stdout, exit 0
        bare = invoke(*group)
        assert bare.code == ExitCode.SUCCESS and bare.err == "", bare
        assert bare.out.startswith(f"Usage: benchlab {' '.join(group)}".rstrip() + " [OPTIONS]")


def test_no_color_after_the_command_turns_colours_off(invoke, monkeypatch) -> None:
    """`benchlab CMD --no-color` does what `benchlab --no-color CMD` does (it exited 2)."""
    monkeypatch.setattr(console, "no_color", False)
    done = invoke("stacks", "--no-color", "-f", "md")
    assert done.code == 0 and console.no_color


def contract_table() -> str:
    """The contract of every command, as the report to the lead shows it."""
    lines = [
        "| command | -f (-o infers) | reads BENCHLAB_RESULTS | exit codes |",
        "|---|---|---|---|",
    ]
    for name, contract in CONTRACTS.items():
        formats = "|".join(contract.formats) or f"none: {contract.no_document}"
        codes = ", ".join(str(int(c)) for c in contract.exit_codes())
        lines.append(f"| {name} | {formats} | {'yes' if contract.reads_store else '–'} | {codes} |")
    return "\n".join(lines)


def test_a_typod_recipe_name_gets_did_you_mean(invoke) -> None:
    done = invoke("run", "quik", "--dry-run")
    assert done.code == ExitCode.BAD_INPUT and done.err.count("\n") == 1, done
    assert "recipe file 'quik' not found (did you mean 'quick'?)" in done.err


def test_recipes_gives_every_recipe_a_question(invoke) -> None:
    """A recipe that asks none (fastapi-flask-gin: README's five lines) says what it compares."""
    done = invoke("recipes", "-f", "json")
    questions = {r["name"]: r["question"] for r in json.loads(done.out)["recipes"]}
    assert all(questions.values()), questions
    assert questions["fastapi-flask-gin"] == (
        "How do fastapi+uvicorn, flask+gunicorn-gthread and gin compare on json and db?"
    )
    assert "no question" not in invoke("recipes").out


# --- --threshold: the commands whose contract ends with its code take it -------------------

README_RUN = Path(__file__).parent / "data" / "readme-quick.db"


def _judging() -> list[str]:
    return sorted(n for n, c in CONTRACTS.items() if ExitCode.THRESHOLD in c.exit_codes())


def test_the_commands_that_judge_a_run_are_run_tune_report_and_history() -> None:
    assert _judging() == ["history", "report", "run", "tune"]


@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_threshold_is_taken_by_every_command_whose_contract_ends_with_its_code(name: str) -> None:
    taken = _option(COMMANDS[name], "--threshold")
    assert (taken is not None) == (name in _judging()), name
    if taken is not None:
        assert taken.multiple, name  # repeatable


def _reaching_thresholds(store: Path) -> dict[str, list[str]]:
    """What each command that judges needs before its thresholds are read (run: its plan,
    nothing run; tune: an app, not looked for before them)."""
    results = ["--results", str(store)]
    return {
        "run": ["quick", "--dry-run"],
        "tune": ["app.py:app"],
        "report": results,
        "history": ["quick", *results],
    }


@pytest.mark.parametrize("name", _judging())
@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ("p98<200ms", "no figure is called 'p98' (did you mean 'p99'?)"),
        ("p99<abc", "'abc' is not a number"),
        ("p99<2kg", "p99 is in ms, not 'kg'"),
    ],
)
def test_a_bad_threshold_is_one_line_and_exit_2_before_anything_runs(
    name: str, bad: str, said: str, invoke, store: Path
) -> None:
    done = invoke(name, *_reaching_thresholds(store)[name], "--threshold", bad)
    assert done.code == ExitCode.BAD_INPUT and done.out == "", done
    assert done.err == f"error: --threshold '{bad}': {done.err.split(': ', 2)[2]}", done.err
    assert said in done.err and done.err.count("\n") == 1, done.err


def test_a_threshold_no_cell_of_the_run_measures_is_refused_before_it_runs(invoke) -> None:
    done = invoke("run", "quick", "--dry-run", "--threshold", "capacity>=100")
    assert done.code == ExitCode.BAD_INPUT and done.out == "", done
    assert "capacity is measured by capacity-search cells only, and these are closed-loop" in (
        done.err
    )
    refused = invoke("tune", "app.py:app", "--quick", "--threshold", "p99<100ms")
    assert refused.code == ExitCode.BAD_INPUT
    assert "--threshold: it judges the replay that proves the answer, which --quick" in refused.err


@pytest.mark.parametrize("name", ["report", "history"])
def test_a_stored_run_that_breaks_a_threshold_exits_with_its_code_and_names_the_cells(
    name: str, invoke
) -> None:
    """README's example run: every cell's p99 is over 1 ms, across its whole interval; none
    is near 1,000 ms. Every format the command writes names the threshold's outcome; the
    last lines on stderr name the cells."""
    from benchlab.analysis.summary import summarise
    from benchlab.report.wording import cell_name
    from benchlab.store import Store

    lead = [*(["quick"] if name == "history" else []), "--results", str(README_RUN)]
    broken = invoke(name, *lead, "--threshold", "p99<1ms")
    assert broken.code == ExitCode.THRESHOLD, broken
    cells = summarise(Store(README_RUN, create=False), None).cells
    named = "; ".join(cell_name(c) for c in cells)
    assert broken.err == f"FAIL: threshold p99<1 ms broken by 12 cells: {named}\n"
    assert "p99<1 ms: FAILED in 12 of 12 cells" in broken.out
    kept = invoke(name, *lead, "--threshold", "p99<1000ms", "--threshold", "errors<0.1%")
    assert kept.code == 0 and kept.err == "", kept
    assert "p99<1000 ms: kept by all 12 cells measured" in kept.out
    assert "errors<0.1%: kept by all 12 cells measured" in kept.out
    # Trackers' formats (Bencher's BMF, github-action-benchmark's) hold numbers in a schema of
    # the tracker's own: no place for a pass or a fail; the FAIL line on stderr says it.
    # A cell's histogram (report --histogram) is one cell's distribution, not the run's
    # judgement: --threshold beside it is refused (test_histogram_export).
    trackers = {"bmf", "gab-bigger", "gab-smaller", *HISTOGRAMS}
    for fmt in (f for f in CONTRACTS[name].formats if f not in trackers):
        shown = invoke(name, *lead, "-f", fmt, "--threshold", "p99<1ms")
        assert shown.code == ExitCode.THRESHOLD and shown.err.startswith("FAIL: "), fmt
        if fmt == "json":
            check_against_schema(shown.out)
            judged = json.loads(shown.out)["thresholds"]
            assert [(t["threshold"], t["outcome"]) for t in judged] == [("p99<1 ms", "failed")]
            assert {c["outcome"] for c in judged[0]["cells"]} == {"failed"}
        elif fmt == "csv":  # a row per cell: its outcome of each threshold
            rows = shown.out.splitlines()[1:]
            assert len(rows) == 12 and all(r.endswith(",p99<1 ms failed") for r in rows)
        else:
            text = shown.out.replace("&lt;", "<")
            assert "p99<1 ms: FAILED in 12 of 12 cells" in text, fmt


def test_tune_judges_its_answers_replay_and_ends_with_the_threshold_code(
    invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tune's door, its measurement replaced by a stored tune (test_tune_proof's: its proof
    held 978 req/s, p99 35 ms, over windows of 12, 15, 260 and 14 ms): what it does with the
    answer it finds. Its real runs: test_tune."""
    from types import SimpleNamespace

    from benchlab.runner.outcome import RunOutcome
    from tests.test_tune_proof import _tune_run

    def measured(request: object, store: object, *_: object, **__: object) -> SimpleNamespace:
        return SimpleNamespace(outcome=RunOutcome(_tune_run(results), "complete"), checked=None)

    command = importlib.import_module("benchlab.cli.tune")  # the module, not the command
    asked = SimpleNamespace(check_answer=None)
    monkeypatch.setattr(command, "_tune_request", lambda _: asked)
    monkeypatch.setattr(command, "_prepare", lambda *_: None)
    monkeypatch.setattr(command, "make_ready", lambda *_: None)
    monkeypatch.setattr(command, "claim", lambda _: False)
    monkeypatch.setattr("benchlab.tune.driver.run_tune", measured)
    for bound, code in (("p99<10ms", ExitCode.THRESHOLD), ("p99<300ms", 0), ("p99<100ms", 0)):
        results = tmp_path / f"{code}-{bound[4:]}.db"
        done = invoke("tune", "app.py:app", "--results", str(results), "--threshold", bound)
        assert done.code == code, done
        flat = " ".join(done.out.split())
        if code:
            assert done.err.splitlines()[-1] == (
                f"FAIL: threshold {bound[:3]}<{bound[4:-2]} ms broken by 1 cell: "
                "gunicorn-gthread w=1 t=16 · app vegeta c=64 rate 978/s"
            ), done.err
            assert f"{bound[:3]}<{bound[4:-2]} ms: FAILED in 1 of 1 cells" in flat
        elif bound == "p99<100ms":  # its windows' p99s straddle it: said, not failed
            assert "p99<100 ms: undecided in 1 of 1 cells" in flat and "FAIL" not in done.err
        else:
            assert "p99<300 ms: kept by the cells measured" in flat, flat


# --- the stream of a run's events (--progress json, --progress-file) ---------------------------


def _measuring_modules() -> set[str]:
    """The command modules that take this machine for a load (call cli/measuring.py's
    claim), and those that measure through one (import from it)."""
    folder = Path(cli.__file__).parent
    sources = {f"benchlab.cli.{p.stem}": p.read_text() for p in folder.glob("*.py")}
    claiming = {
        module for module, text in sources.items()
        if "claim(" in text and not module.endswith(".measuring")
    }  # fmt: skip
    return claiming | {
        module
        for module, text in sources.items()
        if any(f"from {c} import" in text for c in claiming)
    }


@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_a_command_that_measures_streams_its_events_or_says_why_not(name: str) -> None:
    """Every command that puts load on this machine takes --progress json and --progress-file,
    or its contract says why it takes no stream; no other command takes them."""
    command, contract = COMMANDS[name], CONTRACTS[name]
    takes = _option(command, "--progress") is not None
    assert takes == (_option(command, "--progress-file") is not None) == contract.streams, name
    measures = command.callback.__module__ in _measuring_modules()
    if measures:
        assert contract.streams != bool(contract.no_stream), (
            f"{name} measures: stream its events (--progress) or say why not (no_stream)"
        )
    else:
        assert not contract.streams and not contract.no_stream, name


@pytest.mark.parametrize("name", sorted(n for n, c in CONTRACTS.items() if c.streams))
def test_the_stream_and_a_document_never_share_stdout(name: str, invoke, tmp_path: Path) -> None:
    """--progress json holds stdout: a document there too, an unknown style, a stream file in
    a directory that is a file are one line and exit 2, before anything runs."""
    lead = [*name.split(), *LEADING.get(name, [])]
    shared = invoke(*lead, "--progress", "json", "-f", "json")
    assert shared.code == ExitCode.BAD_INPUT and shared.out == "", shared
    assert shared.err.count("\n") == 1 and "--progress-file" in shared.err, shared.err
    unknown = invoke(*lead, "--progress", "xml")
    assert unknown.code == ExitCode.BAD_INPUT and unknown.err.count("\n") == 1, unknown
    assert "auto, lines, json" in unknown.err
    (tmp_path / "file").write_text("")
    nowhere = invoke(*lead, "--progress-file", str(tmp_path / "file" / "events.ndjson"))
    assert nowhere.code == ExitCode.BAD_INPUT and nowhere.err.count("\n") == 1, nowhere
    assert "--progress-file" in nowhere.err
    store = tmp_path / "r.db"
    write_run(store)
    kept = store.read_bytes()
    over = invoke(*lead, "--results", str(store), "--progress-file", str(store))
    assert over.code == ExitCode.BAD_INPUT and over.err.count("\n") == 1, over
    assert "results store" in over.err and store.read_bytes() == kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "r.db"]


def test_a_dry_run_refuses_a_stream_it_would_never_write(invoke) -> None:
    refused = invoke("run", "quick", "--dry-run", "--progress", "json")
    assert refused.code == ExitCode.BAD_INPUT and refused.err.count("\n") == 1, refused
    assert "dry run" in refused.err
