"""The benchlab command line: run, report, stacks, doctor, build."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from benchlab.errors import BenchlabError, RunInterrupted, UserError
from benchlab.recipe import DEFAULT_RECIPE, apply_overrides, build_plan, load_recipe
from benchlab.store import DEFAULT_RESULTS, Store

app = typer.Typer(
    help="Benchmark web stacks fairly: real services, verified responses, honest statistics.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Piped or logged output is not wrapped at 80 columns: the tables would become unreadable.
console = Console() if sys.stdout.isatty() or "COLUMNS" in os.environ else Console(width=240)

ResultsOption = Annotated[Path, typer.Option("--results", help="SQLite results store.")]


@app.command()
def run(
    recipe: Annotated[Path, typer.Argument(help="Recipe TOML file.")] = DEFAULT_RECIPE,
    duration: Annotated[
        int | None, typer.Option(min=1, help="Seconds per trial (all load profiles).")
    ] = None,
    trials: Annotated[int | None, typer.Option(min=1, help="Trials per cell.")] = None,
    connections: Annotated[
        int | None, typer.Option(min=1, help="Connections (all load profiles).")
    ] = None,
    point: Annotated[
        list[str] | None, typer.Option("--point", help="Run only this named point (repeatable).")
    ] = None,
    results: ResultsOption = DEFAULT_RESULTS,
    html: Annotated[
        Path | None,
        typer.Option(help="Write the HTML report here (default: RECIPE-NAME.html by the results)."),
    ] = None,
) -> None:
    """Run a recipe: verify every cell, measure interleaved trials, store them, show the table
    and write the HTML report."""
    from benchlab.report.formats import render_table
    from benchlab.report.html import render_html
    from benchlab.report.progress import BarReporter, LineReporter
    from benchlab.report.summary import summarise
    from benchlab.runner import Execution

    loaded, text = load_recipe(recipe)
    loaded = apply_overrides(
        loaded, duration=duration, trials=trials, connections=connections, points=point, path=recipe
    )
    plan = build_plan(recipe, loaded, text)
    if not plan.cells:
        raise UserError(f"{recipe}: the matrix is empty: every cell is excluded; check 'exclude'")
    from benchlab.load import TOOLS

    if shutil.which("taskset") is None:
        raise UserError("'taskset' is not installed; run ./lab setup or apt-get install util-linux")
    for name in sorted({c.tool for c in plan.cells}):
        if TOOLS[name].executable() is None:
            raise UserError(
                f"load tool '{name}' is not installed; run ./lab setup or {TOOLS[name].install}"
            )
    if set(plan.cores.server) & set(plan.cores.load):
        console.print(
            "WARNING: server and load tool share a core on this machine: the figures will "
            "measure their fight for it, not the server",
            style="yellow",
        )
    page = html or results.parent / (re.sub(r"[^\w.-]+", "-", plan.recipe.name) + ".html")
    try:  # checked before the run, not after it: the report is its last step
        page.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--html {page}: cannot create its directory ({exc.strerror})") from None
    if page.is_dir():
        raise UserError(
            f"--html {page}: is a directory; give a file name such as {page}/report.html"
        )
    store = Store(results)
    reporter = BarReporter(console) if console.is_terminal else LineReporter(console)
    command = "benchlab " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    outcome = Execution(plan, store, reporter, command).run()
    summary = summarise(store, outcome.run_id)
    render_table(summary, console)
    console.print(f"run id: {outcome.run_id} ({outcome.status}) · results in {results}")
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


@app.command()
def report(
    run_id: Annotated[
        str | None, typer.Argument(metavar="[RUN]", help="Run id (default: latest).")
    ] = None,
    results: ResultsOption = DEFAULT_RESULTS,
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="table, md, html, json or csv.")
    ] = "table",
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write to this file.")
    ] = None,
) -> None:
    """Report a stored run (the latest by default)."""
    from benchlab.report.formats import (
        FORMATS,
        render_csv,
        render_json,
        render_markdown,
        render_table,
    )
    from benchlab.report.summary import summarise

    if fmt not in FORMATS:
        raise UserError(f"--format '{fmt}' is not known; use one of: {', '.join(FORMATS)}")
    if output is not None and not output.parent.is_dir():
        raise UserError(
            f"-o {output}: cannot write it (no directory {output.parent}); create it or choose"
            " another path"
        )
    summary = summarise(Store(results, create=False), run_id)
    if fmt == "table":
        if output is not None:
            with output.open("w") as handle:
                render_table(summary, Console(file=handle, width=200))
        else:
            render_table(summary, console)
        return
    if fmt == "html":
        from benchlab.report.html import render_html  # matplotlib: only when charts are wanted

        text = render_html(summary)
    else:
        text = {"md": render_markdown, "json": render_json, "csv": render_csv}[fmt](summary)
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text)
    except OSError as exc:
        reason = f"-o {output}: cannot write it ({exc.strerror}); choose a writable path"
        raise UserError(reason) from None
    console.print(f"wrote {output}")


@app.command()
def stacks(
    fmt: Annotated[str, typer.Option("--format", "-f", help="table or md.")] = "table",
) -> None:
    """The catalogue: every stack, its scenarios, and whether it can run here."""
    from benchlab.stacks import CATALOGUE, catalogue_markdown

    if fmt == "md":
        sys.stdout.write(catalogue_markdown())
        return
    if fmt != "table":
        raise UserError(f"--format '{fmt}' is not known; use table or md")
    table = Table(title="benchlab stacks")
    for column in ("stack", "framework", "server", "worker model", "scenarios", "status"):
        table.add_column(column, overflow="fold")
    for stack in CATALOGUE.values():
        available = stack.availability()
        status = (
            "[green]available[/]"
            if available.ok
            else f"[red]unavailable[/]: {available.reason}; fix: {available.fix}"
        )
        table.add_row(
            *(escape(text) for text in (stack.name, stack.framework, stack.server)),
            escape(stack.worker_model),
            ", ".join(stack.scenarios),
            status,
        )
    console.print(table)


@app.command()
def doctor() -> None:
    """Check this machine: tools, cores, CPU frequency scaling, pinning."""
    from benchlab.machine import doctor_checks

    problems = 0
    for check in doctor_checks():
        mark = (
            "[green]ok[/]"
            if check.ok
            else ("[red]missing[/]" if check.required else "[yellow]warn[/]")
        )
        fix = f" → {check.fix}" if check.fix else ""
        console.print(f"{mark:>20}  {check.name:<14} {check.detail}{fix}")
        problems += (not check.ok) and check.required
    if problems:
        console.print(f"{problems} required item(s) missing; ./lab setup installs them on Debian")
        raise typer.Exit(1)


@app.command()
def compare(
    run_a: Annotated[str, typer.Argument(metavar="RUN_A", help="The reference run.")],
    run_b: Annotated[str, typer.Argument(metavar="RUN_B", help="The run compared with it.")],
    results: ResultsOption = DEFAULT_RESULTS,
    fail_above: Annotated[
        float | None,
        typer.Option(
            "--fail-above",
            min=0,
            max=100,
            help="Exit 1 if any cell is slower by more than PCT %, beyond the intervals.",
        ),
    ] = None,
) -> None:
    """Per cell, RUN_B / RUN_A of the figure cells are ranked by (throughput, capacity, p99),
    with its interval: faster, slower or no change."""
    from benchlab.analysis.compare import Side, compare_cells
    from benchlab.analysis.stats import RATIO_METHOD
    from benchlab.report.summary import summarise

    store = Store(results, create=False)
    before, after = summarise(store, run_a), summarise(store, run_b)
    figure = before.ranked_by

    def sides(cells) -> list[Side]:
        return [
            Side(c.key, c.stack_label, c.scenario, c.connections, c.samples.get(figure.key, ()))
            for c in cells
        ]

    changes = compare_cells(sides(before.cells), sides(after.cells), figure)
    if not changes:
        raise UserError(f"runs '{run_a}' and '{run_b}' share no cell; compare runs of one recipe")
    table = Table(title=f"benchlab compare {run_a} → {run_b}", title_justify="left")
    for column in ("stack", "scenario", "conns", "B / A", "interval", "verdict"):
        table.add_column(column, justify="right" if column in ("conns", "B / A") else "left")
    styles = {"faster": "green", "slower": "red", "failed in B": "red", "missing in B": "red"}
    for change in changes:
        ratio = change.ratio
        table.add_row(
            escape(change.label),
            change.scenario,
            str(change.connections),
            f"{ratio.value:.3f}" if ratio else "–",
            f"{ratio.low:.3f}–{ratio.high:.3f} ({ratio.confidence:.0%})" if ratio else "–",
            change.verdict,
            style=styles.get(change.verdict),
        )
    console.print(table)
    console.print(f"Intervals: {RATIO_METHOD}.", style="dim", markup=False)
    if fail_above is not None:
        regressed = [c for c in changes if c.regressed_beyond(fail_above)]
        if regressed:
            names = ", ".join(f"{c.label} {c.scenario} c={c.connections}" for c in regressed)
            console.print(
                f"FAIL: slower by more than {fail_above:g}% (or failed, or missing): {names}",
                style="red",
            )
            raise typer.Exit(1)
        console.print(f"no cell slower by more than {fail_above:g}% beyond its interval")


services_app = typer.Typer(help="Real services for exploration by hand.", no_args_is_help=True)
app.add_typer(services_app, name="services")


@services_app.command("up")
def services_up(
    postgres: Annotated[bool, typer.Option(help="PostgreSQL.")] = True,
    pgbouncer: Annotated[bool, typer.Option(help="pgbouncer in front of PostgreSQL.")] = True,
    mariadb: Annotated[bool, typer.Option(help="MariaDB.")] = True,
    redis: Annotated[bool, typer.Option(help="Redis.")] = True,
) -> None:
    """Start the services (seeded, on loopback) and print their connection strings."""
    from benchlab.recipe import default_cores
    from benchlab.services.manual import services_up as start

    started = start(
        default_cores(os.cpu_count() or 1).server,
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
    pairs: Annotated[int, typer.Option(min=1, max=50, help="Alternated bare/benchlab pairs.")] = 6,
    duration: Annotated[int, typer.Option(min=1, max=60, help="Seconds per measurement.")] = 2,
    connections: Annotated[int, typer.Option(min=1, help="Connections.")] = 64,
) -> None:
    """Measure the harness's own cost: bare wrk vs benchlab on nginx-static, same cores."""
    from benchlab.recipe import default_cores
    from benchlab.selfcheck import run_selfcheck

    cores = default_cores(os.cpu_count() or 1)
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


@app.command()
def build() -> None:
    """Build the Go stacks from the project's sources and the pinned load tools (cached)."""
    from benchlab.load import TOOLS
    from benchlab.stacks import CATALOGUE

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
        # Plain text, never wrapped: it names the file, the key and the fix.
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
