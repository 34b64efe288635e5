"""Windowed dedup (`cuckoo dedup --window N | DURATION`, ``cuckoo.dedup(window=...)``) against
models: a count window against a deque of the previous N keys (lines, NUL records, CSV with
quoted newlines, JSONL; files, gzip, streams; 1-3 threads; blocks that cut records anywhere), its
approximate form against the same model (a subsequence: no changed, extra or reordered record),
an arrival-time window over a pipe whose writer pauses, and the memory bound: the keys held stay
within about one window however long the input."""

from __future__ import annotations

import collections
import datetime
import gzip
import io
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cuckoo
from test_dedup_pipeline import split as split_lines

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
LONG = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def model(records, n):
    """(kept, dropped) of `records` ((text, key) in order): a record is dropped iff its key is among
    the previous n records' keys (duplicates included)."""
    last = collections.deque(maxlen=n)
    kept, dropped = [], []
    for text, key in records:
        (dropped if key in last else kept).append(text)
        last.append(key)
    return b"".join(kept), b"".join(dropped)


line = st.one_of(st.integers(0, 12).map(lambda i: b"k%d" % i), st.sampled_from([b"", b"a\r", b"x" * 50]))
lines_text = st.tuples(st.lists(st.tuples(line, st.sampled_from([b"\n", b"\r\n"])), max_size=150),
                       st.booleans()).map(lambda t: b"".join(k + e for k, e in t[0])[: None if t[1] or not t[0] else -1])


def write(tmp_path, inputs, compress_first=False):
    paths = []
    for k, data in enumerate(inputs):
        gz = compress_first and k == 0
        p = tmp_path / (f"in{k}.gz" if gz else f"in{k}")
        p.write_bytes(gzip.compress(data, compresslevel=1) if gz else data)
        paths.append(str(p))
    return paths


def check_lines(tmp_path, inputs, n, block, threads, compress_first):
    out, drop = tmp_path / "out", tmp_path / "drop"
    r = cuckoo.dedup(write(tmp_path, inputs, compress_first), out, dropped=drop, window=n, block_size=block,
                     threads=threads)
    records = split_lines(inputs)
    assert (out.read_bytes(), drop.read_bytes()) == model(records, n)
    assert r.lines_read == len(records) and r.exact
    assert r.window_stats["records"] == n and r.window_stats["fpr_bound"] == 0


options = dict(n=st.integers(1, 40), block=st.integers(1, 400), threads=st.integers(1, 3),
               compress_first=st.booleans())
test_count_window_over_lines_equals_the_model = FAST(
    given(inputs=st.lists(lines_text, min_size=1, max_size=3), **options)(check_lines))
test_count_window_over_lines_equals_the_model_long = pytest.mark.slow(
    LONG(given(inputs=st.lists(lines_text, min_size=1, max_size=4), **options)(check_lines)))


@FAST
@given(rows=st.lists(st.tuples(st.integers(0, 9), st.sampled_from([b"a", b'"b,c"', b'"x\ny"', b""])), max_size=100),
       n=st.integers(1, 20), block=st.integers(1, 300), threads=st.integers(1, 3))
def test_count_window_over_csv_equals_the_model(tmp_path, rows, n, block, threads):
    records = [(b"%d,%s\n" % (i, v), i) for i, v in rows]
    src = tmp_path / "in.csv"
    src.write_bytes(b"id,v\n" + b"".join(t for t, _ in records))
    out = tmp_path / "out.csv"
    cuckoo.dedup(str(src), out, csv=True, key="id", window=n, block_size=block, threads=threads)
    assert out.read_bytes() == b"id,v\n" + model(records, n)[0]


@FAST
@given(rows=st.lists(st.tuples(st.integers(0, 9), st.sampled_from([b"1", b'"s"', b"[1, 2]"])), min_size=1,
                     max_size=100), n=st.integers(1, 20), threads=st.integers(1, 3))
def test_count_window_over_jsonl_and_nul_records_equals_the_model(tmp_path, rows, n, threads):
    records = [(b'{"user": {"id": %d}, "v": %s}\n' % (i, v), i) for i, v in rows]
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"".join(t for t, _ in records))
    out = tmp_path / "out.jsonl"
    cuckoo.dedup(str(src), out, jsonl=True, key="user.id", window=n, threads=threads, block_size=97)
    assert out.read_bytes() == model(records, n)[0]
    nul = [(b"r%d\0" % i, i) for i, _ in rows]
    out = io.BytesIO()
    cuckoo.dedup(io.BytesIO(b"".join(t for t, _ in nul)), out, zero_terminated=True, window=n, threads=threads)
    assert out.getvalue() == model(nul, n)[0]


@FAST
@given(data=lines_text, n=st.integers(1, 40), threads=st.integers(1, 3))
def test_approximate_window_is_a_subsequence_of_the_model(data, n, threads):
    """The filters' window may drop a new record by mistake (never keep a duplicate of the
    window, never change or reorder a record): the output is a subsequence of the exact one, and
    every record of the exact output that it leaves out was dropped (is in `dropped`)."""
    records = split_lines([data])
    want = [t for t, _ in split_lines([model(records, n)[0]])]
    out, drop = io.BytesIO(), io.BytesIO()
    r = cuckoo.dedup(io.BytesIO(data), out, dropped=drop, window=n, exact=False, threads=threads)
    got = [t for t, _ in split_lines([out.getvalue()])]
    it = iter(want)
    assert all(any(g == w for w in it) for g in got)
    assert len(out.getvalue()) + len(drop.getvalue()) == len(data)
    assert not r.exact and 0 <= r.window_stats["fpr_bound"] < 1e-3
    assert r.window_stats["fpr_bound"] > 0 or not data


def test_memory_is_bounded_by_one_window(tmp_path):
    """2*10^5 distinct keys through a window of 1,000 records: the keys held never pass the
    window and its slack (4 generations: 1/4 of a window more), nor does the memory grow with
    the input."""
    src = tmp_path / "in.txt"
    src.write_bytes(b"".join(b"key-%d\n" % i for i in range(200_000)))
    r = cuckoo.dedup(str(src), tmp_path / "out", window=1000)
    assert r.lines_kept == 200_000
    assert r.window_stats["keys"] <= 1000 + 1000 // 4 + 1
    small = cuckoo.dedup(str(src), tmp_path / "out", window=1000, block_size=1 << 16)
    src.write_bytes(b"".join(b"key-%d\n" % i for i in range(20_000)))
    short = cuckoo.dedup(str(src), tmp_path / "out", window=1000, block_size=1 << 16)
    assert small.window_stats["peak_memory"] < 2 * short.window_stats["peak_memory"]


def cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "cuckoo", "dedup", *args], input=stdin, capture_output=True)


def test_arrival_time_window_over_a_pipe():
    """`--window 1s` over a pipe whose writer pauses 1.5 s: a key seen before the pause is new
    again after it; within a burst, a repeat is dropped."""
    proc = subprocess.Popen([sys.executable, "-m", "cuckoo", "dedup", "-q", "--window", "1s"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(b"a\nb\na\n")
    proc.stdin.flush()
    time.sleep(1.5)
    proc.stdin.write(b"a\nc\nc\n")
    proc.stdin.close()
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.stdout.close()
    assert proc.wait() == 0
    assert out == b"a\nb\na\nc\n"


def test_duration_forms_and_refusals():
    out = io.BytesIO()
    r = cuckoo.dedup(io.BytesIO(b"a\na\n"), out, window=datetime.timedelta(minutes=10))
    assert out.getvalue() == b"a\n" and r.window_stats["seconds"] == 600
    assert cuckoo.dedup(io.BytesIO(b"a\n"), None, window="1.5h").window_stats["seconds"] == 5400
    assert cuckoo.dedup(io.BytesIO(b"a\n"), None, window="250ms").window_stats["seconds"] == 0.25
    assert cuckoo.dedup(io.BytesIO(b"a\n"), None, window="30").window_stats["records"] == 30
    for bad, err in ((0, ValueError), ("5x", ValueError), (1.5, TypeError), (True, TypeError), ("0s", ValueError)):
        with pytest.raises(err, match="window"):
            cuckoo.dedup(io.BytesIO(b"a\n"), None, window=bad)
    with pytest.raises(ValueError, match="not with store="):
        cuckoo.dedup(io.BytesIO(b"a\n"), None, window=5, count=True)
    for args, text in ((["--window", "3", "-c"], b"--count is not for --window"),
                       (["--window", "3", "--store", "s"], b"--store is not for --window"),
                       (["--window", "x"], b"--window: window 'x' is neither")):
        r = cli(*args, stdin=b"a\n")
        assert r.returncode == 1 and text in r.stderr, (args, r.stderr)


# ---- event time (--time-key) ----------------------------------------------------------------


def event_model(records, d):
    """(kept, dropped) in event time, as cuckoo.Window documents it with lateness = d: a record
    whose time is behind the watermark (the largest time seen less d) is late and kept; one without
    a time is kept; any other is dropped iff an earlier record that was neither has its key and a
    time less than d apart (either way); it is then remembered, and the watermark moves."""
    seen = collections.defaultdict(list)
    top = None
    kept, dropped = [], []
    for text, key, t in records:
        if t is None or (top is not None and t < top - d):
            kept.append(text)
            continue
        (dropped if any(abs(t - u) < d for u in seen[key]) else kept).append(text)
        seen[key].append(t)
        top = t if top is None else max(top, t)
    return b"".join(kept), b"".join(dropped)


@FAST
@given(rows=st.lists(st.tuples(st.integers(0, 5), st.one_of(st.none(), st.integers(0, 400))), max_size=120),
       d=st.sampled_from([1, 10, 60]), threads=st.integers(1, 3), block=st.integers(1, 300),
       kind=st.sampled_from(["csv", "jsonl"]))
def test_event_time_window_equals_the_model(tmp_path, rows, d, threads, block, kind):
    """Times out of order (late records among them), records without a time, CSV and JSONL."""
    if kind == "csv":
        records = [(b"%d,%s,x\n" % (k, b"" if t is None else b"%d" % t), k, t) for k, t in rows]
        head, opts = b"id,ts,v\n", dict(csv=True)
    else:
        records = [(b'{"id": %d%s}\n' % (k, b"" if t is None else b', "ts": %d' % t), k, t) for k, t in rows]
        head, opts = b"", dict(jsonl=True)
    src = tmp_path / "in"
    src.write_bytes(head + b"".join(r[0] for r in records))
    out, drop = tmp_path / "out", tmp_path / "drop"
    r = cuckoo.dedup(str(src), out, dropped=drop, key="id", window=f"{d}s", time_key="ts", threads=threads,
                     block_size=block, **opts)
    kept, dropped = event_model(records, d)
    assert (out.read_bytes(), drop.read_bytes()) == (head + kept, head + dropped)
    assert r.window_stats["untimed"] == sum(t is None for _, t in rows)


@FAST
@given(when=st.datetimes(min_value=datetime.datetime(1900, 1, 1), max_value=datetime.datetime(2200, 1, 1)),
       offset_minutes=st.integers(-23 * 60, 23 * 60), form=st.integers(0, 3), shift=st.sampled_from([0, 2]))
def test_iso_8601_times_are_the_epoch_seconds_python_reads(tmp_path, when, offset_minutes, form, shift):
    """A record with an ISO 8601 time and one with the epoch seconds Python's datetime gives it
    (`shift` seconds later): one key within a window of 1 s exactly when shift is 0."""
    when = when.replace(microsecond=when.microsecond // 1000 * 1000)
    zone = datetime.timezone(datetime.timedelta(minutes=offset_minutes))
    local = when.replace(tzinfo=zone)
    sign, hm = ("-" if offset_minutes < 0 else "+"), divmod(abs(offset_minutes), 60)
    text = [local.isoformat(timespec="milliseconds"),
            local.strftime("%Y-%m-%dT%H:%M:%S") + f"{sign}{hm[0]:02d}{hm[1]:02d}",
            local.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f") + "Z",
            local.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")][form]
    epoch = local.timestamp() + shift
    src = tmp_path / "in.jsonl"
    src.write_text(f'{{"id": 1, "t": "{text}"}}\n{{"id": 1, "t": {epoch!r}}}\n')
    r = cuckoo.dedup(str(src), None, jsonl=True, key="id", window="1s", time_key="t")
    assert r.lines_kept == (1 if shift == 0 else 2), text
    assert r.window_stats["untimed"] == 0


def test_times_that_are_not_times_are_kept_and_counted(tmp_path):
    src = tmp_path / "in.csv"
    src.write_bytes(b"id,t\n1,2026-02-30\n1,2026-13-01\n1,abc\n1,inf\n1,0x10\n1,1e400\n1,2026-11-29T25:00\n1,\n"
                    b"1,2026-11-29\n1,2026-11-29T00:00:00.0Z\n")
    r = cuckoo.dedup(str(src), None, csv=True, key="id", window="1m", time_key="t")
    assert r.window_stats["untimed"] == 8
    assert r.lines_kept == 9  # the eight without a time, and the first of the last two (the same instant)


def test_time_key_refusals(tmp_path):
    with pytest.raises(ValueError, match="window of time"):
        cuckoo.dedup(io.BytesIO(b"a\n"), None, window=5, time_key="t", csv=True, key="id")
    with pytest.raises(ValueError, match="keyed records"):
        cuckoo.dedup(io.BytesIO(b"a\n"), None, window="5s", time_key="t")
    r = cli("--time-key", "t", stdin=b"a\n")
    assert r.returncode == 1 and b"--time-key names the event time of a --window DURATION" in r.stderr
