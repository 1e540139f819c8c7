"""Errors with a one-line message for the user: never a traceback; and the exit codes every
command ends with (docs/commands.md lists them, from here)."""

from enum import IntEnum


class ExitCode(IntEnum):
    """What a command's exit status tells CI, one meaning each."""

    SUCCESS = 0  # it did what was asked (a run: every cell measured)
    REGRESSION = 1  # worse than a reference: compare --fail-above, history --fail-on-change,
    # tune --check-answer
    BAD_INPUT = 2  # a recipe, an argument or a path is wrong: one line names it and the fix
    HARNESS = 3  # benchlab could not measure: a service, a load tool, the store, the machine
    PARTIAL = 4  # a run ended with cells failed or unmeasured (the rest is stored)
    NOT_COMPARABLE = 5  # compare --strict: the two runs' machines or versions differ
    CHECK_FAILED = 6  # conform, drain, slow-clients: a stack failed the check
    THRESHOLD = 7  # a --threshold (or a recipe's [thresholds]) that a cell's interval broke
    INTERRUPTED = 130  # Ctrl-C or a stop signal; what was measured is kept (--resume)


# What each code means, in the words docs/commands.md's table shows.
EXIT_MEANINGS = {
    ExitCode.SUCCESS: "success: the command did what was asked (a run: every cell measured its "
    "planned rounds, even where a `--budget` left pairs undecided: the report names them); "
    "help, asked for or shown by `benchlab` or `./lab` alone",
    ExitCode.REGRESSION: "a regression against a reference: `compare --fail-above` (a cell "
    "slower beyond it, or failed or missing in the second run), `history --fail-on-change`, "
    "`tune --check-answer` (the stored answer no longer holds)",
    ExitCode.BAD_INPUT: "bad input: a recipe, an argument or a path (one line names the file, "
    "the key and the fix); an unknown command or option (one line, with the closest one)",
    ExitCode.HARNESS: "a harness failure: a service that would not start, a load tool that "
    "failed, a store that could not be written, a machine `doctor` finds not ready, a "
    "set-up by `./lab` that failed",
    ExitCode.PARTIAL: "a partial run: some cells failed, or the budget ran out before their "
    "planned rounds; the others are stored and reported",
    ExitCode.NOT_COMPARABLE: "not comparable: `compare --strict` found that the two runs' "
    "machines or versions differ (each difference named); it outranks 1",
    ExitCode.CHECK_FAILED: "a stack failed a check: `conform` (nonconformant), `drain` (drops "
    "or hangs), `slow-clients` (needs a proxy)",
    ExitCode.THRESHOLD: "a failed threshold: a `--threshold` or the recipe's `[thresholds]` "
    "(`run`, `report`, `history`: on the latest run, `tune`: on its answer) whose bound a "
    "cell's whole interval lies beyond; the last line on stderr names it and the cells. It "
    "outranks 1 and 4; a threshold only undecided (its interval straddles the bound) fails "
    "nothing",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C, SIGTERM, SIGHUP): what was measured is kept; "
    "`--resume` continues",
}


class BenchlabError(Exception):
    """A failure benchlab can explain in one message: benchlab could not do its job."""

    exit_code = ExitCode.HARNESS


class UserError(BenchlabError):
    """A mistake in the user's input (recipe, arguments, results path)."""

    exit_code = ExitCode.BAD_INPUT


class StoreError(BenchlabError):
    """The results store could not be written (disk full, locked, read-only): the run ends,
    every trial already stored stays."""


class LoadToolError(BenchlabError):
    """The load tool failed to run or printed no result."""


class ServiceError(BenchlabError):
    """A real service (PostgreSQL, Redis, …) failed to start or to answer."""


class RunInterrupted(BaseException):
    """The run was stopped by SIGINT or SIGTERM.

    A BaseException, like KeyboardInterrupt: a readiness check's `except Exception` must not
    swallow the user's signal."""
