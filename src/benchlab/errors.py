"""Errors with a one-line message for the user: never a traceback."""


class BenchlabError(Exception):
    """A failure benchlab can explain in one message (exit code 1)."""

    exit_code = 1


class UserError(BenchlabError):
    """A mistake in the user's input (recipe, arguments, results path): exit code 2."""

    exit_code = 2


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
