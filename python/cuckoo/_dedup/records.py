"""Keyed records for dedup: the key is a field of each record, the whole record is written.

Three framings, each turning an input (any object with ``read(size)``) into blocks of records
(:class:`Records`) with one key per record:

- :class:`FieldFraming` (``-t SEP -k N`` or ``-k N,M``, as ``sort`` and ``cut`` count fields,
  from 1): records are lines; the key is field N (through field M, separators included), found
  with NumPy over the whole block and handed to the store as spans of the block's bytes;
- :class:`CsvFraming` (``--csv -k NAME`` or ``-k N``): RFC 4180 records (quoted fields,
  embedded separators, quotes and newlines) parsed by Python's ``csv`` module; the first record
  is the header: always written, never a key; the key is the field's value (unquoted);
- :class:`JsonlFraming` (``--jsonl -k a.b.c``): one JSON value per line; the key is the canonical
  JSON text of the value at the dotted path (cpp/include/cuckoo/dedup/json_key.hpp: sorted
  members, decoded strings, numbers by their exact decimal value, never through floats), so
  ``1`` and ``"1"`` are different keys and ``{"a":1,"b":2}`` equals ``{"b": 2, "a": 1}``.

A record without the field (too few fields, a path that does not lead to a value) follows
``missing``: ``"keep"`` writes it (never a key, never dropped), ``"drop"`` drops it, ``"error"``
(the default) raises :class:`MissingFieldError` naming its line number once the records before
it are done. Bytes are never changed: records are written exactly as read.
"""

from __future__ import annotations

import io
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Union

from .._numpy import np

__all__ = ["Records", "FieldFraming", "CsvFraming", "JsonlFraming", "RecordError", "MissingFieldError", "framing_of",
           "parse_fields", "MISSING_POLICIES"]

MISSING_POLICIES = ("keep", "drop", "error")
KEEP, NORMAL, DROP = 1, 0, -1  # Records.forced values


class RecordError(ValueError):
    """A record that cannot be keyed (invalid CSV or JSON, or no key field with ``missing="error"``):
    the records before it are done. ``line`` is the 1-based number of the record's first line in
    its input, ``source`` the input's name (None: the only input, not named)."""

    def __init__(self, line: int, what: str, source: Optional[str] = None) -> None:
        where = f"input '{source}', line {line:,}" if source is not None else f"line {line:,}"
        super().__init__(f"{where}: {what}")
        self.line = line
        self.source = source


class MissingFieldError(RecordError):
    """A record without the key field, with ``missing="error"``."""


class Records:
    """One block of whole records. ``data[starts[k]:ends[k]]`` is record k exactly as read (its
    line ending included); its key is ``kbuf[kstarts[k] : kstarts[k] + klen[k]]`` unless
    ``forced[k]`` says the record is always kept (1: a header, a missing field kept) or always
    dropped (-1: a missing field dropped). ``virtual``: the last record has no line ending (the
    input's last line); ``lines[k]`` is the 1-based line number where record k starts."""

    __slots__ = ("data", "buf", "starts", "ends", "kbuf", "kstarts", "klen", "forced", "virtual", "lines", "header")

    def __init__(self, data: bytes, starts: np.ndarray, ends: np.ndarray, kbuf: np.ndarray, kstarts: np.ndarray,
                 klen: np.ndarray, forced: Optional[np.ndarray], virtual: bool, lines: np.ndarray) -> None:
        self.data = data
        self.buf = np.frombuffer(data, dtype=np.uint8)
        self.starts, self.ends = starts, ends
        self.kbuf, self.kstarts, self.klen = kbuf, kstarts, klen
        self.forced = forced
        self.virtual = virtual
        self.lines = lines
        self.header = b""  # a CSV header written once to each output before these records

    def __len__(self) -> int:
        return len(self.starts)

    def keyed(self) -> np.ndarray:
        """Indices of the records whose key decides (not forced)."""
        if self.forced is None:
            return np.arange(len(self))
        return np.flatnonzero(self.forced == NORMAL)

    def _mask(self, keyed: np.ndarray, was_new: np.ndarray) -> np.ndarray:
        mask = np.zeros(len(self), dtype=bool)
        mask[keyed] = was_new
        if self.forced is not None:
            mask[self.forced == KEEP] = True
        return mask

    def keys(self, idx: np.ndarray) -> List[bytes]:
        kb = self.kbuf.tobytes() if not isinstance(self.kbuf, bytes) else self.kbuf
        return [kb[s : s + n] for s, n in zip(self.kstarts[idx].tolist(), self.klen[idx].tolist())]

    def store_insert(self, store: Any) -> np.ndarray:
        """The per-record "kept" mask after adding the keyed records' keys to a cuckoo.Store
        (``add_unique_spans``: one bulk call over the key spans)."""
        keyed = self.keyed()
        if len(keyed) == 0:
            return self._mask(keyed, np.zeros(0, dtype=bool))
        was_new = store._s.add_unique_spans(self.kbuf, self.kstarts[keyed], self.klen[keyed])
        return self._mask(keyed, np.asarray(was_new, dtype=bool))

    def insert(self, f: Any, unique: bool = True) -> Tuple[np.ndarray, Optional[int], Any]:
        """Like cli Lines.insert for a filter: (kept mask, None, None), or when the filter fills
        (mask of the records before the failing one, its index, the error) with the filter
        holding exactly the keys before it."""
        from .._core import FilterFullError

        keyed = self.keyed()
        keys = self.keys(keyed)
        try:
            was_new = np.asarray(f.add_unique_many(keys) if keys else np.zeros(0, bool), dtype=bool)
        except FilterFullError as exc:  # add_unique_many went in order: keys before `inserted` are in
            k = int(exc.inserted)
            part = np.zeros(len(keyed), dtype=bool)
            part[:k] = np.asarray(getattr(exc, "was_new", np.ones(k, dtype=bool)), dtype=bool)[:k]
            mask = self._mask(keyed, part)
            failed_at = int(keyed[k])
            mask[failed_at:] = False
            return mask, failed_at, exc
        return self._mask(keyed, was_new), None, None

    def select(self, mask: np.ndarray, final: bool) -> bytes:
        """The bytes of the records where `mask` is True, exactly as read; a last record without a
        line ending gets ``\\n`` when more input follows (`final` False)."""
        idx = np.flatnonzero(mask)
        if len(idx) == 0:
            return b""
        lens = self.ends[idx] - self.starts[idx]
        if len(idx) == len(self):
            out = self.data[int(self.starts[0]) : int(self.ends[-1])]
        else:
            sel = np.repeat(idx, lens)
            offs = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
            out = self.buf[self.starts[sel] + offs].tobytes()
        if self.virtual and not final and idx[-1] == len(self) - 1:
            out += b"\n"
        return out

    def head(self, n: int) -> "Records":
        """The first n records."""
        return Records(self.data, self.starts[:n], self.ends[:n], self.kbuf, self.kstarts[:n], self.klen[:n],
                       None if self.forced is None else self.forced[:n], self.virtual and n == len(self),
                       self.lines[:n])


# ---- physical lines ------------------------------------------------------------------------


def _line_blocks(source: Any, block: int) -> Iterator[Tuple[bytes, bool]]:
    """(data, virtual) blocks of whole lines of `source` (``read(size)``); the last line of the
    input may lack its ``\\n`` (virtual True)."""
    pending = b""
    while True:
        chunk = source.read(block)
        if not chunk:
            break
        chunk = pending + chunk if pending else bytes(chunk)
        cut = chunk.rfind(b"\n") + 1
        if cut == 0:
            pending = chunk
            continue
        pending = chunk[cut:]
        yield chunk[:cut], False
    if pending:
        yield pending, True


def _line_spans(data: bytes, virtual: bool) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """starts, ends (after the '\\n'), content ends (before '\\n' and one '\\r') of each line."""
    buf = np.frombuffer(data, dtype=np.uint8)
    nl = np.flatnonzero(buf == 10)
    ends = nl + 1
    if virtual:
        ends = np.append(ends, len(buf))
    starts = np.empty_like(ends)
    if len(starts):
        starts[0] = 0
        starts[1:] = ends[:-1]
    content = ends - 1
    if virtual and len(content):
        content[-1] = len(buf)
    if len(content) and data.find(b"\r") >= 0:
        cr = (content > starts) & (buf[np.maximum(content - 1, 0)] == 13)
        content = content - cr
    return starts, ends, content


def _check_missing(missing: str) -> str:
    if missing not in MISSING_POLICIES:
        raise ValueError(f"missing must be one of {', '.join(MISSING_POLICIES)}, not {missing!r}")
    return missing


def _split_at_error(rec: Records, bad: Optional[int], error: Optional[MissingFieldError]) -> Iterator[Records]:
    """rec, or its records before the first missing one followed by the error."""
    if bad is None:
        yield rec
        return
    if bad:
        yield rec.head(bad)
    assert error is not None
    raise error


# ---- -t SEP -k N[,M] -------------------------------------------------------------------------


def parse_fields(spec: Union[str, int, Sequence[int]]) -> Tuple[int, int]:
    """``-k`` as sort takes it: ``N`` or ``N,M`` (fields N through M, from 1)."""
    try:
        if isinstance(spec, bool):
            raise ValueError
        if isinstance(spec, int):
            first = last = spec
        elif isinstance(spec, str):
            parts = spec.split(",")
            if len(parts) > 2:
                raise ValueError
            first = int(parts[0])
            last = int(parts[1]) if len(parts) == 2 else first
        else:
            first, last = (int(x) for x in spec)
    except (TypeError, ValueError):
        raise ValueError(f"a field key is N or N,M (fields counted from 1), not {spec!r}") from None
    if first < 1 or last < first:
        raise ValueError(f"a field key is N or N,M with 1 <= N <= M, not {spec!r}")
    return first, last


def separator_byte(sep: Union[str, bytes]) -> int:
    """The field separator: one byte (or one ASCII character); ``\\t`` (backslash, t) is a tab, as
    in ``-t '\\t'``."""
    if isinstance(sep, str):
        sep = {"\\t": "\t", "\\0": "\0"}.get(sep, sep)
        sep = sep.encode()
    if len(sep) != 1 or sep in (b"\n", b"\r"):
        raise ValueError(f"the field separator must be one byte other than a line ending, not {sep!r}")
    return sep[0]


class FieldFraming:
    """Lines keyed by fields N..M separated by one byte (see the module docstring)."""

    def __init__(self, sep: Union[str, bytes], fields: Union[str, int, Sequence[int]], missing: str = "error") -> None:
        self.sep = separator_byte(sep)
        self.first, self.last = parse_fields(fields)
        self.missing = _check_missing(missing)
        # The native pipeline frames these records itself (dedup/framing.hpp), and stops at the
        # first record without its key; keeping or dropping such records is this module's.
        self.native = self.missing == "error"

    def native_spec(self) -> dict:
        return {"kind": "fields", "delimiter": self.sep, "first": self.first - 1, "last": self.last - 1}

    def missing_text(self) -> str:
        return f"no field {self.first} (separator {bytes([self.sep])!r})"

    def blocks(self, source: Any, block: int, max_key: Optional[int] = None) -> Iterator[Records]:
        line0 = 1
        for data, virtual in _line_blocks(source, block):
            rec, bad = self.frame(data, virtual, line0)
            line0 += len(rec)
            yield from _split_at_error(rec, bad, None if bad is None else MissingFieldError(
                int(rec.lines[bad]), f"no field {self.first} (separator {bytes([self.sep])!r})"))

    def frame(self, data: bytes, virtual: bool, line0: int) -> Tuple[Records, Optional[int]]:
        starts, ends, content = _line_spans(data, virtual)
        buf = np.frombuffer(data, dtype=np.uint8)
        seps = np.flatnonzero(buf == self.sep)
        c0 = np.searchsorted(seps, starts)  # the first separator at or after each line's start
        nsep = np.searchsorted(seps, content) - c0  # separators inside the line's content
        n, m = self.first, self.last
        have = nsep >= n - 1
        last_sep = max(len(seps) - 1, 0)
        if n == 1:
            kstart = starts.copy()
        else:
            kstart = np.where(have, seps[np.minimum(c0 + n - 2, last_sep)] + 1 if len(seps) else 0, 0)
        kend = np.where(nsep >= m, seps[np.minimum(c0 + m - 1, last_sep)] if len(seps) else 0, content)
        klen = np.where(have, kend - kstart, 0)
        kstart = np.where(have, kstart, 0)
        forced = None
        bad = None
        if not have.all():
            forced = np.where(have, NORMAL, KEEP if self.missing == "keep" else DROP).astype(np.int8)
            if self.missing == "error":
                bad = int(np.flatnonzero(~have)[0])
        lines = np.arange(line0, line0 + len(starts))
        return Records(data, starts, ends, buf, kstart.astype(np.int64), klen.astype(np.int64), forced, virtual,
                       lines), bad


# ---- --jsonl -k a.b.c -------------------------------------------------------------------------


class JsonlFraming:
    """Lines holding one JSON value each, keyed by the JSON text at a dotted path."""

    def __init__(self, path: str, missing: str = "error") -> None:
        if not isinstance(path, str) or not path or any(p == "" for p in path.split(".")):
            raise ValueError(f"a JSON key is a dotted path of object members (a, a.b.c), not {path!r}")
        self.path = path.split(".")
        self._members = [p.encode("utf-8", "surrogatepass") for p in self.path]
        self.missing = _check_missing(missing)
        # Natively (dedup/json_key.hpp): exact numbers, any depth; the Python path (--missing
        # keep/drop, streams without a file descriptor) reads the same keys through _core._json_key.
        self.native = self.missing == "error"

    def native_spec(self) -> dict:
        return {"kind": "jsonl", "path": [p.encode("utf-8", "surrogatepass") for p in self.path]}

    def missing_text(self) -> str:
        return f"no JSON field {'.'.join(self.path)}"

    def _lookup(self, line: bytes, number: int) -> Optional[bytes]:
        """The key of one line by the native rule (dedup/json_key.hpp), so that both paths agree;
        None: a blank line, or no value at the path."""
        from .._core import _json_key

        try:
            return _json_key(line, self._members)
        except ValueError as exc:
            raise RecordError(number, str(exc)) from None

    def blocks(self, source: Any, block: int, max_key: Optional[int] = None) -> Iterator[Records]:
        line0 = 1
        for data, virtual in _line_blocks(source, block):
            starts, ends, content = _line_spans(data, virtual)
            keys: List[bytes] = []
            forced = np.zeros(len(starts), dtype=np.int8)
            bad = error = None
            for k, (s, e) in enumerate(zip(starts.tolist(), content.tolist())):
                try:
                    key = self._lookup(data[s:e], line0 + k)
                except ValueError as exc:
                    bad, error = k, exc
                    break
                if key is None:
                    if self.missing == "error":
                        bad, error = k, MissingFieldError(line0 + k, f"no JSON field {'.'.join(self.path)}")
                        break
                    forced[k] = KEEP if self.missing == "keep" else DROP
                    keys.append(b"")
                else:
                    keys.append(key)
            if bad is not None:  # the records before it, then the error
                if bad:
                    yield _with_keys(data, starts[:bad], ends[:bad], keys, forced[:bad], False, line0)
                raise error  # type: ignore[misc]
            yield _with_keys(data, starts, ends, keys, forced, virtual, line0)
            line0 += len(starts)


def _with_keys(data: bytes, starts: np.ndarray, ends: np.ndarray, keys: List[bytes], forced: np.ndarray,
               virtual: bool, line0: int, lines: Optional[np.ndarray] = None) -> Records:
    """Records whose keys (one per record, b"" for forced ones) are held in a buffer of their own."""
    n = len(keys)
    klen = np.fromiter((len(k) for k in keys), dtype=np.int64, count=n)
    kstarts = np.cumsum(klen) - klen
    kbuf = np.frombuffer(b"".join(keys) or b"\0", dtype=np.uint8)
    if lines is None:
        lines = np.arange(line0, line0 + len(starts))
    return Records(data, starts, ends, kbuf, kstarts, klen, forced if forced.any() else None, virtual, lines)


# ---- --csv -k NAME|N --------------------------------------------------------------------------


class CsvFraming:
    """RFC 4180 CSV records keyed by a column (name from the header, or number from 1). The
    header record is always written and never keyed."""

    def __init__(self, column: Union[str, int], missing: str = "error", delimiter: str = ",") -> None:
        self.column = column
        self.missing = _check_missing(missing)
        self.delimiter = delimiter
        self.native = self.missing == "error"
        self.columns: Optional[List[int]] = None  # resolved from the first header
        self._first_header: Optional[List[str]] = None  # (the Python path: its column names)

    def native_spec(self) -> dict:
        assert self.columns is not None, "the header resolves the key columns first"
        return {"kind": "csv", "delimiter": ord(self.delimiter), "quote": ord('"'), "columns": self.columns}

    def missing_text(self) -> str:
        return f"no CSV column {self.column!r}"

    def resolve(self, names: List[bytes]) -> List[int]:
        """The 0-based key columns for a header of `names` (bytes, unquoted): the column named
        ``column``, or several named ``a,b`` (when no column has that whole name), or numbers."""
        header = [n.decode("utf-8", "surrogateescape") for n in names]
        col = self.column
        if isinstance(col, str) and col not in header and "," in col:
            parts: List[Union[str, int]] = [p for p in col.split(",")]
        else:
            parts = [col]
        self.columns = [self._index(header, p) for p in parts]
        return self.columns

    def _index(self, header: List[str], col: Union[str, int, None] = None) -> int:
        col = self.column if col is None else col
        if isinstance(col, int) and not isinstance(col, bool) or isinstance(col, str) and col.isdigit():
            n = int(col)
            if n < 1:
                raise ValueError(f"CSV columns are counted from 1, not {col!r}")
            return n - 1
        if not isinstance(col, str):
            raise TypeError(f"a CSV key is a column name or number, not {type(col).__name__}")
        if col not in header:
            raise ValueError(f"the CSV header has no column {col!r} (columns: {', '.join(header)})")
        return header.index(col)

    def key_of(self, row: List[str], idxs: List[int]) -> Optional[bytes]:
        """The key of a parsed record: one column's bytes, or several columns each after its
        length as a LEB128 varint (as the native framing builds it); None: a column is absent."""
        if any(i >= len(row) for i in idxs):
            return None
        if len(idxs) == 1:
            return row[idxs[0]].encode("utf-8", "surrogateescape")
        out = bytearray()
        for i in idxs:
            field = row[i].encode("utf-8", "surrogateescape")
            n = len(field)
            while True:
                out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
                n >>= 7
                if not n:
                    break
            out += field
        return bytes(out)

    def blocks(self, source: Any, block: int, max_key: Optional[int] = None) -> Iterator[Records]:
        """Blocks of one input's records. The first input's header is the ``header`` of the
        first block (written once to each output); a later input's header is checked against it
        and written nowhere."""
        import csv  # imported here: start-up of cuckoo dedup
        import sys

        raw_lines = self._physical_lines(source, block)
        consumed: List[bytes] = []

        def text_lines() -> Iterator[str]:
            for line in raw_lines:
                consumed.append(line)
                yield line.decode("utf-8", "surrogateescape")

        reader = csv.reader(text_lines(), delimiter=self.delimiter, strict=True)
        idxs: Optional[List[int]] = None
        header = b""
        parts: List[bytes] = []
        keys: List[bytes] = []
        forced: List[int] = []
        lines: List[int] = []
        size = 0
        line = 1
        last_virtual = False

        def flush(virtual: bool) -> Records:
            nonlocal header
            rec = self._records(parts, keys, forced, lines, virtual)
            rec.header, header = header, b""
            return rec

        while True:
            # No limit on a field's size (the module's default is 128 KiB): lifted for this
            # read only, since the limit is the whole process's.
            limit = csv.field_size_limit(sys.maxsize)
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                if parts or header:
                    yield flush(False)
                raise RecordError(line, f"not valid CSV ({exc})") from None
            finally:
                csv.field_size_limit(limit)
            record = b"".join(consumed)
            consumed.clear()
            last_virtual = not record.endswith(b"\n")
            number = line
            line = reader.line_num + 1
            if idxs is None:  # the header
                names = list(row)
                if names and names[0].startswith("\ufeff"):
                    names[0] = names[0][1:]
                if self._first_header is None:
                    self._first_header = names
                    self.resolve([n.encode("utf-8", "surrogateescape") for n in names])
                    header = record if record.endswith(b"\n") else record + b"\n"
                elif names != self._first_header:
                    raise RecordError(1, f"its CSV header names other columns than the first input's "
                                         f"({', '.join(names)} against {', '.join(self._first_header)})")
                assert self.columns is not None
                idxs = self.columns
                continue
            key = self.key_of(row, idxs)
            force = NORMAL
            if key is None:
                if self.missing == "error":
                    if parts or header:
                        yield flush(False)
                    raise MissingFieldError(number, f"no CSV column {self.column!r} (the record has {len(row)} fields)")
                key, force = b"", KEEP if self.missing == "keep" else DROP
            parts.append(record)
            keys.append(key)
            forced.append(force)
            lines.append(number)
            size += len(record)
            if size >= block:
                yield flush(False)
                parts, keys, forced, lines, size = [], [], [], [], 0
        if consumed:  # pragma: no cover - csv raises on an unterminated quote (strict)
            raise RecordError(line, "not valid CSV (unexpected end of data)")
        if parts or header:
            yield flush(last_virtual)

    @staticmethod
    def _physical_lines(source: Any, block: int) -> Iterator[bytes]:
        for data, _virtual in _line_blocks(source, block):
            start = 0
            while True:
                end = data.find(b"\n", start) + 1
                if end == 0:
                    if start < len(data):
                        yield data[start:]
                    break
                yield data[start:end]
                start = end

    @staticmethod
    def _records(parts: List[bytes], keys: List[bytes], forced: List[int], lines: List[int], virtual: bool) -> Records:
        lens = np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))
        ends = np.cumsum(lens)
        return _with_keys(b"".join(parts), ends - lens, ends, keys, np.array(forced, dtype=np.int8), virtual, 0,
                          np.array(lines, dtype=np.int64))


def framing_of(*, sep: Any = None, key: Any = None, csv: bool = False, jsonl: bool = False,
               missing: str = "error", zero_terminated: bool = False) -> Optional[Any]:
    """The framing for dedup's record options (None: whole lines): ``key`` with ``sep`` (fields),
    ``csv=True`` (a column) or ``jsonl=True`` (a dotted path); ``zero_terminated``: whole records
    ending at NUL (``-z``, a LineFraming)."""
    if zero_terminated:
        if csv or jsonl or sep is not None or key is not None:
            raise ValueError("-z is for whole records that end at NUL; records keyed by a field (-k with -t, "
                             "--csv, --jsonl) end at newlines")
        from .sources import LineFraming

        return LineFraming(b"\0")
    if csv and jsonl:
        raise ValueError("--csv and --jsonl exclude each other")
    if (csv or jsonl) and sep is not None:
        raise ValueError("-t is for separated fields; --csv and --jsonl frame their records themselves")
    if key is None:
        if csv or jsonl or sep is not None:
            raise ValueError("say which field is the key with -k (key=)")
        if missing != "error":
            raise ValueError("--missing is for keyed records (-k)")
        return None
    if csv:
        return CsvFraming(key, missing)
    if jsonl:
        return JsonlFraming(str(key), missing)
    if sep is None:
        raise ValueError("-k needs -t SEP (separated fields), --csv or --jsonl")
    return FieldFraming(sep, key, missing)
