"""Errors that are the user's to fix: shown as one line, exit code 2, never a traceback."""


class UserError(Exception):
    """A mistake in the user's input (recipe, arguments, results path)."""

    exit_code = 2


class RunInterrupted(Exception):
    """The run was stopped by SIGINT or SIGTERM."""
