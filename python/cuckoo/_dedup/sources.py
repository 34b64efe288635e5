"""Line framing: input sources read in blocks of whole lines, and each block's keys
(the line without its ``\n`` and one ``\r``) handed to the filter's bulk calls."""

from __future__ import annotations

import io
import os
import select
import stat
import sys
from typing import IO, Any, Callable, Iterator, List, Optional, Sequence, Tuple, Union

from cuckoo._numpy import np

from cuckoo import Filter, FilterFullError

from cuckoo._dedup import compress

from .errors import EXIT_USAGE, EXIT_WRITE, ReportedError as CliError, one_line as _one_line


# Keys longer than this, and keys ending in a NUL byte (which NumPy 'S' arrays cannot hold),
# go to the filter as a list of bytes objects instead of an 'S' array.
MAX_S_WIDTH = 4096
# A key length shared by at least this many lines of a block gets its own exact-width array.
MIN_EXACT_GROUP = 32


# ---- lines -----------------------------------------------------------------------------------


class Lines:
    """One block of complete records: ``buf`` (a NumPy view of the bytes) holds whole lines, each
    ending with ``\\n`` at ``ends[k]`` and starting at ``starts[k]``; the record's key is the
    span ``buf[kstarts[k] : kstarts[k] + klen[k]]``. By default (whole-line framing) the key is
    the line without ``\\n`` and one ``\\r``; a framing that keys records by a field passes its
    own ``keys=(kstarts, klen)``. ``virtual`` says the last ``\\n`` was added to an unterminated
    last line. ``end`` is the byte lines end at: 10 (``\\n``), or 0 for NUL-terminated records
    (``-z``), whose key is the record without the NUL (a ``\\r`` is then data)."""

    __slots__ = ("data", "buf", "starts", "ends", "kstarts", "klen", "virtual")

    def __init__(self, data: bytes, size: int, virtual: bool = False,
                 keys: Optional[Tuple[np.ndarray, np.ndarray]] = None, end: int = 10) -> None:
        self.data = data
        self.buf = np.frombuffer(data, dtype=np.uint8, count=size)
        buf = self.buf
        self.ends = np.flatnonzero(buf == end)
        starts = np.empty_like(self.ends)
        if len(starts):
            starts[0] = 0
            starts[1:] = self.ends[:-1] + 1
        self.starts = starts
        self.virtual = virtual
        if keys is not None:
            self.kstarts, self.klen = keys
            return
        self.kstarts = starts
        klen = self.ends - starts
        if end == 10 and data.find(b"\r", 0, size) >= 0:  # memchr: skips the pass when there is no '\r'
            # buf[end - 1] is the previous line's '\n' (or, at index -1, the block's last '\n')
            # when the line is empty, so an empty line never loses a byte here.
            klen -= buf[self.ends - 1] == 13
        self.klen = klen

    def __len__(self) -> int:
        return len(self.ends)

    def key_groups(self) -> List[Tuple[Optional[np.ndarray], Union[np.ndarray, List[bytes]]]]:
        """The keys as (line indices, or None for all lines in order, keys) groups.

        Keys of different lengths never match, so splitting by length keeps all that matters of
        the order (the first occurrence of each key). Lengths shared by many lines of the block
        get an exact-width 'S' array each (a gather of whole rows, nothing to pad); the other
        lines go to 'S' arrays per power-of-two width class, zero-padded after each key. Keys
        NumPy cannot hold (a trailing NUL byte, or longer than MAX_S_WIDTH) go as a list."""
        n = len(self)
        if n == 0:
            return []
        klen = self.klen
        buf = self.buf
        groups: List[Tuple[Optional[np.ndarray], Union[np.ndarray, List[bytes]]]] = []
        normal: Optional[np.ndarray] = None
        special = None
        if int(klen.max()) > MAX_S_WIDTH or self.data.find(b"\0", 0, len(buf)) >= 0:
            special = klen > MAX_S_WIDTH
            special |= (klen > 0) & (buf[np.maximum(self.kstarts + klen - 1, 0)] == 0)
        if special is not None and special.any():
            idx = np.flatnonzero(special)
            data = self.data
            starts = self.kstarts[idx].tolist()
            lens = klen[idx].tolist()
            groups.append((idx, [data[s : s + k] for s, k in zip(starts, lens)]))
            normal = np.flatnonzero(~special)
            if len(normal) == 0:
                return groups
            klen = klen[normal]
        counts = np.bincount(klen)
        frequent = counts >= MIN_EXACT_GROUP
        lengths = np.flatnonzero(frequent)
        if len(lengths) == 1 and normal is None and counts[lengths[0]] == n:
            return [(None, self._exact(self.kstarts, int(lengths[0])))]
        order = np.argsort(klen.astype(np.uint16), kind="stable")  # radix sort: O(n)
        bounds = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=bounds[1:])
        for length in lengths.tolist():
            idx = order[bounds[length] : bounds[length + 1]]
            if normal is not None:
                idx = normal[idx]
            groups.append((idx, self._exact(self.kstarts[idx], length)))
        if len(lengths) < len(np.flatnonzero(counts)):
            rare = np.flatnonzero(~frequent[klen])
            if normal is not None:
                rare = normal[rare]
            groups.extend(self._padded_groups(rare))
        return groups

    def _exact(self, starts: np.ndarray, length: int) -> np.ndarray:
        """Keys of exactly `length` bytes starting at `starts`, as an 'S<length>' array."""
        if length == 0:
            return np.zeros(len(starts), dtype="S1")  # NUL padding only: every key is b""
        rows = np.lib.stride_tricks.sliding_window_view(self.buf, length)[starts]  # copies the keys
        return rows.view(f"S{length}").ravel()

    def _padded_groups(self, idx: np.ndarray) -> List[Tuple[Optional[np.ndarray], np.ndarray]]:
        """'S' arrays per power-of-two width class of the lines `idx`."""
        klen = self.klen[idx]
        cls = np.frexp(klen.astype(np.float64))[1]  # 2**(c-1) <= len < 2**c (0 for len 0)
        out: List[Tuple[Optional[np.ndarray], np.ndarray]] = []
        for c in np.flatnonzero(np.bincount(cls)).tolist():
            sel = np.flatnonzero(cls == c)
            lens = klen[sel]
            out.append((idx[sel], self._padded(self.kstarts[idx[sel]], lens, int(lens.max()))))
        return out

    def _padded(self, starts: np.ndarray, klen: np.ndarray, w: int) -> np.ndarray:
        """Keys starting at `starts` of lengths `klen` as an 'S<w>' array, zero-padded."""
        w = max(w, 1)
        n_bytes = len(self.buf)
        padded = np.zeros(n_bytes + w, dtype=np.uint8)
        padded[:n_bytes] = self.buf
        rows = np.lib.stride_tricks.sliding_window_view(padded, w)[starts]  # copies n x w bytes
        kmin = int(klen.min())
        if w - kmin <= 8:
            for j in range(kmin, w):
                rows[klen <= j, j] = 0
        else:
            np.multiply(rows, np.arange(w)[None, :] < klen[:, None], out=rows)
        return rows.view(f"S{w}").ravel()

    def apply(self, method: Callable[[Any], Any], dtype: Any) -> np.ndarray:
        """Calls a bulk filter method on the keys; returns its per-line results in line order."""
        groups = self.key_groups()
        if len(groups) == 1 and groups[0][0] is None:
            return np.asarray(method(groups[0][1]))
        out = np.zeros(len(self), dtype=dtype)
        for idx, keys in groups:
            out[idx] = method(keys)
        return out

    def insert(self, f: Filter, unique: bool) -> Tuple[np.ndarray, Optional[int], Optional[FilterFullError]]:
        """Inserts the keys into f (add_unique_many, or add_many), a bulk call per key group.
        Returns (per-line "was new" mask, None, None); or, when the filter fills, (mask of the
        lines before the failing line, its index, the error), with f holding exactly the keys of
        the lines before it, inserted in line order: what this block did is undone (every copy
        it added is removed again) and the block is inserted again in line order, up to the
        failure."""
        method = f.add_unique_many if unique else f.add_many
        out = np.zeros(len(self), dtype=bool)
        applied: List[Tuple[Any, Any]] = []
        for idx, keys in self.key_groups():
            try:
                result = method(keys)
            except FilterFullError as exc:
                k = int(exc.inserted)
                added = np.asarray(getattr(exc, "was_new", np.ones(k, dtype=bool)), dtype=bool)
                applied.append((_take(keys, np.arange(k)), added))
                return self._insert_in_order(f, unique, applied)
            r = np.asarray(result, dtype=bool) if unique else np.ones(len(keys), dtype=bool)
            applied.append((keys, r))
            if idx is None:
                out[:] = r
            else:
                out[idx] = r
        return out, None, None

    def _insert_in_order(self, f: Filter, unique: bool, applied: List[Tuple[Any, Any]]
                         ) -> Tuple[np.ndarray, Optional[int], Optional[FilterFullError]]:
        # Undo: one copy of each key this block added. Exact (a delete of an added key always
        # succeeds), except in a grown filter saved by an earlier release, which refuses a delete
        # when the key shows in two of its own stages (about the FPR per key): that key stays.
        for keys, added in applied:
            if len(keys):
                f.discard_many(_take(keys, np.flatnonzero(added)))
        data = self.data
        in_order = [data[s : s + k] for s, k in zip(self.kstarts.tolist(), self.klen.tolist())]
        out = np.zeros(len(self), dtype=bool)
        try:
            if unique:
                out[:] = f.add_unique_many(in_order)
            else:
                f.add_many(in_order)
                out[:] = True
        except FilterFullError as exc:
            k = int(exc.inserted)
            out[:k] = getattr(exc, "was_new", True) if unique else True
            return out, k, exc
        return out, None, None

    def full_lengths(self) -> np.ndarray:
        return self.ends - self.starts + 1

    def select(self, mask: np.ndarray, final: bool) -> bytes:
        """The bytes of the lines where `mask` is True, exactly as read. An added ``\\n`` is kept
        only when more input follows (`final` False)."""
        n = len(self)
        kept = int(np.count_nonzero(mask))
        if kept == 0:
            return b""
        if kept == n:
            out: Any = memoryview(self.data)[: len(self.buf)]
        else:
            out = self.buf[np.repeat(mask, self.full_lengths())].tobytes()
        if self.virtual and final and mask[-1]:
            out = out[:-1]
        return out

    def with_prefix(self, values: np.ndarray, final: bool) -> bytes:
        """Every line prefixed with ``<value>\\t`` (values are small non-negative ints)."""
        n = len(self)
        if n == 0:
            return b""
        values = np.asarray(values, dtype=np.int64)
        top = int(values.max())
        texts = [b"%d\t" % v for v in range(top + 1)]
        width = max(len(t) for t in texts)
        table = np.zeros((top + 1, width), dtype=np.uint8)
        for v, t in enumerate(texts):
            table[v, : len(t)] = np.frombuffer(t, dtype=np.uint8)
        tlen = np.array([len(t) for t in texts], dtype=np.int64)
        plen = tlen[values]
        full = self.full_lengths()
        out_len = plen + full
        out_start = np.cumsum(out_len) - out_len
        out = np.empty(int(out_len.sum()), dtype=np.uint8)
        shift = np.repeat(out_start + plen - self.starts, full)
        out[np.arange(len(self.buf)) + shift] = self.buf
        for j in range(width):
            sel = np.flatnonzero(plen > j)
            out[out_start[sel] + j] = table[values[sel], j]
        data = out.tobytes()
        if self.virtual and final:
            data = data[:-1]
        return data


def _take(keys: Any, idx: np.ndarray) -> Any:
    """keys[idx] for a NumPy array or a list of bytes."""
    if isinstance(keys, np.ndarray):
        return keys[idx]
    return [keys[i] for i in idx.tolist()]


class Source:
    """One input: a file name, '-' for stdin, or an open binary stream (`stream`, named `name` in
    messages, never closed here). Can hand back bytes read ahead of time. `os_errors`: a file
    that cannot be opened or read raises OSError naming it (cuckoo.dedup()), not the CLI's
    one-line CliError."""

    def __init__(self, name: str, stream: Optional[IO[bytes]] = None, *, os_errors: bool = False) -> None:
        self.name = name
        self.os_errors = os_errors
        self.is_stdin = name == "-" and stream is None
        self.stream: Optional[IO[bytes]] = stream
        self.owned = stream is None  # close() closes only a file it opened
        # The file to open by name (sampling, the native pipeline); None for stdin and streams.
        self.path: Optional[str] = None if self.is_stdin or stream is not None else name
        self.pushed: List[bytes] = []
        self.eof = False
        self._checked = False  # whether the stream was checked for a compression magic number
        self._raw: Optional[IO[bytes]] = None
        # The stream's buffer holds no bytes read ahead: read_head read its fd directly after
        # taking them, and nothing read through the stream since.
        self.buffer_empty = False

    def open(self) -> IO[bytes]:
        if self.stream is not None and not self._checked:  # a stream given: compressed too?
            self.stream = self._decompressed(self.stream)
        if self.stream is None:
            if self.is_stdin:
                raw: IO[bytes] = sys.stdin.buffer
            else:
                try:
                    raw = open(self.name, "rb")
                except OSError as exc:
                    raise self.input_error(exc, "open") from None
            self.stream = self._decompressed(raw)
        return self.stream

    def _decompressed(self, raw: IO[bytes]) -> IO[bytes]:
        """`raw`, or when its first bytes are a gzip/bzip2/xz/zstd magic number (whatever the
        name), a reader of it decompressed on a thread of its own (cuckoo._dedup.compress)."""
        self._raw = raw
        self._checked = True
        try:
            return compress.open_input(raw, self.name)
        except ImportError as exc:  # zstd without the zstandard package: the one-line hint
            raise CliError(f"cuckoo: cannot read input '{self.name}': {exc}", EXIT_USAGE) from None
        except OSError as exc:
            raise self.input_error(exc) from None

    def input_error(self, exc: OSError, verb: str = "read") -> Exception:
        """What a failure to open or read this input raises: CliError (one line, for the CLI), or
        with `os_errors` an OSError of the same errno naming the file (FileNotFoundError,
        PermissionError, ...)."""
        if self.os_errors:
            if exc.errno is None:
                return OSError(f"cannot {verb} input '{self.name}': {exc}")
            return OSError(exc.errno, exc.strerror or os.strerror(exc.errno), self.name)
        return CliError(f"cuckoo: cannot {verb} input '{self.name}': {_one_line(exc)}", EXIT_USAGE)

    def copy_error(self, exc: OSError, where: str) -> Exception:
        """What a failure to write the temporary copy of this input (in directory `where`: a count
        reads a pipe twice through one) raises: CliError (exit 4, as an output that cannot be
        written), or with `os_errors` an OSError of the same errno naming the directory."""
        if self.os_errors:
            return OSError(exc.errno, f"cannot copy input '{self.name}' to a temporary file: "
                                      f"{exc.strerror or exc}", where)
        return CliError(f"cuckoo: cannot copy input '{self.name}' to a temporary file in '{where}': "
                        f"{_one_line(exc)}", EXIT_WRITE)

    def decompress_error(self, exc: ValueError) -> CliError:
        """The one-line error of corrupt or truncated compressed data (cuckoo._dedup.compress)."""
        msg = _one_line(exc)
        msg = msg[len(self.name) + 2:] if msg.startswith(self.name + ": ") else msg
        return CliError(f"cuckoo: cannot read input '{self.name}': {msg}", EXIT_USAGE)

    def compressed(self) -> bool:
        """Whether the named file starts with a compression format's magic number."""
        if self.path is None or self.stream is not None:
            return isinstance(self.stream, compress.DecompressingReader)
        try:
            if not stat.S_ISREG(os.stat(self.path).st_mode):
                return False  # a pipe (<(zcat f)): reading it here would take its first bytes away
            with open(self.path, "rb") as fh:
                return compress.sniff(fh.read(compress.MAGIC_BYTES)) is not None
        except OSError:
            return False

    def read(self, size: int) -> bytes:
        if self.pushed:
            return self.pushed.pop(0)
        if self.eof:
            return b""
        self.buffer_empty = False
        try:
            chunk = self.open().read(size)
        except OSError as exc:
            raise self.input_error(exc) from None
        except ValueError as exc:
            if not isinstance(self.stream, compress.DecompressingReader):
                raise
            raise self.decompress_error(exc) from None
        if not chunk:
            self.eof = True
        return chunk

    def read_head(self, size: int, patience: float) -> bytes:
        """Up to `size` bytes, for the estimate: fewer at the end of the input (then `eof`) or, from
        a pipe or a terminal, once it gave nothing for `patience` seconds after its first bytes: a
        live stream (`tail -f log | cuckoo dedup`) starts then, not when it wrote `size` bytes."""
        stream = self.open()
        # (Windows: select() takes sockets only; a pipe there is read to `size` as before.)
        if (self.pushed or self.eof or not isinstance(stream, io.BufferedReader) or stream.seekable()
                or os.name == "nt"):
            pieces: List[bytes] = []
            got = 0
            while got < size:  # (a short read is the end only when the next one is empty)
                piece = self.read(size - got)
                if not piece:
                    break
                pieces.append(piece)
                got += len(piece)
            return b"".join(pieces)
        try:
            fd = stream.fileno()
            ahead = stream.peek(1)  # waits for the first bytes (and takes what the buffer holds)
            parts = [stream.read(len(ahead))] if ahead else []
            got = len(parts[0]) if parts else 0
            if not got:
                self.eof = True
            while got and got < size:
                try:
                    ready = bool(select.select([fd], [], [], patience)[0])
                except ValueError:  # (an fd past FD_SETSIZE: read on without the patience)
                    ready = True
                if not ready:
                    break
                chunk = os.read(fd, size - got)
                if not chunk:
                    self.eof = True
                    break
                parts.append(chunk)
                got += len(chunk)
        except OSError as exc:
            raise self.input_error(exc) from None
        self.buffer_empty = True
        return b"".join(parts)

    def regular_size(self) -> Optional[int]:
        """Size in bytes if this is a regular file, else None."""
        if self.compressed():
            return None  # its size says nothing about the lines: estimate from the stream
        try:
            if self.path is not None:
                st = os.stat(self.path)
            else:
                st = os.fstat(sys.stdin.fileno() if self.is_stdin else self.stream.fileno())  # type: ignore[union-attr]
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def close(self) -> None:
        if isinstance(self.stream, compress.DecompressingReader):
            self.stream.close()  # stops its thread; the file under it is closed below
            self.stream = self._raw
        if self.stream is not None and self.owned and not self.is_stdin:
            self.stream.close()


class LineTooLong(Exception):
    """A line whose key is longer than the `max_key` given to read_lines (raised before it is
    held in memory whole): the lines before it have all been yielded."""


def read_lines(source: Source, block: int, max_key: Optional[int] = None, end: bytes = b"\n") -> Iterator[Lines]:
    """Blocks of whole lines from one source; an unterminated last line gets a virtual ``\\n``.
    `max_key`: a line longer than a block whose key passes this many bytes raises LineTooLong as
    soon as that is known (shorter lines are the caller's to check, in the blocks). `end`: the
    byte lines end at (``b"\\0"`` with ``-z``)."""
    cr = 1 if end == b"\n" else 0  # (the key leaves out one '\r' before a '\n', none before a NUL)
    pending: List[bytes] = []
    pending_bytes = 0
    while True:
        chunk = source.read(block)
        if not chunk:
            break
        idx = chunk.rfind(end)
        if idx < 0:
            pending.append(chunk)  # a line longer than a block: join once its end is found
            pending_bytes += len(chunk)
            if max_key is not None and pending_bytes > max_key + cr:
                raise LineTooLong()
            continue
        if pending:
            pending.append(chunk)
            data = b"".join(pending)  # one copy: the carried-over tail and the new chunk
            idx += len(data) - len(chunk)
            pending = []
        else:
            data = chunk
        yield Lines(data, idx + 1, end=end[0])
        if idx + 1 < len(data):
            pending.append(data[idx + 1 :])
        pending_bytes = len(data) - idx - 1
    if pending:
        data = b"".join(pending) + end
        yield Lines(data, len(data), virtual=True, end=end[0])


class LineFraming:
    """Whole lines (the default framing): a record ends at ``\\n``; its key is the record
    without the ``\\n`` and one ``\\r`` before it. A last line without ``\\n`` is a record too.
    ``LineFraming(b"\\0")`` (``-z``, as ``sort -z`` and ``uniq -z``): a record ends at a NUL byte
    instead, and its key is the record without the NUL (``find -print0 | cuckoo dedup -z``).

    A framing has one method, ``blocks(source, block, max_key)``, yielding
    :class:`~cuckoo._dedup.sources.Lines` (records as whole lines of a block, with key spans);
    ``native`` says the C++ pipeline can frame it itself."""

    native = True

    def __init__(self, record_end: bytes = b"\n") -> None:
        if record_end not in (b"\n", b"\0"):
            raise ValueError(f"a line ends at b'\\n' or b'\\0', not {record_end!r}")
        self.record_end = record_end

    def native_spec(self) -> Optional[dict]:
        """The pipeline's framing (None: its default, lines ending at '\\n')."""
        return None if self.record_end == b"\n" else {"kind": "lines", "record_end": self.record_end[0]}

    def blocks(self, source: Source, block: int, max_key: Optional[int] = None) -> Iterator[Lines]:
        return read_lines(source, block, max_key, self.record_end)


def sources_of(names: Sequence[str]) -> List[Source]:
    return [Source(n) for n in (names or ["-"])]


def iter_blocks(sources: List[Source], block: int, max_key: Optional[int] = None) -> Iterator[Tuple[Lines, bool]]:
    """(lines, is_last_input) over all sources in order."""
    for i, src in enumerate(sources):
        try:
            for lines in read_lines(src, block, max_key):
                yield lines, i == len(sources) - 1
        finally:
            src.close()
