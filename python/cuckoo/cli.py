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

Input is read in blocks (2 MiB by default). Each block is split into lines with NumPy, the keys
go to the filter in one bulk call per block (as fixed-width NumPy ``S`` arrays, grouped by
length), and the kept lines are written with one copy per block: no Python loop per line.

Exit codes: 0 success, 1 usage error (bad option, unreadable input file), 2 a filter file that
cannot be read or written (one line on stderr), 3 the filter is full (fixed capacity, or a key
repeated or crafted beyond what any filter holds): the output then has every line before the
failing one, --save / -o get the filter holding exactly those lines, and stderr names the line.

New filters get a secret random seed (stored in the filter file) unless --seed N is given, so
input crafted against the public hash behaves like any other input.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import math
import os
import signal
import stat
import sys
import time
from typing import IO, Any, Callable, Iterator, List, NoReturn, Optional, Sequence, Tuple, Union

import numpy as np

import cuckoo
from cuckoo import Filter, FilterFullError, theory
from cuckoo._grow import growable_version

EXIT_OK = 0
EXIT_USAGE = 1
EXIT_FILTER_FILE = 2
EXIT_FULL = 3
EXIT_WRITE = 4

DEFAULT_BLOCK = 2 << 20
DEDUP_FPR = 1e-4
BUILD_FPR = 1e-3
# Capacity for input whose size cannot be known in advance (a pipe longer than one block) when
# the filter cannot grow: about 85 MiB of table at the default dedup FPR.
STDIN_CAPACITY = 50_000_000
MIN_CAPACITY = 1024
# Initial capacity of a growable filter for input of unknown size.
GROWABLE_START = 1 << 20
# Sampling a regular file to estimate its distinct lines: this many windows of SAMPLE_WINDOW bytes.
SAMPLE_WINDOWS = 16
SAMPLE_WINDOW = 1 << 16
# Keys longer than this, and keys ending in a NUL byte (which NumPy 'S' arrays cannot hold),
# go to the filter as a list of bytes objects instead of an 'S' array.
MAX_S_WIDTH = 4096
# A key length shared by at least this many lines of a block gets its own exact-width array.
MIN_EXACT_GROUP = 32


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


# ---- lines -----------------------------------------------------------------------------------


class Lines:
    """One block of complete lines: ``buf`` (a NumPy view of the bytes) holds whole lines, each
    ending with ``\\n`` at ``ends[k]``; ``klen[k]`` is the key length (line without ``\\n`` and
    one ``\\r``). ``virtual`` says the last ``\\n`` was added to an unterminated last line."""

    __slots__ = ("data", "buf", "starts", "ends", "klen", "virtual")

    def __init__(self, data: bytes, size: int, virtual: bool = False) -> None:
        self.data = data
        self.buf = np.frombuffer(data, dtype=np.uint8, count=size)
        buf = self.buf
        self.ends = np.flatnonzero(buf == 10)
        starts = np.empty_like(self.ends)
        if len(starts):
            starts[0] = 0
            starts[1:] = self.ends[:-1] + 1
        self.starts = starts
        klen = self.ends - starts
        if data.find(b"\r", 0, size) >= 0:  # memchr: skips the pass when there is no '\r'
            # buf[end - 1] is the previous line's '\n' (or, at index -1, the block's last '\n')
            # when the line is empty, so an empty line never loses a byte here.
            klen -= buf[self.ends - 1] == 13
        self.klen = klen
        self.virtual = virtual

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
            special |= (klen > 0) & (buf[np.maximum(self.starts + klen - 1, 0)] == 0)
        if special is not None and special.any():
            idx = np.flatnonzero(special)
            data = self.data
            starts = self.starts[idx].tolist()
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
            return [(None, self._exact(self.starts, int(lengths[0])))]
        order = np.argsort(klen.astype(np.uint16), kind="stable")  # radix sort: O(n)
        bounds = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=bounds[1:])
        for length in lengths.tolist():
            idx = order[bounds[length] : bounds[length + 1]]
            if normal is not None:
                idx = normal[idx]
            groups.append((idx, self._exact(self.starts[idx], length)))
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
            out.append((idx[sel], self._padded(self.starts[idx[sel]], lens, int(lens.max()))))
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
        in_order = [data[s : s + k] for s, k in zip(self.starts.tolist(), self.klen.tolist())]
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
    """One input: a file name or '-' for stdin. Can hand back bytes read ahead of time."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.is_stdin = name == "-"
        self.stream: Optional[IO[bytes]] = None
        self.pushed: List[bytes] = []
        self.eof = False

    def open(self) -> IO[bytes]:
        if self.stream is None:
            if self.is_stdin:
                self.stream = sys.stdin.buffer
            else:
                try:
                    self.stream = open(self.name, "rb")
                except OSError as exc:
                    raise CliError(f"cuckoo: cannot open input '{self.name}': {_one_line(exc)}", EXIT_USAGE) from None
        return self.stream

    def read(self, size: int) -> bytes:
        if self.pushed:
            return self.pushed.pop(0)
        if self.eof:
            return b""
        try:
            chunk = self.open().read(size)
        except OSError as exc:
            raise CliError(f"cuckoo: cannot read input '{self.name}': {_one_line(exc)}", EXIT_USAGE) from None
        if not chunk:
            self.eof = True
        return chunk

    def regular_size(self) -> Optional[int]:
        """Size in bytes if this is a regular file, else None."""
        try:
            st = os.stat(self.name) if not self.is_stdin else os.fstat(sys.stdin.fileno())
        except (OSError, ValueError, io.UnsupportedOperation):
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def close(self) -> None:
        if self.stream is not None and not self.is_stdin:
            self.stream.close()


class LineTooLong(Exception):
    """A line whose key is longer than the `max_key` given to read_lines (raised before it is
    held in memory whole): the lines before it have all been yielded."""


def read_lines(source: Source, block: int, max_key: Optional[int] = None) -> Iterator[Lines]:
    """Blocks of whole lines from one source; an unterminated last line gets a virtual ``\\n``.
    `max_key`: a line longer than a block whose key passes this many bytes raises LineTooLong as
    soon as that is known (shorter lines are the caller's to check, in the blocks)."""
    pending: List[bytes] = []
    pending_bytes = 0
    while True:
        chunk = source.read(block)
        if not chunk:
            break
        idx = chunk.rfind(b"\n")
        if idx < 0:
            pending.append(chunk)  # a line longer than a block: join once its end is found
            pending_bytes += len(chunk)
            # + 1: the key leaves out one '\r' before the '\n'
            if max_key is not None and pending_bytes > max_key + 1:
                raise LineTooLong()
            continue
        if pending:
            pending.append(chunk)
            data = b"".join(pending)  # one copy: the carried-over tail and the new chunk
            idx += len(data) - len(chunk)
            pending = []
        else:
            data = chunk
        yield Lines(data, idx + 1)
        if idx + 1 < len(data):
            pending.append(data[idx + 1 :])
        pending_bytes = len(data) - idx - 1
    if pending:
        data = b"".join(pending) + b"\n"
        yield Lines(data, len(data), virtual=True)


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


# ---- sizing and filters ----------------------------------------------------------------------


def _sample_keys(data: bytes, whole_start: bool, whole_end: bool) -> List[bytes]:
    """The keys of the complete lines in `data` (a window of a file: a partial first or last line
    is dropped unless the window starts or ends the file)."""
    lines = data.split(b"\n")
    if not whole_start:
        lines = lines[1:]
    if lines and (not whole_end or lines[-1] == b""):
        lines = lines[:-1]
    return [k[:-1] if k.endswith(b"\r") else k for k in lines]


def distinct_estimate(sample: List[bytes], total_lines: float, complete: bool) -> float:
    """Distinct keys of an input of about `total_lines` lines from a sample of its keys (all of
    them when `complete`). The largest of: the distinct keys seen; Chao and Charikar's GEE,
    sqrt(N/n) f1 + (d - f1) (f1 keys seen once, d seen at all), whose ratio error is bounded by
    sqrt(N/n); and N f1/n (a sample of mostly single keys says the input is mostly distinct).
    Never more than the lines. An underestimate only costs a growable filter a few stages."""
    if complete or not sample:
        return float(len(set(sample)))
    counts = collections.Counter(sample)
    n, d = len(sample), len(counts)
    f1 = sum(1 for c in counts.values() if c == 1)
    scale = max(total_lines / n, 1.0)
    gee = math.sqrt(scale) * f1 + (d - f1)
    return min(max(float(d), gee, total_lines * f1 / n), max(total_lines, float(d)))


def estimate_keys(sources: List[Source], block: int) -> Tuple[int, bool]:
    """An estimate of the distinct keys (lines) of the input, and whether it is an estimate at
    all (False when a source is a pipe longer than two blocks). Regular files are sampled in
    SAMPLE_WINDOWS windows (read whole when small); stdin is read up to two blocks ahead."""
    keys: List[bytes] = []
    total = 0.0
    complete = True
    for src in sources:
        size = src.regular_size()
        if size is not None and not src.is_stdin:
            sample, lines = _sample_file(src.name, size)
            keys.extend(sample)
            total += lines
            complete = complete and lines == len(sample)
            continue
        # stdin or a pipe: read two blocks ahead; if that was all of it, count exactly; if it is
        # a regular file (`< big.txt`), scale the sample by its size; else the size is unknown.
        chunk = src.read(block)
        rest = src.read(block) if chunk else b""
        src.pushed.extend(piece for piece in (chunk, rest) if piece)
        head = chunk + rest
        sample = _sample_keys(head, True, not rest or src.eof)
        if rest and not src.eof:
            if size is None:
                return 0, False
            complete = False
            total += size / max(len(head) / max(head.count(b"\n"), 1), 1.0)
        else:
            total += len(sample)
        keys.extend(sample)
    return int(math.ceil(distinct_estimate(keys, total, complete))), True


def _sample_file(path: str, size: int) -> Tuple[List[bytes], float]:
    """(keys of the sampled lines, estimated lines of the file): the whole file when it is at most
    SAMPLE_WINDOWS windows, else SAMPLE_WINDOWS windows spread evenly over it."""
    try:
        with open(path, "rb") as fh:
            if size <= SAMPLE_WINDOWS * SAMPLE_WINDOW:
                sample = _sample_keys(fh.read(), True, True)
                return sample, float(len(sample))
            keys: List[bytes] = []
            nbytes = newlines = 0
            for k in range(SAMPLE_WINDOWS):
                off = (size - SAMPLE_WINDOW) * k // (SAMPLE_WINDOWS - 1)
                fh.seek(off)
                piece = fh.read(SAMPLE_WINDOW)
                nbytes += len(piece)
                newlines += piece.count(b"\n")
                keys.extend(_sample_keys(piece, off == 0, off + len(piece) >= size))
    except OSError as exc:
        raise CliError(f"cuckoo: cannot read input '{path}': {_one_line(exc)}", EXIT_USAGE) from None
    return keys, size / max(nbytes / max(newlines, 1), 1.0)


def new_filter(capacity: int, fpr: float, growable: bool, seed: Any = None) -> Tuple[Filter, bool]:
    """A filter of `capacity` keys; a growable one when asked and this build supports it. `seed`
    None: a secret random seed (stored in the filter)."""
    if growable:
        try:
            return Filter(capacity, fpr, growable=True, seed=seed), True  # type: ignore[call-arg]
        except TypeError:
            pass  # this build has no growable filters
    return Filter(capacity, fpr, seed=seed), False


def load_filter(path: str, writable: bool = False, **load_options: bool) -> Filter:
    """Filter.load(path, **load_options), with every failure turned into a one-line exit-2 error."""
    prefix = f"cuckoo: cannot read filter file '{path}'"
    if not os.path.exists(path):
        raise CliError(f"{prefix}: No such file or directory", EXIT_FILTER_FILE)
    load = getattr(Filter, "load", None)
    if load is None:
        raise CliError(f"{prefix}: this build of cuckoo has no Filter.load", EXIT_FILTER_FILE)
    try:
        f = load(path, **load_options)
    except (OSError, cuckoo.CuckooError, ValueError, TypeError, EOFError, MemoryError, OverflowError) as exc:
        raise CliError(f"{prefix}: {_one_line(exc)}", EXIT_FILTER_FILE) from None
    if not isinstance(f, Filter):
        raise CliError(f"{prefix}: not a cuckoo filter", EXIT_FILTER_FILE)
    if writable and getattr(f, "read_only", False):
        f = f.copy()
    return f


def check_can_save(path: str) -> None:
    if not hasattr(Filter, "save"):
        raise CliError(f"cuckoo: cannot write filter file '{path}': this build of cuckoo has no Filter.save",
                       EXIT_FILTER_FILE)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CliError(f"cuckoo: cannot write filter file '{path}': no directory {parent}", EXIT_FILTER_FILE)


def save_filter(f: Filter, path: str) -> None:
    try:
        f.save(path)  # type: ignore[attr-defined]
    except (OSError, cuckoo.CuckooError, ValueError) as exc:
        raise CliError(f"cuckoo: cannot write filter file '{path}': {_one_line(exc)}", EXIT_FILTER_FILE) from None


def full_error(command: str, f: Filter, line: int, exc: FilterFullError, stdin: bool, kept: str) -> CliError:
    """The exit-3 error: the filter filled (or cannot hold the key) at input line `line` (1-based);
    `kept` says what holds the lines before it."""
    reason = getattr(exc, "reason", "full")
    if reason == "copies":
        what = ("the line's key already fills both of its buckets (a line repeated more than 2 x bucket_size "
                "times, or lines crafted to collide)")
        hint = ("drop --multiset to store each line once" if command == "build" else
                "give --seed (a secret seed is the default) if the input may be crafted")
    elif reason == "low_load":
        what = "the lines' keys collide far more than random keys (input crafted against the seed?)"
        hint = "use a secret seed (the default without --seed)"
    elif reason in ("memory", "max_stages"):
        what = "the filter cannot grow: " + " ".join(str(exc).split(";")[0].split(": ", 1)[-1].split())
        hint = "give --capacity N, or free memory"
    else:
        what = f"no room for it ({len(f):,} keys, capacity {f.capacity:,}, load {f.load_factor:.1%})"
        hint = ("the input size is unknown on stdin: give --capacity N (N >= the number of distinct lines)"
                if stdin else "give a larger --capacity")
    return CliError(f"cuckoo {command}: the filter is full at input line {line:,}: {what}; {kept}; {hint}", EXIT_FULL)


# ---- progress and reports --------------------------------------------------------------------


def _si(x: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.1f}{unit}"
    return f"{x:.0f}"


def _small(x: float) -> str:
    return f"{x:.3g}" if x >= 0.001 else "< 0.001"


def _bytes(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


class Progress:
    """A one-line, self-overwriting progress counter on stderr (lines, lines/s, bytes)."""

    def __init__(self, enabled: bool, label: str) -> None:
        self.enabled = enabled
        self.label = label
        self.start = time.perf_counter()
        self.last = 0.0
        self.shown = False

    def update(self, lines: int, nbytes: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.last < 0.25:
            return
        self.last = now
        dt = max(now - self.start, 1e-9)
        sys.stderr.write(f"\r{self.label}: {lines:,} lines, {_bytes(nbytes)}, {_si(lines / dt)} lines/s   ")
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r" + " " * 78 + "\r")
            sys.stderr.flush()


def _progress_enabled(args: argparse.Namespace) -> bool:
    if getattr(args, "quiet", False):
        return False
    if getattr(args, "progress", False):
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _note(args: argparse.Namespace, text: str) -> None:
    if not getattr(args, "quiet", False):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


def write_error(what: str, exc: OSError) -> CliError:
    """A failed write to an output (ENOSPC, EIO, EPIPE with SIGPIPE ignored, ...): one line, exit 4."""
    return CliError(f"cuckoo: cannot write {what}: {_one_line(exc)}", EXIT_WRITE)


def write_stdout(data: Union[str, bytes], flush: bool = False) -> None:
    try:
        if isinstance(data, bytes):
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
        if flush:
            sys.stdout.flush()
    except OSError as exc:
        raise write_error("to standard output", exc) from None


def _same_file(a: str, b: str) -> bool:
    """Whether paths a and b name one file: by identity (device and inode, so symlinks and hard
    links count) when both exist, else by their resolved paths (a file about to be created)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        try:
            return os.path.realpath(a) == os.path.realpath(b)
        except (OSError, ValueError):
            return False


def store_files(path: str) -> List[Tuple[str, str]]:
    """(path, what) of each file a store at `path` owns: its log, index snapshot (and the
    snapshot's temporary file), lock, and compaction's temporary log."""
    return [(path, f"the store '{path}'"), (path + ".idx", f"the snapshot of the store '{path}'"),
            (path + ".idx.tmp", f"a temporary file of the store '{path}'"),
            (path + ".lock", f"the lock of the store '{path}'"),
            (path + ".compact", f"a temporary file of the store '{path}'")]


def refuse_clobber(path: Optional[str], what: str, protected: Sequence[Tuple[str, str]],
                   refusal: str = "refusing to overwrite it") -> None:
    """Exit 1 when `path` (a file this command writes, or reads while it writes `protected`) is
    one of the `protected` files: an input, a store's files, a filter file read or saved.
    Called before anything is opened or written."""
    if path is None or path == "-":
        return
    for other, role in protected:
        if other != "-" and _same_file(path, other):
            raise CliError(f"cuckoo: {what} '{path}' is also {role}: {refusal}", EXIT_USAGE)


def inputs_of(sources: List[Source]) -> List[Tuple[str, str]]:
    return [(src.name, "an input") for src in sources if not src.is_stdin]


class Output:
    """stdout or -o FILE, written in whole blocks."""

    def __init__(self, path: Optional[str], inputs: List[Source]) -> None:
        self.path = path
        self.what = "to standard output"
        if path is None or path == "-":
            self.fh: IO[bytes] = sys.stdout.buffer
            self.owned = False
            return
        self.what = f"output '{path}'"
        refuse_clobber(path, "output", inputs_of(inputs))
        try:
            self.fh = open(path, "wb")
        except OSError as exc:
            raise CliError(f"cuckoo: cannot write output '{path}': {_one_line(exc)}", EXIT_USAGE) from None
        self.owned = True

    def write(self, data: bytes) -> None:
        if data:
            try:
                self.fh.write(data)
            except OSError as exc:
                raise write_error(self.what, exc) from None

    def flush(self) -> None:
        """Hands what was written to the OS (no fsync)."""
        try:
            self.fh.flush()
        except OSError as exc:
            raise write_error(self.what, exc) from None

    def close(self) -> None:
        try:
            if self.owned:
                self.fh.close()
            else:
                self.fh.flush()
        except OSError as exc:
            raise write_error(self.what, exc) from None


# ---- subcommands -----------------------------------------------------------------------------


def _auto_filter(args: argparse.Namespace, sources: List[Source], fpr: float) -> Tuple[Filter, bool, str]:
    """The filter for dedup/build: loaded, fixed (--capacity) or automatic (growable, sized by an
    estimate of the distinct lines). New filters get --seed, else a secret random seed."""
    if getattr(args, "filter", None):
        f = load_filter(args.filter, writable=True)
        # The README's resume after exit 3 (--save, then --filter) loads a full fixed filter: it
        # grows from there, like a filter this command sizes itself (no --capacity).
        g = growable_version(f)
        if g is None:
            return f, False, f"loaded from {args.filter}"
        return g, True, f"loaded from {args.filter}" + ("" if f.growable else ", growable")
    seed = args.seed
    if args.capacity is not None:
        return Filter(args.capacity, fpr, seed=seed), False, f"capacity {args.capacity:,} (fixed)"
    estimate, known = estimate_keys(sources, args.block_size)
    capacity = max(int(estimate * 1.2) + 16, MIN_CAPACITY) if known else GROWABLE_START
    f, growable = new_filter(capacity, fpr, growable=True, seed=seed)
    if growable:
        how = "estimated distinct lines" if known else "input of unknown size"
        return f, True, f"growable, initial capacity {capacity:,} ({how})"
    if not known:
        capacity = STDIN_CAPACITY
        f = Filter(capacity, fpr, seed=seed)
    how = "estimated from the input" if known else "default for input of unknown size"
    return f, False, f"capacity {capacity:,} ({how})"


def _on_stdin(sources: List[Source]) -> bool:
    return any(s.is_stdin or s.regular_size() is None for s in sources)


# Exact dedup reads blocks of 4 MiB: each block is one pass of the store's sorted verification over
# its log, so larger blocks read the log fewer times, but hold more lines at once. Measured on
# 10^7 lines (benchmarks/dedup.py input): 2 MiB 2.9-3.4 s / 140 MiB peak, 4 MiB 3.1 s / 115 MiB,
# 8 MiB 3.8 s / 140 MiB.
EXACT_BLOCK = 4 << 20


# The longest key a store holds (its records' length field): a longer line is refused with one
# line on stderr as soon as it is seen, before it is held in memory whole.
MAX_STORE_KEY = (1 << 31) - 1


def max_store_key() -> int:
    """MAX_STORE_KEY, or less for the tests (CUCKOO_TEST_MAX_KEY: a long line without writing
    2 GiB); never more."""
    override = os.environ.get("CUCKOO_TEST_MAX_KEY")
    return min(int(override), MAX_STORE_KEY) if override else MAX_STORE_KEY


def line_too_long(command: str, line: int, limit: int) -> CliError:
    return CliError(f"{command}: input line {line:,} is longer than {limit:,} bytes, the longest key a store holds; "
                    f"the lines before it are done", EXIT_USAGE)


def open_store(path: Optional[str], readonly: bool = False) -> "cuckoo.Store":
    """A store for the CLI: errors on one line (exit 2), like filter files."""
    try:
        return cuckoo.Store(path, readonly=readonly)
    except cuckoo.StoreLockedError as exc:
        raise CliError(f"cuckoo: {exc}", EXIT_FILTER_FILE) from None
    except (OSError, ValueError, TypeError, MemoryError, cuckoo.CuckooError) as exc:
        raise CliError(f"cuckoo: cannot open store '{path}': {_one_line(exc)}", EXIT_FILTER_FILE) from None


def store_error(path: Optional[str], exc: BaseException) -> CliError:
    """A store that failed after it opened (an I/O error, a corrupt record, no memory): exit 2."""
    return CliError(f"cuckoo: store '{path or '(temporary)'}': {_one_line(exc)}", EXIT_FILTER_FILE)


STORE_ERRORS = (OSError, ValueError, TypeError, MemoryError, cuckoo.CuckooError)


def close_store(store: "cuckoo.Store", path: Optional[str], failing: bool) -> None:
    """Closes (syncs, snapshots) the store; an error is reported (exit 2) unless the command is
    already failing (`failing`), whose error then stays the one reported."""
    try:
        store.close()
    except STORE_ERRORS as exc:
        if not failing:
            raise store_error(path, exc) from None


def cmd_dedup_exact(args: argparse.Namespace) -> int:
    """dedup --exact / --store: every "seen" is checked against the key itself, kept in a log.

    With --store, a line is recorded in the store only once its output has been handed to the
    OS: each block is one store batch (cuckoo.Store.batch) that adds the block's keys, writes
    and flushes its new lines, and only then commits. Whatever stops a run (a kill, Ctrl-C, a
    closed pipe, a full disk, an error of the store itself), the store holds no line that was
    not written, so a rerun writes every line that no run wrote; the lines of the block being
    written when a run stopped may be written again (at least once, never lost)."""
    for opt in ("filter", "save", "capacity", "fpr", "seed"):
        if getattr(args, opt) is not None:
            raise CliError(f"cuckoo dedup: --{opt} is for the filter; --exact/--store keep every key exactly",
                           EXIT_USAGE)
    sources = sources_of(args.files)
    owned = store_files(args.store) if args.store else []
    for src, _ in inputs_of(sources):
        refuse_clobber(src, "input", owned, "refusing to read what it writes")
    refuse_clobber(args.output, "output", inputs_of(sources) + owned)
    store = open_store(args.store)
    block = EXACT_BLOCK if args.block_size == DEFAULT_BLOCK else args.block_size
    max_key = max_store_key()
    progress = Progress(_progress_enabled(args), "dedup")
    read = written = nbytes = 0
    start = time.perf_counter()
    failing = True
    try:
        out = Output(args.output, sources)
        try:
            blocks = iter_blocks(sources, block, max_key)
            while True:
                try:
                    lines, last_input = next(blocks)
                except StopIteration:
                    break
                except LineTooLong:
                    raise line_too_long("cuckoo dedup", read + 1, max_key) from None
                too_long = np.flatnonzero(lines.klen > max_key)
                if len(too_long):  # do the lines before it, then stop
                    lines = Lines(lines.data, int(lines.starts[too_long[0]]))
                try:
                    if args.store:
                        # The block's records stay in memory until the batch commits, after its
                        # lines were written and flushed: whatever stops the run before that (an
                        # exception rolls the batch back, a kill leaves it unwritten) leaves
                        # none of them in the store.
                        with store.batch():
                            mask = store._s.add_unique_spans(lines.buf, lines.starts, lines.klen)
                            out.write(lines.select(mask, final=last_input))
                            out.flush()
                    else:  # --exact: the store dies with the run, there is no rerun to serve
                        mask = store._s.add_unique_spans(lines.buf, lines.starts, lines.klen)
                        out.write(lines.select(mask, final=last_input))
                except STORE_ERRORS as exc:
                    raise store_error(args.store, exc) from None
                read += len(lines)
                written += int(np.count_nonzero(mask))
                nbytes += len(lines.buf) - (1 if lines.virtual else 0)
                progress.update(read, nbytes)
                if len(too_long):
                    raise line_too_long("cuckoo dedup", read + 1, max_key)
        finally:
            progress.done()
            out.close()
        st = store.stats()
        failing = False
    finally:
        close_store(store, args.store, failing)
    elapsed = time.perf_counter() - start
    where = args.store or "an anonymous temporary file, removed"
    _note(args, f"cuckoo dedup: {read:,} lines read, {written:,} written, {read - written:,} dropped "
                f"in {elapsed:.2f} s ({_si(read / max(elapsed, 1e-9))} lines/s)")
    _note(args, f"cuckoo dedup: exact: no line wrongly dropped (store: {st['live_keys']:,} keys, log "
                f"{_bytes(st['log_bytes'])} in {where}, index {_bytes(st['index_bytes'])}, "
                f"{st['log_reads_per_lookup']:.2f} log reads per line)")
    return EXIT_OK


def cmd_dedup(args: argparse.Namespace) -> int:
    if args.exact or args.store:
        return cmd_dedup_exact(args)
    sources = sources_of(args.files)
    filter_files = [(path, f"the filter file '{path}'") for path in (args.filter, args.save) if path]
    refuse_clobber(args.output, "output", inputs_of(sources) + filter_files)
    refuse_clobber(args.save, "--save file", inputs_of(sources))
    if args.save:
        check_can_save(args.save)
    if args.filter and (args.capacity is not None or args.fpr is not None or args.seed is not None):
        raise CliError("cuckoo dedup: --filter takes the loaded filter's parameters: drop --capacity/--fpr/--seed",
                       EXIT_USAGE)
    fpr = args.fpr if args.fpr is not None else DEDUP_FPR
    f, growable, how = _auto_filter(args, sources, fpr)
    out = Output(args.output, sources)
    progress = Progress(_progress_enabled(args), "dedup")
    read = written = nbytes = 0
    expected_false = 0.0
    start = time.perf_counter()
    fpr_before = f.expected_fpr
    failure: Optional[CliError] = None
    try:
        for lines, last_input in iter_blocks(sources, args.block_size):
            mask, failed_at, exc = lines.insert(f, unique=True)
            if failed_at is not None:
                # Keep the work done: the lines before the failing one are written, and the
                # filter (holding exactly their keys) is saved below.
                out.write(lines.select(mask, final=last_input))
                written += int(np.count_nonzero(mask))
                read += failed_at
                done = (f"the {read:,} lines before it are deduplicated in the output"
                        + (f" and in the filter saved to {args.save}" if args.save else ""))
                assert exc is not None
                failure = full_error("dedup", f, read + 1, exc, _on_stdin(sources), done)
                break
            kept = int(np.count_nonzero(mask))
            fpr_after = f.expected_fpr
            expected_false += kept * 0.5 * (fpr_before + fpr_after)
            fpr_before = fpr_after
            out.write(lines.select(mask, final=last_input))
            read += len(lines)
            written += kept
            nbytes += len(lines.buf) - (1 if lines.virtual else 0)
            progress.update(read, nbytes)
    finally:
        progress.done()
        out.close()
    elapsed = time.perf_counter() - start
    if args.save:
        save_filter(f, args.save)
    if failure is not None:
        raise failure
    _note(args, f"cuckoo dedup: {read:,} lines read, {written:,} written, {read - written:,} dropped "
                f"in {elapsed:.2f} s ({_si(read / max(elapsed, 1e-9))} lines/s)")
    _note(args, f"cuckoo dedup: expected unique lines wrongly dropped: {_small(expected_false)} "
                f"(filter: {how}, {len(f):,} keys, {_bytes(f.nbytes)}, {f.fingerprint_bits}-bit fingerprints, "
                f"FPR now {f.expected_fpr:.2g})" + (f"; saved to {args.save}" if args.save else ""))
    return EXIT_OK


def cmd_build(args: argparse.Namespace) -> int:
    sources = sources_of(args.files)
    refuse_clobber(args.output, "output", inputs_of(sources))
    check_can_save(args.output)
    fpr = args.fpr if args.fpr is not None else BUILD_FPR
    f, _, how = _auto_filter(args, sources, fpr)
    progress = Progress(_progress_enabled(args), "build")
    read = added = nbytes = 0
    failure: Optional[CliError] = None
    try:
        for lines, _last in iter_blocks(sources, args.block_size):
            mask, failed_at, exc = lines.insert(f, unique=not args.multiset)
            added += int(np.count_nonzero(mask))
            if failed_at is not None:
                read += failed_at
                assert exc is not None
                failure = full_error("build", f, read + 1, exc, _on_stdin(sources),
                                     f"the filter of the {read:,} lines before it is saved to {args.output}")
                break
            read += len(lines)
            nbytes += len(lines.buf)
            progress.update(read, nbytes)
    finally:
        progress.done()
    save_filter(f, args.output)
    if failure is not None:
        raise failure
    _note(args, f"cuckoo build: {read:,} lines, {added:,} keys added, {len(f):,} in the filter "
                f"({how}; load {f.load_factor:.1%}, {_bytes(f.nbytes)}, expected FPR {f.expected_fpr:.2g}) -> {args.output}")
    return EXIT_OK


def cmd_query(args: argparse.Namespace) -> int:
    sources = sources_of(args.files)
    refuse_clobber(args.output, "output", [(args.filter, f"the filter file '{args.filter}'")])
    f = load_filter(args.filter)
    out = Output(args.output, sources)
    progress = Progress(_progress_enabled(args), "query")
    read = shown = nbytes = 0
    try:
        for lines, last_input in iter_blocks(sources, args.block_size):
            if args.count:
                counts = lines.apply(f.count_many, np.uint8)
                out.write(lines.with_prefix(counts, final=last_input))
                shown += int(np.count_nonzero(counts))
            else:
                present = lines.apply(f.contains_many, bool)
                shown += int(np.count_nonzero(present))
                out.write(lines.select(~present if args.absent else present, final=last_input))
            read += len(lines)
            nbytes += len(lines.buf)
            progress.update(read, nbytes)
    finally:
        progress.done()
        out.close()
    if args.verbose:
        absent = read - shown
        _note(args, f"cuckoo query: {read:,} lines, {shown:,} maybe present, {absent:,} absent")
    return EXIT_OK


def filter_info(f: Filter, path: Optional[str] = None) -> dict:
    info: dict = {}
    if path is not None:
        info["path"] = path
        info["file_bytes"] = os.path.getsize(path)
    info.update(
        keys=len(f),
        capacity=f.capacity,
        load_factor=f.load_factor,
        bucket_count=f.bucket_count,
        bucket_size=f.bucket_size,
        slot_count=f.slot_count,
        fingerprint_bits=f.fingerprint_bits,
        nbytes=f.nbytes,
        bits_per_item=f.bits_per_item,
        expected_fpr=f.expected_fpr,
        fpr_bound=f.fpr_bound,
        seed=f.seed,
        max_kicks=f.max_kicks,
    )
    for extra in ("growable", "semi_sort"):
        if hasattr(f, extra):
            info[extra] = getattr(f, extra)
    return info


def cmd_info(args: argparse.Namespace) -> int:
    # Memory-mapped: only the header is read and checked (its checksum, every field, the layout
    # against the file's size), so this is instant at any size; --verify also reads every table
    # (checksums, item counts) from the mapping, without a copy in memory.
    f = load_filter(args.filter, mmap=True, verify=args.verify)
    info = filter_info(f, args.filter)
    info["verified"] = args.verify
    if args.json:
        write_stdout(json.dumps(info, indent=2) + "\n")
        return EXIT_OK
    bpi = info["bits_per_item"]
    rows = [
        ("file", f"{args.filter} ({_bytes(info['file_bytes'])})"),
        ("keys", f"{info['keys']:,} of capacity {info['capacity']:,} (load {info['load_factor']:.1%} of "
                 f"{info['slot_count']:,} slots)"),
        ("table", f"{info['bucket_count']:,} buckets x {info['bucket_size']} slots x "
                  f"{info['fingerprint_bits']}-bit fingerprints"),
        ("memory", f"{_bytes(info['nbytes'])}" + (f" ({bpi:.1f} bits per key)" if info["keys"] else "")),
        ("expected FPR", f"{info['expected_fpr']:.3g} at the current load, {info['fpr_bound']:.3g} when full"),
        ("seed", str(info["seed"])),
        ("max_kicks", str(info["max_kicks"])),
    ]
    if "growable" in info:
        rows.append(("growable", str(info["growable"])))
    rows.append(("checked", "every byte (checksums, item counts)" if args.verify
                 else "the header (--verify reads and checks every byte)"))
    width = max(len(k) for k, _ in rows)
    write_stdout("".join(f"{k:<{width}}  {v}\n" for k, v in rows))
    return EXIT_OK


# ---- demo ------------------------------------------------------------------------------------


def _timed(fn: Callable[[], Any]) -> Tuple[Any, float]:
    t0 = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t0


def _set_bytes(items: List[Any]) -> int:
    """sys.getsizeof of a set of `items` plus that of each element."""
    s = set(items)
    return sys.getsizeof(s) + sum(map(sys.getsizeof, s))


def _text_lines(ids: np.ndarray) -> bytes:
    """'user-<10 digits>\\n' for each id, built with NumPy (no Python loop per line)."""
    prefix = np.frombuffer(b"user-", dtype=np.uint8)
    digits = 10
    rows = np.empty((len(ids), len(prefix) + digits + 1), dtype=np.uint8)
    rows[:, : len(prefix)] = prefix
    v = ids.astype(np.uint64)
    for j in range(digits - 1, -1, -1):
        rows[:, len(prefix) + j] = (v % 10).astype(np.uint8) + 48
        v //= 10
    rows[:, -1] = 10
    return rows.tobytes()


def cmd_demo(args: argparse.Namespace) -> int:
    n = args.size
    rng = np.random.default_rng(args.seed)
    total_t0 = time.perf_counter()

    def w(text: str = "") -> None:
        write_stdout(text + "\n", flush=True)

    w(f"cuckoo {cuckoo.__version__} demo: {n:,} random 64-bit keys, then {n:,} text lines to dedup "
      f"(generated in memory, seed {args.seed})")
    # The timings below depend on it (cuckoo.cpu_level(); CUCKOO_CPU chooses another).
    w(f"kernel level {cuckoo.cpu_level()} (this CPU runs {', '.join(cuckoo.cpu_levels())})")
    w()

    # 1. integer keys: build, look up, false positives
    present = rng.integers(0, 2**63, size=n, dtype=np.uint64) << np.uint64(1)  # even numbers
    absent = present | np.uint64(1)  # odd numbers: never added
    f = Filter(n, fpr=args.fpr)
    _, t_add = _timed(lambda: f.add_many(present))
    hits, t_hit = _timed(lambda: f.contains_many(present))
    fps, t_miss = _timed(lambda: f.contains_many(absent))
    n_fp = int(np.count_nonzero(fps))
    missing = n - int(np.count_nonzero(hits))
    w(f"Filter({n:_}, fpr={args.fpr:g}): {f.fingerprint_bits}-bit fingerprints, {f.bucket_size} slots per bucket, "
      f"{_bytes(f.nbytes)}, load {f.load_factor:.1%} after adding them all")
    w(f"  {'bulk call on a NumPy uint64 array':<36}{'keys/s':>9}{'ns/key':>9}")
    for name, t in (("add_many", t_add), ("contains_many, the added keys", t_hit),
                    ("contains_many, absent keys", t_miss)):
        w(f"  {name:<36}{_si(n / t):>9}{t * 1e9 / n:>9.1f}")
    w(f"  false negatives: {missing} of {n:,} added keys" + ("" if missing else " (there never are)"))
    w()

    sample = min(n, args.set_sample)
    set_per_key = _set_bytes(present[:sample].tolist()) / sample
    scaled = "" if sample == n else f", measured on {sample:,} keys and scaled"
    w(f"  memory     filter {_bytes(f.nbytes)} ({f.nbytes * 8 / n:.1f} bits/key) vs Python set "
      f"{_bytes(set_per_key * n)} ({set_per_key * 8:.0f} bits/key): {set_per_key * n / f.nbytes:.0f}x smaller")
    w(f"             (set = sys.getsizeof of the set and of each int{scaled})")
    w(f"  false +    measured {n_fp / n:.3g} ({n_fp:,} of {n:,} absent keys) vs theory {f.expected_fpr:.3g} "
      f"at this load (bound when full: {f.fpr_bound:.3g})")
    w()

    # 2. dedup of a text stream with duplicates, through the same code as `cuckoo dedup`
    ids = rng.integers(0, max(n // 2, 1), size=n)
    text = _text_lines(ids)
    del present, absent, hits, fps
    exact = int(len(np.unique(ids)))
    g = Filter(n, fpr=DEDUP_FPR)
    written = out_bytes = 0
    expected_false = 0.0
    t0 = time.perf_counter()
    fpr_before = g.expected_fpr
    src = Source("<generated>")
    src.stream = io.BytesIO(text)
    for lines in read_lines(src, DEFAULT_BLOCK):
        mask = lines.apply(g.add_unique_many, bool)
        kept = int(np.count_nonzero(mask))
        fpr_after = g.expected_fpr
        expected_false += kept * 0.5 * (fpr_before + fpr_after)
        fpr_before = fpr_after
        out_bytes += len(lines.select(mask, final=True))
        written += kept
    t_dedup = time.perf_counter() - t0
    line_len = len(text) // n
    sample = min(exact, args.set_sample)
    set_lines = _set_bytes(text[: sample * line_len].split(b"\n")[:sample]) / sample * exact
    w(f"Streaming dedup of {n:,} lines like b'user-0001234567' ({_bytes(len(text))}, {exact:,} distinct), "
      f"the code path of `cuckoo dedup`:")
    w(f"  {_si(n / t_dedup)} lines/s ({t_dedup * 1e9 / n:.0f} ns/line, {len(text) / t_dedup / 2**20:.0f} MiB/s); "
      f"filter {_bytes(g.nbytes)} vs a Python set of the distinct lines {_bytes(set_lines)}")
    w(f"  kept {written:,} of {exact:,} distinct lines: {exact - written:,} wrongly dropped "
      f"(expected {expected_false:.3g} at --fpr {DEDUP_FPR:g}; lower it to drop fewer)")
    w()
    w(f"done in {time.perf_counter() - total_t0:.1f} s. Next: cuckoo dedup --help")
    return EXIT_OK


# ---- argument parsing ------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors exiting 1 (argparse's own default is 2, our filter-file code)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _positive_int(text: str) -> int:
    try:
        v = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        try:
            v = int(float(text))  # 1e6
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return v


def _fpr(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < v < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive): {text!r}")
    return v


LINES_HELP = """\
lines: bytes, never decoded. A line ends at \\n; its key is the line without the \\n and
without one \\r before it (so "a\\r\\n" and "a\\n" are the same key, the one b"a" is in Python).
Lines are written back exactly as read; a last line without \\n is a line (it gets a \\n only
when more input follows it); empty lines are keys too. FILE '-' or no FILE reads stdin."""

EXIT_HELP = """\
exit codes: 0 ok, 1 usage error or unreadable input, 2 a filter file that cannot be read or
written, 3 the filter is full (fixed --capacity too small), 4 the output cannot be written
(e.g. no space left on the device)."""

# The default dedup filter's fingerprint width, from the core's sizing rule (cuckoo.theory).
_DEDUP_BITS = theory.fingerprint_bits(DEDUP_FPR)

DEDUP_EPILOG = f"""\
Writes each line the first time it is seen, in input order. A cuckoo filter remembers the keys
as short fingerprints ({_DEDUP_BITS} bits at the default --fpr, about {_DEDUP_BITS / theory.design_load(4):.0f} bits per line of capacity),
so memory stays small however long the lines are; the price is that a new line whose
fingerprint collides with a stored one is dropped by mistake.

progress (lines, lines/s) is shown on stderr when stderr is a terminal; --progress forces it,
--quiet turns it and the final report off.

capacity: --capacity N fixes the filter size (exit 3 if more than about N distinct lines arrive:
the lines before the failing one are written, --save saves the filter holding exactly them, and
stderr names the line N: resume with tail -n +N and --filter that file, which then grows).
Without it the filter grows, starting from an estimate of the distinct
lines x 1.2: counted for files of up to 1 MiB and stdin of up to two blocks, estimated from 16
sampled windows of larger files, {GROWABLE_START:,} for longer pipes.

seed: new filters get a secret random seed (stored in the --save file), so that input crafted
against the public hash behaves like any other; --seed N makes the filter file reproducible.

report (stderr, unless --quiet): lines read, written, dropped, and the expected number of
unique lines wrongly dropped: each kept line was tested against the filter, which answers
"seen" falsely with probability about its expected_fpr at that moment (it rises with the load).
The figure sums, per block, (lines kept) x (mean of expected_fpr before and after the block).

{LINES_HELP}

{EXIT_HELP}

examples:
  cuckoo dedup big.txt -o unique.txt
  zcat logs/*.gz | cuckoo dedup --capacity 200000000 | wc -l
  cuckoo dedup today.txt --filter seen.cuckoo --save seen.cuckoo > new.txt"""


def _add_input_options(p: argparse.ArgumentParser, progress: bool = True) -> None:
    p.add_argument("files", nargs="*", metavar="FILE", help="input files ('-' or none: stdin)")
    if progress:
        p.add_argument("--progress", action="store_true",
                       help="show progress (lines, lines/s) on stderr even when it is not a terminal")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress and no report on stderr")
    p.add_argument("--block-size", type=_positive_int, default=DEFAULT_BLOCK, metavar="BYTES",
                   help=f"read input in blocks of this many bytes (default {DEFAULT_BLOCK >> 20} MiB)")


# ---- cuckoo store -----------------------------------------------------------------------------


def _store_key(text: str, as_int: bool) -> Union[int, bytes]:
    if not as_int:
        return os.fsencode(text)
    try:
        v = int(text, 0)
    except ValueError:
        raise CliError(f"cuckoo store: --int keys must be integers, got {text!r}", EXIT_USAGE) from None
    if not -(1 << 63) <= v < 1 << 64:
        raise CliError(f"cuckoo store: --int keys must fit in 64 bits ([-2**63, 2**64)), got {text!r}", EXIT_USAGE)
    return v


@contextlib.contextmanager
def using_store(path: str, readonly: bool = False) -> Iterator["cuckoo.Store"]:
    """The store at `path` for one subcommand, closed at the end; whatever fails in it (open,
    a read, a write, close) is one line on stderr and exit 2, never a traceback."""
    store = open_store(path, readonly)
    failing = True
    try:
        try:
            yield store
        except STORE_ERRORS as exc:
            raise store_error(path, exc) from None
        failing = False
    finally:
        close_store(store, path, failing)


def cmd_store_import(args: argparse.Namespace) -> int:
    """Appends the lines of FILEs: by default each line (with its newline, exactly as read) is the
    value of the key that is its number (0, 1, ... after the store's existing line keys), so that
    export writes the file back byte for byte; with --tsv, each line is KEY<TAB>VALUE."""
    sources = sources_of(args.files)
    for src, _ in inputs_of(sources):
        refuse_clobber(src, "input", store_files(args.store), "refusing to read what it writes")
    n = 0
    with using_store(args.store) as store:
        first = len(store) if not args.tsv else 0
        for lines, _ in iter_blocks(sources, args.block_size):
            data = lines.data
            starts = lines.starts.tolist()
            full = lines.full_lengths().tolist()
            if args.tsv:
                keys, values = [], []
                for st, ln, kl in zip(starts, full, lines.klen.tolist()):
                    row = data[st:st + kl]
                    tab = row.find(b"\t")
                    if tab < 0:
                        raise CliError(f"cuckoo store import: line {n + len(keys) + 1} has no TAB (--tsv wants "
                                       f"KEY<TAB>VALUE)", EXIT_USAGE)
                    keys.append(row[:tab])
                    values.append(row[tab + 1:])
            else:
                values = [data[st:st + ln] for st, ln in zip(starts, full)]
                if lines.virtual:
                    values[-1] = values[-1][:-1]  # the file's last line had no newline: keep it so
                keys = np.arange(first + n, first + n + len(values), dtype=np.uint64)
            store.put_many(keys, values)
            n += len(lines)
    _note(args, f"cuckoo store import: {n:,} records into {args.store}")
    return EXIT_OK


def cmd_store_export(args: argparse.Namespace) -> int:
    # Truncating a file of the store while it is mapped would kill this process (SIGBUS) and
    # empty the store: refused before anything is opened.
    refuse_clobber(args.output, "output", store_files(args.store))
    with using_store(args.store, readonly=True) as store:
        out = Output(args.output, [])
        try:
            if args.tsv:
                for k, v in store.items():
                    out.write(k + b"\t" + v + b"\n")
            else:
                buf: List[bytes] = []
                size = 0
                for v in store.values():
                    buf.append(v)
                    size += len(v)
                    if size >= DEFAULT_BLOCK:
                        out.write(b"".join(buf))
                        buf, size = [], 0
                out.write(b"".join(buf))
        finally:
            out.close()
    return EXIT_OK


def cmd_store_get(args: argparse.Namespace) -> int:
    keys = [_store_key(text, args.int) for text in args.keys]
    missing = 0
    with using_store(args.store, readonly=True) as store:
        for text, key in zip(args.keys, keys):
            v = store.get(key)
            if v is None:
                missing += 1
                sys.stderr.write(f"cuckoo store get: {text}: not found\n")
            else:
                write_stdout(v + (b"" if v.endswith(b"\n") else b"\n"))
        write_stdout("", flush=True)
    return EXIT_USAGE if missing else EXIT_OK


def cmd_store_put(args: argparse.Namespace) -> int:
    key = _store_key(args.key, args.int)
    with using_store(args.store) as store:
        store[key] = os.fsencode(args.value)
    return EXIT_OK


def cmd_store_del(args: argparse.Namespace) -> int:
    keys = [_store_key(text, args.int) for text in args.keys]
    missing = 0
    with using_store(args.store) as store:
        for text, key in zip(args.keys, keys):
            if not store.discard(key):
                missing += 1
                sys.stderr.write(f"cuckoo store del: {text}: not found\n")
    return EXIT_USAGE if missing else EXIT_OK


def cmd_store_info(args: argparse.Namespace) -> int:
    with using_store(args.store, readonly=True) as store:
        st = store.stats()
        info = {"path": args.store, "seed": store.seed, "tag_bits": store.tag_bits, **st}
    st = info
    if args.json:
        write_stdout(json.dumps(info, indent=2) + "\n")
        return EXIT_OK
    write_stdout(f"store {args.store}: {st['live_keys']:,} keys\n")
    write_stdout(f"  log:   {_bytes(st['log_bytes'])} ({_bytes(st['live_bytes'])} live, {_bytes(st['dead_bytes'])} dead: "
                 f"compact() reclaims them)\n")
    write_stdout(f"  index: {_bytes(st['index_bytes'])} ({st['index_bytes_per_key']:.1f} bytes per key), "
                 f"{st['buckets']:,} buckets of 4, load {st['load_factor']:.1%}, {st['tag_bits']}-bit tags\n")
    opened = "from its snapshot" if st["snapshot_used"] else f"from the log ({st['snapshot_note']})"
    write_stdout(f"  opened {opened}; {st['replayed_records']:,} log records replayed\n")
    if st["recovered_bytes"]:
        write_stdout(f"  a torn tail of {st['recovered_bytes']:,} bytes at offset {st['recovered_at']:,} is ignored\n")
    return EXIT_OK


def cmd_store_compact(args: argparse.Namespace) -> int:
    with using_store(args.store) as store:
        before = store.stats()["log_bytes"]
        store.compact()
        after = store.stats()["log_bytes"]
    _note(args, f"cuckoo store compact: {args.store}: {_bytes(before)} -> {_bytes(after)}")
    return EXIT_OK


STORE_EPILOG = """\
A store is an exact key-value file: an append-only log of records (locked by its one writer)
and, beside it, STORE.idx (a snapshot of the in-memory index, written on close).

  cuckoo store import data.store big.txt       each line becomes a record (key: its number)
  cuckoo store export data.store -o copy.txt   ... and comes back byte for byte
  cuckoo store import kv.store --tsv pairs.tsv KEY<TAB>VALUE lines
  cuckoo store get kv.store alice bob          values, one per line (exit 1 if one is missing)
  cuckoo store put kv.store alice admin
  cuckoo store del kv.store bob
  cuckoo store info kv.store                   keys, log and index sizes, dead bytes
  cuckoo store compact kv.store                rewrite the log without dead records

exit codes: 0 ok, 1 usage error or a key not found, 2 a store that cannot be opened (locked,
corrupt, unreadable), 4 the output cannot be written (e.g. a full disk)."""


def _add_store_parser(sub: Any) -> None:
    p = sub.add_parser("store", help="an exact key-value store file: import, export, get, put, del, info, compact",
                       description="Exact key-value store files (cuckoo.Store) on the command line.",
                       epilog=STORE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ops = p.add_subparsers(dest="store_command", metavar="OPERATION", parser_class=_Parser, required=True)

    q = ops.add_parser("import", help="add the lines of FILEs as records")
    q.add_argument("store", metavar="STORE")
    _add_input_options(q, progress=False)
    q.add_argument("--tsv", action="store_true", help="lines are KEY<TAB>VALUE (default: key = line number)")
    q.set_defaults(_parser=q, func=cmd_store_import)

    q = ops.add_parser("export", help="write the values (or --tsv, KEY<TAB>VALUE lines) in log order")
    q.add_argument("store", metavar="STORE")
    q.add_argument("-o", "--output", metavar="OUT", help="write to OUT (default stdout)")
    q.add_argument("--tsv", action="store_true", help="write KEY<TAB>VALUE lines")
    q.set_defaults(_parser=q, func=cmd_store_export)

    for name, fn, what in (("get", cmd_store_get, "print the values of KEYs"),
                           ("del", cmd_store_del, "delete KEYs")):
        q = ops.add_parser(name, help=what)
        q.add_argument("store", metavar="STORE")
        q.add_argument("keys", nargs="+", metavar="KEY")
        q.add_argument("--int", action="store_true", help="KEYs are integers (e.g. the line numbers of import)")
        q.set_defaults(_parser=q, func=fn)

    q = ops.add_parser("put", help="store VALUE under KEY")
    q.add_argument("store", metavar="STORE")
    q.add_argument("key", metavar="KEY")
    q.add_argument("value", metavar="VALUE")
    q.add_argument("--int", action="store_true", help="KEY is an integer")
    q.set_defaults(_parser=q, func=cmd_store_put)

    q = ops.add_parser("info", help="keys, log and index sizes")
    q.add_argument("store", metavar="STORE")
    q.add_argument("--json", action="store_true", help="print a JSON object")
    q.set_defaults(_parser=q, func=cmd_store_info)

    q = ops.add_parser("compact", help="rewrite the log with only live records (atomic)")
    q.add_argument("store", metavar="STORE")
    q.add_argument("-q", "--quiet", action="store_true", help="no report on stderr")
    q.set_defaults(_parser=q, func=cmd_store_compact)


def _seed(text: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 <= v < 2**64:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2**64 - 1: {text!r}")
    return v


def _add_seed_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=_seed, metavar="N",
                   help="seed of the key hash of a new filter, for reproducible filter files (default: a "
                        "secret random seed, stored in the file, so that input crafted against the public "
                        "hash cannot make lines collide)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="cuckoo",
        description="Cuckoo filters on the command line: streaming dedup of huge files in little memory,\n"
                    "filter files you build once and query later.",
        epilog="Run 'cuckoo COMMAND --help' for each command. Start with: cuckoo demo\n\n" + EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"cuckoo {cuckoo.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("dedup", help="write each line the first time it is seen (streaming, bounded memory)",
                       description="Streaming, order-preserving dedup of lines: like awk '!seen[$0]++'\n"
                                   "in a fraction of the memory.",
                       epilog=DEDUP_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_input_options(p)
    p.add_argument("-o", "--output", metavar="OUT", help="write kept lines to OUT (default stdout)")
    p.add_argument("--capacity", type=_positive_int, metavar="N",
                   help="size the filter for N distinct lines (fixed: exit 3 when full)")
    p.add_argument("--fpr", type=_fpr, metavar="P",
                   help=f"target false-positive rate at capacity (default {DEDUP_FPR:g}): the chance that a "
                        f"new line is dropped, at most")
    p.add_argument("--save", metavar="FILTER", help="save the filter to FILTER at the end")
    p.add_argument("--filter", metavar="FILTER",
                   help="start from a saved filter: lines already in it count as seen (dedup against yesterday); "
                        "it grows when it fills")
    p.add_argument("--exact", action="store_true",
                   help="never drop a new line: keep every distinct line in a log (an anonymous temporary "
                        "file) and check each 'seen' against it; memory ~10 bytes per distinct line")
    p.add_argument("--store", metavar="STORE",
                   help="exact dedup against a persistent store (created if absent): lines already in it "
                        "count as seen, new lines are added to it once written, so a run stopped anyhow "
                        "(kill, Ctrl-C, closed pipe, full disk) and rerun writes every line at least once "
                        "(only the block in flight may repeat). Lines longer than 2**31 - 1 bytes are "
                        "refused (exit 1)")
    _add_seed_option(p)
    p.set_defaults(_parser=p, func=cmd_dedup)

    p = sub.add_parser("build", help="build a filter file from the lines of FILEs",
                       description="Build a filter of the lines of FILEs (one key per distinct line) and save it.",
                       epilog=LINES_HELP + "\n\n" + EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_input_options(p)
    p.add_argument("-o", "--output", metavar="FILTER", required=True, help="filter file to write")
    p.add_argument("--capacity", type=_positive_int, metavar="N",
                   help="size the filter for N keys (default: estimated from the input, or growable)")
    p.add_argument("--fpr", type=_fpr, metavar="P", help=f"target false-positive rate (default {BUILD_FPR:g})")
    p.add_argument("--multiset", action="store_true",
                   help="add every line, duplicates too (query --count then counts them, up to "
                        "2 x bucket_size copies of one key); default: each distinct line once")
    _add_seed_option(p)
    p.set_defaults(_parser=p, func=cmd_build, filter=None)

    p = sub.add_parser("query", help="print the lines that may be in a filter (or, --absent, the others)",
                       description="Print the lines of FILEs that may be in FILTER (false positives possible,\n"
                                   "false negatives never).",
                       epilog=LINES_HELP + "\n\n" + EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("filter", metavar="FILTER", help="a filter file (from build or dedup --save)")
    _add_input_options(p)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--absent", action="store_true", help="print the lines certainly not in the filter")
    mode.add_argument("--count", action="store_true",
                      help="print every line as 'COUNT<TAB>line': the copies of its fingerprint found")
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT (default stdout)")
    p.add_argument("-v", "--verbose", action="store_true", help="print a summary on stderr")
    p.set_defaults(_parser=p, func=cmd_query)

    p = sub.add_parser("info", help="describe a filter file: parameters, load, memory, expected FPR",
                       description="Describe a filter file.", epilog=EXIT_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("filter", metavar="FILTER", help="a filter file")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.add_argument("--verify", action="store_true",
                   help="also read the whole file and check every table's checksum and item count "
                        "(default: only the header, instant at any size)")
    p.set_defaults(_parser=p, func=cmd_info)

    p = sub.add_parser("demo", help="a short tour on generated data: speed, memory vs set, FPR vs theory",
                       description="Build a filter of SIZE random keys, look them up, measure false positives "
                                   "against theory and memory against a Python set, then dedup a generated "
                                   "text stream. Everything is generated in memory; nothing is written.")
    p.add_argument("--size", type=_positive_int, default=4_000_000, metavar="N",
                   help="number of keys (default 4,000,000)")
    p.add_argument("--fpr", type=_fpr, default=BUILD_FPR, metavar="P", help=f"target FPR (default {BUILD_FPR:g})")
    p.add_argument("--seed", type=int, default=2014, help="random seed (default 2014)")
    p.add_argument("--set-sample", type=_positive_int, default=1_000_000, metavar="N",
                   help="measure the Python set on at most N keys and scale (default 1,000,000)")
    p.set_defaults(_parser=p, func=cmd_demo)

    _add_store_parser(sub)
    return parser


def _discard_stdout() -> None:
    # What a failed write left in stdout's buffer would fail again when Python flushes it at exit
    # (a second report and exit status 120): point stdout at the null device instead.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, io.UnsupportedOperation):  # pragma: no cover - stdout replaced or closed
        pass


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    # parse_known_args, then file names found after options (`dedup a.txt -o out b.txt`,
    # `query F --absent a.txt`): argparse alone stops filling a '*' positional at the first option.
    args, extra = parser.parse_known_args(argv)
    if extra:
        sub = getattr(args, "_parser", parser)
        files = getattr(args, "files", None)
        options = [e for e in extra if e.startswith("-") and e != "-"]
        if files is None or options:
            sub.error("unrecognized arguments: " + " ".join(options or extra))
        files.extend(e for e in extra if e != "--")
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if hasattr(signal, "SIGPIPE") and argv is None:
        # Behave like other filters in a pipe (`cuckoo dedup big | head`): end quietly.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        code = int(args.func(args))
        try:  # text written to stdout (info, demo) may still sit in its buffer
            sys.stdout.flush()
        except OSError as exc:
            raise write_error("to standard output", exc) from None
        return code
    except CliError as exc:
        sys.stderr.write(str(exc) + "\n")
        if exc.code == EXIT_WRITE and argv is None:  # a real run: the process ends next
            _discard_stdout()
        return exc.code
    except KeyboardInterrupt:
        sys.stderr.write("cuckoo: interrupted\n")
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
