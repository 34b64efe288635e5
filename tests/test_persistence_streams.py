"""Issue 22: Filter.save / Filter.load with binary file objects (BytesIO, real files, pipes) and,
through fsspec, URLs (``memory://``): the same bytes as ``to_bytes``, round trips that lose no
key, streaming in bounded chunks, and corrupt or truncated streams refused with FormatError.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cuckoo

fsspec = pytest.importorskip("fsspec")


def make_filter(keys, growable=False, **kw):
    f = cuckoo.Filter(max(len(keys), 16) if not growable else 16, growable=growable, **kw)
    f.update(keys)
    return f


any_keys = st.lists(st.one_of(st.integers(0, 2**64 - 1), st.binary(max_size=20), st.text(max_size=20)), max_size=300)
filters = st.one_of(
    st.builds(
        make_filter,
        any_keys,
        growable=st.booleans(),
        fingerprint_bits=st.sampled_from([8, 12, 16, 32]),
        bucket_size=st.sampled_from([2, 4, 8]),
        seed=st.integers(0, 2**64 - 1),
    ),
    # semi-sorted stages (format version 2): b = 4, f <= 16
    st.builds(
        make_filter,
        any_keys,
        growable=st.booleans(),
        fingerprint_bits=st.sampled_from([5, 8, 13, 16]),
        semi_sort=st.just(True),
        seed=st.integers(0, 2**64 - 1),
    ),
)


def assert_same_filter(a, b):
    assert a == b
    assert a.to_bytes() == b.to_bytes()
    assert len(a) == len(b) and a.capacity == b.capacity and a.seed == b.seed


@settings(max_examples=40, deadline=None)
@given(filters)
def test_bytesio_round_trip_is_to_bytes(f):
    buf = io.BytesIO()
    f.save(buf)
    assert buf.getvalue() == f.to_bytes()
    buf.seek(0)
    g = cuckoo.Filter.load(buf)
    assert_same_filter(f, g)
    assert buf.read() == b""  # read exactly to the declared end


@settings(max_examples=20, deadline=None)
@given(st.lists(st.binary(max_size=16), min_size=1, max_size=400, unique=True))
def test_no_false_negatives_after_a_stream_round_trip(keys):
    f = cuckoo.Filter(len(keys), fpr=0.01)
    f.add_many(keys)
    buf = io.BytesIO()
    f.save(buf)
    buf.seek(0)
    g = cuckoo.Filter.load(buf)
    assert g.contains_many(keys).all()
    assert all(k in g for k in keys)


def test_real_file_objects(tmp_path):
    f = cuckoo.Filter(50_000, growable=True, fingerprint_bits=12)
    f.add_many(np.arange(200_000, dtype=np.uint64))  # several stages
    p = tmp_path / "f.cuckoo"
    with open(p, "wb") as fh:
        f.save(fh)
    assert p.read_bytes() == f.to_bytes()
    with open(p, "rb") as fh:
        assert_same_filter(f, cuckoo.Filter.load(fh))
    # unbuffered raw files: read and write may move fewer bytes than asked
    with open(p, "wb", buffering=0) as fh:
        f.save(fh)
    with open(p, "rb", buffering=0) as fh:
        assert_same_filter(f, cuckoo.Filter.load(fh))


def test_a_stream_may_go_on_after_the_filter():
    a, b = make_filter([1, 2, 3]), make_filter([b"x"], growable=True)
    buf = io.BytesIO()
    a.save(buf)
    b.save(buf)
    buf.write(b"tail")
    buf.seek(0)
    assert_same_filter(a, cuckoo.Filter.load(buf))
    assert_same_filter(b, cuckoo.Filter.load(buf))
    assert buf.read() == b"tail"


def test_pipe_round_trip():
    f = cuckoo.Filter(100_000)
    f.add_many(np.arange(90_000, dtype=np.int64))
    r, w = os.pipe()
    errors = []

    def writer():
        try:
            with os.fdopen(w, "wb") as fh:
                f.save(fh)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    t = threading.Thread(target=writer)
    t.start()
    with os.fdopen(r, "rb") as fh:
        g = cuckoo.Filter.load(fh)
    t.join()
    assert not errors
    assert_same_filter(f, g)


def test_memory_url_round_trip():
    f = make_filter([f"k{i}" for i in range(1000)], seed=5)
    url = "memory://cuckoo-tests/f.cuckoo"
    f.save(url)
    with fsspec.open(url, "rb") as fh:
        assert fh.read() == f.to_bytes()
    assert_same_filter(f, cuckoo.Filter.load(url))
    with fsspec.open(url, "wb") as fh:
        fh.write(f.to_bytes() + b"\0")
    with pytest.raises(cuckoo.FormatError, match="trailing data"):
        cuckoo.Filter.load(url)
    fsspec.filesystem("memory").rm(url)
    with pytest.raises(FileNotFoundError):
        cuckoo.Filter.load(url)


def test_mmap_needs_a_local_path():
    f = make_filter([1])
    f.save("memory://cuckoo-tests/m.cuckoo")
    with pytest.raises(ValueError, match="mmap=True needs a local file path, not a URL"):
        cuckoo.Filter.load("memory://cuckoo-tests/m.cuckoo", mmap=True)
    with pytest.raises(ValueError, match="mmap=True needs a local file path, not a file object"):
        cuckoo.Filter.load(io.BytesIO(f.to_bytes()), mmap=True)


@settings(max_examples=60, deadline=None)
@given(filters, st.data())
def test_truncated_streams_are_refused(f, data):
    raw = f.to_bytes()
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(cuckoo.FormatError, match="truncated|bad magic"):
        cuckoo.Filter.load(io.BytesIO(raw[:cut]))


@settings(max_examples=80, deadline=None)
@given(filters, st.data())
def test_any_changed_byte_is_detected(f, data):
    raw = bytearray(f.to_bytes())
    at = data.draw(st.integers(0, len(raw) - 1))
    raw[at] ^= data.draw(st.integers(1, 255))
    with pytest.raises(cuckoo.FormatError):
        cuckoo.Filter.load(io.BytesIO(bytes(raw)))


@pytest.mark.parametrize("growable", [False, True])
@pytest.mark.parametrize("semi_sort", [False, True])
def test_every_byte_and_every_cut_of_a_small_filter(growable, semi_sort):
    # exhaustive on a small filter: header, padding and table bytes, and every truncation
    f = make_filter([1, 2, b"x", "y"], growable=growable, fingerprint_bits=8, semi_sort=semi_sort)
    if growable:
        f.update(range(100))  # two stages at least
    raw = f.to_bytes()
    for at in range(len(raw)):
        bad = bytearray(raw)
        bad[at] ^= 0x41
        with pytest.raises(cuckoo.FormatError):
            cuckoo.Filter.load(io.BytesIO(bytes(bad)))
    for cut in range(len(raw)):
        with pytest.raises(cuckoo.FormatError):
            cuckoo.Filter.load(io.BytesIO(raw[:cut]))


def test_junk_is_refused_after_the_fixed_header():
    reads = []

    class Counting(io.BytesIO):
        def read(self, n=-1):
            reads.append(n)
            return super().read(n)

    with pytest.raises(cuckoo.FormatError, match="bad magic"):
        cuckoo.Filter.load(Counting(b"PK\3\4" + b"\0" * 10_000_000))
    assert sum(reads) <= 64


class Weird:
    def __init__(self, data, result):
        self.data, self.result = data, result

    def read(self, n):
        return self.result(self.data, n)


@pytest.mark.parametrize(
    "result, exc, words",
    [
        (lambda d, n: d.decode("latin-1")[:n], TypeError, r"read\(\) returned str: open the file in binary mode"),
        (lambda d, n: None, TypeError, r"read\(\) returned None"),
        (lambda d, n: d[: n + 1], ValueError, r"read\(64\) returned 65 bytes"),
        (lambda d, n: 42, TypeError, r"bytes-like"),
    ],
)
def test_misbehaving_readers(result, exc, words):
    with pytest.raises(exc, match=words):
        cuckoo.Filter.load(Weird(make_filter([1]).to_bytes(), result))


def test_partial_and_failing_writes():
    f = make_filter(list(range(5000)))

    class Trickle:
        def __init__(self):
            self.parts = []

        def write(self, b):
            n = max(1, len(b) // 3)
            self.parts.append(bytes(b[:n]))
            return n

    t = Trickle()
    f.save(t)
    assert b"".join(t.parts) == f.to_bytes()

    class Broken:
        def write(self, b):
            raise OSError(28, "No space left on device")

    before = f.to_bytes()
    with pytest.raises(OSError, match="No space left"):
        f.save(Broken())
    assert f.to_bytes() == before

    class Zero:
        def write(self, b):
            return 0

    with pytest.raises(ValueError, match=r"write\(\) of \d+ bytes returned 0"):
        f.save(Zero())


def test_save_and_load_stream_in_bounded_chunks():
    # a 64 MiB table: neither call may hold more than a few chunks of it in Python memory (the
    # table itself is C++ memory, outside tracemalloc's view: what is measured is the rest)
    f = cuckoo.Filter(30_000_000, fingerprint_bits=16)
    f.add_many(np.arange(1_000_000, dtype=np.uint64))
    assert f.nbytes > 50 << 20
    sizes = []

    class Sink:
        def write(self, b):
            sizes.append(len(b))

    tracemalloc.start()
    try:
        f.save(Sink())
        _, peak_save = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        raw = f.to_bytes()
        src = io.BytesIO(raw)
        del raw
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        g = cuckoo.Filter.load(src)
        _, peak_load = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(sizes) == len(f.to_bytes()) and max(sizes) <= 1 << 20
    assert peak_save < 4 << 20, peak_save
    assert peak_load - base < 4 << 20, peak_load - base
    assert g == f


def test_url_without_fsspec_says_what_to_install():
    code = (
        "import sys; sys.modules['fsspec'] = None\n"
        "import cuckoo\n"
        "try:\n"
        "    cuckoo.Filter(10).save('s3://bucket/f.cuckoo')\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install fsspec" in out
