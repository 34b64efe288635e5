"""Counts, keep-last and the selections by count (`-c`, `-d`, `-u`, `--keep last`; cuckoo.dedup's
count=, repeated=, unique_only=, keep=), against a model built on collections.Counter: whole lines,
NUL-terminated records, CSV with quoted separators and newlines, JSONL and separated fields; files
(two passes), compressed input and streams (copied to a temporary file first), 1-3 threads, blocks
that cut records anywhere, and budgets small enough to split the keys into several hash ranges
(their decisions and counts kept for a last pass). keep='last' against pandas too."""

from __future__ import annotations

import collections
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
LONG = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

SELECTIONS = {"all": {}, "repeated": {"repeated": True}, "unique_only": {"unique_only": True}}


def model(records, keep, selection, with_count, counted):
    """(output, dropped) of `records` ((text, key) pairs in input order): each key's first or last
    record whose count passes the selection, in input order, made by counted(text, count) when
    counting; every other record as read to dropped."""
    counts = collections.Counter(key for _, key in records)
    chosen = {}
    for i, (_, key) in enumerate(records):
        if keep == "last" or key not in chosen:
            chosen[key] = i
    ok = {"all": lambda c: True, "repeated": lambda c: c > 1, "unique_only": lambda c: c == 1}[selection]
    out, dropped = [], []
    for i, (text, key) in enumerate(records):
        if chosen[key] == i and ok(counts[key]):
            out.append(counted(text, counts[key]) if with_count else text)
        else:
            dropped.append(text)
    return b"".join(out), b"".join(dropped)


def line_counted(text, count):
    return b"%7d " % count + text


def field_counted(sep):
    """A record with one more field before its line end (CSV and -t records)."""
    def counted(text, count):
        body = text.rstrip(b"\n")
        body = body[:-1] if body.endswith(b"\r") else body
        return body + sep + b"%d" % count + text[len(body):]
    return counted


def json_counted(member):
    def counted(text, count):
        at = text.rindex(b"}")
        return text[:at] + b"," + member + b"%d" % count + text[at:]
    return counted


def run(tmp_path, inputs, kind, keep, selection, with_count, block, threads, memory, compressed=False, **framing):
    paths = []
    for k, data in enumerate(inputs):
        p = tmp_path / (f"in{k}.gz" if compressed and k == 0 else f"in{k}")
        p.write_bytes(gzip.compress(data, compresslevel=1) if compressed and k == 0 else data)
        paths.append(str(p))
    out, drop = tmp_path / "out", tmp_path / "drop"
    r = cuckoo.dedup(paths, out, dropped=drop, keep=keep, count=with_count, block_size=block, threads=threads,
                     memory=memory, **SELECTIONS[selection], **framing)
    return r, out.read_bytes(), drop.read_bytes()


line = st.one_of(st.integers(0, 30).map(lambda i: b"k%d" % i), st.sampled_from([b"", b"a", b"a\r", b"x" * 70]),
                 st.binary(max_size=5).map(lambda b: b.replace(b"\n", b"")))
lines_text = st.tuples(st.lists(st.tuples(line, st.sampled_from([b"\n", b"\r\n"])), max_size=120), st.booleans()).map(
    lambda t: b"".join(k + e for k, e in t[0])[: None if t[1] or not t[0] else -1])
options = dict(keep=st.sampled_from(["first", "last"]), selection=st.sampled_from(sorted(SELECTIONS)),
               with_count=st.booleans(), block=st.integers(1, 400), threads=st.integers(1, 3),
               memory=st.sampled_from([None, 4096, 12_000]))


def check_lines(tmp_path, inputs, keep, selection, with_count, block, threads, memory, compressed):
    r, out, dropped = run(tmp_path, inputs, "lines", keep, selection, with_count, block, threads, memory, compressed)
    want_out, want_dropped = model(split_lines(inputs), keep, selection, with_count, line_counted)
    assert out == want_out
    assert dropped == want_dropped
    records = split_lines(inputs)
    assert r.lines_read == len(records)
    assert r.exact_stats["distinct"] == len({k for _, k in records})
    if keep == "last" or selection != "all" or with_count:  # (else plain dedup: no counts, one pass or more)
        assert r.exact_stats["passes"] == (2 if r.exact_stats["ranges"] == 1 else 2 * r.exact_stats["ranges"] + 1)


test_lines_equal_the_model = FAST(given(inputs=st.lists(lines_text, min_size=1, max_size=3), compressed=st.booleans(),
                                        **options)(check_lines))
test_lines_equal_the_model_long = pytest.mark.slow(
    LONG(given(inputs=st.lists(lines_text, min_size=1, max_size=4), compressed=st.booleans(),
               **options)(check_lines)))


def test_a_small_budget_splits_the_keys_into_ranges(tmp_path):
    """(So that the model tests above cover several ranges: their bits, count files and last pass.)"""
    data = b"".join(b"key-%d\n" % (i % 700) for i in range(3000))
    r, out, _ = run(tmp_path, [data], "lines", "last", "all", True, 1000, 2, 4096)
    assert r.exact_stats["ranges"] > 1
    assert out == model(split_lines([data]), "last", "all", True, line_counted)[0]


@FAST
@given(rows=st.lists(st.tuples(st.integers(0, 12), st.sampled_from([b"a", b'"b,c"', b'"x\ny"', b'"q""q"', b""]),
                               st.sampled_from([b"\n", b"\r\n"])), max_size=80),
       open_last=st.booleans(), **options)
def test_csv_equals_the_model(tmp_path, rows, open_last, keep, selection, with_count, block, threads, memory):
    records = [(b"%d,%s%s" % (i, v, e), b"%d" % i) for i, v, e in rows]
    if records and not open_last:
        text, key = records[-1]
        records[-1] = (text.rstrip(b"\r\n"), key)
    data = b"id,v\n" + b"".join(t for t, _ in records)
    r, out, dropped = run(tmp_path, [data], "csv", keep, selection, with_count, block, threads, memory, csv=True,
                          key="id")
    want_out, want_dropped = model(records, keep, selection, with_count, field_counted(b","))
    assert out == (b"id,v,count\n" if with_count else b"id,v\n") + want_out
    assert dropped == b"id,v\n" + want_dropped
    assert r.lines_read == len(records)


@FAST
@given(rows=st.lists(st.tuples(st.integers(0, 12), st.sampled_from([b'"s"', b"[1, {}]", b'"\\u00e9"', b"1e400"]),
                               st.sampled_from([b"", b" ", b"\t"]), st.sampled_from([b"\n", b"\r\n"])), min_size=1,
                     max_size=80), **options)
def test_jsonl_equals_the_model(tmp_path, rows, keep, selection, with_count, block, threads, memory):
    records = [(b'{"id": %d, "v": %s}%s%s' % (i, v, ws, e), b"%d" % i) for i, v, ws, e in rows]
    data = b"".join(t for t, _ in records)
    r, out, dropped = run(tmp_path, [data], "jsonl", keep, selection, with_count, block, threads, memory,
                          jsonl=True, key="id")
    want_out, want_dropped = model(records, keep, selection, with_count, json_counted(b'"count":'))
    assert out == want_out
    assert dropped == want_dropped


@FAST
@given(rows=st.lists(st.tuples(st.integers(0, 9), st.binary(max_size=4).map(lambda b: b.translate(None, b"\t\n"))),
                     max_size=80), **options)
def test_fields_equal_the_model(tmp_path, rows, keep, selection, with_count, block, threads, memory):
    records = [(b"%s\t%d\n" % (v, i), b"%d" % i) for i, v in rows]
    data = b"".join(t for t, _ in records)
    _, out, dropped = run(tmp_path, [data], "fields", keep, selection, with_count, block, threads, memory,
                          sep="\t", key="2")
    want_out, want_dropped = model(records, keep, selection, with_count, field_counted(b"\t"))
    assert out == want_out
    assert dropped == want_dropped


@FAST
@given(recs=st.lists(st.sampled_from([b"a", b"b", b"a\r", b"c\nd", b""]), max_size=60), **options)
def test_nul_terminated_records_equal_the_model(tmp_path, recs, keep, selection, with_count, block, threads, memory):
    data = b"".join(r + b"\0" for r in recs)
    _, out, dropped = run(tmp_path, [data], "lines", keep, selection, with_count, block, threads, memory,
                          zero_terminated=True)
    assert (out, dropped) == model(split_lines([data], b"\0"), keep, selection, with_count, line_counted)


@FAST
@given(lines_text, st.sampled_from(["first", "last"]), st.sampled_from(sorted(SELECTIONS)), st.booleans())
def test_streams_and_iterables_equal_the_model(data, keep, selection, with_count):
    """BytesIO in and out (the input copied to a temporary file, the output through one)."""
    want = model(split_lines([data]), keep, selection, with_count, line_counted)
    out, drop = io.BytesIO(), io.BytesIO()
    cuckoo.dedup(io.BytesIO(data), out, dropped=drop, keep=keep, count=with_count, **SELECTIONS[selection])
    assert (out.getvalue(), drop.getvalue()) == want
    out = io.BytesIO()
    cuckoo.dedup([t for t, _ in split_lines([data])], out, keep=keep, count=with_count, **SELECTIONS[selection])
    assert out.getvalue() == want[0]


def test_keep_last_is_pandas_drop_duplicates_keep_last(tmp_path):
    pd = pytest.importorskip("pandas")
    import random

    rng = random.Random(5)
    rows = [(rng.randrange(300), rng.random()) for _ in range(5000)]
    src = tmp_path / "in.csv"
    src.write_text("id,x\n" + "".join(f"{i},{x!r}\n" for i, x in rows))
    out = tmp_path / "out.csv"
    cuckoo.dedup(str(src), str(out), csv=True, key="id", keep="last")
    want = pd.read_csv(src).drop_duplicates(subset=["id"], keep="last")
    got = pd.read_csv(out)
    assert got["id"].tolist() == want["id"].tolist()
    assert got["x"].tolist() == want["x"].tolist()


def cli(*args, stdin=b""):
    return subprocess.run([sys.executable, "-m", "cuckoo", "dedup", *args], input=stdin, capture_output=True)


def test_cli_count_is_uniq_c_without_sorting():
    """On input whose repeats are adjacent, -c writes what uniq -c does; -d and -u what uniq -d
    and uniq -u do (uniq compares adjacent lines only: elsewhere the order differs, not the counts)."""
    data = b"a\na\nb\nc\nc\nc\n"
    for flags in (["-c"], ["-d"], ["-u"], ["-c", "-d"]):
        r = cli("-q", *flags, stdin=data)
        assert r.returncode == 0, r.stderr
        uniq = subprocess.run(["uniq", *flags], input=data, capture_output=True).stdout
        assert r.stdout == uniq


def test_cli_refusals():
    for args, text in ((["-c", "--store", "s"], b"--store dedups against other runs"),
                       (["-c", "--approx"], b"--approx is for the filter"),
                       (["-d", "-u"], b"exclude each other"),
                       (["--count-name", "n"], b"--count-name names the column")):
        r = cli(*args, stdin=b"a\n")
        assert r.returncode == 1, (args, r.stderr)
        assert text in r.stderr
        assert r.stdout == b""


def test_missing_keep_is_refused_with_counts(tmp_path):
    with pytest.raises(ValueError, match="missing='error'"):
        cuckoo.dedup(io.BytesIO(b"id\n1\n"), io.BytesIO(), csv=True, key="id", missing="keep", count=True)
    with pytest.raises(ValueError, match="exact"):
        cuckoo.dedup(io.BytesIO(b"a\n"), io.BytesIO(), exact=False, count=True)
    with pytest.raises(ValueError, match="keep must be"):
        cuckoo.dedup(io.BytesIO(b"a\n"), io.BytesIO(), keep="middle")
