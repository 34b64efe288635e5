"""Exit codes, defaults and the one-line error every subcommand reports."""

from __future__ import annotations

from cuckoo._dedup.errors import (  # noqa: F401 (the one table of exit codes, re-exported)
    EXIT_FILTER_FILE, EXIT_FULL, EXIT_OK, EXIT_USAGE, EXIT_WRITE, ReportedError as CliError, one_line as _one_line,
)
from cuckoo._dedup.engine import DEDUP_FPR, DEFAULT_BLOCK  # noqa: F401


BUILD_FPR = 1e-3
