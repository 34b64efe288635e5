"""Exit codes, defaults and the one-line error every subcommand reports."""

from __future__ import annotations




EXIT_OK = 0
EXIT_USAGE = 1
EXIT_FILTER_FILE = 2
EXIT_FULL = 3
EXIT_WRITE = 4

DEFAULT_BLOCK = 2 << 20
DEDUP_FPR = 1e-4
BUILD_FPR = 1e-3


class CliError(Exception):
    """An error reported as one line on stderr, with an exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
    elif isinstance(exc, MemoryError):
        text = f"out of memory ({text})"
    return " ".join(text.split())
