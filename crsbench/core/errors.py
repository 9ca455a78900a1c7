"""The user-facing error hierarchy and the exit codes the CLI maps it to.

Every stage raises these instead of importing a later stage to do it; the CLI turns a
`CrsbenchError` into one line on stderr and `exit_code`, anything else into EXIT_BUG.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_USER = 1  # the user's input or request is at fault; the message says which file/row/value
EXIT_BUG = 2  # anything else that escapes is an internal error


class CrsbenchError(Exception):
    """An error caused by the user's input or request.

    The CLI prints its message as one line and exits with status 1; anything else
    that escapes is an internal error (status 2).
    """

    exit_code: int = EXIT_USER


class InputError(CrsbenchError):
    """Bad input data: names the file, row or value at fault."""


class ScreenInputError(CrsbenchError):
    """Features or labels a pre-screen cannot score (METHODS.md §21.3): one line saying what is wrong;
    the caller prefixes the encoder, dataset and depth."""
