"""What each command promises a script and a reader, declared once per command: the formats
it writes (its `-f` names; `-o`'s extension picks one of them), whether it reads a results
store (`--results`, else $BENCHLAB_RESULTS), the exit codes it may end with beside those
every command has, and the examples its `-h` shows. cli/__init__.py registers each command
with its epilog made from here; the CLI-contract test walks the command table against it, so
a command without a contract, or one that breaks its own, fails."""

from __future__ import annotations

from dataclasses import dataclass

from benchlab.cli import formats
from benchlab.core.errors import ExitCode

# Every command may end with these: done, a mistake in its input, benchlab unable to do its
# job (a bug included), and Ctrl-C or a stop signal.
EVERY_COMMAND = {
    ExitCode.SUCCESS: "done",
    ExitCode.BAD_INPUT: "bad input",
    ExitCode.HARNESS: "harness failure",
    ExitCode.INTERRUPTED: "interrupted",
}


@dataclass(frozen=True)
class Contract:
    examples: tuple[tuple[str, str], ...]  # (the command line, what it does)
    formats: tuple[str, ...] = ()  # the documents it writes; () with `no_document`
    no_document: str = ""  # why it takes no -o/-f: it writes no document
    reads_store: bool = False
    exits: tuple[tuple[ExitCode, str], ...] = ()  # its own codes, and when
    # It measures, and streams its events (--progress json, --progress-file).
    streams: bool = False
    no_stream: str = ""  # why a command that measures takes no stream

    def exit_codes(self) -> dict[ExitCode, str]:
        return dict(sorted({**EVERY_COMMAND, **dict(self.exits)}.items()))


_PARTIAL = (ExitCode.PARTIAL, "partial: cells failed or were not measured")
_THRESHOLD = (ExitCode.THRESHOLD, "--threshold or [thresholds]: a cell broke one")
_NOT_STARTED = (ExitCode.HARNESS, "a stack could not be started")

CONTRACTS: dict[str, Contract] = {
    "run": Contract(
        (
            ("benchlab run", "the quick recipe: about 2 minutes once set up"),
            ("benchlab run seed-000 --dry-run", "the plan and its time; nothing starts"),
            (
                "benchlab run recipes/fastapi-flask-gin.toml --budget 10 -o results.md",
                "at most 10 minutes; the results in Markdown too",
            ),
            ("benchlab run --resume", "continue the latest interrupted or killed run"),
            ("benchlab run --threshold 'p99<200ms'", "exit 7 if a cell's p99 is over 200 ms"),
        ),
        formats.REPORT,
        reads_store=True,
        exits=(_PARTIAL, _THRESHOLD),
        streams=True,
    ),
    "tune": Contract(
        (
            (
                "benchlab tune app.py:app --python .venv/bin/python",
                "the server and settings that hold the most load under p99 100 ms",
            ),
            (
                "benchlab tune mysite/wsgi.py:application --request 'GET /items?id=7' "
                "--slo-p99-ms 50",
                "a Django project, one request, a 50-ms target",
            ),
            ("benchlab tune app.py:app --cpus 1.5 --memory 512M", "for a container's limits"),
            (
                "benchlab tune --command 'node server.js --workers {workers}' --grid workers=1,2",
                "any server, started by its command, over a grid of its knobs",
            ),
            (
                "benchlab tune http://127.0.0.1:8080/orders --rate 300",
                "an endpoint already running: does it hold 300 req/s?",
            ),
            ("benchlab tune app.py:app --check-only", "each candidate started and checked once"),
            (
                "benchlab tune app.py:app --check-answer answer.json",
                "a stored answer proved again (CI)",
            ),
        ),
        formats.TUNE,
        reads_store=True,
        exits=(
            (ExitCode.REGRESSION, "--check-answer: the stored answer no longer holds"),
            (ExitCode.THRESHOLD, "--threshold: the answer's replay broke one"),
        ),
        streams=True,
    ),
    "report": Contract(
        (
            ("benchlab report", "the latest run's table again"),
            ("benchlab report latest~1 -o before.html", "the run before it, as its page"),
            ("benchlab report -f bmf -o bmf.json", "for Bencher (docs/results.md)"),
            (
                "benchlab report --histogram 'gin plaintext' -o gin.hgrm",
                "one cell's latency histogram, for HdrHistogram's tools (.hlog: a trial a line)",
            ),
            ("benchlab report --threshold 'errors<0.1%'", "the latest run judged against it"),
        ),
        formats.REPORT_COMMAND,
        reads_store=True,
        exits=(_THRESHOLD,),
    ),
    "recipes": Contract(
        (
            ("benchlab recipes", "benchlab's recipes and the question each answers"),
            ("benchlab recipes -f json", "the same for a script"),
        ),
        formats.RECIPES,
    ),
    "runs": Contract(
        (
            ("benchlab runs", "the runs of results/benchlab.db, latest first"),
            ("benchlab runs --results ci.db -f json", "another store's, for a script"),
        ),
        formats.RUNS,
        reads_store=True,
    ),
    "stacks": Contract(
        (
            ("benchlab stacks", "every stack, and whether it runs here"),
            ("benchlab stacks -o stacks.md", "the catalogue as a Markdown table"),
        ),
        formats.STACKS,
    ),
    "doctor": Contract(
        (
            ("benchlab doctor", "this machine checked; what a killed benchlab left, cleaned"),
            ("benchlab doctor --hosts recipes/hosts-netns.toml -f json", "and a recipe's hosts"),
        ),
        formats.DOCTOR,
        exits=((ExitCode.HARNESS, "a required item is missing"),),
    ),
    "history": Contract(
        (
            ("benchlab history quick", "every run of quick: a series per cell, its change points"),
            ("benchlab history quick --results ci.db -o history.html", "as a page"),
            ("benchlab history quick --fail-on-change slower", "exit 1 on a slowdown"),
        ),
        formats.HISTORY,
        reads_store=True,
        exits=(
            (ExitCode.REGRESSION, "--fail-on-change: the latest change goes that way"),
            (ExitCode.THRESHOLD, "--threshold or [thresholds]: the latest run broke one"),
        ),
    ),
    "compare": Contract(
        (
            ("benchlab compare latest~1 latest", "the last two runs, cell by cell"),
            (
                "benchlab compare latest latest --results main.db --results-b branch.db "
                "--fail-above 10 -o compare.md",
                "a branch against main, as CI does",
            ),
        ),
        formats.COMPARE,
        reads_store=True,
        exits=(
            (ExitCode.REGRESSION, "--fail-above: a cell slower beyond it, failed or missing"),
            (ExitCode.NOT_COMPARABLE, "--strict: the machines or versions differ"),
        ),
    ),
    "conform": Contract(
        (
            ("benchlab conform", "every stack that runs here"),
            ("benchlab conform gin sanic -f json -o conform.json", "two stacks, for a script"),
        ),
        formats.CHECKS,
        exits=((ExitCode.CHECK_FAILED, "a stack does not conform"), _NOT_STARTED),
        no_stream="it sends request shapes one at a time, no load: a stack's answer is its row",
    ),
    "drain": Contract(
        (
            ("benchlab drain", "every stack that runs here, stopped under load"),
            ("benchlab drain flask+gunicorn -o drain.txt", "one stack, the table to a file"),
        ),
        formats.CHECKS,
        exits=((ExitCode.CHECK_FAILED, "a stack drops a request or hangs"), _NOT_STARTED),
        no_stream="one stop under load a stack, no trials: what the stop did is its row",
    ),
    "slow-clients": Contract(
        (
            ("benchlab slow-clients", "every stack, all three kinds of slow client"),
            (
                "benchlab slow-clients flask+gunicorn --mode headers --rounds 5",
                "one stack, headers trickled, 5 rounds",
            ),
        ),
        formats.CHECKS,
        exits=((ExitCode.CHECK_FAILED, "a stack needs a proxy in front"), _NOT_STARTED),
        no_stream="its rounds are pairs of loads on one stack, no run's cells: their spread "
        "is its row",
    ),
    "selfcheck": Contract(
        (
            ("benchlab selfcheck", "bare wrk against benchlab's measurement, pair by pair"),
            ("benchlab selfcheck --noise -f json", "where this machine's variation comes from"),
        ),
        formats.SELFCHECK,
        no_stream="bare wrk against benchlab's own measurement in pairs, no run's cells: its "
        "answer is their ratio (its progress lines say each pair)",
    ),
    "build": Contract(
        (("benchlab build", "build the Go stacks and the pinned load tools ahead of a run"),),
        no_document="it builds; what it builds is progress",
    ),
    "services up": Contract(
        (("benchlab services up --no-mariadb", "PostgreSQL, pgbouncer and Redis, seeded"),),
        no_document="its connection strings are for exploration by hand (kept in "
        "services.json in the cache too)",
    ),
    "services down": Contract(
        (("benchlab services down", "stop them and remove their data"),),
        no_document="it stops services",
    ),
}


def epilog(name: str) -> str:
    """What `benchlab NAME -h` shows below its options: examples, then its exit codes (each
    paragraph kept as written: click rewraps a paragraph unless it starts with \\b)."""
    contract = CONTRACTS[name]
    width = max(len(line) for line, _ in contract.examples)
    lines = ["\b", "Examples:"]
    for line, what in contract.examples:
        if len(line) <= 48:
            lines.append(f"  {line:<{min(width, 48)}}  {what}")
        else:
            lines += [f"  {line}", f"      {what}"]
    codes = "; ".join(f"{int(code)} {when}" for code, when in contract.exit_codes().items())
    return "\n".join(lines) + f"\n\nExit codes: {codes} (all: docs/commands.md)."
