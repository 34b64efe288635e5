"""Dedup of Parquet and Arrow IPC files by a column, one record batch at a time.

Needs the ``arrow`` extra (pyarrow). The input is recognised by its magic bytes (``PAR1``:
Parquet; ``ARROW1``: the Arrow IPC file format; a continuation marker: the IPC stream format);
the output is written in the input's format (or the one its suffix names: ``.parquet``,
``.arrow``/``.feather``/``.ipc``, ``.arrows``) with the input's schema. Each record batch (Parquet:
of up to READ_BATCH_ROWS rows, read on a thread one batch ahead; IPC: the file's own) is read,
its key column goes through the filter or key set in one bulk call (Arrow arrays go in without a
copy), and the first row of each key is written whole, on a thread of its own (a Parquet output
in row groups of about the input's); the file is never loaded at once.

A row whose key is null follows ``missing`` (keep, drop, or error naming its row number, from 1).
"""

from __future__ import annotations

import os
from typing import Any, Generator, Iterator, Optional, Tuple

from .._numpy import np

__all__ = ["sniff_columnar", "ColumnarResult", "dedup_columnar"]

PARQUET_MAGIC = b"PAR1"
IPC_FILE_MAGIC = b"ARROW1"
IPC_STREAM_MAGIC = b"\xff\xff\xff\xff"
SUFFIX_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".arrow": "ipc", ".feather": "ipc", ".ipc": "ipc",
                  ".arrows": "ipc-stream"}
ARROW_HINT = "Parquet and Arrow files need pyarrow: pip install 'fastcuckoo[arrow]' (or pyarrow)"


def sniff_columnar(head: bytes) -> Optional[str]:
    """"parquet", "ipc" (file format), "ipc-stream", or None, from a file's first bytes."""
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    if head.startswith(IPC_FILE_MAGIC):
        return "ipc"
    if head.startswith(IPC_STREAM_MAGIC):
        return "ipc-stream"
    return None


def _pyarrow() -> Any:
    try:
        import pyarrow

        return pyarrow
    except ImportError:
        raise ImportError(ARROW_HINT) from None


class ColumnarResult:
    """Rows read, kept and dropped, and the batches the input was read in (Parquet: of up to
    READ_BATCH_ROWS rows; Arrow IPC: its record batches)."""

    def __init__(self, rows_read: int, rows_kept: int, batches: int) -> None:
        self.rows_read = rows_read
        self.rows_kept = rows_kept
        self.batches = batches

    @property
    def rows_dropped(self) -> int:
        return self.rows_read - self.rows_kept

    def __repr__(self) -> str:
        return f"ColumnarResult(rows_read={self.rows_read}, rows_kept={self.rows_kept}, batches={self.batches})"


FORMAT_NAMES = {"parquet": "Parquet", "ipc": "Arrow IPC", "ipc-stream": "Arrow IPC stream"}


def _invalid(path: str, fmt: str, exc: BaseException) -> ValueError:
    return ValueError(f"{path}: not a valid {FORMAT_NAMES[fmt]} file: {exc}")


def _open_ipc(path: str, fmt: str) -> Tuple[Any, Any]:
    """(reader, file) of an IPC file or stream. Read through an OSFile, not a memory map: a
    corrupt buffer offset past the file's end is then a short read (an error) instead of a
    SIGBUS on touching the mapping (each batch is read into memory, one at a time)."""
    pa = _pyarrow()
    source = pa.OSFile(path, "r")
    try:
        reader = pa.ipc.open_file(source) if fmt == "ipc" else pa.ipc.open_stream(source)
        reader.schema.names  # column names that are not UTF-8 fail here, not at the key lookup
    except (pa.ArrowException, ValueError, OSError) as exc:
        source.close()
        raise _invalid(path, fmt, exc) from None
    return reader, source


def _validated(path: str, fmt: str, batches: Iterator[Any]) -> Iterator[Any]:
    """The batches, each fully validated before use: its buffers against its lengths, every
    offset of a string/binary/list column inside its data, UTF-8 of strings. Unchecked, a corrupt
    batch crashes the interpreter when a kernel follows a bad offset. Validation is linear in
    the batch and far cheaper than the dedup itself."""
    pa = _pyarrow()
    while True:
        try:
            batch = next(batches)
            batch.validate(full=True)
        except StopIteration:
            return
        except (pa.ArrowException, ValueError, OSError) as exc:
            raise _invalid(path, fmt, exc) from None
        yield batch


def _read_ahead(items: Iterator[Any]) -> Generator[Any, None, None]:
    """The items of `items`, the next one read (and validated) on a thread while the caller works
    on the one it has: pyarrow reads and decodes a row group without the GIL, so the read
    overlaps the key set's inserts and the writer's encoding of the group before. Measured on
    3*10^6 rows in row groups of 2^20 (benchmarks/dedup_records.py, Zen 4): reading was 0.93 s
    of a 2.1 s run. At most two groups are in memory. An error of a read is raised where its
    item would have come; closing the generator waits for a read in flight."""
    from concurrent.futures import ThreadPoolExecutor

    end = object()
    pool = ThreadPoolExecutor(1, thread_name_prefix="cuckoo-read-ahead")
    try:
        pending = pool.submit(next, items, end)
        while True:
            item = pending.result()
            if item is end:
                return
            pending = pool.submit(next, items, end)
            yield item
    finally:
        pool.shutdown(wait=True)


class _WriteBehind:
    """Selects and writes each group's kept and dropped rows on a thread of its own while the
    caller inserts the next group's keys: pyarrow selects, encodes and compresses without the
    GIL. One group at a time, in order (at most one waits, so memory stays at about three
    groups: reading, deciding, writing). A write's error is raised at the next submit or at
    close, which waits for the write in flight."""

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.pool = ThreadPoolExecutor(1, thread_name_prefix="cuckoo-write-behind")
        self.pending: Any = None
        self.failed = False  # a write failed: nothing more is written (no gap in the output)

    def submit(self, fn: Any, *args: Any) -> None:
        self.wait()
        self.pending = self.pool.submit(fn, *args)

    def wait(self) -> None:
        pending, self.pending = self.pending, None
        if pending is not None:
            try:
                pending.result()
            except BaseException:
                self.failed = True
                raise

    def close(self) -> None:
        try:
            self.wait()
        finally:
            self.pool.shutdown(wait=True)


# Parquet is read in record batches of this many rows (which may span row groups), not whole row
# groups: measured on the 3*10^6 rows of benchmarks/dedup_records.py in row groups of 2^20 (Zen 4,
# KVM guest, 6 alternating runs of reading and validating alone), 0.36-0.43 s against
# 0.37-1.09 s (median 0.63) by row group, and 259 against 366 MiB peak: a group's hundreds of MiB
# are fresh memory each time, and first touches of memory are slow and erratic on such a guest.
READ_BATCH_ROWS = 1 << 17
# The rows of each row group written to a Parquet output: the input's row-group size (at most
# 2^20, pyarrow's default) when the input is Parquet, so that the output is cut about as the
# input was; else each kept batch is written as it comes.
MAX_OUTPUT_GROUP_ROWS = 1 << 20


def _batches(path: str, fmt: str) -> Tuple[Any, Iterator[Any], Any]:
    """(schema, iterator of validated RecordBatches or Tables in file order, closer)."""
    pa = _pyarrow()
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(path)
            pf.schema_arrow.names
        except (pa.ArrowException, ValueError, OSError) as exc:
            raise _invalid(path, fmt, exc) from None

        # Read in batches of READ_BATCH_ROWS, not a row group at a time, and one batch ahead of
        # the one in use.
        ahead = _read_ahead(_validated(path, fmt, iter(pf.iter_batches(batch_size=READ_BATCH_ROWS))))

        def close() -> None:
            ahead.close()  # (waits for a read in flight: the file is closed after it)
            pf.close()

        return pf.schema_arrow, ahead, close
    reader, source = _open_ipc(path, fmt)
    if fmt == "ipc":
        return (reader.schema, _validated(path, fmt, (reader.get_batch(i) for i in range(reader.num_record_batches))),
                source.close)
    return reader.schema, _validated(path, fmt, iter(reader)), source.close


class _Writer:
    def __init__(self, path: Optional[str], fmt: str, schema: Any) -> None:
        pa = _pyarrow()
        self.path = path
        self.w: Any = None
        if path is None:
            return
        if fmt == "parquet":
            import pyarrow.parquet as pq

            self.w = pq.ParquetWriter(path, schema)
        elif fmt == "ipc":
            self.w = pa.ipc.new_file(path, schema)
        else:
            self.w = pa.ipc.new_stream(path, schema)
        self.fmt = fmt

    def write(self, table: Any) -> None:
        if self.w is None or table.num_rows == 0:
            return
        self.w.write(table)  # a Table (a Parquet row group) or a RecordBatch: each writer takes both

    def write_rows(self, batch: Any, mask: Any) -> None:
        """Writes the rows of `batch` where `mask` (a NumPy bool array) is set. Nothing is
        selected for a writer of no file: the selection copies every column's values."""
        if self.w is not None:
            self.write(batch.filter(_arrow_of(mask)))

    def close(self) -> None:
        if self.w is not None:
            self.w.close()


class _GroupedWriter:
    """A _Writer that gathers the selected rows of several batches into one written piece of at
    least `group_rows` rows (a Parquet row group; 0: each batch's rows as they come)."""

    def __init__(self, writer: _Writer, group_rows: int) -> None:
        self.writer = writer
        self.group_rows = group_rows
        self.pending: list = []
        self.rows = 0

    def write_rows(self, batch: Any, mask: Any) -> None:
        if self.writer.w is None:
            return
        if not self.group_rows:
            self.writer.write_rows(batch, mask)
            return
        selected = batch.filter(_arrow_of(mask))
        if selected.num_rows:
            self.pending.append(selected)
            self.rows += selected.num_rows
        if self.rows >= self.group_rows:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            pending, self.pending, self.rows = self.pending, [], 0
            self.writer.write(_pyarrow().Table.from_batches(pending))


def _one_array(col: Any) -> Any:
    """A ChunkedArray's chunks as one Array (an Array as it is)."""
    if isinstance(col, _pyarrow().ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _arrow_of(values: Any) -> Any:
    """A NumPy bool or integer array as an Arrow array (bool, int64), built from its buffer, not
    by pa.array: pyarrow's pa.array (and Array.to_numpy) import pandas on their first call when
    pandas is installed, which cost 0.25-0.33 s in a measured Parquet dedup of 3*10^6 rows (benchmarks/dedup_records.py,
    Zen 4), about a sixth of the run."""
    pa = _pyarrow()
    if values.dtype == bool:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def _null_mask(col: Any) -> Any:
    """A NumPy bool array, True where the Arrow array `col` (with nulls) is null: its validity
    bitmap unpacked (is_null().to_numpy() would import pandas, as _arrow_of says)."""
    bitmap = np.frombuffer(col.buffers()[0], dtype=np.uint8)
    valid = np.unpackbits(bitmap, count=col.offset + len(col), bitorder="little")[col.offset:]
    return valid == 0


def _keys_of(col: Any, name: str) -> Any:
    """The key column as something Filter/Store bulk calls take: Arrow string/binary arrays as
    they are, integers as a NumPy array; a dictionary column decoded."""
    pa = _pyarrow()
    col = _one_array(col)
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    t = col.type
    if pa.types.is_integer(t):
        # Its values buffer viewed, not to_numpy(), which imports pandas (as _arrow_of says).
        if col.null_count:
            col = col.fill_null(0)
        dtype = np.dtype(f"{'i' if pa.types.is_signed_integer(t) else 'u'}{t.bit_width // 8}")
        # count: only the values in use (a valid array's buffer may end in padding that is not
        # a whole value; without count NumPy refuses it: found by fuzz/fuzz_arrow_ipc.py)
        return np.frombuffer(col.buffers()[1], dtype=dtype, count=col.offset + len(col))[col.offset:]
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return col
    if getattr(pa.types, "is_string_view", lambda _: False)(t):
        return col.cast(pa.string())
    raise TypeError(f"column {name!r} has type {t}: keys must be integers, strings or binary")


def dedup_columnar(source: Any, out: Any, key: str, *, exact: bool = False, filter: Any = None,
                   fpr: Optional[float] = None, capacity: Optional[int] = None, seed: Optional[int] = None,
                   dropped: Any = None, missing: str = "error", out_format: Optional[str] = None) -> ColumnarResult:
    """Writes to `out` the rows of the Parquet or Arrow IPC file `source` whose `key` column value
    was not seen in an earlier row, whole and in order, with the input's schema. ``exact=True``:
    an in-memory key set decides (no false drop; cuckoo._core._KeySet: the keys and ~8.5 bytes of
    index each, no log on disk); else a cuckoo Filter (`filter`, or a
    growable one sized by the row count and `fpr`, default 1e-4): a new key is dropped by
    mistake with about the filter's FPR. `dropped`: a file of the same format for the other rows.
    """
    from .._core import Filter, _KeySet

    if missing not in ("keep", "drop", "error"):
        raise ValueError(f"missing must be one of keep, drop, error, not {missing!r}")
    if exact and (filter is not None or fpr is not None or capacity is not None or seed is not None):
        raise ValueError("filter/fpr/capacity/seed are for the filter path; exact=True keeps every key exactly")
    path = os.fspath(source)
    with open(path, "rb") as fh:
        fmt = sniff_columnar(fh.read(8))
    if fmt is None:
        raise ValueError(f"{path}: not a Parquet or Arrow IPC file (no PAR1 / ARROW1 magic)")
    schema, batches, close_input = _batches(path, fmt)
    if key not in schema.names:
        close_input()
        raise KeyError(f"{path} has no column {key!r} (columns: {', '.join(schema.names)})")
    out_path = None if out is None else os.fspath(out)
    dropped_path = None if dropped is None else os.fspath(dropped)
    for p in (out_path, dropped_path):
        if p is not None and os.path.exists(p) and os.path.samefile(p, path):
            close_input()
            raise ValueError(f"refusing to overwrite the input {path}")
    wfmt = out_format or SUFFIX_FORMATS.get(os.path.splitext(out_path or "")[1].lower(), fmt)
    seen: Any
    if exact:
        # (An anonymous Store before, whose keys are written to a log and read back on tag
        # matches: 3*10^6 rows of benchmarks/dedup_records.py 2.32-2.35 s, with this 1.40-1.42 s.)
        seen = _KeySet(int.from_bytes(os.urandom(8), "little"), _row_count(path, fmt))
    elif filter is not None:
        seen = filter
    else:
        rows = _row_count(path, fmt)
        seen = Filter(max(int(rows * 1.1) + 16, 1024) if capacity is None else capacity,
                      1e-4 if fpr is None else fpr, growable=capacity is None,
                      seed=seed if seed is not None else "random")
    writer = _Writer(out_path, wfmt, schema)
    drop_writer = _Writer(dropped_path, wfmt, schema)
    group_rows = _input_group_rows(path) if fmt == "parquet" and wfmt == "parquet" else 0
    kept_rows, dropped_rows = _GroupedWriter(writer, group_rows), _GroupedWriter(drop_writer, group_rows)

    def write_group(rows: Any, mask: Any) -> None:
        kept_rows.write_rows(rows, mask)
        dropped_rows.write_rows(rows, ~mask)

    def flush() -> None:
        kept_rows.flush()
        dropped_rows.flush()

    behind = _WriteBehind()
    read = kept = count = 0
    try:
        for batch in batches:
            count += 1
            col = _one_array(batch.column(batch.schema.get_field_index(key)))
            n = batch.num_rows
            nulls = _null_mask(col) if col.null_count else None
            if nulls is None:
                mask = np.asarray(seen.add_unique_many(_keys_of(col, key)), dtype=bool) if n else np.zeros(0, bool)
            else:
                mask = np.zeros(n, dtype=bool)
                keyed = np.flatnonzero(~nulls)
                if missing == "error":
                    keyed = keyed[keyed < int(np.flatnonzero(nulls)[0])]
                if len(keyed):
                    mask[keyed] = np.asarray(seen.add_unique_many(_keys_of(col.take(_arrow_of(keyed)), key)),
                                             dtype=bool)
                if missing == "keep":
                    mask |= nulls
                if missing == "error":
                    first = int(np.flatnonzero(nulls)[0])
                    behind.submit(write_group, batch.slice(0, first), mask[:first])
                    behind.wait()  # (a write's own error comes first)
                    raise ValueError(f"row {read + first + 1:,}: column {key!r} is null")
            behind.submit(write_group, batch, mask)
            read += n
            kept += int(mask.sum())
    finally:
        try:
            try:
                if not behind.failed:
                    behind.submit(flush)  # the rows decided so far, also those before an error
            finally:
                behind.close()
        finally:
            try:
                writer.close()
                drop_writer.close()
            finally:
                close_input()
    return ColumnarResult(read, kept, count)


def _input_group_rows(path: str) -> int:
    """The rows of a Parquet file's first row group (at most MAX_OUTPUT_GROUP_ROWS)."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    rows = meta.row_group(0).num_rows if meta.num_row_groups else MAX_OUTPUT_GROUP_ROWS
    return max(1, min(rows, MAX_OUTPUT_GROUP_ROWS))


def _row_count(path: str, fmt: str) -> int:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows
    if fmt == "ipc":
        pa = _pyarrow()
        reader, source = _open_ipc(path, fmt)
        try:
            # (each batch's metadata and body are read, not its values: num_rows is metadata)
            return sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
        except (pa.ArrowException, ValueError, OSError) as exc:
            raise _invalid(path, fmt, exc) from None
        finally:
            source.close()
    return 1 << 16  # a stream: unknown, the filter grows
