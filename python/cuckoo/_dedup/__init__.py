"""The dedup engine: ``cuckoo.dedup()`` and everything the main job is made of, below the CLI.

- :mod:`.engine`: the run (a filter, an in-memory key set in passes, or a store), its sinks,
  the native pipeline's arguments, :class:`DedupResult`;
- :mod:`.sources`: inputs read in blocks of whole lines, and each block's keys for the Python
  path;
- :mod:`.records`: keyed records (CSV, ``-t SEP`` fields, JSONL): their native framing's spec,
  and the Python path (``--missing keep/drop``, streams without a file descriptor);
- :mod:`.compress`: compressed input and output (gzip, bzip2, xz, zstd), each on a thread;
- :mod:`.columnar`: Parquet and Arrow IPC files deduplicated by a column (pyarrow);
- :mod:`.outputs`: outputs written whole, and the one clobber rule;
- :mod:`.estimate`: distinct-key estimates that size filters and plan exact passes;
- :mod:`.errors`: the one-line errors and the one table of exit codes (CLI and API);
- :mod:`.report`: number formats and the progress line.

``cuckoo.cli`` sits above it: it parses options, prints, and maps errors to exit codes.
"""

from __future__ import annotations

from .engine import DedupResult, InputChangedError, KeyTooLongError, dedup

__all__ = ["DedupResult", "InputChangedError", "KeyTooLongError", "dedup"]
