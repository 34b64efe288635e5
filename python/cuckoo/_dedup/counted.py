"""Dedup that needs each key's count over the whole input: ``count=True`` (``-c``: each written
record with its key's count), ``repeated=True`` (``-d``: only keys seen more than once),
``unique_only=True`` (``-u``: only keys seen exactly once) and ``keep="last"`` (a key's last record
instead of its first). Exact, in two passes over the input (cpp/include/cuckoo/dedup/counted.hpp);
a pipe, stdin or compressed input is copied to an anonymous temporary file first (its
decompressed bytes), so that it can be read twice. Memory: the distinct keys with 8 bytes each
(keep last: 16), within `memory` (more passes past it), as the exact path's."""

from __future__ import annotations

import os
import time
from typing import Any, Callable, List, NamedTuple, Optional

import cuckoo

from .records import CsvFraming, FieldFraming, JsonlFraming
from .sources import LineFraming, Source

# Bytes copied at a time from an input that cannot be read twice to its temporary file.
_SPOOL_CHUNK = 1 << 20


class CountSpec(NamedTuple):
    """What a counted run writes: a key's last record (`keep_last`) or its first, only keys whose
    count is in [min_count, max_count], with the count (`write_counts`, named `count_name`)."""

    keep_last: bool
    min_count: int
    max_count: int
    write_counts: bool
    count_name: str


def count_spec(count: bool, repeated: bool, unique_only: bool, keep: str, count_name: str) -> Optional[CountSpec]:
    """The CountSpec of dedup's count options, None when none asks for counts; ValueError naming
    a bad one."""
    for name, value in (("count", count), ("repeated", repeated), ("unique_only", unique_only)):
        if not isinstance(value, bool):
            raise TypeError(f"cuckoo.dedup: {name} must be True or False, not {type(value).__name__}")
    if keep not in ("first", "last"):
        raise ValueError(f"cuckoo.dedup: keep must be 'first' or 'last', not {keep!r}")
    if not isinstance(count_name, str) or not count_name:
        raise ValueError("cuckoo.dedup: count_name must be a non-empty str")
    if repeated and unique_only:
        raise ValueError("cuckoo.dedup: repeated (-d) and unique_only (-u) exclude each other: no key is both")
    if not (count or repeated or unique_only or keep == "last"):
        if count_name != "count":
            raise ValueError("cuckoo.dedup: count_name is for count=True (--count)")
        return None
    if count_name != "count" and not count:
        raise ValueError("cuckoo.dedup: count_name is for count=True (--count)")
    return CountSpec(keep == "last", 2 if repeated else 1, 1 if unique_only else (1 << 64) - 1, count, count_name)


def _csv_field(text: str, delimiter: str) -> bytes:
    """`text` as one CSV field (quoted when it holds the delimiter, a quote or a line end)."""
    if any(c in text for c in (delimiter, '"', "\n", "\r")):
        text = '"' + text.replace('"', '""') + '"'
    return text.encode("utf-8")


def _header_with_count(header: bytes, framing: CsvFraming, name: str) -> bytes:
    """The CSV header with one more column, `name`, before its line end."""
    end = b"\r\n" if header.endswith(b"\r\n") else b"\n"
    return header[: len(header) - len(end)] + framing.delimiter.encode() + _csv_field(name, framing.delimiter) + end


def _spooled(src: Source) -> Source:
    """A source over a temporary file holding what `src` reads (decompressed), for an input that
    cannot be read twice (a pipe, stdin, compressed data, a stream). The file has no name
    (O_TMPFILE, or unlinked at once): a run killed at any point leaves nothing behind, and closing
    the source frees it. Messages still name `src`."""
    import tempfile  # (here: start-up of cuckoo dedup)

    try:
        tmp = tempfile.TemporaryFile(prefix="cuckoo-input-")
    except OSError as exc:
        src.close()
        raise src.copy_error(exc, tempfile.gettempdir()) from None
    try:
        try:
            while True:
                chunk = src.read(_SPOOL_CHUNK)  # (its own errors name the input)
                if not chunk:
                    break
                try:
                    tmp.write(chunk)
                except OSError as exc:
                    raise src.copy_error(exc, tempfile.gettempdir()) from None
            try:
                tmp.flush()
            except OSError as exc:
                raise src.copy_error(exc, tempfile.gettempdir()) from None
        finally:
            src.close()
        # A plain reader of it from its start, as opening a named file gives (the writer's buffer
        # would not follow reads of its fd that bypass it); the file lives while the reader does.
        fd = os.dup(tmp.fileno())
    finally:
        try:
            tmp.close()
        except OSError:
            pass  # (after a failed write, which raised its own error above)
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        reader = open(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    copy = Source(src.name, reader, os_errors=src.os_errors)
    copy.owned = True  # (closed with the source)
    # Data as it is: its first bytes are no magic number (they were decompressed), and the name of
    # the input it copies says nothing of its format.
    copy._checked = True
    return copy


def _readable_twice(src: Source) -> bool:
    return src.path is not None and not src.compressed() and src.regular_size() is not None


def _has_fd(src: Source) -> bool:
    """Whether the native pipeline can read a source by file descriptor as it is (a file, stdin, a
    pipe, a binary file object with one), not a BytesIO or an iterable of lines."""
    from . import engine

    return src.path is not None or src.is_stdin or engine._has_fd(src.stream)


def through_files(sources: List[Source], out: Any, dropped: Any, readable_twice: bool,
                  run: Callable[[List[Source], Any, Any], Any]) -> Any:
    """run(sources, out, dropped) with what the native pipeline cannot take as it is put in
    temporary files: an input without a file descriptor (or, `readable_twice`, one that cannot be
    read twice: a pipe, stdin, compressed data) copied to one first, an output stream without a
    file descriptor (BytesIO) written through one and copied to it at the end. The temporary
    files have no names: they go when they are closed, or with the process."""
    keep = _readable_twice if readable_twice else _has_fd
    taken: List[Source] = []
    try:
        for src in sources:
            taken.append(src if keep(src) else _spooled(src))
    except BaseException:
        for src in sources[len(taken):] + taken:
            src.close()
        raise
    sources = taken
    streams = [target if _needs_file(target) else None for target in (out, dropped)]
    if any(stream is not None for stream in streams):
        import tempfile

        out, dropped = [tempfile.TemporaryFile(prefix="cuckoo-output-") if stream is not None else target
                        for stream, target in zip(streams, (out, dropped))]
    try:
        result = run(sources, out, dropped)
        for stream, tmp in zip(streams, (out, dropped)):
            if stream is not None:
                tmp.seek(0)
                while True:
                    chunk = tmp.read(_SPOOL_CHUNK)
                    if not chunk:
                        break
                    stream.write(chunk)
        return result
    finally:
        for stream, tmp in zip(streams, (out, dropped)):
            if stream is not None:
                tmp.close()


def native_only(what: str, framing: Any) -> None:
    """Refuses (ValueError) a run that only the native pipeline does, where it cannot."""
    if os.name == "nt" or not hasattr(cuckoo._core, "_dedup_counted"):
        raise ValueError(f"cuckoo.dedup: {what} need the native pipeline (not available on this platform)")
    if not getattr(framing, "native", False):
        raise ValueError(f"cuckoo.dedup: {what} need missing='error' (a record without the key field stops the run)")


def dedup_counted(sources: List[Source], out: Any, dropped: Any, block: int, threads: Optional[int],
                  report: Callable[[int, int], None], framing: Any, memory: Optional[int],
                  spec: CountSpec) -> Any:
    """cuckoo.dedup() with count options (`spec`): the native two-pass run. Returns a DedupResult."""
    native_only("count, repeated, unique_only and keep='last'", framing)
    if isinstance(framing, JsonlFraming):
        import json  # (here: start-up of cuckoo dedup)

        json_member = json.dumps(spec.count_name, ensure_ascii=False) + ":"
    elif isinstance(framing, (LineFraming, CsvFraming, FieldFraming)):
        json_member = ""
    else:
        raise ValueError(f"cuckoo.dedup: counts are not available for {type(framing).__name__}")
    return through_files(sources, out, dropped, True,
                         lambda s, o, d: _run(s, o, d, block, threads, report, framing, memory, spec, json_member))


def _needs_file(target: Any) -> bool:
    """Whether an output is a stream that the pipeline cannot write by file descriptor."""
    from . import engine

    return target is not None and hasattr(target, "write") and engine._fd_of(target, write=True) is None


def _run(sources: List[Source], out: Any, dropped: Any, block: int, threads: Optional[int],
         report: Callable[[int, int], None], framing: Any, memory: Optional[int], spec: CountSpec,
         json_member: str) -> Any:
    from . import engine  # (engine imports this module when a run asks for counts)

    # The passes' plan: the estimate of the distinct keys and their mean length (lines only: a
    # keyed record's key is a part of it, as on the exact path).
    est = engine.estimate_input(sources, block, engine._record_end(framing))
    mean_key_bytes = est.mean_key_bytes if isinstance(framing, LineFraming) else 0.0
    sink, drop_sink = engine._as_sink(out), engine._as_sink(dropped)
    native = engine._plan(sources, framing, sink, drop_sink)
    starts = engine._rewindable(native) if native is not None else None
    if native is None or starts is None:  # (every input is a regular file by now, every output has an fd)
        engine._abort_opened(sink, drop_sink)
        raise ValueError("cuckoo.dedup: count, repeated, unique_only and keep='last' need inputs that can be read "
                         "twice")
    if spec.write_counts and isinstance(framing, CsvFraming) and native.header:
        native.out_header = _header_with_count(native.header, framing, spec.count_name)
    if memory is None:
        # Every range set aside costs two passes more (and a last one), not one as on the exact
        # path: the default budget is the exact path's, or what the expected keys need (their bytes,
        # 8 of count (keep last: 16), 8.5 of index, a length byte, 15% of slack), up to the default
        # for input read once.
        # (10^7 hex lines, 4.3*10^6 keys, 2 threads: 128 MiB took 5 passes, 2.3 s; 2 passes 1.6 s.)
        value_bytes = 16 if spec.keep_last else 8
        set_bytes = (int(est.keys * (mean_key_bytes + 9.5 + value_bytes) * 1.15)
                     if est.known and mean_key_bytes > 0 else 0)
        memory = min(engine.exact_memory(None),
                     max(engine.exact_memory(sum(src.regular_size() or 0 for src in sources)), set_bytes))
    start = time.perf_counter()
    ok = False
    try:
        d = native.run(cuckoo._core._dedup_counted, sources, (sink, drop_sink), starts, block,
                       threads or engine.default_threads(), memory, int(est.keys * 1.05) + 1024 if est.known else 0,
                       int.from_bytes(os.urandom(8), "little"), None if report is engine._no_progress else report,
                       mean_key_bytes, spec.keep_last, spec.min_count, spec.max_count, spec.write_counts,
                       json_member)
        ok = True
    except ValueError as exc:
        raise engine.input_changed(exc, sources) from None
    finally:
        engine._finish(sink, drop_sink, ok)
    stats = {k: d[k] for k in ("passes", "ranges", "distinct", "peak_memory")}
    stats["memory"] = memory
    return engine.DedupResult(d["lines"], d["kept"], d["bytes"], time.perf_counter() - start, True,
                              exact_stats=stats)
