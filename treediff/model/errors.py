"""Exceptions that the CLI turns into a clear message and exit code 2."""


class TreediffError(Exception):
    """A user-facing error: bad input, missing file, inconsistent data.

    The CLI prints ``treediff: error: <message>`` and exits with status 2;
    library callers get the exception.
    """


class InputError(TreediffError):
    """The input cannot be read as what it claims to be."""
