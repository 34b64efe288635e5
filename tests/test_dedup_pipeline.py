"""The native dedup pipeline (cpp/include/cuckoo/dedup.hpp, through cuckoo.dedup on file
descriptors) against a reference model: a Python dict of first occurrences over the same lines.
Random block sizes and thread counts; CRLF, no final newline, empty lines, NUL bytes, lines longer
than a block; exact, store (across reruns) and filter (a subsequence of the model: no changed,
extra or reordered line). The answers never depend on the thread count or the block size."""

from __future__ import annotations

import io
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cuckoo
from cuckoo._dedup import engine

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
LONG = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def split(inputs, end=b"\n"):
    """(line as written, key) of every line of the inputs read as one: a last line without '\\n'
    gets one when more input follows. `end` b"\\0": records that end at NUL (-z), whose key
    keeps a '\\r'."""
    out = []
    for i, data in enumerate(inputs):
        if not data:
            continue
        parts = data.split(end)
        open_last = parts[-1] != b""
        if not open_last:
            parts.pop()
        for j, line in enumerate(parts):
            last = j == len(parts) - 1
            text = line + (end if not (last and open_last) or i < len(inputs) - 1 else b"")
            out.append((text, line[:-1] if end == b"\n" and line.endswith(b"\r") else line))
    return out


def model(inputs, seen=()):
    seen = set(seen)
    kept, dropped = [], []
    for text, key in split(inputs):
        (dropped if key in seen else kept).append(text)
        seen.add(key)
    return b"".join(kept), b"".join(dropped)


def is_subsequence(got_lines, want_lines):
    it = iter(want_lines)
    return all(any(g == w for w in it) for g in got_lines)


line = st.one_of(
    st.binary(max_size=6).map(lambda b: b.replace(b"\n", b"")),
    st.sampled_from([b"", b"a", b"b", b"\x00", b"a\x00", b"\r", b"x" * 70]),
)
text = st.tuples(st.lists(st.tuples(line, st.sampled_from([b"\n", b"\r\n"])), max_size=60), st.booleans()).map(
    lambda t: b"".join(k + e for k, e in t[0])[: None if t[1] or not t[0] else -1])


def fast_and_long(check):
    """A fast hypothesis test of check(tmp_path, inputs, block, threads) and a long one (-m slow)."""
    fast = FAST(given(st.lists(text, min_size=1, max_size=3), st.integers(1, 300), st.integers(1, 4))(check))
    long = LONG(given(st.lists(text, min_size=1, max_size=4), st.integers(1, 5000), st.integers(1, 8))(check))
    return fast, pytest.mark.slow(long)


def write_inputs(tmp_path, inputs):
    paths = []
    for k, data in enumerate(inputs):
        p = tmp_path / f"in{k}.txt"
        p.write_bytes(data)
        paths.append(str(p))
    return paths


def test_paths_go_through_the_native_pipeline(tmp_path):
    """(So that the tests below test it.) Paths and real files have fds; BytesIO and iterables
    take the Python block path."""
    paths = write_inputs(tmp_path, [b"a\n"])
    sources = engine._sources(paths)
    assert engine._Native.plan(sources, engine.LineFraming(), (engine._Sink(None), engine._Sink(None))) is not None
    sources[0].close()
    assert hasattr(cuckoo.Filter, "_dedup") or os.name == "nt"
    sources = engine._sources(io.BytesIO(b"a\n"))
    assert engine._Native.plan(sources, engine.LineFraming(), (engine._Sink(None), engine._Sink(None))) is None


def check_exact(tmp_path, inputs, block, threads):
    paths = write_inputs(tmp_path, inputs)
    kept, dropped = model(inputs)
    out, drop = tmp_path / "out", tmp_path / "drop"
    r = cuckoo.dedup(paths, out, exact=True, dropped=drop, block_size=block, threads=threads)
    assert out.read_bytes() == kept
    assert drop.read_bytes() == dropped
    n = len(split(inputs))
    assert (r.lines_read, r.lines_kept) == (n, len(split([kept])))
    assert r.bytes_read == sum(len(d) for d in inputs)


test_exact_equals_the_model, test_exact_equals_the_model_long = fast_and_long(check_exact)


many_lines = st.lists(st.tuples(st.one_of(st.integers(0, 300).map(lambda i: b"key-%d" % i), line),
                                st.sampled_from([b"\n", b"\r\n"])), min_size=1, max_size=500).map(
    lambda t: b"".join(k + e for k, e in t))


def exact_run_equals_the_model(tmp_path, paths, inputs, block, threads, memory):
    """cuckoo.dedup(paths, exact=True, ...) over files holding `inputs`: its output, dropped lines
    and counts are the model's. Returns its result."""
    kept, dropped = model(inputs)
    out, drop = tmp_path / "out", tmp_path / "drop"
    r = cuckoo.dedup(paths, out, exact=True, dropped=drop, block_size=block, threads=threads, memory=memory)
    assert out.read_bytes() == kept
    assert drop.read_bytes() == dropped
    assert (r.lines_read, r.lines_kept) == (len(split(inputs)), len(split([kept])))
    assert r.exact_stats["distinct"] == r.lines_kept
    return r


def check_exact_in_passes(tmp_path, inputs, block, threads, memory):
    """The in-memory exact path under a memory budget too small for its keys: its hash space is
    split in ranges decided in passes of their own; the output must not change."""
    r = exact_run_equals_the_model(tmp_path, write_inputs(tmp_path, inputs), inputs, block, threads, memory)
    assert r.exact_stats["passes"] >= r.exact_stats["planned"] >= 1
    if r.exact_stats["peak_memory"] <= memory and r.exact_stats["planned"] == 1:
        assert r.exact_stats["passes"] == 1


@FAST
@given(st.lists(many_lines, min_size=1, max_size=3), st.integers(1, 2000), st.integers(1, 3),
       st.sampled_from([4096, 6000, 10_000, 1 << 20]))
def test_exact_in_passes_equals_the_model(tmp_path, inputs, block, threads, memory):
    check_exact_in_passes(tmp_path, inputs, block, threads, memory)


def test_exact_in_passes_takes_passes(tmp_path):
    """(So that the property above tests passes.) 3,000 distinct keys in 4 KiB: several passes,
    each line written once, in order."""
    data = b"".join(b"k%d\n" % (i * 7 % 3000) for i in range(9000))
    check_exact_in_passes(tmp_path, [data], 1 << 12, 2, 4096)
    r = cuckoo.dedup(write_inputs(tmp_path, [data]), None, exact=True, memory=4096)
    assert r.exact_stats["passes"] > 4 and r.exact_stats["splits"] == r.exact_stats["passes"] - 1


@pytest.mark.parametrize("threads", [1, 2])
def test_exact_passes_planned_from_the_estimate(tmp_path, threads):
    """30,000 distinct 8-byte keys, each 3 times, shuffled (a small file: its sample is the whole
    file, so the estimate is exact): about 0.55 MB of key set. Under a budget of 200 KB the ranges
    are planned before the first pass, each fits, and none splits during its pass; the output
    equals the model. Under a budget they fit in, nothing is planned: one pass."""
    rng = random.Random(4)
    keys = [b"k%07d" % i for i in range(30_000)] * 3
    rng.shuffle(keys)
    data = b"".join(k + b"\n" for k in keys)
    kept, _ = model([data])
    for memory, planned in ((200_000, True), (700_000, False)):
        out = tmp_path / f"out{memory}"
        r = cuckoo.dedup(write_inputs(tmp_path, [data]), out, exact=True, memory=memory, threads=threads)
        assert out.read_bytes() == kept
        ex = r.exact_stats
        if planned:
            assert ex["planned"] >= 3 and ex["passes"] == ex["planned"] and ex["splits"] == ex["planned"] - 1, ex
            assert ex["peak_memory"] <= memory
        else:
            assert ex["planned"] == 1 and ex["passes"] == 1, ex


@pytest.mark.parametrize("threads", [1, 2])
def test_exact_passes_planned_from_the_distinct_keys_length(tmp_path, threads):
    """Text's shape: short lines repeated (blank, a brace) among long ones seen once. The plan
    takes the distinct keys' mean length (36 bytes here), not the mean line's (11): under a 200 KB
    budget every planned range fits and none splits. (Planned from the mean line: 3 ranges, split
    into 6 during the passes, and the key set peaked at 327 KB, past the budget.)"""
    rng = random.Random(5)
    lines = [b"%036d" % rng.randrange(10**36) for _ in range(20_000)] + [b"s%02d" % (i % 100) for i in range(60_000)]
    rng.shuffle(lines)
    data = b"".join(k + b"\n" for k in lines)
    assert len(data) < 1 << 20  # sampled whole: the estimate and the mean are exact
    kept, _ = model([data])
    out = tmp_path / "out"
    r = cuckoo.dedup(write_inputs(tmp_path, [data]), out, exact=True, memory=200_000, threads=threads)
    assert out.read_bytes() == kept
    ex = r.exact_stats
    assert ex["planned"] >= 5 and ex["passes"] == ex["planned"] and ex["splits"] == ex["planned"] - 1, ex
    assert ex["peak_memory"] <= 200_000


def test_mean_distinct_key_bytes_from_a_sample():
    from cuckoo._dedup.estimate import mean_distinct_key_bytes

    # the whole input sampled: the distinct keys' mean
    assert mean_distinct_key_bytes(3, 3, 1, 30, 5, complete=True) == 10.0
    assert mean_distinct_key_bytes(0, 0, 0, 0, 0, complete=False) == 0.0
    # every sampled key repeats: the unseen rest is unknown, the sample's distinct keys speak
    assert mean_distinct_key_bytes(1000, 10, 0, 200, 0, complete=False) == 20.0
    # 10 keys seen more than once (5 bytes each), 90 once (50 bytes each), 10,000 keys in all:
    # the 9,990 not seen repeatedly are taken to be as long as those seen once
    got = mean_distinct_key_bytes(10_000, 100, 90, 10 * 5 + 90 * 50, 90 * 50, complete=False)
    assert got == pytest.approx((10 * 5 + 9_990 * 50) / 10_000)
    # an estimate below the sample's distinct keys counts the sample's
    assert mean_distinct_key_bytes(50, 100, 90, 4550, 4500, complete=False) == pytest.approx(45.5)


def check_filter(tmp_path, inputs, block, threads):
    paths = write_inputs(tmp_path, inputs)
    kept, _ = model(inputs)
    out = tmp_path / "out"
    r = cuckoo.dedup(paths, out, block_size=block, threads=threads, seed=7)
    got = out.read_bytes()
    # a subsequence of the model (a false drop at most: with so few keys at fpr 1e-4, rare)
    want_lines = [t for t, _ in split([kept])]
    got_lines = [t for t, _ in split([got])]
    assert is_subsequence(got_lines, want_lines)
    assert r.lines_kept == len(got_lines)
    # the same seed gives the same answer on the Python block path (a BytesIO has no fd)
    if len(inputs) == 1:
        py_out = io.BytesIO()
        cuckoo.dedup(io.BytesIO(inputs[0]), py_out, block_size=block, seed=7)
        assert py_out.getvalue() == got


test_filter_is_a_subsequence_of_the_model, test_filter_is_a_subsequence_of_the_model_long = fast_and_long(check_filter)


@pytest.mark.parametrize("threads", [1, 2])
def test_exact_from_a_pipe_keeps_its_keys_in_memory_then_moves_them_to_a_store(tmp_path, threads):
    """Input read once (a pipe, compressed input): one pass through the in-memory key set while
    its keys fit --memory; past it they move to a store on an anonymous file, and the run goes on
    through it. The output is the model's wherever they moved; the note says which it was."""
    import gzip
    import subprocess
    import sys

    rng = random.Random(9)
    keys = [b"key-%06d" % rng.randrange(40_000) for _ in range(120_000)]
    data = b"".join(k + b"\n" for k in keys)
    kept, dropped = model([data])
    (tmp_path / "in.gz").write_bytes(gzip.compress(data, compresslevel=1))
    cmd = [sys.executable, "-m", "cuckoo", "dedup", "--exact", "--threads", str(threads), "--block-size", "16384"]
    for memory, where in (("1G", "in memory:"), ("256K", "then a store:"), ("4K", "then a store:")):
        for how in ("pipe", "gzip"):
            if how == "pipe":
                r = subprocess.run(cmd + ["--memory", memory], input=data, capture_output=True)
            else:
                r = subprocess.run(cmd + ["--memory", memory, str(tmp_path / "in.gz")], capture_output=True)
            assert r.returncode == 0 and r.stdout == kept, (memory, how, r.stderr)
            assert where in r.stderr.decode(), r.stderr
    # input that the estimate read whole (two blocks at most), expected not to fit: the store at once
    small = data[:20_000]
    r = subprocess.run(cmd + ["--memory", "4K"], input=small, capture_output=True)
    assert r.returncode == 0 and r.stdout == model([small])[0], r.stderr
    assert b"expected not to fit --memory 4.0 KiB" in r.stderr, r.stderr
    # through cuckoo.dedup, a binary file object over a pipe
    read_fd, write_fd = os.pipe()
    with os.fdopen(write_fd, "wb") as w:
        w.write(data[:60_000])  # (within the pipe's buffer; the rest from the head read back)
    with os.fdopen(read_fd, "rb") as src:
        out, drop = tmp_path / "out", tmp_path / "drop"
        r = cuckoo.dedup(src, out, exact=True, dropped=drop, memory=64 << 10, threads=threads, block_size=4096)
    want_kept, want_dropped = model([data[:60_000]])
    assert out.read_bytes() == want_kept and drop.read_bytes() == want_dropped
    assert r.exact_stats["read_once"] and r.exact_stats["passes"] == 1


@FAST
@given(st.lists(st.tuples(many_lines, st.booleans()), min_size=1, max_size=3), st.integers(1, 2000),
       st.integers(1, 3), st.sampled_from([4096, 6000, 10_000, 1 << 20]))
def test_exact_read_once_equals_the_model(tmp_path, inputs, block, threads, memory):
    """Inputs of which some are compressed (read once: no passes, the keys move from memory to
    a store on an anonymous file when they pass the budget, at a point that depends on it): the
    output and the dropped lines are the model's, under every budget, block size and thread count."""
    import gzip

    data = [d for d, _ in inputs]
    paths = []
    for k, (d, compressed) in enumerate(inputs):
        p = tmp_path / (f"in{k}.txt.gz" if compressed else f"in{k}.txt")
        p.write_bytes(gzip.compress(d, compresslevel=1) if compressed else d)
        paths.append(str(p))
    r = exact_run_equals_the_model(tmp_path, paths, data, block, threads, memory)
    assert r.exact_stats["read_once"] == any(c for _, c in inputs)
    assert r.exact_stats["passes"] == 1 or not r.exact_stats["read_once"]


def short_lines(seed: int, lines: int) -> bytes:
    """Many short lines (ids repeated at random, some CRLF and empty), a few lines longer than a
    block of 256 KiB, and at random no final newline."""
    rng = random.Random(seed)
    parts = []
    for _ in range(lines):
        kind = rng.random()
        if kind < 0.00002:
            parts.append(b"L" * rng.randrange(300_000, 700_000))
        elif kind < 0.01:
            parts.append(b"")
        else:
            parts.append(b"id%d" % rng.randrange(lines // 2 + 1))
        parts.append(b"\r\n" if rng.random() < 0.2 else b"\n")
    data = b"".join(parts)
    return data[:-1] if rng.random() < 0.5 else data


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32), st.integers(20_000, 150_000), st.integers(256 << 10, 1 << 20), st.integers(2, 3))
def test_filter_blocks_sized_by_lines_answer_as_one_thread(tmp_path, seed, lines, block, threads):
    """With producers, the filter path reads blocks of about 16 Ki lines (down to 256 KiB, up to
    the block size): the output equals that of one thread reading whole blocks with the same seed
    and capacity, and it is a subsequence of the model. (Not compared with the Python block path:
    its filter may have another bucket size, so other false drops.)"""
    data = short_lines(seed, lines)
    paths = write_inputs(tmp_path, [data])
    outs = []
    for t in (1, threads):
        out = tmp_path / f"out{t}"
        cuckoo.dedup(paths, out, block_size=block, threads=t, seed=7, capacity=lines)
        outs.append(out.read_bytes())
    assert outs[1] == outs[0]
    kept, _ = model([data])
    assert is_subsequence([t for t, _ in split([outs[1]])], [t for t, _ in split([kept])])


@FAST
@given(st.lists(text, min_size=2, max_size=4), st.integers(1, 300), st.integers(1, 4))
def test_store_across_reruns_equals_the_model(tmp_path, runs, block, threads):
    """Each run dedups against every line the runs before it recorded."""
    store = tmp_path / "s.ckv"
    for f in tmp_path.glob("s.ckv*"):
        f.unlink()
    seen = []
    for k, data in enumerate(runs):
        p = tmp_path / "in.txt"
        p.write_bytes(data)
        kept, dropped = model([data], seen)
        out, drop = tmp_path / "out", tmp_path / "drop"
        cuckoo.dedup(p, out, store=store, dropped=drop, block_size=block, threads=threads)
        assert out.read_bytes() == kept, k
        assert drop.read_bytes() == dropped, k
        seen.extend(key for _, key in split([data]))
    with cuckoo.Store(store, readonly=True) as s:
        assert len(s) == len(set(seen))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_stdin_read_ahead_and_a_pipe(tmp_path, threads):
    """A pipe's bytes read ahead by the size estimate (and by the reader's buffer) come first."""
    import subprocess
    import sys

    data = b"".join(b"%d\r\n" % (i % 37) for i in range(5000)) + b"last"
    proc = subprocess.run([sys.executable, "-m", "cuckoo", "dedup", "--exact", "-q", "--block-size", "100",
                           "--threads", str(threads)], input=data, capture_output=True, check=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.stdout == model([data])[0]


@pytest.mark.parametrize("threads", [1, 2])
def test_ctrl_c_stops_a_run_waiting_for_input(tmp_path, threads):
    """Ctrl-C while the pipeline waits on a stalled pipe (the reader polls, the calling thread
    looks at the signals between waits): exit 130, and the output file, written whole or not at
    all, does not appear (nor its temporary file); to stdout the lines of the first block are
    written."""
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-m", "cuckoo", "dedup", "--exact", "-q", "--threads", str(threads),
                             "-o", str(tmp_path / "out")], stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    proc.stdin.write(b"a\nb\na\n" * 2_000_000)  # more than the size estimate's look-ahead: then it stalls
    proc.stdin.flush()
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)  # (a hang guard, not a time limit)
    proc.stdin.close()
    assert proc.returncode == 130 and b"interrupted" in err, err
    assert sorted(os.listdir(tmp_path)) == []
    proc = subprocess.Popen([sys.executable, "-m", "cuckoo", "dedup", "--exact", "-q", "--threads", str(threads)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    proc.stdin.write(b"a\nb\na\n" * 2_000_000)
    proc.stdin.flush()
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and out == b"a\nb\n", err
