"""benchlab run: a recipe planned (or an unfinished run's plan), checked, measured and
reported."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from benchlab.cli import completion, formats, thresholds
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
from benchlab.cli.run_checks import check_ready, confirm_long, html_page
from benchlab.core.errors import ExitCode, UserError
from benchlab.recipe import (
    DEFAULT_RECIPE,
    apply_overrides,
    build_plan,
    load_recipe,
    resolve_recipe,
)
from benchlab.report.exporters import EXPORTERS
from benchlab.stacks import CATALOGUE
from benchlab.store import DEFAULT_RESULTS, Store
from benchlab.system.outputs import write_output

if TYPE_CHECKING:
    from rich.console import Console

    from benchlab.cli.formats import Destination
    from benchlab.core.thresholds import Threshold
    from benchlab.recipe import Plan, Recipe
    from benchlab.report.plan import PlannedRun
    from benchlab.runner import RunOutcome

RunRecipeNameArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="RECIPE",
        help="A recipe: a TOML file, or one of benchlab's by name (quick, seed-000, ...); "
        "default quick.",
        autocompletion=completion.recipes,
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

RunFmtOption = Annotated[str | None, formats.option(formats.REPORT)]
RunOutputOption = Annotated[Path | None, formats.output(formats.REPORT)]

RunDryRunOption = Annotated[
    bool,
    typer.Option("--dry-run", metavar="", help="Print the plan and its time estimate only."),
]


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
    quiet: QuietOption = False,
    fmt: RunFmtOption = None,
    output: RunOutputOption = None,
    threshold: ThresholdOption = None,
    progress_style: ProgressOption = "auto",
    progress_file: ProgressFileOption = None,
) -> None:
    """Run a recipe: verify every cell, measure interleaved trials, store them, show the table
    and write the HTML report."""
    from benchlab.report.plan import check_format, planned_run
    from benchlab.runner import SessionOptions, run_recipe
    from benchlab.runner.estimates import Costs, plan_estimate

    progress.quiet = quiet
    # Refused before a run, not after.
    where = formats.destination(fmt, output, formats.REPORT, reads=[results])
    shown = Progress(progress_style, progress_file)
    if dry_run:
        check_format(where.format)
        if shown != Progress():
            raise UserError("--progress, --progress-file: a dry run measures nothing to show")
    else:
        shown.checked(where, results)
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
    # Read and checked against the plan's cells before anything runs.
    bounds = thresholds.given(threshold, {cell.mode for cell in plan.cells})
    budget_min = None if deadline_s is None else deadline_s / 60
    planned = planned_run(plan, *plan_estimate(plan, Costs.load(), budget_min))
    if dry_run:  # the plan is the answer: stdout, or -o's file, in -f's format
        _show_plan(planned, where)
        return
    for line in planned.lines:  # before a run, the plan is progress (stderr)
        progress.print(line, markup=False, highlight=False)
    confirm_long(planned.estimate_s, yes)
    check_ready(plan)
    page = html_page(html, results, plan)
    shared = claim(allow_concurrent)
    if plan.recipe.hosts:
        from benchlab.hosts.topology import preflight

        preflight(plan)
    options = SessionOptions(
        command=command_line(), shared_machine=shared, deadline_s=deadline_s, resume=run_id
    )
    store = Store(results)
    outcome = run_recipe(plan, store, shown.reporter(), options)
    _show_run(store, outcome, results, page, where, bounds, shown.screen)


def _show_plan(planned: PlannedRun, where: Destination) -> None:
    from benchlab.report.plan import RENDERERS

    if where.format != "table":
        where.document(RENDERERS[where.format](planned))
        return
    text = "".join(f"{line}\n" for line in planned.lines)
    where.table(lambda out: out.print(text, markup=False, highlight=False, end=""))


def _planned(
    recipe_name: str, duration: int | None, trials: int | None, connections: int | None,
    warmup: int | None, point: list[str] | None, budget: float | None,
) -> tuple[Plan, float | None]:  # fmt: skip
    """The recipe's plan with the command line's overrides, and its deadline (--budget)."""
    recipe = resolve_recipe(recipe_name)
    loaded, text = load_recipe(recipe, CATALOGUE)
    loaded = apply_overrides(
        loaded, duration=duration, trials=trials, connections=connections, warmup=warmup,
        points=point, path=recipe,
    )  # fmt: skip
    if budget is not None:
        loaded = _budgeted(loaded, trials_given=trials is not None)
    plan = build_plan(recipe, loaded, text, CATALOGUE)
    if not plan.cells:
        raise UserError(f"{recipe}: the matrix is empty: every cell is excluded; check 'exclude'")
    return plan, None if budget is None else budget * 60


def _resumed_plan(wanted: str | None, results: Path) -> tuple[Plan, str, float | None]:
    """The plan an unfinished run ran, to continue it. A run killed outright (SIGKILL, the
    OOM killer, a power loss) is still `running` in its store until what it left is
    cleaned: that recovery comes first, so the lookup finds it `abandoned`."""
    from benchlab.runner.recovery import clean_stale
    from benchlab.runner.resume import resumable

    for stale in clean_stale():
        progress.print(f"cleaned up after {stale.describe()}", markup=False, highlight=False)
    store = Store(results, create=False)
    found = resumable(store, wanted, CATALOGUE)
    kept = sum(len(store.trials(cell.id)) for cell in store.cells(found.run_id))
    store.close()
    progress.print(
        f"resuming run {found.run_id}: its {kept} finished trial(s) kept", markup=False,
        highlight=False,
    )  # fmt: skip
    return found.plan, found.run_id, found.deadline_s


def _show_run(
    store: Store, outcome: RunOutcome, results: Path, page: Path, where: Destination,
    bounds: tuple[Threshold, ...] = (), screen: Console = console,
) -> None:  # fmt: skip
    """The results (the table, or -f/-o's format), and the HTML page (written last: the run
    is stored already). Where stdout holds another format, the run's own lines go to stderr;
    where it holds the stream (--progress json), the table and its lines (`screen`) too.
    It ends interrupted, then with a failed threshold, then partial."""
    from benchlab.analysis.summary import summarise
    from benchlab.report.terminal import render_table

    summary = thresholds.judged(summarise(store, outcome.run_id, catalogue=CATALOGUE), bounds)

    def table() -> None:
        render_table(summary, screen)

    say = screen
    if where.on_terminal_table:
        table()
    else:
        where.document(EXPORTERS[where.format].render(summary, False))
        if where.path is not None:  # the file holds it; the terminal shows the table
            table()
        else:
            say = progress
    say.print(f"run id: {outcome.run_id} ({outcome.status}) · results in {results}")
    from benchlab.report.html import render_html  # matplotlib: not for a dry run or a refusal

    try:
        write_output(page, render_html(summary), "--html")
    except UserError as exc:  # the run is stored: say how to get its report another way
        raise UserError(
            f"{exc}; the run is stored: benchlab report {outcome.run_id} --format html -o FILE"
        ) from None
    again = f"benchlab report {outcome.run_id} --format {formats.metavar(formats.AFTER_RUN)}"
    say.print(f"report: {page} ({again})")
    if outcome.status == "interrupted":
        raise typer.Exit(ExitCode.INTERRUPTED)
    if thresholds.say_failed(summary):
        raise typer.Exit(ExitCode.THRESHOLD)
    if outcome.status == "partial":
        raise typer.Exit(ExitCode.PARTIAL)
