"""benchlab tune: the server and settings that hold the most load for the user's own app."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from benchlab.analysis.capacity import PROOF_S
from benchlab.analysis.target import Target, parse_cpus, parse_memory
from benchlab.analysis.tune_options import SubjectKind
from benchlab.cli import formats, thresholds
from benchlab.cli.app import console, progress
from benchlab.cli.measuring import Progress, claim, command_line
from benchlab.cli.options import (
    AllowConcurrentOption,
    ProgressFileOption,
    ProgressOption,
    QuietOption,
    ResultsOption,
    ThresholdOption,
)
from benchlab.cli.tune_options import (
    TuneAppSpecArgument,
    TuneBehindProxyOption,
    TuneBudgetOption,
    TuneCgroupOption,
    TuneCheckAnswerOption,
    TuneCheckBodyOption,
    TuneCheckOnlyOption,
    TuneCheckStatusOption,
    TuneCommandOption,
    TuneConnectionsOption,
    TuneCpusOption,
    TuneEnvFileOption,
    TuneEnvOption,
    TuneFactoryOption,
    TuneFmtOption,
    TuneGreenletsOption,
    TuneGridOption,
    TuneInterfaceOption,
    TuneMemoryOption,
    TuneOutputOption,
    TunePidOption,
    TuneProofOption,
    TunePythonOption,
    TuneQuickOption,
    TuneRateOption,
    TuneRequestOption,
    TuneRequestsFileOption,
    TuneResetBetweenOption,
    TuneResumeOption,
    TuneServersOption,
    TuneSetupOption,
    TuneSloP99MsOption,
    TuneThreadsOption,
    TuneUnitOption,
    TuneVerboseOption,
    TuneWithServicesOption,
    TuneWorkersOption,
)
from benchlab.core.errors import ExitCode, UserError
from benchlab.core.modes import Mode
from benchlab.load import RATE_TOOL, TOOLS, make_ready
from benchlab.recipe import allowed_cores
from benchlab.store import DEFAULT_RESULTS, Store
from benchlab.system.watch import WatchUnavailable, by_cgroup, by_pid, by_unit
from benchlab.tune.check_answer import StoredAnswer, read_answer
from benchlab.tune.command import parse_grid
from benchlab.tune.endpoint import is_url, parse_url
from benchlab.tune.proof import Replayed, held_text

if TYPE_CHECKING:
    from rich.console import Console

    from benchlab.analysis.summary import RunSummary
    from benchlab.cli.formats import Destination
    from benchlab.core.thresholds import Threshold
    from benchlab.runner import RunOutcome
    from benchlab.system.watch import Watch
    from benchlab.tune.plan import TuneRequest
    from benchlab.tune.prepare import PreparedTune


def tune(
    ctx: typer.Context,
    app_spec: TuneAppSpecArgument = None,
    command: TuneCommandOption = None,
    grid: TuneGridOption = None,
    pid: TunePidOption = None,
    cgroup: TuneCgroupOption = None,
    unit: TuneUnitOption = None,
    factory: TuneFactoryOption = False,
    quick: TuneQuickOption = False,
    check_only: TuneCheckOnlyOption = False,
    behind_proxy: TuneBehindProxyOption = False,
    verbose: TuneVerboseOption = False,
    python: TunePythonOption = None,
    interface: TuneInterfaceOption = None,
    request: TuneRequestOption = None,
    requests_file: TuneRequestsFileOption = None,
    check_status: TuneCheckStatusOption = 200,
    check_body: TuneCheckBodyOption = None,
    slo_p99_ms: TuneSloP99MsOption = 100.0,
    budget: TuneBudgetOption = 15.0,
    proof: TuneProofOption = PROOF_S,
    rate: TuneRateOption = None,
    resume: TuneResumeOption = False,
    env: TuneEnvOption = None,
    env_file: TuneEnvFileOption = None,
    with_services: TuneWithServicesOption = None,
    setup: TuneSetupOption = None,
    reset_between: TuneResetBetweenOption = None,
    servers: TuneServersOption = None,
    workers: TuneWorkersOption = None,
    threads: TuneThreadsOption = None,
    greenlets: TuneGreenletsOption = None,
    connections: TuneConnectionsOption = None,
    cpus: TuneCpusOption = None,
    memory: TuneMemoryOption = None,
    check_answer: TuneCheckAnswerOption = None,
    allow_concurrent: AllowConcurrentOption = False,
    results: ResultsOption = DEFAULT_RESULTS,
    fmt: TuneFmtOption = None,
    output: TuneOutputOption = None,
    quiet: QuietOption = False,
    threshold: ThresholdOption = None,
    progress_style: ProgressOption = "auto",
    progress_file: ProgressFileOption = None,
) -> None:
    """Find the server and settings that hold the most load under a latency target, and the
    command that deploys them: for your own ASGI/WSGI app, for any server you start with a
    command (--command, over a --grid of its knobs), or for an endpoint already running (a
    URL)."""
    progress.quiet = quiet
    from benchlab.tune.driver import run_tune

    # Refused before a tune, not after.
    where = formats.destination(fmt, output, formats.TUNE, reads=[results])
    shown = Progress(progress_style, progress_file).checked(where, results)
    _refuse_conflicts(interface, quick, rate, check_only, resume)
    bounds = _thresholds(threshold, quick, check_only)
    tune_request = _tune_request(ctx.params)
    # The app found and imported before the machine is claimed or a store made.
    prepared = _prepare(tune_request, verbose)
    if not check_only:  # a check sends no load: nothing to build for it
        make_ready(TOOLS[RATE_TOOL], progress.print)
    shared = claim(allow_concurrent)
    store = Store(results)
    done = run_tune(
        tune_request, store, shown.reporter(), command_line(), progress.print, resume=resume,
        shared=shared, prepared=prepared,
    )  # fmt: skip
    answer = tune_request.check_answer
    page = not (check_only or answer is not None)
    # A stored answer's check is its verdict alone, unless a report was asked for (-o, -f).
    summary = _summary(store, done.outcome, bounds)
    if answer is None or not where.on_terminal_table:
        _show_tune(summary, done.outcome, results, where, _page_stem(summary), page, shown.screen)
    if answer is not None:
        _judge_answer(answer, done.checked)
    _exit_as(done.outcome, summary)


def _exit_as(outcome: RunOutcome, summary: RunSummary) -> None:
    """An interrupted tune's exit (continue with --resume), or a failed threshold's."""
    if outcome.status == "interrupted":
        progress.print("interrupted: what was measured is kept; continue with --resume")
        raise typer.Exit(ExitCode.INTERRUPTED)
    if thresholds.say_failed(summary):
        raise typer.Exit(ExitCode.THRESHOLD)


def _thresholds(given: list[str] | None, quick: bool, check_only: bool) -> tuple[Threshold, ...]:
    """--threshold, judged on the answer: the replay that proved its rate, at that rate."""
    bounds = thresholds.given(given, {Mode.RATE})
    if bounds and (quick or check_only):
        raise UserError(
            "--threshold: it judges the replay that proves the answer, which "
            f"{'--quick' if quick else '--check-only'} does not run; drop one of the two"
        )
    return bounds


def _tune_request(given: dict[str, Any]) -> TuneRequest:
    """What was asked, read and checked (one line and exit 2 for a mistake): the requests,
    the app's own interpreter, the environment, the target; a stored answer's own candidate,
    target and latency target for --check-answer, unless given."""
    from benchlab.recipe.plan import most_workers
    from benchlab.recipe.schema import MAX_THREADS
    from benchlab.tune import arguments
    from benchlab.tune.app import app_python
    from benchlab.tune.plan import TuneRequest, default_connections
    from benchlab.tune.user_env import env_pairs, read_env_file

    g = dict(given)
    g["app_spec"] = _subject_given(g["app_spec"], g["command"])
    if is_url(g["app_spec"]) and not g["request"] and g["requests_file"] is None:
        g["request"] = [f"GET {parse_url(g['app_spec']).target}"]  # the URL's own request
    answer = _stored_answer(g["check_answer"], g["quick"] or g["check_only"] or g["rate"])
    target = Target(parse_cpus(g["cpus"]), parse_memory(g["memory"]))
    if answer is not None:
        g |= {"servers": answer.candidate, "slo_p99_ms": answer.slo_p99_ms,
              "workers": str(answer.workers), "threads": _count(answer.threads),
              "greenlets": _count(answer.threads)}  # fmt: skip
        target = target.over(answer.target)
    requests, echo = arguments.tune_requests(
        g["request"] or [], g["requests_file"], g["check_status"], g["check_body"]
    )
    python, why = app_python(g["app_spec"], Path.cwd(), g["python"], g["factory"])
    grid = parse_grid(g["grid"] or [])
    if grid and g["command"] is None:
        raise UserError("--grid: it sets the knobs of --command; give the command too")
    env_file = g["env_file"]
    return TuneRequest(
        app=g["app_spec"], python=python, python_source=why, interface=g["interface"],
        requests=tuple(requests), echo=echo,
        slo_p99_ms=g["slo_p99_ms"], budget_min=g["budget"], cwd=Path.cwd(), proof_s=g["proof"],
        rate=g["rate"], env=env_pairs(g["env"] or []),
        env_file=env_file.resolve() if env_file else None,
        env_from_file=read_env_file(env_file) if env_file else {},
        with_services=arguments.with_services(g["with_services"]),
        servers=g["servers"].split(",") if g["servers"] else None,
        workers=arguments.int_list(g["workers"], "--workers", most_workers(len(allowed_cores()))),
        threads=arguments.int_list(g["threads"], "--threads", MAX_THREADS),
        greenlets=arguments.int_list(g["greenlets"], "--greenlets", arguments.MAX_GREENLETS),
        connections=g["connections"] or default_connections(echo), factory=g["factory"],
        quick=g["quick"], setup=g["setup"],
        reset_between=g["reset_between"], check_only=g["check_only"], target=target,
        behind_proxy=g["behind_proxy"],
        check_answer=answer, command=g["command"], grid=grid,
        watch=_watch(g["pid"], g["cgroup"], g["unit"], g["app_spec"]),
    )  # fmt: skip


def _subject_given(app: str | None, command: str | None) -> str:
    """APP (or URL), or --command: one of them."""
    if app is not None and command is not None:
        raise UserError(
            f"{app}: give either APP (or URL) or --command, not both; a command that serves "
            "a Python app tunes it by its command"
        )
    if app is None and command is None:
        raise UserError(
            "give what to tune: APP (path/to/app.py:app), a URL (http://127.0.0.1:8080/) or "
            "--command 'TEMPLATE' (see benchlab tune --help)"
        )
    return app if app is not None else "command"


def _watch(pid: int | None, cgroup: str | None, unit: str | None, app: str) -> Watch | None:
    """An endpoint's processes on this machine, as --pid, --cgroup or --unit names them."""
    given = [(n, v) for n, v in (("--pid", pid), ("--cgroup", cgroup), ("--unit", unit)) if v]
    if not given:
        return None
    if len(given) > 1:
        raise UserError(f"{given[1][0]}: give one of --pid, --cgroup and --unit, not several")
    ((name, value),) = given
    if not is_url(app):
        raise UserError(f"{name}: it names an endpoint's processes; give its URL as well")
    try:
        if name == "--pid":
            return by_pid(int(value))
        return by_cgroup(str(value)) if name == "--cgroup" else by_unit(str(value))
    except WatchUnavailable as why:
        raise UserError(f"{name} {value}: {why}") from None


def _page_stem(summary: RunSummary) -> str:
    """What the tune's page is named after: the app's module, the URL's host, `command`."""
    tune = summary.options.tune
    if tune is None or tune.subject_kind is SubjectKind.PYTHON_APP:
        return Path(tune.given if tune is not None else "tune").stem
    return "command" if tune.subject_kind is SubjectKind.COMMAND else parse_url(tune.given).host


def _prepare(request: TuneRequest, verbose: bool) -> PreparedTune:
    from benchlab.tune.app import ProbeFailed
    from benchlab.tune.prepare import prepare_tune

    try:
        return prepare_tune(request)
    except ProbeFailed as failed:
        if verbose:
            sys.stderr.write(failed.traceback)
        else:
            failed.args = (f"{failed}; --verbose shows the traceback",)
        raise


def _count(value: int | None) -> str | None:
    return None if value is None else str(value)


def _stored_answer(path: Path | None, conflicting: bool) -> StoredAnswer | None:
    if path is None:
        return None
    if conflicting:
        raise UserError(
            "--check-answer: it replays a stored answer and nothing else; drop --quick, "
            "--check-only or --rate"
        )
    return read_answer(path)


def _judge_answer(answer: StoredAnswer, checked: Replayed | None) -> None:
    """The stored answer held here, or exit 1 (a threshold failed, as compare's)."""
    if checked is None or checked.trial is None:
        why = checked.problem if checked is not None else "no time left for the replay"
        raise UserError(f"--check-answer {answer.path}: not proved: {why}")
    if checked.missed is None:
        shown = held_text(checked.trial.windows_p99, checked.trial.latency_p99_ms)
        progress.print(f"check-answer: {answer.describe()} holds here ({shown})", markup=False)
        return
    progress.print(
        f"check-answer: {answer.describe()} no longer holds here: {checked.missed}",
        markup=False, style="red",
    )  # fmt: skip
    raise typer.Exit(ExitCode.REGRESSION)


def _refuse_conflicts(
    interface: str | None, quick: bool, rate: float | None, check_only: bool, resume: bool
) -> None:
    if interface not in (None, "asgi", "wsgi"):
        raise UserError(f"--interface '{interface}': use asgi or wsgi")
    for given, name in ((quick, "--quick"), (rate is not None, "--rate"), (resume, "--resume")):
        if check_only and given:
            raise UserError(f"{name}: --check-only measures nothing; drop one of the two")
    if quick and rate is not None:
        raise UserError(f"--rate {rate:g}: it is proved by replays at the rate, which --quick "
                        "skips; drop --quick")  # fmt: skip


def _summary(store: Store, outcome: RunOutcome, bounds: tuple[Threshold, ...]) -> RunSummary:
    """The tune's stored run, its --threshold judged on its answer."""
    from benchlab.analysis.summary import summarise
    from benchlab.stacks import CATALOGUE

    return thresholds.judged(summarise(store, outcome.run_id, catalogue=CATALOGUE), bounds)


def _show_tune(
    summary: RunSummary, outcome: RunOutcome, results: Path, where: Destination, stem: str,
    with_page: bool, screen: Console = console,
) -> None:  # fmt: skip
    """The tune's report where it was asked for (the table, or -f/-o's format: cli/formats.py
    decides, as for every command), and its HTML page beside the results (not for a check
    that measured nothing)."""
    from benchlab.report.exporters import EXPORTERS
    from benchlab.report.html import render_html
    from benchlab.report.terminal import render_table
    from benchlab.system.outputs import write_output

    page = results.parent / (re.sub(r"[^\w.-]+", "-", f"tune-{stem}") + ".html")
    if with_page:
        write_output(page, render_html(summary), "the tune's page")
    say = screen  # stdout, or stderr when it holds the stream (--progress json)
    if where.on_terminal_table:
        render_table(summary, screen)
    else:
        where.document(EXPORTERS[where.format].render(summary, False))
        if where.path is None:  # stdout holds the document alone; the run's line on stderr
            say = progress
    shown = f" · report: {page}" if with_page else ""
    say.print(
        f"run id: {outcome.run_id} ({outcome.status}) · results in {results}{shown}",
        markup=False, highlight=False,
    )  # fmt: skip
