"""The dedup engine behind ``cuckoo dedup`` and :func:`cuckoo.dedup`: first occurrence of each
record, in input order, through a filter (``exact=False``) or a store (``exact=True`` or
``store=``).

A *framing* turns blocks of input bytes into records and their keys. The default,
:class:`LineFraming`, makes every line a record keyed by the line without its ``\\n`` and one
``\\r`` before it; another framing (a field of the line, a CSV column) yields the same
:class:`~cuckoo._dedup.sources.Lines` blocks with its own key spans (``Lines(..., keys=(kstarts,
klen))``), and everything after framing (the filter or store batch, the kept and dropped
sinks, the counts) stays as it is.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import sys
import time
from typing import IO, Any, Callable, Iterable, Iterator, List, Optional, Sequence, Union

from cuckoo._numpy import np

import cuckoo
from cuckoo import Filter, FilterFullError

from . import compress

from .errors import EXIT_WRITE, ReportedError, one_line
from .outputs import OutputFile, check_run_files, refuse_clobber, store_files
from .estimate import estimate_input, sized_filter, vector_bucket_size
from .records import CsvFraming, MissingFieldError, RecordError, Records, framing_of
from .resume import ResumeError, RunPlan, plan_run
from .sources import LineFraming, Lines, LineTooLong, Source, read_lines

# Bytes read at a time. The native pipeline holds a few blocks at once per thread (read ahead,
# applied, being written) with 17 bytes of arrays a line beside each: 1 MiB blocks took 17 MiB
# less peak memory than 2 MiB for the same time, with 2 threads on 10^7 hex lines (filter 72
# against 89 MiB, 1.35 against 1.41 s; exact 169 against 186 MiB, 4.26 s both; Xeon Skylake-SP).
DEFAULT_BLOCK = 1 << 20
# The filter's target false-positive rate when the filter path sizes one itself.
DEDUP_FPR = 1e-4


# The most threads and the largest block a run takes (more is a typo, not a plan: each thread
# holds blocks, and a block is read whole into memory).
MAX_THREADS = 1024
MAX_BLOCK = 1 << 30


def write_error(what: str, exc: OSError) -> ReportedError:
    """A failed write to an output (ENOSPC, EIO, ...): one line, exit 4. A reader of standard
    output that went away (`cuckoo dedup big | head -1`: EPIPE, whichever thread wrote) ends the
    run quietly with the status of a process killed by SIGPIPE, as other filters in a pipe end."""
    if what == "to standard output" and getattr(exc, "errno", None) == errno.EPIPE:
        return ReportedError("", 128 + 13)
    return ReportedError(f"cuckoo: cannot write {what}: {one_line(exc)}", EXIT_WRITE)

# Exact dedup reads blocks of 4 MiB: each block is one pass of the store's sorted verification over
# its log, so larger blocks read the log fewer times, but hold more lines at once. Measured on
# 10^7 lines (benchmarks/dedup.py input): 2 MiB 2.9-3.4 s / 140 MiB peak, 4 MiB 3.1 s / 115 MiB,
# 8 MiB 3.8 s / 140 MiB.
EXACT_BLOCK = 4 << 20

# The exact path's memory for its distinct keys (cuckoo.dedup(memory=), --memory): keys and index
# of an in-memory key set (cpp/include/cuckoo/key_set.hpp, ~8.5 bytes of index a key plus the
# key). Inputs that can be read again (regular files) take one more pass per half of the hash
# space that did not fit (cpp/include/cuckoo/dedup.hpp, with_key_set); others use a store over a
# temporary file, whose memory is its index only.
#
# Input read once (a pipe, compressed data): 1/16 of the machine's memory, at least 256 MiB and
# at most 4 GiB, as sort sizes its buffer from the memory there is, since past it the keys move
# to a store on disk, which is several times slower.
#
# Regular files: a quarter of their size within 128 MiB and that same cap, and at least a third
# of the expected key set (no more than about 3 passes where short distinct lines make the set
# larger than the file: 8-byte lines take ~18 bytes a key). A file under a quarter
# of the machine's memory stays in the page cache after the first pass, so a pass more costs a
# read from memory, and the run holds a fraction of what DuckDB or Polars hold for the same job.
# The key set of distinct lines is 0.3-0.6x the input on the benchmark's inputs (hex, URL, text:
# 123, 277, 187 MiB for 196, 533, 576 MiB), so a quarter is 1-3 passes there. Measured (Zen 4,
# 2 threads, 10^7 lines, benchmarks/dedup.py's files; one run each, noisy host), one pass against
# --memory 128M: hex 0.61-1.41 s / 158 MB against 0.85-0.94 s / 100 MB, URL 1.32-1.87 s / 314 MB
# against 1.13-1.76 s / 123 MB, text 1.42-1.77 s / 224 MB against 1.37-1.90 s / 131 MB. Passes
# cost more on other CPUs: on a Xeon Skylake-SP (2026-11-26, an earlier build, hex lines, 2
# threads) one pass took 2.05 s and 185 MiB, two passes under 96 MiB 3.64 s and 164 MiB.
EXACT_MEMORY_MIN = 256 << 20
EXACT_MEMORY_MAX = 4 << 30
EXACT_MEMORY_FILE_MIN = 128 << 20


def exact_memory(file_bytes: Optional[int] = None, key_set_bytes: int = 0) -> int:
    """The default memory= of the exact path. Input read once (`file_bytes` None): 1/16 of the
    machine's memory, within 256 MiB and 4 GiB. Regular files of `file_bytes` in all: a quarter
    of that, at least 128 MiB, and at least a third of `key_set_bytes` (the expected size of the
    distinct keys' set: about 3 passes at most, where many short distinct lines make a set larger
    than the file); at most the read-once default."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        total = 0
    read_once = max(EXACT_MEMORY_MIN, min(EXACT_MEMORY_MAX, total // 16))
    if file_bytes is None:
        return read_once
    return min(read_once, max(EXACT_MEMORY_FILE_MIN, file_bytes // 4, key_set_bytes // 3))


# The longest key a store holds (its records' length field): a longer line is refused with one
# line on stderr as soon as it is seen, before it is held in memory whole.
MAX_STORE_KEY = (1 << 31) - 1


def max_store_key() -> int:
    """MAX_STORE_KEY, or less for the tests (CUCKOO_TEST_MAX_KEY: a long line without writing
    2 GiB); never more."""
    override = os.environ.get("CUCKOO_TEST_MAX_KEY")
    return min(int(override), MAX_STORE_KEY) if override else MAX_STORE_KEY


def _record_end(framing: Any) -> bytes:
    """The byte a framing's records end at (keyed framings: '\\n')."""
    return getattr(framing, "record_end", b"\n")


class KeyTooLongError(ValueError):
    """A record whose key is longer than the longest key a store holds. The records before it
    are done (written, and recorded in the store); ``line`` is its 1-based number."""

    def __init__(self, line: int, limit: int) -> None:
        super().__init__(f"input line {line:,} is longer than {limit:,} bytes, the longest key a store holds")
        self.line = line
        self.limit = limit


class InputChangedError(ValueError):
    """``exact=True`` read an input file again for another pass and found fewer or other records
    than the first pass (the file was cut short or rewritten during the run). ``paths``: the
    input files (the passes cannot tell which of them changed)."""

    def __init__(self, paths: List[str], what: str) -> None:
        names = ", ".join(f"'{p}'" for p in paths) or "the input"
        subject = f"input {names}" if len(paths) == 1 else f"one of the inputs {names}"
        super().__init__(f"{subject} changed while it was read again ({what}): exact dedup reads a file once per "
                         f"pass when its keys outgrow --memory; dedup a copy of a file that is being written")
        self.paths = paths


class DedupResult:
    """What :func:`cuckoo.dedup` did (the figures ``cuckoo dedup`` reports)."""

    # A frozen dataclass written out (its constructor, ==, hash, a repr without filter, store_stats
    # and exact_stats, FrozenInstanceError on assignment): `import dataclasses`, with inspect
    # under it, was a sixth of the start-up of `cuckoo dedup`.
    __match_args__ = ("lines_read", "lines_kept", "bytes_read", "seconds", "exact", "expected_false_drops",
                      "filter", "sizing", "store_stats", "exact_stats", "window_stats")
    _repr_fields = ("lines_read", "lines_kept", "bytes_read", "seconds", "exact", "expected_false_drops", "sizing")

    lines_read: int
    """Records (lines) read."""
    lines_kept: int
    """Records written to ``out``: the first occurrence of each key (for a filter, minus false drops)."""
    bytes_read: int
    """Input bytes read."""
    seconds: float
    """Wall time of the run."""
    exact: bool
    """True for the store path (no record ever dropped by mistake)."""
    expected_false_drops: float = 0.0
    """Filter path: the expected number of new records dropped by mistake (the sum over blocks of
    kept records x the mean expected FPR before and after the block); 0 when exact."""
    filter: Optional[Filter] = None
    """Filter path: the filter holding every key seen (to save, or to pass to the next run)."""
    sizing: str = ""
    """Filter path: how the filter was chosen or sized."""
    store_stats: Optional[dict] = None
    """Store path: ``Store.stats()`` at the end of the run; with a store file and output files,
    ``run_journal`` too (exactly-once reruns, cuckoo._dedup.resume): ``mode`` ("new", "resume"
    or "done": the same run had finished, nothing was done), ``records_before`` and
    ``kept_before`` (what the interrupted run had done), ``store_bytes_cut`` (the store log's
    bytes of uncommitted blocks cut back)."""
    exact_stats: Optional[dict] = None
    """Exact path in memory: ``passes`` over the input, ``planned`` (hash ranges planned before
    the first pass, from the estimate of the distinct lines), ``splits`` (hash ranges set aside
    for a pass of their own, the planned ones included), ``distinct`` keys, ``peak_memory``
    (bytes the key set held), ``memory`` (its budget), ``read_once`` (input that cannot be read
    again, such as a pipe: one pass); and for such input whose keys passed the budget,
    ``spilled_at_line`` and ``spilled_keys`` (where and how many keys moved to a store on an
    anonymous temporary file), ``store_log_bytes`` and ``store_index_bytes`` (that store's log on
    disk and index in memory at the end), ``store_grows`` and ``store_grows_from_memory`` (its
    index growths, and those made from the entries' hash bits, without reading the log back).
    With counts (``count``, ``repeated``, ``unique_only``, ``keep="last"``): ``passes``,
    ``ranges`` (hash ranges counted: 1 when the keys fitted ``memory``), ``distinct``,
    ``peak_memory`` and ``memory``."""
    window_stats: Optional[dict] = None
    """With `window`: ``records`` or ``seconds`` (the window), ``keys`` (held at the end: a key in
    two generations counts twice), ``memory`` and ``peak_memory`` (bytes the window held at the
    end and at most, sampled every 50 ms), ``generations``, and ``fpr_bound`` (approximate: the
    bound on a new record's chance to be dropped by mistake; 0 when exact)."""

    def __init__(self, lines_read: int, lines_kept: int, bytes_read: int, seconds: float, exact: bool,
                 expected_false_drops: float = 0.0, filter: Optional[Filter] = None, sizing: str = "",
                 store_stats: Optional[dict] = None, exact_stats: Optional[dict] = None,
                 window_stats: Optional[dict] = None) -> None:
        self.__dict__.update(lines_read=lines_read, lines_kept=lines_kept, bytes_read=bytes_read, seconds=seconds,
                             exact=exact, expected_false_drops=expected_false_drops, filter=filter, sizing=sizing,
                             store_stats=store_stats, exact_stats=exact_stats, window_stats=window_stats)

    def __setattr__(self, name: str, value: Any) -> None:
        import dataclasses

        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        import dataclasses

        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def _values(self) -> tuple:
        return tuple(self.__dict__[name] for name in self.__match_args__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={self.__dict__[name]!r}" for name in self._repr_fields)
        return f"{self.__class__.__qualname__}({fields})"

    @property
    def lines_dropped(self) -> int:
        """Records not written (repeats, and for a filter its false drops)."""
        return self.lines_read - self.lines_kept


# ---- sources and sinks ---------------------------------------------------------------------------


class _LineIterStream:
    """A binary stream over an iterable of lines (bytes): each item is one line, with or without
    its ``\\n`` (its NUL with ``zero_terminated``: `end`); an item without one gets it when
    another item follows (as a file's last line)."""

    def __init__(self, items: Iterable[Any], end: bytes = b"\n") -> None:
        self._it = iter(items)
        self._end = end
        self._open = False  # the previous item had no '\n' of its own

    def read(self, size: int = -1) -> bytes:
        parts: List[bytes] = []
        n = 0
        for item in self._it:
            if not isinstance(item, (bytes, bytearray, memoryview)):
                raise TypeError(f"cuckoo.dedup: an iterable of lines must yield bytes, got {type(item).__name__}")
            item = bytes(item)
            nl = item.find(self._end)
            if 0 <= nl < len(item) - 1:
                raise ValueError(f"cuckoo.dedup: an item of the iterable holds more than one line: {item[:60]!r}")
            if self._open:
                parts.append(self._end)
            parts.append(item)
            n += len(item) + 1
            self._open = nl < 0
            if 0 <= size <= n:
                break
        return b"".join(parts)


def _sources(source: Any, end: bytes = b"\n") -> List[Source]:
    """Sources of `source`: a path, a binary file object, an iterable of lines (ending at `end`),
    or a list or tuple of paths."""
    if isinstance(source, (str, os.PathLike)):
        return [Source(os.fspath(source), os_errors=True)]
    if isinstance(source, (bytes, bytearray, memoryview)):
        raise TypeError("cuckoo.dedup: pass bytes as io.BytesIO(data) (or data.splitlines(keepends=True))")
    if hasattr(source, "read"):
        return [Source(getattr(source, "name", "<stream>") if isinstance(getattr(source, "name", None), str)
                       else "<stream>", source, os_errors=True)]
    if isinstance(source, (list, tuple)) and source and all(isinstance(s, (str, os.PathLike)) for s in source):
        return [Source(os.fspath(s), os_errors=True) for s in source]
    try:
        items = iter(source)
    except TypeError:
        raise TypeError(f"cuckoo.dedup: source must be a path, a binary file object or an iterable of lines "
                        f"(bytes), not {type(source).__name__}") from None
    return [Source("<lines>", _LineIterStream(items, end))]  # type: ignore[arg-type]


class _Sink:
    """An output: a path (opened here, closed at the end), a binary file object, or None
    (nothing written). `write` and `flush` are what the engine calls."""

    def __init__(self, target: Any, atomic: bool = True, resume_at: Optional[int] = None) -> None:
        self.fh: Any = None
        self.owned = False
        if target is None:
            return
        if isinstance(target, (str, os.PathLike)):
            # NAME.gz/.bz2/.xz/.zst: compressed; written whole unless a store records what it wrote
            self.fh = OutputFile(target, atomic, resume_at)
            self.owned = True
        elif hasattr(target, "write"):
            self.fh = target
        else:
            raise TypeError(f"cuckoo.dedup: an output must be a path or a binary file object, not "
                            f"{type(target).__name__}")

    def write(self, data: Any) -> None:
        if self.fh is not None and len(data):
            self.fh.write(data)

    def flush(self) -> None:
        if self.fh is not None and hasattr(self.fh, "flush"):
            self.fh.flush()

    def close(self) -> None:
        if self.owned and self.fh is not None:
            self.fh.commit()

    def abort(self) -> None:
        """After a failure: a file this sink opened is removed (its target stays as it was)."""
        if self.owned and self.fh is not None:
            self.fh.abort()


def _finish(sink: Any, drop_sink: Any, ok: bool) -> None:
    """After a run: flushes and closes both sinks (committing the files they write whole), or
    after a failure (`ok` False) aborts them. A sink that fails to flush or close aborts the
    other one too, and its error is raised."""
    sinks = (sink, drop_sink)
    if ok:
        try:
            for s in sinks:
                s.flush()
            for s in sinks:
                s.close()
            return
        except BaseException:
            for s in sinks:
                _abort(s)
            raise
    for s in sinks:
        _abort(s)


def _abort_opened(*sinks: Any) -> None:
    """Aborts the sinks that _as_sink opened here (their files removed, targets untouched); the
    caller's own sinks (the CLI's) are left to it: a path that gives up before running may hand
    them to another path."""
    for own in sinks:
        if isinstance(own, _Sink):
            own.abort()


def _abort(sink: Any) -> None:
    abort = getattr(sink, "abort", None)
    if abort is not None:
        abort()
    else:  # (a sink of the caller's without abort: closed as before)
        try:
            sink.close()
        except BaseException:
            pass


def _as_sink(target: Any, atomic: bool = True, resume_at: Optional[int] = None) -> Any:
    """The CLI hands its own sinks (cli.output.Output: errors on one line); else a _Sink."""
    if target is not None and hasattr(target, "write") and hasattr(target, "flush") and hasattr(target, "what"):
        return target
    return _Sink(target, atomic, resume_at)


def _progress_of(progress: Any) -> Callable[[int, int], None]:
    if callable(progress):
        return progress
    if progress:
        from .report import Progress

        return Progress(True, "dedup").update
    return _no_progress


def _no_progress(lines: int, nbytes: int) -> None:
    pass


# ---- the native pipeline (cpp/include/cuckoo/dedup.hpp) -------------------------------------------


def default_threads() -> int:
    """The cores this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)


def _fd_of(stream: Any, write: bool) -> Optional[int]:
    """The file descriptor behind a binary stream whose own buffer can be bypassed: a FileIO, or a
    buffered file, flushed first (writers) or positioned (readers: a seekable file's fd gets the
    stream's position; a pipe's read-ahead is taken by _drain). None when there is none
    (BytesIO, an iterable of lines, a text stream)."""
    if not _has_fd(stream):
        return None
    try:
        fd = stream.fileno()
        if write:
            stream.flush()
        if stream.seekable():
            os.lseek(fd, stream.tell(), os.SEEK_SET)
        return fd
    except (OSError, ValueError, AttributeError):
        return None


def _has_fd(stream: Any) -> bool:
    """Whether _fd_of would find a file descriptor behind `stream`, without positioning it (_fd_of
    moves the fd to the stream's position; a second call, with the buffer still holding what it
    read ahead, would move it back over those bytes)."""
    if not isinstance(stream, (io.FileIO, io.BufferedReader, io.BufferedWriter, io.BufferedRandom)):
        return False
    try:
        stream.fileno()
        return True
    except (OSError, ValueError, AttributeError):
        return False


def _drain(stream: Any) -> bytes:
    """What a buffered reader of a pipe has read ahead of its position (the pipeline then reads its
    fd from there on). It reads the pipe when the buffer is empty: not for a source whose
    read_head left it empty (a live stream would keep the run from starting)."""
    if not isinstance(stream, io.BufferedReader) or stream.seekable():
        return b""
    ahead = stream.peek(1)  # the buffered bytes (a read only when none are: they are next anyway)
    return stream.read(len(ahead)) if ahead else b""


def _resync(stream: Any, fd: int) -> None:
    """After the pipeline read or wrote fd directly: the stream's position follows the fd's."""
    try:
        if stream.seekable():
            stream.seek(os.lseek(fd, 0, os.SEEK_CUR))
    except (OSError, ValueError):
        pass


class _Native:
    """The pipeline's arguments, when every source and sink has a file descriptor; else None
    from plan()."""

    def __init__(self) -> None:
        self.inputs: List[Any] = []
        self.streams: List[Any] = []  # (stream, fd) to resync afterwards
        self.compressors: dict = {}  # side (1, 2) -> the CompressingWriter whose pipe it writes
        self.out_fd = -1
        self.dropped_fd = -1
        self.decompressing: List[Any] = []  # (source, DecompressingReader) read through a pipe
        # Keyed records: the framing's spec for the pipeline (None: lines), the CSV header to
        # write first, and the line each input's records start on (after its header).
        self.framing: Any = None
        self.spec: Optional[dict] = None
        self.header = b""
        self.out_header: Optional[bytes] = None  # the output's, when not `header` (--count's column)
        self.header_names: Optional[List[bytes]] = None  # the first input's CSV header
        self.first_lines: List[int] = []

    @classmethod
    def plan(cls, sources: List[Source], framing: Any, sinks: Sequence[Any],
             compressed_pipes: bool = False) -> Optional["_Native"]:
        """`compressed_pipes`: a compressed output gets a pipe that its compressor reads
        (CompressingWriter.pipe_fileno: a --store run with a journal, which ends a member at each
        commit); else such an output has no fd (the Python path)."""
        if not getattr(framing, "native", False) or os.name == "nt":
            return None
        n = cls()
        fds = []
        for sink in sinks:
            fh = getattr(sink, "fh", None)
            if isinstance(fh, OutputFile):
                fh = fh.fh  # (the file it writes: a temporary one, or the target itself)
            if fh is None:
                fds.append(-1)
                continue
            if compressed_pipes and isinstance(fh, compress.CompressingWriter):
                fds.append(fh.pipe_fileno())
                n.compressors[len(fds)] = fh  # (side 1: the output, 2: the dropped records)
                continue
            fd = _fd_of(fh, write=True)
            if fd is None:
                return None
            fds.append(fd)
            n.streams.append((fh, fd))
        n.out_fd, n.dropped_fd = fds
        for src in sources:
            prefix = b"".join(src.pushed)
            if src.eof:
                n.inputs.append((-1, prefix))
                continue
            stream = getattr(sys.stdin, "buffer", None) if src.is_stdin else src.stream
            if src.path is None and not _has_fd(stream):
                return None
            n.inputs.append((None, prefix))
        # Only now open the files (Source.open reports a missing file as the Python path does).
        for k, src in enumerate(sources):
            if n.inputs[k][0] is None:
                stream = src.open()
                if isinstance(stream, compress.DecompressingReader):
                    # decompressed on its thread into a pipe the pipeline reads (its errors: check())
                    n.inputs[k] = (stream.fileno(), n.inputs[k][1])
                    n.decompressing.append((src, stream))
                    continue
                fd = _fd_of(stream, write=False)
                if fd is None:
                    return None
                n.inputs[k] = (fd, n.inputs[k][1] + (b"" if src.buffer_empty else _drain(stream)))
                if src.stream is not None and not src.owned:
                    n.streams.append((src.stream, fd))
        n.first_lines = [1] * len(n.inputs)
        if isinstance(framing, LineFraming):
            n.spec = framing.native_spec()
        elif getattr(framing, "native_spec", None) is not None:
            n.framing = framing
            if isinstance(framing, CsvFraming):
                n._read_headers(sources, framing)
            else:
                n.spec = framing.native_spec()
        return n

    def _read_headers(self, sources: List[Source], framing: CsvFraming) -> None:
        """Takes each input's CSV header off the front of its bytes (reading from its fd as far as
        the header goes): the first one resolves the key columns and is written once to each
        output; a later input's must name the same columns, and is written nowhere."""
        first: Optional[List[bytes]] = None
        for k, (fd, prefix) in enumerate(self.inputs):
            data, at_end = prefix, fd < 0
            while True:
                try:
                    end, names = cuckoo._core._csv_header(data, ord(framing.delimiter), ord('"'), at_end)
                except ValueError as exc:
                    raise RecordError(1, str(exc), sources[k].name) from None
                if end >= 0 or at_end:
                    break
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    at_end = True
                data += chunk
            if end < 0:  # an empty input: no header, no records
                self.inputs[k] = (fd, b"")
                continue
            header = data[:end]
            self.inputs[k] = (fd, data[end:])
            self.first_lines[k] = 1 + header.count(b"\n")
            if first is None:
                first = names
                self.header_names = names
                self.header = header if header.endswith(b"\n") else header + b"\n"
                framing.resolve(names)
            elif names != first:
                raise RecordError(1, f"its CSV header names other columns than the first input's "
                                     f"({_names(names)} against {_names(first)})", sources[k].name)
        if first is None:  # no input had a header: nothing to key
            framing.columns = [0]
        self.spec = framing.native_spec()

    def run(self, call: Callable[..., dict], sources: List[Source], sinks: Sequence[Any], *args: Any,
            run_plan: Optional[RunPlan] = None, **more: Any) -> dict:
        """`run_plan` (a --store run with a journal, cuckoo._dedup.resume): the pipeline records
        each commit in the journal; a resumed run starts where the journal says. `more`: keyword
        arguments of `call`."""
        journal_fd = -1
        try:
            resuming = run_plan is not None and run_plan.mode == "resume"
            if self.header:  # once to each output, before the pipeline writes to its fd
                headers = (self.out_header or self.header, self.header)
                for sink, kept, header in zip(sinks, (run_plan.out_at, run_plan.dropped_at) if resuming else (0, 0),
                                              headers):
                    if getattr(sink, "fh", None) is not None and not kept:  # (a resumed file has its header)
                        sink.write(header)
                        sink.flush()
            inputs = [(fd, prefix, line, 0) for (fd, prefix), line in zip(self.inputs, self.first_lines)]
            journal: dict = {}
            if run_plan is not None:
                start = run_plan.start_point(self.first_lines[0] if self.first_lines else 1)
                if resuming:
                    inputs = _resumed_inputs(inputs, start)
                journal_fd = run_plan.open_journal()
                journal = dict(journal_fd=journal_fd, start=start)
                if self.compressors:
                    fds = {1: self.out_fd, 2: self.dropped_fd}

                    def position(side: int, written: int, last: bool) -> int:
                        writer = self.compressors.get(side)
                        if writer is not None:  # a member ends with what was written: the file's size
                            return writer.end_member(written, last)
                        return os.lseek(fds[side], 0, os.SEEK_CUR)

                    journal["position"] = position
            result = call(inputs, self.out_fd, self.dropped_fd, *args, framing=self.spec, **journal, **more)
            if result["status"] == "bad_record":
                self._raise_bad_record(result, sources)
            for src, stream in self.decompressing:
                try:
                    stream.check()  # corrupt or truncated data ended the pipe early: an error, not the end
                except ValueError as exc:
                    raise src.decompress_error(exc) from None
            return result
        except OSError as exc:
            side = getattr(exc, "cuckoo_side", None)
            if side == "input":
                raise sources[int(getattr(exc, "cuckoo_input", 0))].input_error(exc) from None
            sink = sinks[0 if side == "output" else 1] if side else None
            if sink is not None and hasattr(sink, "what"):
                raise write_error(sink.what, exc) from None
            raise
        finally:
            if journal_fd >= 0:
                os.close(journal_fd)
            for stream, fd in self.streams:
                _resync(stream, fd)
            for src in sources:
                src.close()


    def _raise_bad_record(self, d: dict, sources: List[Source]) -> None:
        """The RecordError of a record the pipeline could not key (the records before it are
        done: written, and in the filter or store)."""
        line = int(d["bad_line"])
        name = sources[int(d["bad_input"])].name if len(sources) > 1 else None
        if d["bad_why"] == "missing":
            raise MissingFieldError(line, self.framing.missing_text(), name)
        raise RecordError(line, d["message"], name)


def _resumed_inputs(inputs: List[tuple], start: dict) -> List[tuple]:
    """The pipeline's inputs of a resumed run: those before the journal's input empty, that one
    from the journal's offset (after its CSV header) on, at its line number."""
    i, offset = int(start["input"]), int(start["input_offset"])
    if i >= len(inputs):
        raise ResumeError(f"cuckoo: the run journal names input {i + 1} of {len(inputs)}")
    out = [(-1, b"", item[2], 0) if j < i else item for j, item in enumerate(inputs)]
    fd, prefix = inputs[i][0], inputs[i][1]
    if offset <= len(prefix):
        prefix = prefix[offset:]
    else:
        os.lseek(fd, offset - len(prefix), os.SEEK_CUR)
        prefix = b""
    out[i] = (fd, prefix, int(start["input_line"]), offset)
    return out


def _plan(sources: List[Source], framing: Any, sink: Any, drop_sink: Any,
          compressed_pipes: bool = False) -> Optional[_Native]:
    """_Native.plan, closing the sinks when it fails (a CSV header that is not valid, or names no
    key column)."""
    try:
        return _Native.plan(sources, framing, (sink, drop_sink), compressed_pipes)
    except BaseException:
        _finish(sink, drop_sink, False)
        raise


def _names(names: List[bytes]) -> str:
    return ", ".join(n.decode("utf-8", "replace") for n in names)


# ---- the entry point -------------------------------------------------------------------------------


def dedup(source: Any, out: Any = None, *, exact: Optional[bool] = None, store: Any = None,
          filter: Optional[Filter] = None,
          capacity: Optional[int] = None, fpr: Optional[float] = None, seed: Optional[int] = None,
          threads: Optional[int] = None, dropped: Any = None, block_size: Optional[int] = None,
          progress: Union[bool, Callable[[int, int], None]] = False, framing: Optional[Any] = None,
          key: Any = None, sep: Any = None, csv: bool = False, jsonl: bool = False,
          missing: str = "error", memory: Optional[int] = None, zero_terminated: bool = False,
          count: bool = False, repeated: bool = False, unique_only: bool = False, keep: str = "first",
          count_name: str = "count", window: Any = None, time_key: Any = None,
          _run_plan: Optional[RunPlan] = None) -> DedupResult:
    """Writes the first occurrence of each line of `source` to `out`, in input order.

    Parameters
    ----------
    source
        A path, a binary file object (read from its current position, not closed), an iterable
        of lines (``bytes``; each item is one line, its ``\\n`` optional), or a list of paths
        (read one after the other, as one input).
    out
        A path (created or truncated), a binary file object (written, flushed, not closed), or
        None: nothing is written (the counts only).
    exact
        The default (None: exact unless `filter`, `capacity`, `fpr` or `seed` asks for the filter;
        ``exact=False`` asks for it too). Compare every repeat with the line itself: no line is
        ever dropped by mistake, as with awk, ``sort -u``, DuckDB or pandas. Regular
        files (one or several, uncompressed) keep their distinct lines in memory, within `memory`
        bytes: when they do not fit, the hash space is split in ranges, and each range set aside
        costs one more pass over the input (the output is still written in input order, each line
        as soon as every pass it needs is done). When the estimate of the distinct lines says
        ahead that they need more than `memory`, the ranges are planned before the first pass.
        Other inputs (stdin from a pipe, compressed data, streams) keep them in an anonymous store
        (a temporary log, removed at the end).
        With ``exact=False``, a cuckoo filter remembers the lines: much less memory (about 2 bytes
        a distinct line against 12 or more), a filter that can be saved and shipped, and a new
        line dropped by mistake with probability about the filter's expected FPR (reported as
        ``expected_false_drops``).
    store
        A :class:`cuckoo.Store` or the path of one (created if absent): exact dedup against it.
        Lines already in it count as seen; each block's new lines are added to it only after
        they were written and flushed to `out`, so a run stopped anyhow and run again writes every
        line at least once (only the lines of the last block may repeat); exactly once when the
        store, `out` and `dropped` are paths of uncompressed files and the inputs are files (the
        run journal ``STORE.run``: the rerun cuts `out` back to the last commit and goes on; a
        rerun of a finished run does nothing; ``result.store_stats["run_journal"]``).
    filter
        A :class:`cuckoo.Filter` to dedup against (lines already in it count as seen); it is
        updated in place and returned as ``result.filter``. Default: a new filter, growable,
        sized from an estimate of the distinct lines (or fixed at `capacity`), with target
        false-positive rate `fpr` (default 1e-4) and `seed` (default a secret random seed); its
        buckets have 2 slots where 4 would need more than one 8-byte load per bucket (at 1e-4:
        2 x 16 bits instead of 4 x 17, the same bound, twice the insert speed).
    threads
        Threads of the native pipeline (default: the cores available): N - 1 read, split and
        hash, the calling thread applies the filter or store in input order, and (filter,
        exact) one more thread writes the output. The output never depends on it.
    dropped
        A second output (path or binary file object) for the lines not written to `out`, in input
        order, exactly as read.
    block_size
        Bytes read at a time (default 1 MiB, 4 MiB for a store). The filter path with more than
        one thread reads blocks of about 16,384 lines, from 256 KiB up to this size (short lines
        make large per-line arrays, which crowd the filter out of the cache).
    progress
        True: a progress line on stderr; or a callable ``progress(lines, bytes)`` called after
        each block (lines and bytes read so far: with ``exact=True`` in several passes, those of
        every pass).
    framing
        How input becomes records and keys (default :class:`LineFraming`: whole lines).
    memory
        Bytes of memory for the exact path's distinct lines (keys and their index; at least
        4 KiB). More passes over the input when they do not fit; nothing else changes. Default:
        for regular files, a quarter of their size, at least 128 MiB (a file that small stays in
        the page cache, so a pass more is cheap), never more than for input read once: 1/16 of
        the machine's memory, within 256 MiB and 4 GiB. ``exact_stats["memory"]`` reports it.
    zero_terminated
        Records end at a NUL byte instead of ``\\n`` (``-z``, as ``sort -z`` and ``uniq -z``: file
        names from ``find -print0``); a record's key is the record without its NUL, and an
        unterminated last record gets one when more input follows it. Whole records only (not
        with `key`).
    count, repeated, unique_only, keep, count_name
        Selections by each key's count over the whole input (exact, two passes; a pipe or
        compressed input is first copied to an anonymous temporary file). ``count=True``
        (``-c``): each written record with its key's count: a line as ``uniq -c`` writes it
        (``"%7d "`` before it), a CSV or ``sep`` record with one more field (CSV: a header column
        `count_name`), a JSON object with one more member `count_name`. ``repeated=True``
        (``-d``): only keys seen more than once; ``unique_only=True`` (``-u``): only keys seen
        exactly once. ``keep="last"``: each key's last record instead of its first, in input order
        (the rows of pandas ``drop_duplicates(keep="last")``). Each key is written once at most;
        the other records go to `dropped`. Not with `store` or the filter.
    window
        Dedup within a window, for streams: a record is dropped when its key occurred among the
        previous N records (``window=N``), or less than a duration earlier in arrival time
        (``window="10m"``; a str with a unit: ms, s, m, h, d; or a ``datetime.timedelta``), the
        time a record's block reached the pipeline (a live stream's records within about 50 ms of
        their arrival). Memory is bounded by the keys of about one window
        (:class:`cuckoo.Window`'s generations, which expire whole). Exact; ``exact=False`` (or
        `fpr`, `seed`) remembers keys in filters instead (about 2 bytes a key, a new record dropped
        by mistake with probability at most ``result.window_stats["fpr_bound"]``). One pass,
        streaming: not with `store`, `filter`, `capacity`, `memory` or the count options.
    time_key
        With a duration `window` and keyed records (`key` with `csv`, `jsonl` or `sep`): the field
        that holds each record's event time (epoch seconds, or ISO 8601 such as
        ``2026-11-29T10:00:00Z``; no zone is UTC). A record is dropped when its key occurred less
        than the duration earlier or later in event time. Records may come out of order: one
        behind the watermark (the largest time seen, less the window) is late, kept and counted
        (``window_stats["late"]``), as is one without a valid time (``"untimed"``).
    key, sep, csv, jsonl, missing
        Keyed records (cuckoo._dedup.records), the whole record written: ``sep="\\t", key="2"`` (field
        2 of tab-separated lines; ``"2,4"``: fields 2 through 4, as ``sort -k``), ``csv=True,
        key="event_id"`` (an RFC 4180 column by name or number; the header is written and is no
        record), ``jsonl=True, key="a.b.c"`` (the JSON text at a dotted path). A record without
        the field: ``missing="keep"`` writes it, ``"drop"`` drops it, ``"error"`` (default) raises
        :class:`cuckoo._dedup.records.MissingFieldError` (a ``ValueError`` naming its line) once the
        records before it are done. A Parquet or Arrow IPC file (recognised by its magic bytes)
        is deduplicated by its column `key`, row group by row group, into a file of its format
        (pyarrow needed).

    Compressed input (gzip, bzip2, xz, zstd: recognised by the magic bytes) is decompressed on a
    thread of its own; an output path ending in .gz, .bz2, .xz or .zst is compressed.

    Returns
    -------
    DedupResult
        Lines read, kept and dropped, bytes read, seconds, and for a filter the expected false
        drops and the filter itself.

    Raises
    ------
    cuckoo.FilterFullError
        A fixed filter (`capacity`, or a fixed `filter`) filled: the lines before the failing
        one are written and in the filter; the exception's ``dedup_result`` holds their counts.
    KeyTooLongError
        (A ``ValueError``.) A line longer than a store key (2**31 - 1 bytes): the lines before it
        are done.
    InputChangedError
        (A ``ValueError``.) ``exact=True`` read an input file again for another pass and found
        fewer or other lines than the first time (the file was cut short or rewritten during the
        run): an output file keeps its old content (what went to a stream is not to be trusted). Lines appended to a file during the run (a log
        being written) are not an error: every pass reads the bytes the first one read, and the
        output is that of the file as the first pass saw it.
    OSError
        An input that cannot be opened or read (``FileNotFoundError``, ``PermissionError``, ...,
        naming the file), or an output that cannot be written (``cuckoo_side`` says which:
        ``"output"`` or ``"dropped"``); with `store`, no line of a block that was not written is
        recorded.

    Lines are bytes, never decoded. ``a\\r\\n`` and ``a\\n`` are the same key (that of
    ``b"a"``); lines are written back exactly as read; a last line without ``\\n`` gets one only
    when more input follows it.
    """
    if filter is not None and not isinstance(filter, Filter):
        raise TypeError(f"cuckoo.dedup: filter must be a cuckoo.Filter, not {type(filter).__name__}"
                        + (" (a Store is store=)" if isinstance(filter, cuckoo.Store) else ""))
    for name, stream in (("source", source), ("out", out), ("dropped", dropped)):
        if isinstance(stream, io.TextIOBase):
            raise TypeError(f"cuckoo.dedup: {name} is a text stream: records are bytes, give a binary one "
                            f"(open(path, {'rb' if name == 'source' else 'wb'!r}), io.BytesIO)")
    if exact is not None and not isinstance(exact, bool):
        raise TypeError(f"cuckoo.dedup: exact must be True, False or None, not {type(exact).__name__}")
    filter_asked = filter is not None or capacity is not None or fpr is not None or seed is not None
    if exact is None:  # exact unless an option only the filter has asks for it
        exact = store is not None or not filter_asked
    if store is not None and exact is False:
        raise ValueError("cuckoo.dedup: store= is exact dedup; exact=False asks for the filter")
    if exact and filter is not None or store is not None and filter is not None:
        raise ValueError("cuckoo.dedup: filter= is for the filter path; exact=True/store= keep every key exactly")
    if (exact or store is not None) and (capacity is not None or fpr is not None or seed is not None):
        raise ValueError("cuckoo.dedup: capacity/fpr/seed are for the filter; exact=True/store= keep every key exactly")
    if memory is not None:
        if not exact or store is not None:
            raise ValueError("cuckoo.dedup: memory= is for exact=True (an in-memory key set)")
        if isinstance(memory, bool) or not isinstance(memory, int) or memory < 4096:
            raise ValueError(f"cuckoo.dedup: memory must be an int of at least 4096 bytes, got {memory!r}")
    _check_files(source, out, dropped, store)
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or not
                                1 <= threads <= MAX_THREADS):
        raise ValueError(f"cuckoo.dedup: threads must be an int from 1 to {MAX_THREADS}, got {threads!r}")
    if block_size is not None and (isinstance(block_size, bool) or not isinstance(block_size, int) or not
                                   1 <= block_size <= MAX_BLOCK):
        raise ValueError(f"cuckoo.dedup: block_size must be an int from 1 to {MAX_BLOCK} bytes, got {block_size!r}")
    from .counted import count_spec  # (small: the count options' checks)
    from .windowed import window_spec

    counting = count_spec(count, repeated, unique_only, keep, count_name)
    windowing = window_spec(window)
    if time_key is not None and (windowing is None or windowing.records):
        raise ValueError("cuckoo.dedup: time_key= is for a window of time (window='10m'): the field holding each "
                         "record's event time")

    if windowing is not None and (store is not None or filter is not None or capacity is not None or
                                  memory is not None or counting is not None):
        raise ValueError("cuckoo.dedup: window= is one streaming pass with a state of its own: not with store=, "
                         "filter=, capacity=, memory= or the count options")
    if counting is not None and (store is not None or not exact) and windowing is None:
        raise ValueError("cuckoo.dedup: count, repeated, unique_only and keep='last' are exact: not with store= "
                         "or the filter")
    if not isinstance(zero_terminated, bool):
        raise TypeError(f"cuckoo.dedup: zero_terminated must be True or False, not {type(zero_terminated).__name__}")
    if zero_terminated and (key is not None or sep is not None or csv or jsonl or missing != "error"):
        raise ValueError("cuckoo.dedup: zero_terminated is for whole records that end at NUL; records keyed by a "
                         "field (key=) end at newlines")
    if zero_terminated:
        if framing is not None:
            raise ValueError("cuckoo.dedup: give framing= or zero_terminated=, not both")
        framing = LineFraming(b"\0")
    elif key is not None or sep is not None or csv or jsonl or missing != "error":
        if framing is not None:
            raise ValueError("cuckoo.dedup: give framing= or key=/sep=/csv=/jsonl=, not both")
        # (A text framing asked for reads the file as text, whatever its first bytes.)
        columnar = _columnar_format(source) if not (csv or jsonl or sep is not None) else None
        if columnar is not None:
            if counting is not None or windowing is not None:
                raise ValueError("cuckoo.dedup: count, repeated, unique_only, keep='last' and window= are for text "
                                 "records, not a Parquet or Arrow file")
            return _dedup_columnar(source, out, key, exact, store, filter, capacity, fpr, seed, dropped, missing,
                                   sep, csv, jsonl)
        framing = framing_of(sep=sep, key=key, csv=csv, jsonl=jsonl, missing=missing)
    sources = (source if isinstance(source, list) and source and isinstance(source[0], Source)
               else _sources(source, _record_end(framing)))
    framing = framing if framing is not None else LineFraming()
    report = _progress_of(progress)
    try:
        if windowing is not None:
            from .windowed import dedup_window

            from .windowed import time_framing_of

            time_framing = time_framing_of(framing, time_key) if time_key is not None else None
            return dedup_window(sources, out, dropped, block_size or DEFAULT_BLOCK, threads, report, framing,
                                windowing, exact, fpr, seed, time_framing)
        if counting is not None:
            from .counted import dedup_counted

            return dedup_counted(sources, out, dropped, block_size or DEFAULT_BLOCK, threads, report, framing,
                                 memory, counting)
        if exact and store is None:
            done = _dedup_exact_in_memory(sources, out, dropped, block_size or DEFAULT_BLOCK, threads, report,
                                          framing, memory)
            if done is not None:
                return done
        if exact or store is not None:
            return _dedup_store(sources, out, store, dropped, block_size or EXACT_BLOCK, threads, report, framing,
                                _run_plan)
        return _dedup_filter(sources, out, filter, capacity, fpr, seed, dropped, block_size or DEFAULT_BLOCK,
                             threads, report, framing)
    except BaseException:
        # (An error before the run closed its inputs, such as the second of two inputs missing
        # while the estimate had opened the first: the files it opened are closed, not left to
        # the garbage collector.)
        for src in sources:
            src.close()
        raise


def _path(x: Any) -> Optional[str]:
    return os.fspath(x) if isinstance(x, (str, os.PathLike)) else None


def _check_files(source: Any, out: Any, dropped: Any, store: Any) -> None:
    """The clobber rule (cuckoo._dedup.outputs) over the paths of a cuckoo.dedup() call: out and
    dropped are neither an input, nor a file of the store, nor each other; no input is a file of
    the store. ClobberError (a ValueError) before anything is opened."""
    if isinstance(source, (str, os.PathLike)):
        inputs = [os.fspath(source)]
    elif isinstance(source, (list, tuple)) and all(isinstance(s, (str, os.PathLike)) for s in source):
        inputs = [os.fspath(s) for s in source]
    else:
        inputs = []
    store_path = _path(store)
    owned = store_files(store_path) if store_path is not None else []
    for p in inputs:
        refuse_clobber(p, "input", owned, "refusing to read what it writes", prefix="cuckoo.dedup")
    check_run_files(inputs, [(_path(out), "output (out=)"), (_path(dropped), "dropped output (dropped=)")], owned,
                    prefix="cuckoo.dedup")


def _columnar_format(source: Any) -> Optional[str]:
    """"parquet"/"ipc"/"ipc-stream" for the path of a Parquet or Arrow IPC file, else None."""
    from .columnar import sniff_columnar  # (here: start-up of cuckoo dedup)

    if not isinstance(source, (str, os.PathLike)):
        return None
    try:
        if not stat.S_ISREG(os.stat(os.fspath(source)).st_mode):
            return None  # a pipe: reading it here would take its first bytes away
        with open(os.fspath(source), "rb") as fh:
            return sniff_columnar(fh.read(8))
    except OSError:
        return None


def _dedup_columnar(source: Any, out: Any, key: Any, exact: bool, store: Any, filter: Optional[Filter],
                    capacity: Optional[int], fpr: Optional[float], seed: Optional[int], dropped: Any, missing: str,
                    sep: Any, csv: bool, jsonl: bool) -> DedupResult:
    from .columnar import dedup_columnar

    if key is None or sep is not None or csv or jsonl:
        raise ValueError("cuckoo.dedup: a Parquet or Arrow file is deduplicated by a column: give key=COLUMN "
                         "(and no sep/csv/jsonl)")
    if store is not None:
        raise ValueError("cuckoo.dedup: store= is for text records (a Parquet or Arrow file is complete only once "
                         "closed, so its rows cannot be recorded block by block); use exact=True")
    start = time.perf_counter()
    r = dedup_columnar(source, out, str(key), exact=exact, filter=filter, fpr=fpr, capacity=capacity, seed=seed,
                       dropped=dropped, missing=missing)
    return DedupResult(r.rows_read, r.rows_kept, os.path.getsize(os.fspath(source)), time.perf_counter() - start,
                       exact, filter=None if exact else filter, sizing="rows")


def _blocks(sources: List[Source], framing: Any, block: int, max_key: Optional[int] = None) -> Iterator[Any]:
    """(lines, is_last_input) over all sources in order."""
    for i, src in enumerate(sources):
        try:
            for lines in framing.blocks(src, block, max_key):
                yield lines, i == len(sources) - 1
        finally:
            src.close()


def _write_header(block: Any, sink: Any, drop_sink: Any) -> None:
    """A CSV header (the first input's, on its first block) once to each output."""
    header = getattr(block, "header", b"")
    if header:
        sink.write(header)
        drop_sink.write(header)


def _dedup_filter(sources: List[Source], out: Any, f: Optional[Filter], capacity: Optional[int], fpr: Optional[float],
                  seed: Optional[int], dropped: Any, block: int, threads: Optional[int],
                  report: Callable[[int, int], None], framing: Any) -> DedupResult:
    how = "given"
    if f is None:
        rate = fpr if fpr is not None else DEDUP_FPR
        f, _, how = sized_filter(sources, block, rate, seed, capacity, bucket_size=vector_bucket_size(rate),
                                 record_end=_record_end(framing))
    sink, drop_sink = _as_sink(out), _as_sink(dropped)
    start = time.perf_counter()
    native = _plan(sources, framing, sink, drop_sink) if hasattr(f, "_dedup") else None
    if native is not None:
        ok = False
        try:
            d = native.run(f._dedup, sources, (sink, drop_sink), block, threads or default_threads(),  # type: ignore[attr-defined]
                           None if report is _no_progress else report)
            r = DedupResult(d["lines"], d["kept"], d["bytes"], time.perf_counter() - start, False,
                            d["expected_false"], f, how)
            if d["status"] == "full":
                exc = FilterFullError(f"{d['message']}; the lines before it are done")
                exc.inserted = d["lines"]  # type: ignore[attr-defined]
                exc.reason = d["reason"]  # type: ignore[attr-defined]
                exc.dedup_result = r  # type: ignore[attr-defined]
                # A full filter of fixed capacity is no failure of the run's files: the outputs
                # hold every record before the failing one, as the filter holds their keys (exit 3).
                ok = True
                raise exc
            ok = True
        finally:
            _finish(sink, drop_sink, ok)
        return r
    read = kept_total = nbytes = 0
    expected_false = 0.0
    fpr_before = f.expected_fpr
    ok = False
    try:
        for lines, last_input in _blocks(sources, framing, block):
            _write_header(lines, sink, drop_sink)
            mask, failed_at, exc = lines.insert(f, unique=True)
            if failed_at is not None:
                # Keep the work done: the lines before the failing one are written, and the
                # filter holds exactly their keys.
                sink.write(lines.select(mask, final=last_input))
                before = np.zeros(len(lines), dtype=bool)
                before[:failed_at] = ~mask[:failed_at]
                drop_sink.write(lines.select(before, final=False))
                kept_total += int(np.count_nonzero(mask))
                read += failed_at
                assert exc is not None
                exc.dedup_result = DedupResult(read, kept_total, nbytes, time.perf_counter() - start, False,  # type: ignore[attr-defined]
                                               expected_false, f, how)
                ok = True  # (as on the native path: the outputs hold every record before it)
                raise exc
            kept = int(np.count_nonzero(mask))
            fpr_after = f.expected_fpr
            expected_false += kept * 0.5 * (fpr_before + fpr_after)
            fpr_before = fpr_after
            sink.write(lines.select(mask, final=last_input))
            if kept < len(lines):
                drop_sink.write(lines.select(~mask, final=last_input))
            read += len(lines)
            kept_total += kept
            nbytes += len(lines.buf) - (1 if lines.virtual else 0)
            report(read, nbytes)
        ok = True
    finally:
        _finish(sink, drop_sink, ok)
    return DedupResult(read, kept_total, nbytes, time.perf_counter() - start, False, expected_false, f, how)


def _rewindable(native: "_Native") -> Optional[List[int]]:
    """Where each input of a native plan starts, when every one can be read again from there (a
    regular file, read from its fd; or given whole as bytes: -1), with the bytes already read from
    it put back (its fd moved back over them); else None."""
    starts: List[int] = []
    for k, (fd, prefix) in enumerate(native.inputs):
        if fd < 0:
            starts.append(-1)
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            start = os.lseek(fd, 0, os.SEEK_CUR) - len(prefix)
        except OSError:
            return None
        if start < 0:
            return None
        starts.append(start)
    for k, (fd, prefix) in enumerate(native.inputs):
        if fd >= 0:
            os.lseek(fd, starts[k], os.SEEK_SET)
            native.inputs[k] = (fd, b"")
    return starts


def _dedup_exact_in_memory(sources: List[Source], out: Any, dropped: Any, block: int, threads: Optional[int],
                           report: Callable[[int, int], None], framing: Any,
                           memory: Optional[int]) -> Optional[DedupResult]:
    """Exact dedup through the in-memory key set (cuckoo._core._dedup_exact), when the native
    pipeline reads every input (a file, a pipe, stdin, decompressed input, bytes given whole);
    else None (nothing read). Regular files are read again for each pass over a hash range when
    the keys do not fit `memory`; input read once (a pipe) keeps its keys in memory while they fit,
    then moves them to a store on an anonymous temporary file and goes on through it."""
    if not hasattr(cuckoo._core, "_dedup_exact") or not getattr(framing, "native", False) or os.name == "nt":
        return None
    # (A missing file: the store path, which reports it.)
    if any(src.path is not None and not os.path.exists(src.path) for src in sources):
        return None
    # The estimate and the distinct keys' mean length plan the passes.
    estimate, known, _, mean_key_bytes = estimate_input(sources, block, _record_end(framing))
    if not isinstance(framing, LineFraming):
        # The sample measures whole lines, and a keyed record's key is a part of it (a JSONL
        # event of 120 bytes keyed by an 8-byte id): passes planned from the lines' length
        # would read the input several times for keys that fit at once (3 passes, 2.1 s against
        # 0.7 s on 3*10^6 events). Unknown, the budget splits the hash space only when the keys
        # outgrow it.
        mean_key_bytes = 0.0
    regular = all(src.regular_size() is not None for src in sources)
    sink, drop_sink = _as_sink(out), _as_sink(dropped)
    native = _plan(sources, framing, sink, drop_sink)
    if native is None:  # (nothing was read that the store path will not read: plan() only opened)
        _abort_opened(sink, drop_sink)  # (the store path opens its own)
        return None
    starts = _rewindable(native) if regular and not native.decompressing else None
    spill = None
    if starts is None:  # read once: no passes; past the budget, the keys go to a store on this file
        import tempfile  # (here: start-up of cuckoo dedup)

        spill = tempfile.TemporaryFile(prefix="cuckoo-store-")
        starts = [0] * len(native.inputs)
    if memory is None:
        # (The set's bytes a key: the key, its length byte and ~8.5 bytes of index.)
        set_bytes = int(estimate * (mean_key_bytes + 9.5)) if known and mean_key_bytes > 0 else 0
        memory = exact_memory(None if spill is not None else sum(src.regular_size() or 0 for src in sources),
                              set_bytes)
    start = time.perf_counter()
    ok = False
    try:
        d = native.run(cuckoo._core._dedup_exact, sources, (sink, drop_sink), starts, block,
                       threads or default_threads(), memory, int(estimate * 1.05) + 1024 if known else 0,
                       int.from_bytes(os.urandom(8), "little"), None if report is _no_progress else report,
                       mean_key_bytes, spill.fileno() if spill is not None else -1,
                       int.from_bytes(os.urandom(8), "big"), max_store_key())
        if d["status"] == "key_too_long":  # (input read once: the store's limit)
            raise KeyTooLongError(d["lines"] + 1, max_store_key())
        ok = True
    except ValueError as exc:
        raise input_changed(exc, sources) from None
    finally:
        _finish(sink, drop_sink, ok)
        if spill is not None:
            spill.close()
    stats = {k: d[k] for k in ("passes", "planned", "splits", "distinct", "peak_memory", "grows")}
    stats["memory"] = memory
    stats["read_once"] = spill is not None
    for k in ("spilled_at_line", "spilled_keys", "store_log_bytes", "store_index_bytes", "store_grows",
              "store_grows_from_memory"):
        if k in d:
            stats[k] = d[k]
    return DedupResult(d["lines"], d["kept"], d["bytes"], time.perf_counter() - start, True, exact_stats=stats)


def input_changed(exc: ValueError, sources: List[Source]) -> ValueError:
    """The InputChangedError of the core's InputChanged ("the input changed while it was read
    again (...)": a ValueError from the binding), else `exc` itself."""
    import re

    what = re.fullmatch(r"the input changed while it was read again \((.*)\)", str(exc))
    if what is None:
        return exc
    return InputChangedError([src.path for src in sources if src.path is not None], what.group(1))


def _reserve(s: Any, sources: List[Source], block: int, framing: Any) -> bool:
    """Sizes the store's index for the input's distinct lines (the estimate that sizes filters),
    so that it grows at most once, now, instead of at every 1.5x on the way (each growth
    re-places every entry). Returns whether the index may still grow: False when the reserve
    covers every line of the input (an estimate that the sample said was all distinct lines)."""
    estimate, known, lines, _ = estimate_input(sources, block, _record_end(framing))
    if known and estimate > 0:
        s.reserve(len(s) + int(estimate * 1.05) + 1024)
    return not known or estimate * 1.05 < lines


def _store_insert(s: Any, lines: Any) -> np.ndarray:
    """The block's "kept" mask after adding its keys to the store (keyed records: only the
    records whose key decides, cuckoo._dedup.records)."""
    if isinstance(lines, Records):
        return lines.store_insert(s)
    return s._s.add_unique_spans(lines.buf, lines.kstarts, lines.klen)


def _journal_stats(plan: RunPlan) -> dict:
    """What the run journal did, for DedupResult.store_stats["run_journal"]."""
    point = plan.point if plan.mode != "new" else None
    return {"mode": plan.mode, "journal": plan.journal, "records_before": int(point["records"]) if point else 0,
            "kept_before": int(point["kept"]) if point else 0, "store_bytes_cut": plan.cut_bytes}


def _dedup_store(sources: List[Source], out: Any, store: Any, dropped: Any, block: int, threads: Optional[int],
                 report: Callable[[int, int], None], framing: Any, run_plan: Optional[RunPlan] = None) -> DedupResult:
    owned = not isinstance(store, cuckoo.Store)
    persistent = store is not None
    if run_plan is None and owned and persistent:
        # (A store path and output paths: the run journal, cuckoo._dedup.resume. The CLI plans
        # its runs itself, before it opens the store and the outputs.)
        run_plan = plan_run(store, out, dropped, sources, framing)
    if run_plan is not None and run_plan.mode == "done":
        for src in sources:
            src.close()
        return DedupResult(0, 0, 0, 0.0, True, store_stats={"run_journal": _journal_stats(run_plan)})
    s = cuckoo.Store(None if store is None else os.fspath(store)) if owned else store
    try:
        may_grow = _reserve(s, sources, block, framing)
    except BaseException:
        if owned:
            s.close()
        raise
    # A persistent store records a line once its output was handed to the OS: its outputs are
    # written in place (a rerun writes what no run wrote); an anonymous one's are written whole.
    try:
        sink = _as_sink(out, not persistent, run_plan.out_at if run_plan is not None else None)
        drop_sink = _as_sink(dropped, not persistent, run_plan.dropped_at if run_plan is not None else None)
    except BaseException:
        if owned:
            s.close()
        raise
    max_key = max_store_key()
    read = written = nbytes = 0
    start = time.perf_counter()
    ok = False
    try:
        native = (_plan(sources, framing, sink, drop_sink, compressed_pipes=run_plan is not None)
                  if hasattr(s._s, "_dedup") else None)
        if native is not None:
            done = False
            try:
                # The anonymous store keeps its entries' hash bits (4 bytes a slot) to grow without
                # reading its log back, when it may grow at all.
                d = native.run(s._s._dedup, sources, (sink, drop_sink), block, threads or default_threads(), max_key,
                               persistent, not persistent and may_grow, None if report is _no_progress else report,
                               run_plan=run_plan)
                if d["status"] == "key_too_long":
                    raise KeyTooLongError(d["lines"] + 1, max_key)
                done = True
            finally:
                _finish(sink, drop_sink, done)
            read, written, nbytes = d["lines"], d["kept"], d["bytes"]
            stats = s.stats()
            if run_plan is not None:
                stats["run_journal"] = _journal_stats(run_plan)
            ok = True
            return DedupResult(read, written, nbytes, time.perf_counter() - start, True, store_stats=stats)
        if run_plan is not None and run_plan.mode == "resume":  # (plan_run checked the framing is native)
            raise ResumeError("cuckoo: this run cannot be resumed here (the native pipeline is not available)")
        done = False
        try:
            blocks = _blocks(sources, framing, block, max_key)
            while True:
                try:
                    lines, last_input = next(blocks)
                except StopIteration:
                    break
                except LineTooLong:
                    raise KeyTooLongError(read + 1, max_key) from None
                _write_header(lines, sink, drop_sink)
                too_long = np.flatnonzero(lines.klen > max_key)
                if len(too_long):  # do the lines before it, then stop
                    lines = (lines.head(int(too_long[0])) if isinstance(lines, Records)
                             else Lines(lines.data, int(lines.starts[too_long[0]]), end=_record_end(framing)[0]))
                if persistent:
                    # The block's records stay in memory until the batch commits, after its lines
                    # were written and flushed: whatever stops the run before that (an exception
                    # rolls the batch back, a kill leaves it unwritten) leaves none of them in
                    # the store.
                    with s.batch():
                        mask = _store_insert(s, lines)
                        sink.write(lines.select(mask, final=last_input))
                        drop_sink.write(lines.select(~mask, final=last_input))
                        sink.flush()
                        drop_sink.flush()
                else:  # exact: the store dies with the run, there is no rerun to serve
                    mask = _store_insert(s, lines)
                    sink.write(lines.select(mask, final=last_input))
                    drop_sink.write(lines.select(~mask, final=last_input))
                read += len(lines)
                written += int(np.count_nonzero(mask))
                nbytes += len(lines.buf) - (1 if lines.virtual else 0)
                report(read, nbytes)
                if len(too_long):
                    raise KeyTooLongError(read + 1, max_key)
            done = True
        finally:
            _finish(sink, drop_sink, done)
        stats = s.stats()
        ok = True
    finally:
        if owned:
            try:
                s.close()
            except BaseException:
                if ok:
                    raise
    return DedupResult(read, written, nbytes, time.perf_counter() - start, True, store_stats=stats)
