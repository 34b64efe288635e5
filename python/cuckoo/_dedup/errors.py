"""The dedup engine's errors and the one table of exit codes that the CLI and the API share.

Every failure of the main job that a user can cause or meet (a bad option, an unreadable or
corrupt input, an output that cannot be written, a full filter) is reported as one line and, on
the command line, mapped to one exit code of this table. The engine raises
:class:`ReportedError` (or a standard exception: ``OSError``, ``ValueError``) and never prints;
``cuckoo.cli`` only prints the line and exits with its code.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_USAGE = 1  # a bad option, an unreadable, corrupt or invalid input, a refused clobber
EXIT_FILTER_FILE = 2  # a filter or store file that cannot be read or written
EXIT_FULL = 3  # a fixed filter is full: the records before the failing one are done
EXIT_WRITE = 4  # an output that cannot be written (disk full, closed pipe, ...)

EXIT_CODES = (
    (EXIT_OK, "success"),
    (EXIT_USAGE, "usage error: a bad option, an input that cannot be read or is not valid (corrupt "
                 "compressed data, invalid CSV or JSON, a record without its key field), a run that would "
                 "overwrite one of its own files"),
    (EXIT_FILTER_FILE, "a filter or store file that cannot be read or written"),
    (EXIT_FULL, "a filter of fixed capacity is full: the output holds every record before the failing one"),
    (EXIT_WRITE, "an output that cannot be written (disk full, a closed pipe, ...)"),
)


class ReportedError(Exception):
    """An error reported as one line (``str(exc)``) with an exit code (``code``) of the table."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def one_line(exc: BaseException) -> str:
    """The text of `exc` on one line (an OSError's strerror, not its repr)."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
    elif isinstance(exc, MemoryError):
        text = f"out of memory ({text})"
    return " ".join(text.split())
