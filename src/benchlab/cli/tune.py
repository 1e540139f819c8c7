"""benchlab tune: the server and settings that hold the most load for the user's own app."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from benchlab.analysis.capacity import PROOF_S
from benchlab.cli import formats
from benchlab.cli.app import console, emit, progress
from benchlab.cli.measuring import claim, command_line, reporter
from benchlab.cli.options import AllowConcurrentOption, QuietOption, ResultsOption
from benchlab.cli.tune_options import (
    TuneAppSpecArgument,
    TuneBudgetOption,
    TuneCheckBodyOption,
    TuneCheckOnlyOption,
    TuneCheckStatusOption,
    TuneConnectionsOption,
    TuneEnvFileOption,
    TuneEnvOption,
    TuneFactoryOption,
    TuneFmtOption,
    TuneGreenletsOption,
    TuneInterfaceOption,
    TuneOutputOption,
    TuneProofOption,
    TunePythonOption,
    TuneQuickOption,
    TuneRateOption,
    TuneRequestOption,
    TuneRequestsFileOption,
    TuneResumeOption,
    TuneServersOption,
    TuneSetupOption,
    TuneSloP99MsOption,
    TuneThreadsOption,
    TuneVerboseOption,
    TuneWithServicesOption,
    TuneWorkersOption,
)
from benchlab.core.errors import ExitCode, UserError
from benchlab.load import RATE_TOOL, TOOLS, make_ready
from benchlab.recipe import allowed_cores
from benchlab.store import DEFAULT_RESULTS, Store

if TYPE_CHECKING:
    from benchlab.report.exporters import Exporter
    from benchlab.runner import RunOutcome


def tune(
    app_spec: TuneAppSpecArgument,
    factory: TuneFactoryOption = False,
    quick: TuneQuickOption = False,
    check_only: TuneCheckOnlyOption = False,
    verbose: TuneVerboseOption = False,
    python: TunePythonOption = sys.executable,
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
    servers: TuneServersOption = None,
    workers: TuneWorkersOption = None,
    threads: TuneThreadsOption = None,
    greenlets: TuneGreenletsOption = None,
    connections: TuneConnectionsOption = 256,
    allow_concurrent: AllowConcurrentOption = False,
    results: ResultsOption = DEFAULT_RESULTS,
    fmt: TuneFmtOption = None,
    output: TuneOutputOption = None,
    quiet: QuietOption = False,
) -> None:
    """Find the server and settings that hold the most load for your own ASGI/WSGI app
    under a latency target, and the command that deploys them."""
    progress.quiet = quiet
    from benchlab.recipe.plan import most_workers
    from benchlab.recipe.schema import MAX_THREADS
    from benchlab.report.exporters import choose
    from benchlab.tune import arguments
    from benchlab.tune.app import ProbeFailed
    from benchlab.tune.driver import TuneRequest, run_tune
    from benchlab.tune.user_env import env_pairs, read_env_file

    exporter = choose(fmt, output, allowed=formats.TUNE)
    _refuse_conflicts(interface, quick, rate, output, check_only, resume)
    requests = arguments.tune_requests(request or [], requests_file, check_status, check_body)
    tune_request = TuneRequest(
        app=app_spec, python=python, interface=interface, requests=tuple(requests),
        slo_p99_ms=slo_p99_ms, budget_min=budget, cwd=Path.cwd(), proof_s=proof,
        rate=rate, env=env_pairs(env or []),
        env_file=env_file.resolve() if env_file else None,
        env_from_file=read_env_file(env_file) if env_file else {},
        with_services=arguments.with_services(with_services),
        servers=servers.split(",") if servers else None,
        workers=arguments.int_list(workers, "--workers", most_workers(len(allowed_cores()))),
        threads=arguments.int_list(threads, "--threads", MAX_THREADS),
        greenlets=arguments.int_list(greenlets, "--greenlets", arguments.MAX_GREENLETS),
        connections=connections, factory=factory, quick=quick, setup=setup,
        check_only=check_only,
    )  # fmt: skip
    if not check_only:  # a check sends no load: nothing to build for it
        make_ready(TOOLS[RATE_TOOL], progress.print)
    shared = claim(allow_concurrent)
    store = Store(results)
    try:
        done = run_tune(
            tune_request, store, reporter(), command_line(), progress.print, resume=resume,
            shared=shared,
        )  # fmt: skip
    except ProbeFailed as failed:
        if verbose:
            sys.stderr.write(failed.traceback)
        else:
            failed.args = (f"{failed}; --verbose shows the traceback",)
        raise
    _show_tune(done.outcome, store, results, exporter, output, app_spec, not check_only)
    if done.outcome.status == "interrupted":
        progress.print("interrupted: what was measured is kept; continue with --resume")
        raise typer.Exit(ExitCode.INTERRUPTED)


def _refuse_conflicts(
    interface: str | None, quick: bool, rate: float | None, output: Path | None,
    check_only: bool, resume: bool,
) -> None:  # fmt: skip
    if interface not in (None, "asgi", "wsgi"):
        raise UserError(f"--interface '{interface}': use asgi or wsgi")
    for given, name in ((quick, "--quick"), (rate is not None, "--rate"), (resume, "--resume")):
        if check_only and given:
            raise UserError(f"{name}: --check-only measures nothing; drop one of the two")
    if quick and rate is not None:
        raise UserError(f"--rate {rate:g}: it is proved by replays at the rate, which --quick "
                        "skips; drop --quick")  # fmt: skip
    if output is not None and not output.parent.is_dir():
        raise UserError(
            f"-o {output}: no directory {output.parent}; create it or choose another path"
        )


def _show_tune(
    outcome: RunOutcome, store: Store, results: Path, exporter: Exporter, output: Path | None,
    app_spec: str, with_page: bool,
) -> None:  # fmt: skip
    """The tune's report where it was asked for, and its HTML page beside the results (not
    for a check that measured nothing)."""
    from benchlab.analysis.summary import summarise
    from benchlab.report.exporters import write
    from benchlab.report.html import render_html
    from benchlab.report.terminal import render_table
    from benchlab.system.outputs import write_output

    summary = summarise(store, outcome.run_id)
    page = results.parent / (re.sub(r"[^\w.-]+", "-", f"tune-{Path(app_spec).stem}") + ".html")
    if with_page:
        write_output(page, render_html(summary), "the tune's page")
    say = console
    if exporter.name == "table" and output is None:
        render_table(summary, console)
    elif output is None:  # stdout holds the document alone; the run's line goes to stderr
        emit(exporter.render(summary, False))
        say = progress
    else:
        write(exporter.render(summary, False), output)
    shown = f" · report: {page}" if with_page else ""
    say.print(
        f"run id: {outcome.run_id} ({outcome.status}) · results in {results}{shown}",
        markup=False, highlight=False,
    )  # fmt: skip
