"""cuckoo._dedup.compress: inputs recognised by their magic bytes (any name), decompressed on a thread;
outputs compressed by their suffix; flush() makes everything written so far decompressible."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import subprocess

import pytest

from cuckoo._dedup import compress as cz

zstandard = pytest.importorskip("zstandard")  # in the test extra (and the zstd extra)

DATA = b"".join(b"line %d \xc3\xa9\r\n" % (i % 977) for i in range(50_000)) + b"last, no newline"

COMPRESS = {
    "gzip": gzip.compress,
    "bzip2": bz2.compress,
    "xz": lzma.compress,
    "zstd": lambda d: zstandard.ZstdCompressor(write_checksum=True).compress(d),  # as the zstd tool writes
}
DECOMPRESS = {
    "gzip": gzip.decompress,
    "bzip2": bz2.decompress,
    "xz": lzma.decompress,
    "zstd": lambda d: zstandard.ZstdDecompressor().decompressobj().decompress(d),
}
SUFFIX = {"gzip": ".gz", "bzip2": ".bz2", "xz": ".xz", "zstd": ".zst"}


def read_all(reader, size=65_536):
    parts = []
    while True:
        chunk = reader.read(size)
        if not chunk:
            return b"".join(parts)
        assert len(chunk) <= size
        parts.append(chunk)


def read_pipe(reader):
    """Everything left in the reader, read through its fileno() pipe to EOF (as the native
    pipeline reads it), then check() (raises what the decompressing thread met) and close()."""
    fd = reader.fileno()
    parts = []
    try:
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            parts.append(chunk)
        reader.check()
    finally:
        reader.close()
    return b"".join(parts)


@pytest.mark.parametrize("fmt", list(COMPRESS))
def test_input_recognised_by_magic_whatever_its_name(fmt, tmp_path):
    path = tmp_path / "events.txt"  # no suffix says what it is
    path.write_bytes(COMPRESS[fmt](DATA))
    with open(path, "rb") as raw:
        r = cz.open_input(raw, str(path))
        assert isinstance(r, cz.DecompressingReader) and r.format == fmt
        assert read_all(r) == DATA
        r.close()


@pytest.mark.parametrize("fmt", list(COMPRESS))
def test_concatenated_members_read_as_one(fmt):
    raw = io.BytesIO(COMPRESS[fmt](b"a\nb\n") + COMPRESS[fmt](b"c\n"))
    with cz.open_input(raw) as r:
        assert read_all(r) == b"a\nb\nc\n"


@pytest.mark.parametrize("data", [b"", b"x", b"\x1f", b"BZh", b"BZh91AY&S", b"BZh\n", b"\x1f\x8b\n",
                                  b"plain text\n" * 1000])
def test_plain_input_is_passed_through(data, tmp_path):
    raw = io.BytesIO(data)
    assert cz.open_input(raw) is raw and raw.tell() == 0  # untouched: sought back
    assert read_all(raw, 7) == data
    (tmp_path / "p").write_bytes(data)
    with open(tmp_path / "p", "rb") as fh:  # peeked: the file object itself, fd usable as is
        assert cz.open_input(fh) is fh and fh.tell() == 0

    class Unseekable(io.RawIOBase):  # neither peek nor seek: read, then put back in front
        def __init__(self):
            self.inner = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self.inner.readinto(b)

    r = cz.open_input(Unseekable())
    assert read_all(r, 7) == data


@pytest.mark.parametrize("fmt", list(COMPRESS))
def test_corrupt_or_truncated_input_raises_not_ends(fmt):
    good = COMPRESS[fmt](DATA)
    for bad in (good[: len(good) // 2], good[:20] + bytes(200) + good[220:]):
        with cz.open_input(io.BytesIO(bad), "in.x") as r:
            with pytest.raises(ValueError, match=f"in.x: not valid {fmt} data: corrupt or truncated"):
                read_all(r)


@pytest.mark.parametrize("fmt", list(COMPRESS))
def test_fileno_is_a_pipe_of_the_decompressed_bytes(fmt):
    r = cz.open_input(io.BytesIO(COMPRESS[fmt](DATA)))
    assert read_pipe(r) == DATA


def test_close_early_stops_the_thread():
    r = cz.open_input(io.BytesIO(gzip.compress(DATA * 20)))
    assert r.read(10) == DATA[:10]
    r.close()
    assert not r._thread.is_alive()


@pytest.mark.parametrize("fmt", list(COMPRESS))
def test_output_compressed_by_suffix_and_flush_makes_it_complete(fmt, tmp_path):
    path = tmp_path / f"out{SUFFIX[fmt]}"
    w = cz.open_output(path)
    assert isinstance(w, cz.CompressingWriter)
    w.write(DATA[:100_000])
    w.flush()
    # After flush, what the file holds decompresses to everything written so far (a sync point).
    so_far = path.read_bytes()
    got = cz.open_input(io.BytesIO(so_far))
    if fmt in ("gzip", "zstd"):  # a sync point inside the stream: no end yet
        got.close()
        d = (zstandard.ZstdDecompressor().decompressobj().decompress(so_far) if fmt == "zstd"
             else __import__("zlib").decompressobj(31).decompress(so_far))
        assert d == DATA[:100_000]
    else:  # a flush ends one stream and starts the next
        assert read_all(got) == DATA[:100_000]
    w.write(DATA[100_000:])
    w.close()
    assert DECOMPRESS[fmt](path.read_bytes()) == DATA  # the format's own reader agrees
    with open(path, "rb") as raw, cz.open_input(raw) as r:
        assert read_all(r) == DATA


def test_output_without_a_known_suffix_is_plain(tmp_path):
    w = cz.open_output(tmp_path / "out.txt")
    w.write(b"abc")
    w.close()
    assert (tmp_path / "out.txt").read_bytes() == b"abc"


def test_write_error_is_raised_by_a_later_call():
    class Broken(io.RawIOBase):
        def writable(self):
            return True

        def write(self, b):
            raise OSError(28, "No space left on device")

    w = cz.CompressingWriter(Broken(), "gzip")
    w.write(b"x" * 100)
    with pytest.raises(OSError, match="No space left"):
        w.flush()


def test_system_tools_read_our_output(tmp_path):
    for fmt, tool in (("gzip", "zcat"), ("bzip2", "bzcat"), ("xz", "xzcat")):
        path = tmp_path / f"o{SUFFIX[fmt]}"
        w = cz.open_output(path)
        w.write(DATA[:5000])
        w.flush()
        w.write(DATA[5000:9000])
        w.close()
        try:
            out = subprocess.run([tool, str(path)], capture_output=True, check=True).stdout
        except FileNotFoundError:
            continue
        assert out == DATA[:9000]


def test_zstd_hint_when_missing(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_zstd(name, *args, **kwargs):
        if name in ("zstandard", "compression"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_zstd)
    with pytest.raises(ImportError, match=r"pip install 'fastcuckoo\[zstd\]'"):
        cz.open_input(io.BytesIO(b"\x28\xb5\x2f\xfd" + bytes(20)))


def test_magic_numbers_of_every_format():
    for fmt, make in COMPRESS.items():
        assert cz.sniff(make(b"")) == fmt and cz.sniff(make(b"x" * 100)) == fmt
    assert cz.sniff(b"BZh9") is None and cz.sniff(b"BZh is a word\n") is None


def test_fileno_after_reads_carries_on_where_they_stopped():
    r = cz.open_input(io.BytesIO(gzip.compress(DATA)))
    head = r.read(1000) + r.read(70_000)
    assert head + read_pipe(r) == DATA


def test_corrupt_data_through_the_pipe_is_raised_by_check():
    good = gzip.compress(DATA)
    r = cz.open_input(io.BytesIO(good[: len(good) // 2]), "half.gz")
    with pytest.raises(ValueError, match="half.gz: not valid gzip data: corrupt or truncated"):
        read_pipe(r)
    assert not r._thread.is_alive()


def test_close_while_the_pipe_is_full_does_not_hang():
    r = cz.open_input(io.BytesIO(gzip.compress(DATA * 10)))
    r.fileno()  # nobody reads: the pump waits on a full pipe
    import time

    time.sleep(0.2)
    r.close()
    assert not r._thread.is_alive() and not r._pump.is_alive()


def test_close_while_the_pipe_waits_for_data_does_not_hang():
    import threading

    class Slow(io.RawIOBase):  # a compressed stream that stalls after its first bytes
        def __init__(self):
            self.data = gzip.compress(DATA)[:200]
            self.stalled = threading.Event()

        def readable(self):
            return True

        def readinto(self, b):
            if self.data:
                n = min(len(b), len(self.data))
                b[:n], self.data = self.data[:n], self.data[n:]
                return n
            self.stalled.wait(0.5)
            return 0

    r = cz.DecompressingReader(Slow(), "gzip")
    r.fileno()
    r.close()  # returns although the pump waits on the empty queue
    assert not r._pump.is_alive()


# ---- issue 47: every stream like the first, xz padding, bounded zstd, hints ----------------------

@pytest.mark.parametrize("fmt", list(COMPRESS))
def test_a_damaged_later_stream_is_an_error_not_the_end(fmt):
    """A multi-stream file whose second stream is damaged used to end quietly after the first
    (xz and bzip2: Python's LZMAFile/BZ2File take a bad later stream for trailing garbage), so
    half the lines were deduped with exit 0 where `xz -dc` fails."""
    first, second = COMPRESS[fmt](b"a\n" * 1000), COMPRESS[fmt](DATA)
    for bad in (second[:20] + bytes(64) + second[84:], second[: len(second) // 2], b"garbage after the stream"):
        with cz.open_input(io.BytesIO(first + bad), "in.x") as r:
            with pytest.raises(ValueError, match=f"in.x: not valid {fmt} data"):
                read_all(r)


XZ = __import__("shutil").which("xz")


def test_xz_stream_padding_is_accepted_as_xz_does():
    a, b = lzma.compress(b"one\n"), lzma.compress(b"two\n")
    for good in (a + bytes(4) + b, a + b + bytes(8), a + bytes(4096) + b + bytes(4)):
        with cz.open_input(io.BytesIO(good)) as r:
            assert read_all(r) == b"one\ntwo\n"
        if XZ:  # the reference reads it too
            assert subprocess.run([XZ, "-dc"], input=good, capture_output=True).stdout == b"one\ntwo\n"
    for bad in (a + bytes(3) + b, a + bytes(5)):  # padding must be a multiple of 4 bytes
        with cz.open_input(io.BytesIO(bad), "p.xz") as r:
            with pytest.raises(ValueError, match="p.xz: not valid xz data.*padding"):
                read_all(r)
        if XZ:
            assert subprocess.run([XZ, "-dc"], input=bad, capture_output=True).returncode != 0


def test_zstd_skippable_frames_are_skipped():
    skippable = b"\x50\x2a\x4d\x18" + (5).to_bytes(4, "little") + b"12345"
    data = COMPRESS["zstd"](b"x\n") + skippable + COMPRESS["zstd"](b"y\n") + skippable
    with cz.open_input(io.BytesIO(data)) as r:
        assert read_all(r) == b"x\ny\n"


@pytest.mark.parametrize("fmt", list(COMPRESS))
def test_a_bomb_is_decompressed_in_bounded_pieces(fmt):
    """A small input that decompresses to a lot (64 MiB of one byte) comes out of the
    decompressor in pieces of about CHUNK bytes: a zstd bomb used to come out whole (1 GiB of RSS
    for a 90 KB file), then be sliced quadratically."""
    size = 64 << 20
    bomb = (zstandard.ZstdCompressor(level=19).compress(bytes(size)) if fmt == "zstd"
            else COMPRESS[fmt](bytes(size)))
    f = cz._decompressing(fmt, io.BytesIO(bomb))
    total = 0
    while True:
        piece = f.read(cz.CHUNK)
        if not piece:
            break
        assert len(piece) <= cz.CHUNK + (128 << 10)
        total += len(piece)
    assert total == size
    with cz.open_input(io.BytesIO(bomb)) as r:
        assert sum(len(c) for c in iter(lambda: r.read(4096), b"")) == size


def test_install_hints_name_the_distribution():
    """The package is installed as fastcuckoo: a hint saying pip install 'cuckoo[...]' installs
    something else (or nothing)."""
    import re

    import cuckoo

    root = os.path.dirname(cuckoo.__file__)
    bad = []
    for dirpath, _, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(dirpath, name), encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        if re.search(r"pip install ['\"]?cuckoo\[", line):
                            bad.append(f"{name}:{n}: {line.strip()}")
    assert not bad, bad
    assert "pip install 'fastcuckoo[zstd]'" in cz.ZSTD_HINT


# ---- the two gzip decoders: ISA-L's (the gzip extra, in the test extra) and the standard library's

@pytest.fixture
def isal_igzip():
    return pytest.importorskip("isal.igzip")  # (the test extra has it; only these tests need it)


@pytest.mark.parametrize("decoder", cz.GZIP_DECODERS)
def test_each_gzip_decoder_reads_members_and_refuses_bad_data(decoder, monkeypatch, isal_igzip):
    monkeypatch.setenv("CUCKOO_GZIP", decoder)
    assert cz.gzip_reader_class() is (isal_igzip.IGzipFile if decoder == "isal" else gzip.GzipFile)
    members = gzip.compress(DATA) + gzip.compress(b"second member\n", compresslevel=1)
    assert read_pipe(cz.open_input(io.BytesIO(members))) == DATA + b"second member\n"
    good = gzip.compress(DATA)
    for bad in (good[: len(good) // 2], good[:20] + bytes(200) + good[220:], good + b"trailing garbage"):
        with cz.open_input(io.BytesIO(bad), "in.gz") as r:
            with pytest.raises(ValueError, match="in.gz: not valid gzip data: corrupt or truncated"):
                read_all(r)


def test_gzip_decoder_default_is_isal_and_the_choice_is_checked(monkeypatch, isal_igzip):
    monkeypatch.delenv("CUCKOO_GZIP", raising=False)
    assert cz.gzip_reader_class() is isal_igzip.IGzipFile
    monkeypatch.setenv("CUCKOO_GZIP", "fast")
    with pytest.raises(ValueError, match="CUCKOO_GZIP='fast': expected one of isal, stdlib"):
        cz.gzip_reader_class()
    monkeypatch.setitem(__import__("sys").modules, "isal", None)  # as if the extra were missing
    monkeypatch.setenv("CUCKOO_GZIP", "isal")
    with pytest.raises(ImportError, match=r"fastcuckoo\[gzip\]"):
        cz.gzip_reader_class()
    monkeypatch.delenv("CUCKOO_GZIP")
    assert cz.gzip_reader_class() is gzip.GzipFile  # without it: the standard library's


@pytest.mark.parametrize("decoder", cz.GZIP_DECODERS)
def test_keyed_dedup_of_a_gzipped_csv_is_the_same_with_either_decoder(decoder, monkeypatch, tmp_path, isal_igzip):
    import cuckoo

    rows = ["id,note"] + [f"{i % 700},\"n, {i}\"" for i in range(5000)]
    src = tmp_path / "in.csv.gz"
    src.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
    monkeypatch.setenv("CUCKOO_GZIP", decoder)
    out = tmp_path / "out.csv"
    cuckoo.dedup(str(src), str(out), csv=True, key="id")
    seen, want = set(), [rows[0]]
    for row in rows[1:]:
        if row.split(",", 1)[0] not in seen:
            seen.add(row.split(",", 1)[0])
            want.append(row)
    assert out.read_text().splitlines() == want
