"""Compressed input and output for dedup: gzip, bzip2, xz and zstd.

An input is recognised by its first bytes (the formats' magic numbers), whatever its name, and
decompressed on a thread of its own, so that decompressing overlaps the dedup work of the main
thread (zlib, bz2 and lzma release the GIL while they work, and so does zstandard).
:class:`DecompressingReader` is that thread's consumer end: ``read(size)`` returns decompressed
bytes; ``fileno()`` is the read end of a pipe the thread writes into, for a reader that wants a
file descriptor (a native pipeline). An error of the decompressor (a corrupt or truncated
stream, in the first stream or any later one) is raised by the read that reaches it, never taken
for the end of the input; it names the format ("PATH: not valid xz data: ..."). However much the
input expands (a zstd "bomb"), it is decompressed in pieces of about CHUNK bytes.

An output whose name ends in ``.gz``, ``.bz2``, ``.xz`` or ``.zst`` is compressed in that
format (:func:`open_output`), also on a thread of its own; ``flush()`` returns once every byte
written so far is compressed, flushed out of the compressor (a sync point, so the data is
complete) and handed to the OS: what ``dedup --store`` needs before it records a block.

zstd needs the optional extra ``zstd`` (the ``zstandard`` package), or a Python with the
standard library's ``compression.zstd`` (3.14 and later).
"""

from __future__ import annotations

import os
import queue
import re
import select
import threading
from typing import IO, Any, Callable, List, Optional

__all__ = ["FORMATS", "sniff", "suffix_format", "DecompressingReader", "CompressingWriter", "open_input",
           "open_output", "ZSTD_HINT"]

# (name, magic) of each format, tried in order on an input's first bytes. Long enough that text
# cannot start with one by chance: gzip's magic and its only method (8, deflate); bzip2's "BZh",
# a block size digit, then the first block's magic (the digits of pi) or an empty stream's
# end-of-stream magic (sqrt(pi)); xz's 6 bytes; zstd's 4 (not valid UTF-8).
FORMATS = (
    ("gzip", re.compile(rb"\x1f\x8b\x08")),
    ("bzip2", re.compile(rb"BZh[1-9](\x31\x41\x59\x26\x53\x59|\x17\x72\x45\x38\x50\x90)")),
    ("xz", re.compile(rb"\xfd7zXZ\x00")),
    ("zstd", re.compile(rb"\x28\xb5\x2f\xfd")),
)
MAGIC_BYTES = 10
SUFFIXES = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zst": "zstd"}
ZSTD_HINT = "zstd needs the zstandard package: pip install 'fastcuckoo[zstd]' (or zstandard)"

CHUNK = 1 << 20  # bytes the decompressing thread reads and hands over at a time
QUEUE_CHUNKS = 8  # chunks in flight between the threads (bounds the memory: 8 MiB)


def sniff(head: bytes) -> Optional[str]:
    """The compression format whose magic number starts `head`, or None (plain data)."""
    for name, magic in FORMATS:
        if magic.match(head):
            return name
    return None


def suffix_format(path: Any) -> Optional[str]:
    """The format an output name asks for by its suffix (``.gz``, ``.bz2``, ``.xz``, ``.zst``), or None."""
    if not isinstance(path, (str, os.PathLike)):
        return None
    return SUFFIXES.get(os.path.splitext(os.fspath(path))[1].lower())


def _zstd() -> Any:
    """The zstd module in use: the standard library's compression.zstd, else zstandard; ImportError
    with the one-line hint when neither is there."""
    try:
        from compression import zstd  # type: ignore[import-not-found]  # Python 3.14+

        return zstd
    except ImportError:
        pass
    try:
        import zstandard

        return zstandard
    except ImportError:
        raise ImportError(ZSTD_HINT) from None


GZIP_DECODERS = ("isal", "stdlib")


def gzip_reader_class() -> Any:
    """The gzip reader of compressed input: ISA-L's (``isal.igzip.IGzipFile``, the ``gzip`` extra)
    when it is installed, else the standard library's ``gzip.GzipFile``. Both read every member
    and raise on corrupt or truncated data. ISA-L's inflate took 0.2 s against zlib's 0.65 s for
    a 188 MB CSV gzipped to 54 MB (Zen 4): the decompression thread was most of a keyed dedup of
    a .gz (benchmarks/dedup_records.py). ``CUCKOO_GZIP=stdlib`` asks for the standard library's;
    ``CUCKOO_GZIP=isal`` for ISA-L's, an ImportError naming the extra when it is missing."""
    want = os.environ.get("CUCKOO_GZIP", "")
    if want not in ("",) + GZIP_DECODERS:
        raise ValueError(f"CUCKOO_GZIP={want!r}: expected one of {', '.join(GZIP_DECODERS)}")
    if want != "stdlib":
        try:
            from isal import igzip

            return igzip.IGzipFile
        except ImportError:
            if want == "isal":
                raise ImportError("CUCKOO_GZIP=isal needs ISA-L's bindings: pip install 'fastcuckoo[gzip]'") from None
    import gzip

    return gzip.GzipFile


def _decompressing(fmt: str, raw: IO[bytes]) -> Any:
    """A reader of `raw` decompressed (``read(size)``: at most about `size` bytes, however much
    the input expands); multi-member gzip and multi-stream bzip2/xz/zstd read as one stream, as
    zcat, bzcat, xzcat and zstdcat do, and every later stream is checked like the first."""
    # Each module imported where it is needed, as in _compressor: start-up of cuckoo dedup.
    if fmt == "gzip":
        return gzip_reader_class()(fileobj=raw, mode="rb")
    if fmt == "bzip2":
        import bz2

        return _StreamsReader(bz2.BZ2Decompressor, raw, "bzip2")
    if fmt == "xz":
        import lzma

        return _StreamsReader(lambda: lzma.LZMADecompressor(lzma.FORMAT_XZ), raw, "xz")
    z = _zstd()
    if hasattr(z, "ZstdFile"):  # the standard library's
        return z.ZstdFile(raw, mode="rb")
    return _ZstandardReader(z, raw)


class _StreamsReader:
    """bzip2 or xz streams read one after another. Not BZ2File / LZMAFile: they take a later
    stream that fails to decompress for trailing garbage and end quietly there, so a damaged
    second stream lost the rest of the input with no error (bzip2 -dc and xz -dc fail). Here every
    stream is decompressed like the first, and an error of any is raised. Between and after xz
    streams, stream padding (null bytes, a multiple of 4) is skipped, as xz does. Output comes in
    pieces of at most `size` bytes (max_length), whatever the input's ratio."""

    def __init__(self, new: Callable[[], Any], raw: IO[bytes], fmt: str) -> None:
        self._new = new
        self._raw = raw
        self._fmt = fmt
        self._d: Any = None  # the current stream's decompressor; None between streams
        self._in = b""  # input read and not yet given to a decompressor
        self._eof = False

    def _fill(self) -> bool:
        if not self._in and not self._eof:
            self._in = self._raw.read(CHUNK)
            self._eof = not self._in
        return bool(self._in)

    def _next_stream(self) -> bool:
        """Skips the padding before the next stream; False at the end of the input."""
        padding = 0
        while self._fill():
            if self._fmt == "xz":
                stripped = self._in.lstrip(b"\0")
                padding += len(self._in) - len(stripped)
                self._in = stripped
                if not stripped:
                    continue
            if padding % 4:
                raise EOFError(f"xz stream padding of {padding} bytes is not a multiple of 4")
            self._d = self._new()
            return True
        if padding % 4:
            raise EOFError(f"xz stream padding of {padding} bytes is not a multiple of 4")
        return False

    def read(self, size: int = CHUNK) -> bytes:
        size = CHUNK if size is None or size < 0 else max(size, 1)
        while True:
            if self._d is None and not self._next_stream():
                return b""
            d = self._d
            if d.needs_input:
                if not self._fill():
                    raise EOFError(f"the input ends inside {'an' if self._fmt == 'xz' else 'a'} {self._fmt} stream")
                data, self._in = self._in, b""
            else:
                data = b""
            out = d.decompress(data, size)
            if d.eof:
                self._in = d.unused_data + self._in
                self._d = None
            if out:
                return out

    def close(self) -> None:
        pass


class _ZstandardReader:
    """zstandard frames read one after another, as zstdcat does, skipping skippable frames; a
    stream that ends inside a frame raises (truncated) instead of ending quietly (zstandard's
    stream_reader ends quietly), and so does anything between frames that is not a frame.

    zstandard's decompressobj returns all the output of the input it is given, at a ratio of up
    to ~32000 (a 90 KB input may hold 1 GiB). So the frames are walked here, block by block (the
    format's 3-byte block headers give each block's size), and the decompressor gets whole blocks
    only until about CHUNK bytes came out: a block holds at most 128 KiB of output."""

    _MAGIC = 0xFD2FB528
    _BLOCK_OUT = 128 << 10  # the most a block decompresses to (Block_Maximum_Size)

    def __init__(self, z: Any, raw: IO[bytes]) -> None:
        self._z = z
        self._raw = raw
        self._buf = bytearray()
        self._pos = 0
        self._eof = False
        self._d: Any = None  # the current frame's decompressor
        self._checksum = False  # the current frame ends with a 4-byte checksum
        self._skip = 0  # bytes of a skippable frame still to skip

    def _have(self, n: int) -> bool:
        """Whether n bytes are buffered from _pos on (reading more as needed)."""
        while len(self._buf) - self._pos < n and not self._eof:
            if self._pos > CHUNK:  # drop what was used, now and then (amortized)
                del self._buf[: self._pos]
                self._pos = 0
            data = self._raw.read(max(CHUNK, n))
            if not data:
                self._eof = True
            self._buf += data
        return len(self._buf) - self._pos >= n

    def _take(self, n: int) -> bytes:
        data = bytes(self._buf[self._pos:self._pos + n])
        self._pos += n
        return data

    def read(self, size: int = CHUNK) -> bytes:
        size = CHUNK if size is None or size < 0 else max(size, 1)
        out: List[bytes] = []
        produced = 0
        while produced == 0 or produced + self._BLOCK_OUT <= size:
            if self._skip:
                n = min(self._skip, max(len(self._buf) - self._pos, 0))
                if n == 0 and not self._have(1):
                    raise EOFError("the input ends inside a zstd skippable frame")
                self._pos += n
                self._skip -= n
                continue
            if self._d is None:  # between frames
                if not self._have(1):
                    break  # the end of the input, at a frame boundary
                if not self._have(4):
                    raise EOFError("the input ends inside a zstd frame header")
                magic = int.from_bytes(self._buf[self._pos:self._pos + 4], "little")
                if magic & 0xFFFFFFF0 == 0x184D2A50:  # a skippable frame: magic, 4-byte size, data
                    if not self._have(8):
                        raise EOFError("the input ends inside a zstd frame header")
                    self._skip = int.from_bytes(self._buf[self._pos + 4:self._pos + 8], "little")
                    self._pos += 8
                    continue
                if magic != self._MAGIC:
                    raise ValueError(f"not a zstd frame (magic 0x{magic:08x})")
                if not self._have(5):
                    raise EOFError("the input ends inside a zstd frame header")
                fhd = self._buf[self._pos + 4]
                single = (fhd >> 5) & 1
                fcs = (fhd >> 6) & 3
                header = 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + ((1 if single else 0), 2, 4, 8)[fcs]
                if not self._have(header):
                    raise EOFError("the input ends inside a zstd frame header")
                self._checksum = bool(fhd & 4)
                self._d = self._z.ZstdDecompressor().decompressobj()
                out.append(self._d.decompress(self._take(header)))
                continue
            if not self._have(3):
                raise EOFError("the input ends inside a zstd frame")
            h = int.from_bytes(self._buf[self._pos:self._pos + 3], "little")
            last, kind, bsize = h & 1, (h >> 1) & 3, h >> 3
            n = 3 + (1 if kind == 1 else bsize)  # an RLE block holds one byte
            if kind == 3 or bsize > self._BLOCK_OUT:
                raise ValueError("a zstd block header is corrupt")
            if last and self._checksum:
                n += 4
            if not self._have(n):
                raise EOFError("the input ends inside a zstd frame")
            piece = self._d.decompress(self._take(n))
            out.append(piece)
            produced += len(piece)
            if last:
                if not self._d.eof:
                    raise ValueError("a zstd frame does not end where its last block does")
                self._d = None
        return b"".join(out)

    def close(self) -> None:
        pass


class _Prefixed:
    """`raw` with the bytes already read from it (the magic) put back in front."""

    def __init__(self, head: bytes, raw: IO[bytes]) -> None:
        self.head = head
        self.raw = raw

    def read(self, size: int = -1) -> bytes:
        if self.head:
            if size is None or size < 0:
                data, self.head = self.head + self.raw.read(), b""
                return data
            data, self.head = self.head[:size], self.head[size:]
            if len(data) < size:
                data += self.raw.read(size - len(data))
            return data
        return self.raw.read(size)

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        pass  # the caller closes raw

    @property
    def closed(self) -> bool:
        return False


def _read_head(raw: IO[bytes]) -> bytes:
    head = b""
    while len(head) < MAGIC_BYTES:
        more = raw.read(MAGIC_BYTES - len(head))
        if not more:
            break
        head += more
    return head


class DecompressingReader:
    """Decompressed bytes of `raw` (a binary file object in the format `fmt`), decompressed by a
    thread of its own. ``read(size)`` returns at most `size` bytes, ``b""`` at the end; an error
    of the thread (corrupt data, a read error) is raised there. ``fileno()`` (also after reads)
    switches to a pipe: a second thread moves the bytes not yet read into it, the caller reads
    its read end, and ``check()`` raises an error of the data after the pipe's end of file.
    ``close()`` stops the threads."""

    def __init__(self, raw: IO[bytes], fmt: str, name: str = "input", head: bytes = b"") -> None:
        self.name = name
        self.format = fmt
        self._raw = raw
        self._file = _decompressing(fmt, _Prefixed(head, raw) if head else raw)  # may raise ImportError
        self._queue: "queue.Queue[Optional[bytes]]" = queue.Queue(QUEUE_CHUNKS)
        self._error: Optional[BaseException] = None
        self._stop = threading.Event()
        self._pending = b""
        self._offset = 0  # bytes of _pending already read
        self._done = False
        self._pipe: Optional[List[int]] = None
        self._pump: Optional[threading.Thread] = None
        self._pump_error: Optional[BaseException] = None
        self._started = False
        self._thread = threading.Thread(target=self._run, name=f"cuckoo-decompress-{fmt}", daemon=True)

    # -- the decompressing thread --
    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                chunk = self._file.read(CHUNK)
                if not chunk:
                    break
                self._put(chunk)
        except BaseException as exc:  # handed to the reader, raised there
            self._error = exc
        finally:
            self._put(None)

    def _put(self, chunk: Optional[bytes]) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(chunk, timeout=0.1)
                return
            except queue.Full:
                continue

    def _start(self) -> None:
        if not self._started:
            self._started = True
            self._thread.start()

    # -- the reader's end --
    def read(self, size: int = -1) -> bytes:
        if self._pipe is not None:
            return self._read_pipe(size)
        return self._read_queue(size)

    def _read_queue(self, size: int = -1) -> bytes:
        # The current chunk is read from an offset: slicing the rest off at every read copied
        # it again each time (quadratic in the chunk's size over small reads).
        self._start()
        if self._offset >= len(self._pending):
            if self._done:
                return b""
            chunk = self._queue.get()
            if chunk is None:
                self._done = True
                self._raise_error()
                return b""
            self._pending, self._offset = chunk, 0
        if size is None or size < 0:
            parts = [self._pending[self._offset:]]
            self._pending, self._offset = b"", 0
            while True:
                more = self._read_queue(CHUNK)
                if not more:
                    return b"".join(parts)
                parts.append(more)
        start = self._offset
        self._offset = min(start + size, len(self._pending))
        if start == 0 and self._offset == len(self._pending):
            return self._pending  # the whole chunk: no copy
        return self._pending[start:self._offset]

    def _read_pipe(self, size: int) -> bytes:
        data = os.read(self._pipe[0], size if size and size > 0 else CHUNK)  # type: ignore[index]
        if not data:
            self.check()
        return data

    def _raise_error(self) -> None:
        if self._error is not None:
            exc, self._error = self._error, None
            raise _input_error(self.name, self.format, exc)

    # -- the pipe --
    def fileno(self) -> int:
        """The read end of a pipe that receives every decompressed byte not read yet."""
        if self._pipe is None:
            r, w = os.pipe()
            os.set_blocking(w, False)
            try:
                import fcntl

                fcntl.fcntl(w, getattr(fcntl, "F_SETPIPE_SZ", 1031), CHUNK)  # fewer, larger writes (Linux)
            except (ImportError, OSError):
                pass
            self._pipe = [r, w]
            self._pump = threading.Thread(target=self._pump_run, name="cuckoo-decompress-pipe", daemon=True)
            self._pump.start()
        return self._pipe[0]

    def _pump_run(self) -> None:
        assert self._pipe is not None
        w = self._pipe[1]
        try:
            while not self._stop.is_set():
                chunk = self._read_queue(CHUNK)
                if not chunk:
                    break
                # The write end is non-blocking and waited on with a timeout, so that close() can
                # stop this thread when the reader stopped reading (never a write blocked for good,
                # nor one into a pipe without a reader, which SIGPIPE may turn into a kill).
                view = memoryview(chunk)
                while view and not self._stop.is_set():
                    if not select.select([], [w], [], 0.1)[1]:
                        continue
                    try:
                        view = view[os.write(w, view):]
                    except BlockingIOError:
                        continue
        except BaseException as exc:  # corrupt data: raised by check()
            self._pump_error = exc
        finally:
            self._pipe[1] = -1
            os.close(w)  # the reader's end of file

    def check(self) -> None:
        """Raises the error of the data (corrupt, truncated) that ended the pipe, if one did."""
        if self._pump is not None:
            self._pump.join()
            if self._pump_error is not None:
                exc, self._pump_error = self._pump_error, None
                raise exc
        else:
            self._thread.join()
            self._raise_error()

    def close(self) -> None:
        self._stop.set()
        for t in (self._pump, self._thread if self._started else None):
            while t is not None and t.is_alive():
                try:  # unblock a decompressing thread waiting on a full queue...
                    self._queue.get_nowait()
                except queue.Empty:
                    try:  # ... or the pipe's thread waiting on an empty one
                        self._queue.put_nowait(None)
                    except queue.Full:
                        pass
                t.join(0.05)
        if self._pipe is not None:
            for fd in self._pipe:
                if fd >= 0:
                    os.close(fd)
            self._pipe = None
        try:
            self._file.close()
        except Exception:  # pragma: no cover - closing a half-read stream
            pass

    def __enter__(self) -> "DecompressingReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _input_error(name: str, fmt: str, exc: BaseException) -> BaseException:
    # zlib.error, EOFError, OSError (BadGzipFile), LZMAError, ZstdError...: whatever the
    # decompressor raised about its data; a MemoryError or an interrupt stays what it is.
    if isinstance(exc, Exception) and not isinstance(exc, MemoryError):
        err = ValueError(f"{name}: not valid {fmt} data: corrupt or truncated ({type(exc).__name__}: {exc})")
        err.__cause__ = exc
        return err
    return exc


def open_input(raw: IO[bytes], name: str = "input") -> Any:
    """`raw` itself when it is not compressed, else a :class:`DecompressingReader` of it. The first
    bytes are peeked (a buffered reader), or read and sought back (a seekable stream), so that a
    plain `raw` is returned untouched (its file descriptor usable as it is); only a stream that
    can do neither comes back wrapped, with the bytes read to tell put back in front."""
    head = None
    if hasattr(raw, "peek"):
        try:
            head = raw.peek(MAGIC_BYTES)[:MAGIC_BYTES]
        except (OSError, ValueError):
            head = None
    if head is None or len(head) < MAGIC_BYTES and _seekable(raw):
        if _seekable(raw):
            pos = raw.tell()
            head = _read_head(raw)
            raw.seek(pos)
        else:
            head = _read_head(raw)
            fmt = sniff(head)
            if fmt is None:
                return _Prefixed(head, raw) if head else raw
            return DecompressingReader(raw, fmt, name, head)
    fmt = sniff(head)
    if fmt is None:
        return raw
    return DecompressingReader(raw, fmt, name)


def _seekable(raw: Any) -> bool:
    try:
        return bool(raw.seekable())
    except (AttributeError, OSError, ValueError):
        return False


class _EndMember(threading.Event):
    """A mark in CompressingWriter's queue: end the member here; `position` the file's size;
    `last`: end one even if empty when the file has none."""

    position = 0
    last = False


class CompressingWriter:
    """Writes to the binary file object `raw`, compressed in format `fmt`, on a thread of its own.
    ``write`` queues the bytes (the thread's error, if any, is raised by the next call);
    ``flush`` waits until every byte written so far is compressed, flushed out of the
    compressor and handed to the OS; ``close`` ends the compressed stream (and closes `raw` if
    `owned`)."""

    def __init__(self, raw: IO[bytes], fmt: str, owned: bool = True, level: Optional[int] = None,
                 appending: bool = False) -> None:
        """`appending`: `raw` goes on after complete members (a resumed run's output): close()
        then adds no empty member when nothing was written."""
        self.format = fmt
        self._raw = raw
        self._owned = owned
        self._level = level
        self._compress, self._sync, self._end = _compressor(fmt, level)
        self._queue: "queue.Queue[Any]" = queue.Queue(QUEUE_CHUNKS)
        self._error: Optional[BaseException] = None
        self._closed = False
        # Members (gzip members, xz and bzip2 streams, zstd frames) ended by end_member(): bytes
        # given since the last end, and whether one ended (close() then writes no empty member).
        self._since_member = 0
        self._members_ended = appending
        # pipe_fileno()'s pipe: its write end, the thread that feeds what arrives to the queue,
        # and how many bytes it fed (under _pumped_cond).
        self._pipe_w = -1
        self._pump: Optional[threading.Thread] = None
        self._pumped = 0
        self._pump_done = False
        self._pumped_cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=f"cuckoo-compress-{fmt}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if self._error is None:
                    if isinstance(item, _EndMember):  # (an Event too: first)
                        if self._since_member or (item.last and not self._members_ended):
                            self._out(self._end())
                            self._compress, self._sync, self._end = _compressor(self.format, self._level)
                            self._since_member = 0
                            self._members_ended = True
                        self._raw.flush()
                        item.position = self._raw.tell()
                    elif isinstance(item, threading.Event):
                        if self._since_member or not self._members_ended:  # (no member begun by a flush alone)
                            self._out(self._sync())
                        self._raw.flush()
                    elif item is None:
                        if self._since_member or not self._members_ended:  # (no empty last member)
                            self._out(self._end())
                        self._raw.flush()
                    else:
                        self._since_member += len(item)
                        self._out(self._compress(item))
            except BaseException as exc:
                self._error = exc
            finally:
                if isinstance(item, (threading.Event, _EndMember)):
                    item.set()
            if item is None:
                return

    # ---- a pipe for the native pipeline (cuckoo._dedup.resume: --store runs with a journal) ----

    def pipe_fileno(self) -> int:
        """The write end of a pipe whose bytes are compressed as if written here (a thread reads
        it): the file descriptor the native pipeline writes to. Close it with close_pipe()."""
        if self._pipe_w < 0:
            r, w = os.pipe()
            self._pipe_w = w
            self._pump = threading.Thread(target=self._pump_pipe, args=(r,), name=f"cuckoo-compress-pipe-{self.format}",
                                          daemon=True)
            self._pump.start()
        return self._pipe_w

    def _pump_pipe(self, r: int) -> None:
        try:
            while True:
                data = os.read(r, 1 << 20)
                if not data:
                    return
                if self._error is None:
                    self._queue.put(data)
                with self._pumped_cond:  # (after an error the pipe is still drained: its writer never blocks)
                    self._pumped += len(data)
                    self._pumped_cond.notify_all()
        except BaseException as exc:  # pragma: no cover - a read of our own pipe failing
            if self._error is None:
                self._error = exc
        finally:
            os.close(r)
            with self._pumped_cond:
                self._pump_done = True
                self._pumped_cond.notify_all()

    def close_pipe(self) -> None:
        """Closes the pipe's write end and waits until its reader compressed what it held."""
        if self._pipe_w >= 0:
            os.close(self._pipe_w)
            self._pipe_w = -1
        if self._pump is not None:
            self._pump.join()
            self._pump = None

    def end_member(self, pipe_bytes: int = 0, last: bool = False) -> int:
        """Once the pipe's reader took `pipe_bytes` bytes (all written to the pipe so far), ends
        the member (gzip), stream (xz, bzip2) or frame (zstd), unless nothing came since the last
        end, and flushes the file: its size then, a point where the file is complete and where a
        resumed run appends the next member. `last`: a file that has no member yet gets an empty
        one (a valid compressed file, to which close() adds nothing)."""
        self._check()
        with self._pumped_cond:
            while self._pumped < pipe_bytes and not self._pump_done:
                self._pumped_cond.wait()
        mark = _EndMember()
        mark.last = last
        self._queue.put(mark)
        mark.wait()
        self._check()
        return mark.position

    def _out(self, data: bytes) -> None:
        if data:
            self._raw.write(data)

    def _check(self) -> None:
        if self._error is not None:
            raise self._error

    def write(self, data: Any) -> int:
        self._check()
        if self._closed:
            raise ValueError("write to a closed compressed output")
        n = len(data)
        if n:
            self._queue.put(bytes(data))
        return n

    def flush(self) -> None:
        self._check()
        if self._closed:
            return
        done = threading.Event()
        self._queue.put(done)
        done.wait()
        self._check()

    def abort(self) -> None:
        """After a failure: ends the stream as close() does (what was written stays readable),
        but waits a bounded time for the threads and never raises. (A Ctrl-C during a failed
        run's close() was seen to leave it waiting forever on its compressor thread; the threads
        are daemons, and what is left of them ends with the process.)"""
        if self._closed:
            return
        self._closed = True
        try:
            if self._pipe_w >= 0:
                os.close(self._pipe_w)
                self._pipe_w = -1
            if self._pump is not None:
                self._pump.join(timeout=10.0)
            self._queue.put(None, timeout=10.0)
            self._thread.join(timeout=10.0)
        except BaseException:
            pass
        if self._owned:
            try:
                self._raw.close()
            except BaseException:
                pass

    def close(self) -> None:
        if self._closed:
            return
        self.close_pipe()
        self._closed = True
        self._queue.put(None)
        self._thread.join()
        try:
            self._check()
        finally:
            if self._owned:
                self._raw.close()

    def __enter__(self) -> "CompressingWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _compressor(fmt: str, level: Optional[int]) -> "tuple[Callable[[bytes], bytes], Callable[[], bytes], Callable[[], bytes]]":
    """(compress, sync, end) of a streaming compressor: sync ends a block so that everything given
    so far can be decompressed; end finishes the stream."""
    if fmt == "gzip":
        import zlib

        c = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, 31)  # 31: a gzip header
        return c.compress, lambda: c.flush(zlib.Z_SYNC_FLUSH), c.flush
    if fmt == "xz":
        import lzma

        c = lzma.LZMACompressor(preset=level)
        # xz has no sync point inside a stream: a flush ends the stream and starts another (xz
        # reads concatenated streams as one).
        state = {"c": c}

        def sync() -> bytes:
            data = state["c"].flush()
            state["c"] = lzma.LZMACompressor(preset=level)
            return data

        return lambda b: state["c"].compress(b), sync, lambda: state["c"].flush()
    if fmt == "bzip2":
        import bz2

        holder = {"c": bz2.BZ2Compressor(9 if level is None else level)}

        def bsync() -> bytes:  # likewise: bzip2 streams concatenate
            data = holder["c"].flush()
            holder["c"] = bz2.BZ2Compressor(9 if level is None else level)
            return data

        return lambda b: holder["c"].compress(b), bsync, lambda: holder["c"].flush()
    if fmt == "zstd":
        z = _zstd()
        if hasattr(z, "ZstdCompressor") and hasattr(z, "COMPRESSOBJ_FLUSH_BLOCK"):  # zstandard
            co = z.ZstdCompressor(level=3 if level is None else level).compressobj()
            return co.compress, lambda: co.flush(z.COMPRESSOBJ_FLUSH_BLOCK), co.flush
        co = z.ZstdCompressor(level=level)
        return co.compress, lambda: co.flush(co.FLUSH_BLOCK), lambda: co.flush(co.FLUSH_FRAME)
    raise ValueError(f"unknown compression format {fmt!r}")


def open_output(path: Any, fh: Optional[IO[bytes]] = None, appending: bool = False) -> Any:
    """For an output name ending in .gz/.bz2/.xz/.zst: a CompressingWriter (over `fh` if given,
    else the file opened here); else `fh` (or the file opened for writing). `appending`: `fh`
    goes on after complete members (CompressingWriter)."""
    fmt = suffix_format(path)
    if fmt == "zstd":
        _zstd()  # the hint before the file is created
    owned = fh is None
    raw = open(os.fspath(path), "wb") if fh is None else fh
    if fmt is None:
        return raw
    return CompressingWriter(raw, fmt, owned=owned, appending=appending)
