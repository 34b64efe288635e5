"""`-z` / ``zero_terminated=True``: records end at a NUL byte (``find -print0 | cuckoo dedup -z``),
against a model that splits the input on NUL (as ``sort -z`` and ``uniq -z`` read it). Every path
a record can take: the native pipeline (files, a pipe, compressed input), the Python block path
(BytesIO, an iterable of records), exact in memory (one pass, and in passes under a small
budget), the store, the filter; block sizes that cut records anywhere, records longer than a
block, 1-3 threads. A '\\r' or '\\n' inside a record is data: ``a\\r`` and ``a`` are two keys."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cuckoo
from test_dedup_pipeline import split as split_lines

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def split(inputs):
    """(record as written, key) of every record of the inputs read as one: an unterminated last
    record gets its NUL when more input follows."""
    return split_lines(inputs, b"\0")


def model(inputs):
    seen = set()
    kept, dropped = [], []
    for text, key in split(inputs):
        (dropped if key in seen else kept).append(text)
        seen.add(key)
    return b"".join(kept), b"".join(dropped)


record = st.one_of(
    st.binary(max_size=6).map(lambda b: b.replace(b"\0", b"")),
    st.sampled_from([b"", b"a", b"a\r", b"a\n", b"\n", b"\r\n", b"b", b"x" * 90]),
    st.integers(0, 40).map(lambda i: b"./dir/file-%d.txt" % i),
)
text = st.tuples(st.lists(record, max_size=80), st.booleans()).map(
    lambda t: b"".join(r + b"\0" for r in t[0])[: None if t[1] or not t[0] else -1])


def write_inputs(tmp_path, inputs, compressed=()):
    paths = []
    for k, data in enumerate(inputs):
        gz = k in compressed
        p = tmp_path / (f"in{k}.bin.gz" if gz else f"in{k}.bin")
        p.write_bytes(gzip.compress(data, compresslevel=1) if gz else data)
        paths.append(str(p))
    return paths


def test_files_go_through_the_native_pipeline(tmp_path):
    """(So that the tests below test it: the C++ pipeline splits records at NUL itself.)"""
    from cuckoo._dedup import engine

    sources = engine._sources(write_inputs(tmp_path, [b"a\0"]))
    native = engine._Native.plan(sources, engine.LineFraming(b"\0"), (engine._Sink(None), engine._Sink(None)))
    assert native is not None and native.spec == {"kind": "lines", "record_end": 0}
    sources[0].close()


@FAST
@given(st.lists(text, min_size=1, max_size=3), st.integers(1, 300), st.integers(1, 3),
       st.sampled_from([None, 4096]), st.booleans())
def test_exact_equals_the_model(tmp_path, inputs, block, threads, memory, compress_first):
    """Files (native, in passes under the 4 KiB budget), the first one gzipped (read once)."""
    paths = write_inputs(tmp_path, inputs, {0} if compress_first else ())
    kept, dropped = model(inputs)
    out, drop = tmp_path / "out", tmp_path / "drop"
    r = cuckoo.dedup(paths, out, dropped=drop, zero_terminated=True, block_size=block, threads=threads,
                     memory=memory)
    assert out.read_bytes() == kept
    assert drop.read_bytes() == dropped
    assert (r.lines_read, r.lines_kept) == (len(split(inputs)), len(split([kept])))
    assert r.bytes_read == sum(len(d) for d in inputs)


@FAST
@given(st.lists(text, min_size=1, max_size=3), st.integers(1, 300), st.integers(1, 3))
def test_store_and_filter_equal_the_model(tmp_path, inputs, block, threads):
    """The store (a rerun of the same input keeps nothing) and the filter (a subsequence of the
    model's records: no changed, extra or reordered record; at this size, with the default FPR,
    the model's records themselves)."""
    paths = write_inputs(tmp_path, inputs)
    kept, dropped = model(inputs)
    store = tmp_path / "s"
    for k in range(2):
        out = tmp_path / f"out{k}"
        for p in tmp_path.glob("s*"):
            if k == 0:
                p.unlink()
        cuckoo.dedup(paths, out, store=store, zero_terminated=True, block_size=block, threads=threads)
        assert out.read_bytes() == (kept if k == 0 else b"")
    out = tmp_path / "approx"
    r = cuckoo.dedup(paths, out, exact=False, seed=7, zero_terminated=True, block_size=block, threads=threads)
    got = [t for t, _ in split([out.read_bytes()])]
    want = [t for t, _ in split([kept])]
    it = iter(want)
    assert all(any(g == w for w in it) for g in got)
    assert r.lines_read == len(split(inputs))


@FAST
@given(text, st.integers(1, 300))
def test_python_block_path_equals_the_model(data, block):
    """A BytesIO and an iterable of records (each item one record, its NUL optional) take the
    Python block path."""
    kept, _ = model([data])
    out = io.BytesIO()
    cuckoo.dedup(io.BytesIO(data), out, zero_terminated=True, block_size=block)
    assert out.getvalue() == kept
    records = [t for t, _ in split([data])]
    out = io.BytesIO()
    cuckoo.dedup(records, out, zero_terminated=True)
    assert out.getvalue() == kept
    # An item holding two records is refused, as an item holding two lines is.
    with pytest.raises(ValueError, match="more than one line"):
        cuckoo.dedup([b"a\0b"], io.BytesIO(), zero_terminated=True)


def test_newlines_and_carriage_returns_are_data():
    """Without -z, ``a\\r\\n`` and ``a\\n`` are one key; with it, ``a\\r`` and ``a`` are two and a
    newline splits nothing."""
    out = io.BytesIO()
    r = cuckoo.dedup(io.BytesIO(b"a\r\0a\0a\nb\0a\nb\0"), out, zero_terminated=True)
    assert out.getvalue() == b"a\r\0a\0a\nb\0"
    assert (r.lines_read, r.lines_kept) == (4, 3)


def test_refused_with_a_keyed_framing_and_checked():
    with pytest.raises(ValueError, match="end at NUL"):
        cuckoo.dedup(io.BytesIO(b""), io.BytesIO(), zero_terminated=True, csv=True, key="id")
    with pytest.raises(TypeError, match="zero_terminated"):
        cuckoo.dedup(io.BytesIO(b""), io.BytesIO(), zero_terminated=1)


def run_cli(*args, stdin=b""):
    return subprocess.run([sys.executable, "-m", "cuckoo", "dedup", *args], input=stdin, capture_output=True)


@pytest.mark.parametrize("mode", [[], ["--approx"], ["--threads", "1"]])
def test_cli_reads_a_pipe_of_nul_terminated_names(tmp_path, mode):
    """``find -print0 | cuckoo dedup -z``: names holding newlines and spaces stay whole."""
    names = [b"a b", b"two\nlines", b"a b", b"c", b"two\nlines", b"d\r"]
    r = run_cli("-z", *mode, stdin=b"".join(n + b"\0" for n in names))
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"a b\0two\nlines\0c\0d\r\0"


def test_cli_refuses_z_with_keyed_records(tmp_path):
    p = tmp_path / "in.csv"
    p.write_bytes(b"id\n1\n")
    for extra in (["--csv", "-k", "id"], ["--jsonl", "-k", "a"], ["-t", ",", "-k", "1"]):
        r = run_cli("-z", *extra, str(p))
        assert r.returncode == 1
        assert b"-z is for whole records that end at NUL" in r.stderr
        assert r.stdout == b""
