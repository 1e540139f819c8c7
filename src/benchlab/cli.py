"""The benchlab command line: run, report, stacks, doctor, build."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from benchlab import __version__
from benchlab.errors import BenchlabError, RunInterrupted, UserError
from benchlab.load import RATE_TOOL, TOOLS, make_ready
from benchlab.recipe import (
    DEFAULT_RECIPE,
    allowed_cores,
    apply_overrides,
    build_plan,
    default_cores,
    load_recipe,
    resolve_recipe,
    unserved,
)
from benchlab.stacks import CATALOGUE, catalogue_markdown
from benchlab.store import DEFAULT_RESULTS, Store
from benchlab.text import SafeConsole, printable

if TYPE_CHECKING:
    from benchlab.recipe import CoreAssignment, Plan, Recipe
    from benchlab.report.exporters import Exporter
    from benchlab.runner import Reporter, RunOutcome
    from benchlab.scenarios import Expectation

# Commands import the heavier modules they need inside them: `--help`, `stacks` and `doctor`
# start without the runner, the reports and matplotlib (together about 0.7 s on 2 cores).
HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}
# Plain help (click's layout): every option with its own placeholder (N, FILE, table|md),
# flags with none, paragraphs joined, no box to wrap.
app = typer.Typer(
    help="Benchmark web stacks fairly: real services, verified responses, honest statistics.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings=HELP_OPTIONS,
    rich_markup_mode=None,
)
# typer writes a Python type after an argument's name (RUN <str>) and braces around a required
# one in the usage line ({RUN_A}); the help line says what each is, and [RUN] marks optional.
typer.core.TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]
typer.core.TyperArgument._usage_display_name = (  # type: ignore[method-assign]
    lambda self: self.display_name_raw if self.required else f"[{self.display_name_raw}]"
)
# Piped or logged output (CI, `| cat`) is 100 columns wide unless COLUMNS says otherwise,
# not rich's 80 (its tables would wrap into unreadable columns). NO_COLOR is rich's own.
PIPED_WIDTH = 100
console = (
    SafeConsole()
    if sys.stdout.isatty() or "COLUMNS" in os.environ
    else SafeConsole(width=PIPED_WIDTH)
)

ResultsOption = Annotated[
    Path, typer.Option("--results", metavar="FILE", help="The SQLite results store.")
]
AllowConcurrentOption = Annotated[
    bool,
    typer.Option(
        "--allow-concurrent",
        metavar="",
        help="Run even if another benchlab runs on this machine (results say so).",
    ),
]
RunArgument = "a run id (or its first characters), latest, or latest~N (N runs before it)"

RunRecipeNameArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="RECIPE",
        help="A recipe: a TOML file, or one of benchlab's by name (quick, seed-000, ...); "
        "default quick.",
    ),
]

RunDurationOption = Annotated[
    int | None,
    typer.Option(metavar="S", min=1, help="Seconds per trial, for every load profile."),
]

RunConnectionsOption = Annotated[
    int | None,
    typer.Option(metavar="C", min=1, help="Connections, for every load profile."),
]

RunWarmupOption = Annotated[
    int | None,
    typer.Option(
        metavar="S",
        min=0,
        help="Seconds of warm-up load before a launch's first trial of each scenario "
        "(0: none), for the whole recipe.",
    ),
]

RunPointOption = Annotated[
    list[str] | None,
    typer.Option("--point", metavar="NAME", help="Run only this named point (repeatable)."),
]

RunHtmlOption = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help="Write the HTML report here (default: RECIPE-NAME.html beside the results).",
    ),
]

RunDryRunOption = Annotated[
    bool,
    typer.Option("--dry-run", metavar="", help="Print the plan and its time estimate only."),
]

TuneAppSpecArgument = Annotated[
    str,
    typer.Argument(
        metavar="APP",
        help="path/to/module.py:app, package.module:app, or a factory: "
        "package.module:create_app() (literal arguments allowed).",
    ),
]

TuneFactoryOption = Annotated[
    bool,
    typer.Option("--factory", help="APP names a callable that returns the app (no arguments)."),
]

TuneQuickOption = Annotated[
    bool,
    typer.Option(
        "--quick",
        help="The first pass only (about 10 s a candidate): candidates ranked by their "
        "closed-loop throughput, no capacity search; the answer is provisional.",
    ),
]

TuneVerboseOption = Annotated[
    bool, typer.Option("--verbose", "-v", help="Show the traceback when the app fails to load.")
]

TunePythonOption = Annotated[
    str,
    typer.Option(
        metavar="PATH", help="The interpreter of your app's environment (default: this one)."
    ),
]

TuneInterfaceOption = Annotated[
    str | None, typer.Option(metavar="asgi|wsgi", help="Default: detected.")
]

TuneRequestOption = Annotated[
    list[str] | None,
    typer.Option(
        "--request",
        metavar="'METHOD PATH'",
        help="A request to send (repeatable; default 'GET /').",
    ),
]

TuneRequestsFileOption = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help="A TOML file of [[request]] tables: method, path, headers, body, weight, "
        "status, contains, json_key.",
    ),
]

TuneCheckStatusOption = Annotated[
    int, typer.Option(metavar="CODE", help="The status every --request must get.")
]

TuneCheckBodyOption = Annotated[
    str | None, typer.Option(metavar="TEXT", help="Text every --request's answer must contain.")
]

TuneSloP99MsOption = Annotated[
    float, typer.Option(metavar="MS", min=0.1, help="The latency target: p99, ms.")
]

TuneBudgetOption = Annotated[
    float,
    typer.Option(metavar="MIN", min=1, max=24 * 60, help="Minutes the whole search may take."),
]

TuneResumeOption = Annotated[
    bool,
    typer.Option(
        "--resume",
        metavar="",
        help="Continue the last unfinished tune of this app and requests.",
    ),
]

TuneEnvOption = Annotated[
    list[str] | None,
    typer.Option("--env", metavar="KEY=VALUE", help="For the app (repeatable)."),
]

TuneEnvFileOption = Annotated[
    Path | None, typer.Option(metavar="FILE", help="A file of KEY=VALUE lines.")
]

TuneSetupOption = Annotated[
    str | None,
    typer.Option(
        "--setup",
        metavar="COMMAND",
        help="A shell command run once after the --with services start, before the first "
        "candidate (e.g. 'python manage.py migrate'): in this directory, with the app's "
        "environment and the services' addresses.",
    ),
]

TuneWithServicesOption = Annotated[
    str | None,
    typer.Option(
        "--with",
        metavar="SERVICES",
        help="Services benchlab starts for the app, and the variables that get their "
        "addresses: postgres[=VAR],mariadb[=VAR],redis[=VAR] (default DATABASE_URL, "
        "REDIS_URL).",
    ),
]

TuneServersOption = Annotated[
    str | None, typer.Option(metavar="LIST", help="Only these servers, e.g. gunicorn,waitress.")
]

TuneWorkersOption = Annotated[
    str | None, typer.Option(metavar="LIST", help="Worker counts to try, e.g. 1,2,3.")
]

TuneThreadsOption = Annotated[
    str | None,
    typer.Option(metavar="LIST", help="Threads per worker to try (default 4,16,64)."),
]

TuneGreenletsOption = Annotated[
    str | None,
    typer.Option(metavar="LIST", help="Greenlets per gevent worker to try (default 100,1000)."),
]

TuneConnectionsOption = Annotated[
    int,
    typer.Option(metavar="C", min=1, max=100_000, help="The most connections the load may open."),
]

TuneFmtOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        "-f",
        metavar="table|md|json|html",
        help="Default: from the -o file's extension, else table.",
    ),
]

TuneOutputOption = Annotated[
    Path | None,
    typer.Option("-o", "--output", metavar="FILE", help="Write the report to this file."),
]


def _print_version(value: bool) -> None:
    if value:
        print(f"benchlab {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    no_color: Annotated[
        bool, typer.Option("--no-color", help="No colours (as NO_COLOR=1 in the environment).")
    ] = False,
) -> None:
    """Benchmark web stacks fairly: real services, verified responses, honest statistics.

    Start with `benchlab run` (the quick recipe), then `benchlab report` to see a stored run
    again, `benchlab runs` to list them, `benchlab compare` to compare two."""
    if no_color:
        console.no_color = True


# Greenlets are cheap (a few KiB each): ten times the threads a worker may have.
MAX_GREENLETS = 100_000
# The most rounds a run under --budget gives a pair still undecided (when the recipe sets no
# max_trials): a 10 % difference under this VM's noise is decided in about ten.
BUDGET_MAX_TRIALS = 40


def _budgeted(recipe: Recipe, trials_given: bool) -> Recipe:
    """A recipe run under --budget: base rounds only up to the first at which a decision can
    be taken (the rounds after go to the pairs still undecided), up to max_trials."""
    from benchlab.analysis.sequential import FIRST_DECISIVE_ROUND

    update: dict[str, int] = {}
    if not trials_given and recipe.trials > FIRST_DECISIVE_ROUND:
        update["trials"] = FIRST_DECISIVE_ROUND
    if recipe.max_trials is None:
        update["max_trials"] = max(recipe.trials, BUDGET_MAX_TRIALS)
    return recipe.model_copy(update=update)


RunResumeOption = Annotated[
    bool,
    typer.Option(
        "--resume",
        metavar="",
        help="Continue an interrupted, abandoned or failed run, as it was planned: RECIPE is "
        "then the run (its id, latest~N, or a recipe's name), by default the latest such run; "
        "its finished trials are kept.",
    ),
]
RunYesOption = Annotated[
    bool, typer.Option("--yes", "-y", metavar="", help="Run a plan over an hour without asking.")
]
RunBudgetOption = Annotated[
    float | None,
    typer.Option(
        metavar="MIN",
        min=0.5,
        help="Stop when the ranking is decided (every adjacent pair separated, or a tie "
        "within min_effect_pct) or after MIN minutes; rounds after the recipe's go only "
        f"to undecided pairs, up to max_trials (default {BUDGET_MAX_TRIALS}).",
    ),
]


@app.command()
def run(
    recipe_name: RunRecipeNameArgument = None,
    duration: RunDurationOption = None,
    trials: Annotated[int | None, typer.Option(metavar="N", min=1, help="Trials per cell.")] = None,
    connections: RunConnectionsOption = None,
    warmup: RunWarmupOption = None,
    point: RunPointOption = None,
    results: ResultsOption = DEFAULT_RESULTS,
    html: RunHtmlOption = None,
    dry_run: RunDryRunOption = False,
    allow_concurrent: AllowConcurrentOption = False,
    yes: RunYesOption = False,
    budget: RunBudgetOption = None,
    resume: RunResumeOption = False,
) -> None:
    """Run a recipe: verify every cell, measure interleaved trials, store them, show the table
    and write the HTML report."""
    from benchlab.estimates import Costs, plan_lines, plan_seconds
    from benchlab.runner import SessionOptions, run_recipe

    if resume:
        given = {"--duration": duration, "--trials": trials, "--connections": connections,
                 "--warmup": warmup, "--point": point, "--budget": budget}  # fmt: skip
        changed = [option for option, value in given.items() if value]
        if changed:
            raise UserError(
                f"--resume continues a run as it was planned; {changed[0]} would change it"
            )
        plan, run_id, deadline_s = _resumed_plan(recipe_name, results)
    else:
        plan, deadline_s = _planned(
            recipe_name or DEFAULT_RECIPE, duration, trials, connections, warmup, point, budget
        )
        run_id = None
    budget_min = None if deadline_s is None else deadline_s / 60
    runnable = [c for c in plan.cells if CATALOGUE[c.stack].availability().ok]
    costs = Costs.load()
    for line in plan_lines(runnable, plan.recipe, costs, budget_min):
        console.print(line, markup=False, highlight=False)
    for line in unserved(plan.recipe):
        console.print(line, markup=False, highlight=False)
    if dry_run:
        return
    _confirm_long(plan_seconds(runnable, plan.recipe, costs, budget_min), yes)
    _check_ready(plan)
    page = _html_page(html, results, plan)
    shared = _claim(allow_concurrent)
    if plan.recipe.hosts:
        from benchlab.hosts.topology import preflight

        preflight(plan)
    options = SessionOptions(
        command=_command_line(), shared_machine=shared, deadline_s=deadline_s, resume=run_id
    )
    store = Store(results)
    outcome = run_recipe(plan, store, _reporter(), options)
    _show_run(store, outcome, results, page)


def _planned(
    recipe_name: str, duration: int | None, trials: int | None, connections: int | None,
    warmup: int | None, point: list[str] | None, budget: float | None,
) -> tuple[Plan, float | None]:  # fmt: skip
    """The recipe's plan with the command line's overrides, and its deadline (--budget)."""
    recipe = resolve_recipe(recipe_name)
    loaded, text = load_recipe(recipe)
    loaded = apply_overrides(
        loaded, duration=duration, trials=trials, connections=connections, warmup=warmup,
        points=point, path=recipe,
    )  # fmt: skip
    if budget is not None:
        loaded = _budgeted(loaded, trials_given=trials is not None)
    plan = build_plan(recipe, loaded, text)
    if not plan.cells:
        raise UserError(f"{recipe}: the matrix is empty: every cell is excluded; check 'exclude'")
    return plan, None if budget is None else budget * 60


def _resumed_plan(wanted: str | None, results: Path) -> tuple[Plan, str, float | None]:
    """The plan an unfinished run ran, to continue it."""
    from benchlab.runner.resume import resumable

    store = Store(results, create=False)
    found = resumable(store, wanted)
    kept = sum(len(store.trials(cell["id"])) for cell in store.cells(found.run_id))
    store.close()
    console.print(
        f"resuming run {found.run_id}: its {kept} finished trial(s) kept", markup=False,
        highlight=False,
    )  # fmt: skip
    return found.plan, found.run_id, found.deadline_s


def _show_run(store: Store, outcome: RunOutcome, results: Path, page: Path) -> None:
    """The table, and the HTML page (written last: the run is stored already)."""
    from benchlab.report.summary import summarise
    from benchlab.report.terminal import render_table

    summary = summarise(store, outcome.run_id)
    render_table(summary, console)
    console.print(f"run id: {outcome.run_id} ({outcome.status}) · results in {results}")
    from benchlab.report.html import render_html  # matplotlib: not for a dry run or a refusal

    try:
        page.write_text(render_html(summary))
    except OSError as exc:  # the run is stored: say how to get its report another way
        raise UserError(
            f"--html {page}: cannot write it ({exc.strerror}); the run is stored: "
            f"benchlab report {outcome.run_id} --format html -o FILE"
        ) from None
    console.print(f"report: {page} (benchlab report {outcome.run_id} --format html|md|csv|json)")
    if outcome.status == "interrupted":
        raise typer.Exit(130)


# A plan longer than this is run only when confirmed: a list where a value was meant can
# turn a recipe into days of load on a shared machine.
CONFIRM_ABOVE_S = 3600


def _confirm_long(seconds: float, yes: bool) -> None:
    """A plan over an hour runs on --yes, or on a 'y' typed at a terminal."""
    from benchlab.estimates import minutes

    if seconds <= CONFIRM_ABOVE_S or yes:
        return
    question = f"the plan takes about {minutes(seconds)}, over an hour"
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UserError(f"{question}; pass --yes to run it (in CI too), or trim the recipe")
    if not typer.confirm(f"{question}: run it?", default=False):
        raise UserError(f"{question}: not started (--yes runs it without asking)")


def _check_ready(plan: Plan) -> None:
    """What the run needs on this machine, checked (or built) before anything starts."""
    if shutil.which("taskset") is None:
        raise UserError("'taskset' is not installed: apt-get install util-linux")
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        raise UserError(
            "'setpriv' is not installed (benchlab, as root, runs services and stacks as "
            "unprivileged users through it): apt-get install util-linux"
        )
    if not plan.recipe.hosts:
        _check_stack_user()
    for name in sorted({c.tool for c in plan.cells}):
        make_ready(TOOLS[name], console.print)
    if not plan.recipe.hosts and set(plan.cores.server) & set(plan.cores.load):
        console.print(
            "WARNING: server and load tool share a core on this machine: the figures will "
            "measure their fight for it, not the server",
            style="yellow",
        )


def _check_stack_user() -> None:
    """As root, the stacks run as an unprivileged user: it must be able to run benchlab's
    Python and import its apps (a Python under /root, or an install there, it cannot)."""
    from benchlab.process import STACK_USER_VARIABLE, as_user, stack_user

    user = stack_user()
    if user is None:
        return
    # Through another program, as the stacks are started (taskset): its exec is the check.
    env = shutil.which("env") or "/usr/bin/env"
    argv = [*as_user(user), env, sys.executable, "-I", "-c", "import benchlab.apps"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode == 0:
        return
    chain = reversed(Path(sys.executable).resolve().parents)
    closed = next((str(d) for d in chain if not d.stat().st_mode & 0o001), None)
    where = f" ({closed} is closed to others)" if closed else ""
    raise UserError(
        f"benchlab is root and runs its stacks as {user}, which cannot run {sys.executable}"
        f"{where}: install benchlab with a Python every user can run (./lab does, when it is "
        f"root), run benchlab as a normal user, or set {STACK_USER_VARIABLE}=root to keep the "
        "stacks root"
    )


def _html_page(html: Path | None, results: Path, plan: Plan) -> Path:
    """Where the report goes, checked before the run, not after it: it is its last step."""
    page = html or results.parent / (re.sub(r"[^\w.-]+", "-", plan.recipe.name) + ".html")
    try:
        page.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--html {page}: cannot create its directory ({exc.strerror})") from None
    if page.is_dir():
        raise UserError(
            f"--html {page}: is a directory; give a file name such as {page}/report.html"
        )
    return page


def _claim(allow_concurrent: bool) -> bool:
    """This machine for one run (stale runs cleaned first); whether another run shares it."""
    from benchlab.recovery import claim_machine

    return claim_machine(allow_concurrent, console.print)


def _reporter() -> Reporter:
    from benchlab.report.progress import BarReporter, LineReporter

    return BarReporter(console) if console.is_terminal else LineReporter(console)


def _command_line() -> str:
    """The command as the user typed it, stored with the run to reproduce it: what it was
    given as secrets (tune's --env values, --setup) hidden."""
    from benchlab.tune.user_env import masked_command

    return "benchlab " + masked_command(sys.argv[1:])


def _with_services(text: str | None) -> dict[str, str]:
    from benchlab.tune.driver import DEFAULT_ENV_NAMES, SERVICES

    found: dict[str, str] = {}
    for part in filter(None, (text or "").split(",")):
        service, _, variable = part.strip().partition("=")
        if service not in SERVICES:
            raise UserError(
                f"--with '{service}': benchlab starts {', '.join(SERVICES)}; e.g. "
                "--with postgres=DATABASE_URL,redis=REDIS_URL"
            )
        found[service] = variable or DEFAULT_ENV_NAMES[service]
    if "postgres" in found and "mariadb" in found:
        raise UserError("--with: give postgres or mariadb, not both")
    return found


def _int_list(text: str | None, option: str, most: int) -> list[int] | None:
    if text is None:
        return None
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UserError(f"{option} {text!r}: give whole numbers, e.g. {option} 1,2,4") from None
    if not values or min(values) < 1:
        raise UserError(f"{option} {text!r}: give numbers of 1 or more, e.g. {option} 1,2,4")
    if max(values) > most or len(values) > 32:
        raise UserError(
            f"{option} {text!r}: at most 32 values, each at most {most:,} (each value is a "
            "candidate of its own, and each thread or process costs memory)"
        )
    return values


@app.command()
def tune(
    app_spec: TuneAppSpecArgument,
    factory: TuneFactoryOption = False,
    quick: TuneQuickOption = False,
    verbose: TuneVerboseOption = False,
    python: TunePythonOption = sys.executable,
    interface: TuneInterfaceOption = None,
    request: TuneRequestOption = None,
    requests_file: TuneRequestsFileOption = None,
    check_status: TuneCheckStatusOption = 200,
    check_body: TuneCheckBodyOption = None,
    slo_p99_ms: TuneSloP99MsOption = 100.0,
    budget: TuneBudgetOption = 15.0,
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
) -> None:
    """Find the server and settings that hold the most load for your own ASGI/WSGI app
    under a latency target, and the command that deploys them."""
    from benchlab.recipe.plan import most_workers
    from benchlab.recipe.schema import MAX_THREADS
    from benchlab.report.exporters import choose
    from benchlab.tune.app import ProbeFailed
    from benchlab.tune.driver import TuneRequest, run_tune
    from benchlab.tune.user_env import env_pairs, read_env_file

    exporter = choose(fmt, output, allowed=("table", "md", "json", "html"))
    if interface not in (None, "asgi", "wsgi"):
        raise UserError(f"--interface '{interface}': use asgi or wsgi")
    requests = _tune_requests(request or [], requests_file, check_status, check_body)
    tune_request = TuneRequest(
        app=app_spec, python=python, interface=interface, requests=tuple(requests),
        slo_p99_ms=slo_p99_ms, budget_min=budget, cwd=Path.cwd(),
        env=env_pairs(env or []),
        env_file=env_file.resolve() if env_file else None,
        env_from_file=read_env_file(env_file) if env_file else {},
        with_services=_with_services(with_services),
        servers=servers.split(",") if servers else None,
        workers=_int_list(workers, "--workers", most_workers(len(allowed_cores()))),
        threads=_int_list(threads, "--threads", MAX_THREADS),
        greenlets=_int_list(greenlets, "--greenlets", MAX_GREENLETS), connections=connections,
        factory=factory, quick=quick, setup=setup,
    )  # fmt: skip
    if output is not None and not output.parent.is_dir():
        raise UserError(
            f"-o {output}: no directory {output.parent}; create it or choose another path"
        )
    make_ready(TOOLS[RATE_TOOL], console.print)
    shared = _claim(allow_concurrent)
    store = Store(results)
    try:
        done = run_tune(
            tune_request, store, _reporter(), _command_line(), console.print, resume=resume,
            shared=shared,
        )  # fmt: skip
    except ProbeFailed as failed:
        if verbose:
            sys.stderr.write(failed.traceback)
        else:
            failed.args = (f"{failed}; --verbose shows the traceback",)
        raise
    _show_tune(done.outcome, store, results, exporter, output, app_spec)
    if done.outcome.status == "interrupted":
        console.print("interrupted: what was measured is kept; continue with --resume")
        raise typer.Exit(130)


def _tune_requests(
    given: list[str], requests_file: Path | None, status: int, body: str | None
) -> list[Expectation]:
    from benchlab.tune.requests import load_requests, parse_request

    requests = [parse_request(r, status, body) for r in given]
    if requests_file is not None:
        requests += load_requests(requests_file)
    return requests or [parse_request("GET /", status, body)]


def _show_tune(
    outcome: RunOutcome, store: Store, results: Path, exporter: Exporter, output: Path | None,
    app_spec: str,
) -> None:  # fmt: skip
    """The tune's report where it was asked for, and its HTML page beside the results."""
    from benchlab.report.exporters import write
    from benchlab.report.html import render_html
    from benchlab.report.summary import summarise
    from benchlab.report.terminal import render_table

    summary = summarise(store, outcome.run_id)
    page = results.parent / (re.sub(r"[^\w.-]+", "-", f"tune-{Path(app_spec).stem}") + ".html")
    page.write_text(render_html(summary))
    if exporter.name == "table" and output is None:
        render_table(summary, console)
    elif output is None:
        sys.stdout.write(exporter.render(summary, False))
    else:
        write(exporter.render(summary, False), output)
    console.print(
        f"run id: {outcome.run_id} ({outcome.status}) · results in {results} · "
        f"report: {page}",
        markup=False, highlight=False,
    )  # fmt: skip


@app.command()
def report(
    run_id: Annotated[str | None, typer.Argument(metavar="RUN", help=RunArgument)] = None,
    results: ResultsOption = DEFAULT_RESULTS,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            metavar="table|md|html|json|csv",
            help="Default: from the -o file's extension, else table.",
        ),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", metavar="FILE", help="Write to this file.")
    ] = None,
    wide: Annotated[
        bool,
        typer.Option(
            "--wide",
            metavar="",
            help="The table with every column, as wide as it needs (default: fits 100 columns).",
        ),
    ] = False,
) -> None:
    """Report a stored run (the latest by default): the table, md, html, json or csv."""
    from benchlab.report.exporters import choose, write
    from benchlab.report.summary import summarise
    from benchlab.report.terminal import render_table

    exporter = choose(fmt, output)
    if output is not None and not output.parent.is_dir():
        raise UserError(
            f"-o {output}: cannot write it (no directory {output.parent}); create it or choose"
            " another path"
        )
    summary = summarise(Store(results, create=False), run_id)
    if output is None:
        if exporter.name == "table":
            render_table(summary, console, wide)
        else:
            sys.stdout.write(exporter.render(summary, wide))
        return
    write(exporter.render(summary, wide), output)
    console.print(f"wrote {output} ({exporter.name})", markup=False, highlight=False)


@app.command()
def recipes() -> None:
    """benchlab's own recipes, by the name `run` takes, with the question each answers."""
    from benchlab.recipe.files import bundled_recipes

    for path in bundled_recipes():
        recipe, _ = load_recipe(path)
        console.print(path.stem, markup=False, highlight=False)
        question = recipe.question or "(no question: see the file)"
        for line in textwrap.wrap(question, max(console.width - 4, 40)):
            console.print(f"    {line}", markup=False, highlight=False)
    console.print("run one: benchlab run NAME (a unique prefix is enough: seed-000)")


@app.command()
def runs(
    results: ResultsOption = DEFAULT_RESULTS,
    fmt: Annotated[
        str, typer.Option("--format", "-f", metavar="table|json", help="How to write them.")
    ] = "table",
) -> None:
    """The runs in the store, latest first: id, recipe, status, time, machine, commit."""
    import json

    if fmt not in ("table", "json"):
        raise UserError(f"--format '{fmt}' is not known; use table or json")
    store = Store(results, create=False)
    rows = []
    for age, row in enumerate(store.runs()):
        machine = json.loads(row["machine"] or "{}")
        rows.append(
            {
                "id": row["id"],
                "name": "latest" if age == 0 else f"latest~{age}",
                "recipe": row["recipe_name"],
                "status": row["status"],
                "started_at": row["started_at"],
                "ended_at": row["ended_at"],
                "machine": f"{machine.get('cpu', '?')}, {machine.get('cores', '?')} cores",
                "git_commit": row["git_commit"],
                "cells": len(store.cells(row["id"])),
            }
        )
    if fmt == "json":
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    if not rows:
        console.print(f"no run in {results} yet; start one with: benchlab run")
        return
    from benchlab.report.terminal import Layout, fit_widths, text_table

    layout = [
        Layout("id", wrap=False), Layout("name", wrap=False), Layout("recipe", least=10),
        Layout("status", wrap=False), Layout("started (UTC)", wrap=False), Layout("machine"),
        Layout("commit", wrap=False),
    ]  # fmt: skip
    lines = []
    for row in rows:
        commit = row["git_commit"] or "–"
        short = commit[:8] + ("+dirty" if commit.endswith("+dirty") else "")
        started = (row["started_at"] or "").replace("T", " ")[:16]
        lines.append(
            [row["id"], row["name"], row["recipe"], row["status"], started, row["machine"], short]
        )
    console.print(text_table(layout, lines, fit_widths(layout, lines, console.width)))


@app.command()
def stacks(
    fmt: Annotated[
        str, typer.Option("--format", "-f", metavar="table|md", help="How to write it.")
    ] = "table",
) -> None:
    """The catalogue: every stack, its scenarios, and whether it can run here."""
    if fmt == "md":
        sys.stdout.write(catalogue_markdown())
        return
    if fmt != "table":
        raise UserError(f"--format '{fmt}' is not known; use table or md")
    from benchlab.report.terminal import Layout, fit_widths, text_table

    wide = console.width >= 140
    # A stack's name is what a recipe needs: never wrapped or cut.
    layout = [Layout("stack", wrap=False), Layout("framework · server")]
    layout += [Layout("worker model")] if wide else []
    layout += [Layout("scenarios"), Layout("status")]
    rows, styles, notes = [], [], []
    for stack in CATALOGUE.values():
        available = stack.availability()
        if available.ok:
            status = "available" + (f" ({stack.note})" if stack.note else "")
        else:
            notes.append(f"{stack.name}: {available.reason}; fix: {available.fix}")
            status = f"unavailable [{len(notes)}]"
        row = [stack.name, f"{stack.framework} · {stack.server}"]
        row += [stack.worker_model] if wide else []
        rows.append([*row, ", ".join(stack.scenarios), status])
        styles.append(None if available.ok else "red")
    console.print(text_table(layout, rows, fit_widths(layout, rows, console.width), styles))
    for number, note in enumerate(notes, 1):
        console.print(f"[{number}] {note}", markup=False, highlight=False)
    for line in _unserved_lines():
        console.print(line, markup=False, highlight=False)


def _unserved_lines() -> list[str]:
    """Which available stacks do not serve which scenarios, and why: a line per reason."""
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for stack in CATALOGUE.values():
        if not stack.availability().ok:
            continue
        for why, scenarios in stack.unserved_reasons().items():
            grouped.setdefault((why, tuple(scenarios)), []).append(stack.name)
    return [
        f"not {', '.join(scenarios)} on {', '.join(names)}: {why}"
        for (why, scenarios), names in grouped.items()
    ]


@app.command()
def doctor(
    hosts: Annotated[
        Path | None,
        typer.Option(
            "--hosts", metavar="RECIPE",
            help="Also check every host of this recipe's [hosts]: reach, tools, versions, "
            "cores, clock.",
        ),
    ] = None,
) -> None:  # fmt: skip
    """Check this machine: tools, cores, CPU frequency scaling, pinning; clean up after a
    benchlab that was killed (its processes, directories, namespaces, what it left on SSH
    hosts; its run marked abandoned)."""
    from benchlab.doctor import apt_command, doctor_checks
    from benchlab.recovery import clean_stale, live_runs

    hosts_plan = _hosts_plan(hosts) if hosts is not None else None  # bad input before output
    for stale in clean_stale():
        console.print(f"[yellow]cleaned[/]  after {escape(stale.describe())}")
    for other in live_runs():
        console.print(
            f"[yellow]busy[/]     benchlab {other['kind']} pid {other['pid']} is running "
            f"(since {other['started_at']})"
        )
    problems = 0
    checks = doctor_checks()
    for check in checks:
        _print_check(check.ok, check.required, check.name, check.detail, check.fix, width=14)
        problems += (not check.ok) and check.required
    install = apt_command(checks)
    if install:
        console.print(f"to install every missing Debian package: {install}", markup=False)
    if hosts_plan is not None:
        problems += _doctor_hosts(hosts_plan)
    if problems:
        console.print(f"{problems} required item(s) missing; ./lab setup installs them on Debian")
        raise typer.Exit(1)


def _print_check(
    ok: bool, required: bool, name: str, detail: str, fix: str | None, width: int
) -> None:
    mark = "[green]ok[/]" if ok else ("[red]missing[/]" if required else "[yellow]warn[/]")
    fix_text = f" → {fix}" if fix else ""
    console.print(
        f"{mark:>20}  {name:<{width}} {escape(detail)}{escape(fix_text)}", highlight=False
    )


def _hosts_plan(path: Path) -> Plan:
    recipe, text = load_recipe(path)
    if not recipe.hosts:
        raise UserError(f"--hosts {path}: the recipe has no [hosts]; every role runs here")
    return build_plan(path, recipe, text)


def _doctor_hosts(plan: Plan) -> int:
    from benchlab.doctor import host_checks

    problems, current = 0, None
    for name, check in host_checks(plan):
        if name != current:
            console.print(f"host [bold]{escape(name)}[/]", highlight=False)
            current = name
        _print_check(check.ok, True, check.name, check.detail, check.fix, width=18)
        problems += not check.ok
    return problems


@app.command()
def history(
    recipe: Annotated[
        str, typer.Argument(metavar="RECIPE", help="The recipe's name, or its file.")
    ],
    results: Annotated[
        list[Path] | None,
        typer.Option(
            "--results",
            metavar="FILE",
            help="A store to read (repeatable: a CI history and today's run, say).",
        ),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option("--format", "-f", metavar="table|md|json|html", help="How to write it."),
    ] = "table",
    output: Annotated[
        Path | None, typer.Option("-o", "--output", metavar="FILE", help="Write to this file.")
    ] = None,
    fail_on_change: Annotated[
        str | None,
        typer.Option(
            "--fail-on-change",
            metavar="slower|faster",
            help="Exit 1 when a cell's latest change point goes this way.",
        ),
    ] = None,
) -> None:
    """Every run of RECIPE in the stores, as a series per cell, with the change points the
    evidence confirms (a run on another machine starts a new segment, never a change)."""
    from benchlab.report import history as report

    if fmt not in report.FORMATS:
        raise UserError(f"--format '{fmt}' is not known; use one of: {', '.join(report.FORMATS)}")
    if fail_on_change not in (None, "slower", "faster"):
        raise UserError(f"--fail-on-change '{fail_on_change}': use slower or faster")
    if recipe.endswith(".toml") and Path(recipe).is_file():
        recipe = load_recipe(Path(recipe))[0].name
    found = report.build_history(results or [DEFAULT_RESULTS], recipe)
    if fmt == "html":
        from benchlab.report.history_html import render_history_html

        text = render_history_html(found)
    elif fmt == "md":
        text = report.render_markdown(found)
    elif fmt == "json":
        text = json.dumps(found.as_json(), indent=2) + "\n"
    else:
        text = "\n".join(report.render_text(found)) + "\n"
    if output is not None:
        output.write_text(text)
        console.print(f"history written to {output}", markup=False, highlight=False)
    elif fmt == "table":
        console.print(text, markup=False, highlight=False, end="")
    else:
        sys.stdout.write(text)
    if fail_on_change is not None:
        hit = found.latest_change(fail_on_change)
        if hit:
            names = ", ".join(s.label for s in hit)
            print(f"FAIL: the latest change is {fail_on_change}: {names}", file=sys.stderr)
            raise typer.Exit(1)


@app.command()
def compare(
    run_a: Annotated[
        str, typer.Argument(metavar="RUN_A", help=f"The reference run: {RunArgument}.")
    ],
    run_b: Annotated[str, typer.Argument(metavar="RUN_B", help="The run compared with it.")],
    results: ResultsOption = DEFAULT_RESULTS,
    results_b: Annotated[
        Path | None,
        typer.Option(
            "--results-b",
            metavar="FILE",
            help="The store RUN_B is in, if not RUN_A's (e.g. a baseline store kept by CI).",
        ),
    ] = None,
    fmt: Annotated[
        str, typer.Option("--format", "-f", metavar="table|md|json", help="How to write it.")
    ] = "table",
    fail_above: Annotated[
        float | None,
        typer.Option(
            "--fail-above",
            metavar="PCT",
            min=0,
            max=100,
            help="Exit 1 if any cell is slower by more than PCT %, beyond the intervals, or "
            "failed or missing in RUN_B.",
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            metavar="",
            help="Exit 1 if the two runs' machines or versions differ (they are always named).",
        ),
    ] = False,
) -> None:
    """Per cell, RUN_B / RUN_A of the figure the cells are ranked by (throughput, capacity or
    p99), with its interval: faster, slower or no significant change."""
    from benchlab.report import comparison as report
    from benchlab.report.summary import summarise

    if fmt not in report.FORMATS:
        raise UserError(f"--format '{fmt}' is not known; use one of: {', '.join(report.FORMATS)}")
    store_b_path = results_b or results
    before = summarise(Store(results, create=False), run_a)
    after = summarise(Store(store_b_path, create=False), run_b)
    found = report.compare_runs(before, after, results, store_b_path, fail_above)
    if not found.changes:
        raise UserError(
            f"runs '{run_a}' ({before.run['recipe_name']}) and '{run_b}' "
            f"({after.run['recipe_name']}) share no cell; compare runs of one recipe"
        )
    if fmt == "table":
        report.render_table(found, console)
    else:
        sys.stdout.write(
            report.render_markdown(found) if fmt == "md" else report.render_json(found)
        )
        for warning in found.warnings():  # also where a CI log shows it
            print(f"warning: {warning}", file=sys.stderr)
    say = console.print if fmt == "table" else _to_stderr
    failed = False
    if strict and found.differences:
        say("FAIL: --strict: the runs' machines or versions differ (named above)", style="red")
        failed = True
    if fail_above is not None:
        if found.regressed:
            say(f"FAIL: {found.failure()}", style="red")
            failed = True
        else:
            say(f"no cell slower by more than {fail_above:g}% beyond its interval")
    if failed:
        raise typer.Exit(1)


def _to_stderr(text: str, style: str | None = None) -> None:
    print(text, file=sys.stderr)


services_app = typer.Typer(
    help="Real services for exploration by hand.",
    no_args_is_help=True,
    context_settings=HELP_OPTIONS,
    rich_markup_mode=None,
)
app.add_typer(services_app, name="services")


@services_app.command("up")
def services_up(
    postgres: Annotated[
        bool, typer.Option("--postgres/--no-postgres", metavar="", help="PostgreSQL.")
    ] = True,
    pgbouncer: Annotated[
        bool,
        typer.Option(
            "--pgbouncer/--no-pgbouncer", metavar="", help="pgbouncer in front of PostgreSQL."
        ),
    ] = True,
    mariadb: Annotated[
        bool, typer.Option("--mariadb/--no-mariadb", metavar="", help="MariaDB.")
    ] = True,
    redis: Annotated[bool, typer.Option("--redis/--no-redis", metavar="", help="Redis.")] = True,
) -> None:
    """Start the services (seeded, on loopback) and print their connection strings."""
    from benchlab.services.manual import services_up as start

    started = start(
        default_cores().server,
        postgres=postgres, pgbouncer=pgbouncer, mariadb=mariadb, redis=redis,
    )  # fmt: skip
    for service in started:
        console.print(f"{service.name:<11} {service.dsn}", markup=False, highlight=False)
    console.print("stop them with: benchlab services down")


@services_app.command("down")
def services_down() -> None:
    """Stop the services started by 'benchlab services up' and remove their data."""
    from benchlab.services.manual import services_down as stop

    stopped = stop()
    console.print(f"stopped: {', '.join(stopped)}" if stopped else "no services were up")


@app.command()
def selfcheck(
    pairs: Annotated[
        int, typer.Option(metavar="N", min=1, max=50, help="Alternated bare/benchlab pairs.")
    ] = 6,
    duration: Annotated[
        int, typer.Option(metavar="S", min=1, max=60, help="Seconds per measurement.")
    ] = 2,
    connections: Annotated[int, typer.Option(metavar="C", min=1, help="Connections.")] = 64,
    noise: Annotated[
        bool,
        typer.Option(
            "--noise",
            help="Instead: where this machine's variation comes from (within a launch, between "
            "launches, shared by a round, a stack's own drift), kept for the runs that follow.",
        ),
    ] = False,
    rounds: Annotated[
        int, typer.Option(metavar="N", min=3, max=60, help="Rounds for --noise.")
    ] = 6,
) -> None:
    """Measure the harness's own cost: bare wrk vs benchlab on nginx-static, same cores."""
    from benchlab.selfcheck import run_selfcheck

    _claim(False)  # it measures: one load at a time on this machine
    cores = default_cores()
    if noise:
        _noise_check(rounds, duration, connections, cores)
        return
    try:
        check = run_selfcheck(
            pairs=pairs,
            duration=duration,
            connections=connections,
            server_cores=cores.server,
            load_cores=cores.load,
            progress=console.print,
        )
    except (KeyboardInterrupt, RunInterrupted) as exc:
        console.print(f"selfcheck stopped by {exc or 'SIGINT'}; nothing was left running")
        raise typer.Exit(130) from None
    for name, estimate in (("bare wrk", check.bare), ("benchlab", check.harness)):
        console.print(
            f"{name:<11}: {estimate.median:,.0f} req/s [{estimate.low:,.0f}–{estimate.high:,.0f}]"
        )
    console.print(
        f"ratio      : {check.ratio.median:.3f} [{check.ratio.low:.3f}–{check.ratio.high:.3f}] "
        f"({check.ratio.confidence:.0%} interval over {check.ratio.n} pairs)"
    )
    console.print(f"bare command: {check.command}", markup=False)


def _noise_check(rounds: int, duration: int, connections: int, cores: CoreAssignment) -> None:
    from benchlab.noise_check import NoiseDesign, measure_noise
    from benchlab.noise_record import noise_path

    design = NoiseDesign(rounds=rounds, duration=duration, connections=connections)
    minutes = rounds * len(design.stacks) * design.launches * (3 + design.trials * duration) / 60
    console.print(
        f"noise: {rounds} rounds × {len(design.stacks)} stacks ({', '.join(design.stacks)}) × "
        f"{design.launches} launches × {design.trials} trials of {duration} s; about "
        f"{minutes:.0f} min"
    )
    try:
        found = measure_noise(design, cores, console.print)
    except (KeyboardInterrupt, RunInterrupted) as exc:
        console.print(f"selfcheck stopped by {exc or 'SIGINT'}; nothing was left running")
        raise typer.Exit(130) from None
    for name, value in (
        ("within a launch", found.within_launch), ("between launches", found.between_launches),
        ("shared by a round", found.shared_by_round), ("a stack's own drift", found.own_drift),
    ):  # fmt: skip
        console.print(f"{name:<20}: ±{100 * value:.1f} %")
    method = "paired by round" if found.pairing_helps else "independent cells"
    console.print(f"ratios between cells: {method} (kept in {noise_path()})", markup=False)


@app.command()
def build() -> None:
    """Build the Go stacks from the project's sources and the pinned load tools (cached)."""
    for stack in CATALOGUE.values():
        if stack.build is not None and stack.availability().ok:
            console.print(f"building {stack.name}")
            stack.build()
    for tool in TOOLS.values():
        if tool.build is not None and tool.executable() is None:
            console.print(f"building {tool.name}")
            tool.build()


def main() -> None:
    try:
        app()
    except BenchlabError as exc:
        # Plain text, never wrapped: it names the file, the key and the fix. Whatever it
        # quotes (a recipe's value, a server's log) reaches the terminal without controls.
        print(f"error: {printable(str(exc))}", file=sys.stderr)
        sys.exit(exc.exit_code)
