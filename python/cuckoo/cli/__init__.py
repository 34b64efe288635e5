"""The ``cuckoo`` command line: streaming dedup, build, query, info and a demo.

    cuckoo dedup big.txt > unique.txt      first occurrence of each line, in order
    cuckoo dedup --exact big.txt           ... with no line ever dropped by mistake
    cuckoo store import s.db big.txt       an exact key-value store file (export, get, put, ...)
    cuckoo build keys.txt -o keys.cuckoo   a filter of the lines of keys.txt
    cuckoo query keys.cuckoo < in.txt      lines that may be in keys.txt
    cuckoo info keys.cuckoo                parameters, load, memory, expected FPR (reads the header only;
                                           --verify checks every byte)
    cuckoo demo                            a one-minute tour on generated data

Lines are bytes: nothing is decoded, so any encoding (or none) works. A line ends at ``\\n``;
its key is the line without that ``\\n`` and without one ``\\r`` just before it, so ``a\\r\\n``
and ``a\\n`` are the same key (what ``b"a" in f`` tests in Python). Output lines are written
back exactly as read. A last line without a newline is a line; empty lines are keys too.

Input is read in blocks (2 MiB by default; 4 MiB for --exact). Files and stdin go through the
native pipeline (cpp/include/cuckoo/dedup.hpp, without the GIL): on --threads N (default: the
cores available) N - 1 threads read, split and hash the blocks while the calling thread applies
them to the filter or store in input order and writes the kept lines, one write() per block; the
output never depends on N. Other inputs (file objects without a file descriptor, iterables of
lines given to cuckoo.dedup, a framing other than whole lines) take the Python block path:
NumPy splits each block, the keys go to the filter in one bulk call per block (as fixed-width
NumPy ``S`` arrays, grouped by length); both give the same output byte for byte.

The dedup engine itself (``cuckoo.dedup()``: the run through a filter, a key set or a store,
its sources, framings, estimates, compression and errors) is the package ``cuckoo._dedup``,
below this one. The CLI has one module per concern: ``common`` (the exit codes of
``cuckoo._dedup.errors``, defaults), ``output`` (the output sink, report formats, the refusal
to overwrite an input), ``filters`` (dedup with a filter, build, query, info), ``records``
(dedup's record options), ``stores`` (dedup --exact/--store, the store subcommands), ``demo``
and ``parser`` (options, help, ``main``). This module re-exports their names, and the engine's
modules as ``engine``, ``framing`` and ``estimate``.

Exit codes: 0 success, 1 usage error (bad option, unreadable input file), 2 a filter file that
cannot be read or written (one line on stderr), 3 the filter is full (fixed capacity, or a key
repeated or crafted beyond what any filter holds): the output then has every line before the
failing one, --save / -o get the filter holding exactly those lines, and stderr names the line.

New filters get a secret random seed (stored in the filter file) unless --seed N is given, so
input crafted against the public hash behaves like any other input.
"""

from __future__ import annotations

from cuckoo._dedup import engine, estimate, sources as framing  # noqa: F401 (the engine's modules, as before)

from . import common, demo, filters, output, parser, stores
from .common import (
    EXIT_OK, EXIT_USAGE, EXIT_FILTER_FILE, EXIT_FULL, EXIT_WRITE, DEFAULT_BLOCK, DEDUP_FPR, BUILD_FPR, CliError,
)
from cuckoo._dedup.engine import (
    EXACT_BLOCK, MAX_STORE_KEY, DedupResult, KeyTooLongError, LineFraming, dedup, max_store_key,
)
from cuckoo._dedup.sources import (
    MAX_S_WIDTH, MIN_EXACT_GROUP, Lines, Source, LineTooLong, read_lines, sources_of, iter_blocks,
)
from cuckoo._dedup.estimate import (
    SAMPLE_WINDOWS, SAMPLE_WINDOW, distinct_estimate, estimate_from_counts, estimate_keys, STDIN_CAPACITY,
    MIN_CAPACITY, GROWABLE_START, new_filter, sized_filter,
)
from .output import (
    Progress, write_error, write_stdout, store_files, refuse_clobber, inputs_of, Output,
)
from .filters import (
    load_filter, check_can_save, save_filter,
    full_error, cmd_dedup, cmd_build, cmd_query, filter_info, cmd_info,
)
from .stores import (
    line_too_long, open_store, store_error, STORE_ERRORS,
    close_store, cmd_dedup_exact, using_store, cmd_store_import, cmd_store_export, cmd_store_get, cmd_store_put,
    cmd_store_del, cmd_store_info, cmd_store_compact,
)
from .demo import (
    cmd_demo,
)
from .parser import (
    LINES_HELP, EXIT_HELP, DEDUP_EPILOG, STORE_EPILOG, build_parser, main,
)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
