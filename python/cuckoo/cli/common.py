"""Exit codes, defaults and the one-line error every subcommand reports."""

from __future__ import annotations




EXIT_OK = 0
EXIT_USAGE = 1
EXIT_FILTER_FILE = 2
EXIT_FULL = 3
EXIT_WRITE = 4

# Bytes read at a time. The native pipeline holds a few blocks at once per thread (read ahead,
# applied, being written) with 17 bytes of arrays a line beside each: 1 MiB blocks took 17 MiB
# less peak memory than 2 MiB for the same time, with 2 threads on 10^7 hex lines (filter 72
# against 89 MiB, 1.35 against 1.41 s; exact 169 against 186 MiB, 4.26 s both; Xeon Skylake-SP).
DEFAULT_BLOCK = 1 << 20
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
