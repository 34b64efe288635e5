"""cuckoo._dedup.records: keyed records (-t/-k, --csv, --jsonl, --missing) against reference tools on
the same data: awk for separated fields, Python's csv and json modules for CSV and JSON Lines."""

from __future__ import annotations

import csv
import io
import json
import random
import shutil
import subprocess

import numpy as np
import pytest

import cuckoo
from cuckoo._dedup import records as rc


def run(framing, data: bytes, block: int = 1 << 16, exact: bool = True):
    """(kept bytes, dropped bytes) of dedup over `framing`: a store or a filter, block by block."""
    kept, dropped = [], []
    store = cuckoo.Store() if exact else None
    f = None if exact else cuckoo.Filter(100_000, fingerprint_bits=32)
    try:
        blocks = list(framing.blocks(io.BytesIO(data), block))
        for i, rec in enumerate(blocks):
            final = i == len(blocks) - 1
            mask = rec.store_insert(store) if exact else rec.insert(f)[0]
            kept.append(rec.header)  # (a CSV header: once to each output)
            dropped.append(rec.header)
            kept.append(rec.select(mask, final))
            dropped.append(rec.select(~mask, final))
    finally:
        if store is not None:
            store.close()
    return b"".join(kept), b"".join(dropped)


def tsv(n: int, seed: int) -> bytes:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        key = rng.choice(["k%d" % rng.randrange(50), "", "é%d" % rng.randrange(5), "x y"])
        rows.append("\t".join([str(i), key, rng.choice("abc"), "tail"]) + rng.choice(["\n", "\r\n"]))
    return "".join(rows).encode()


@pytest.mark.parametrize("block", [7, 100, 1 << 16])
def test_tab_field_matches_awk(block):
    data = tsv(3000, 1)
    kept, dropped = run(rc.FieldFraming("\\t", "2"), data, block)
    if shutil.which("awk"):
        # awk keys $2 without a trailing \r only for the last field; field 2 is never last here.
        ref = subprocess.run(["awk", "-F\t", "!seen[$2]++"], input=data, capture_output=True, check=True).stdout
        assert kept == ref
    seen, want = set(), []
    for line in data.splitlines(keepends=True):
        k = line.split(b"\t")[1]
        if k not in seen:
            seen.add(k)
            want.append(line)
    assert kept == b"".join(want)
    assert sorted(data.splitlines(keepends=True)) == sorted((kept + dropped).splitlines(keepends=True))


def test_field_range_and_first_and_last_field():
    data = b"a,1,x,9\nb,1,x,8\nc,1,y,9\nd,2,x\r\ne,2,x\n"
    assert run(rc.FieldFraming(",", "2,3"), data)[0] == b"a,1,x,9\nc,1,y,9\nd,2,x\r\n"
    assert run(rc.FieldFraming(",", 1), b"a,1\na,2\nb\nb\n")[0] == b"a,1\nb\n"
    # The last field ends before "\r\n" (d,2,x\r\n and e,2,x\n share field 3 "x").
    assert run(rc.FieldFraming(",", "3"), data)[0] == b"a,1,x,9\nc,1,y,9\n"
    assert run(rc.FieldFraming(",", "4", missing="keep"), data)[0] == b"a,1,x,9\nb,1,x,8\nd,2,x\r\ne,2,x\n"


def test_missing_field_policies():
    data = b"a\t1\nb\nc\t1\nd\n\ne\t2"
    kept, dropped = run(rc.FieldFraming("\t", 2, missing="keep"), data)
    assert kept == b"a\t1\nb\nd\n\ne\t2" and dropped == b"c\t1\n"
    kept, dropped = run(rc.FieldFraming("\t", 2, missing="drop"), data)
    assert kept == b"a\t1\ne\t2" and dropped == b"b\nc\t1\nd\n\n"
    with pytest.raises(rc.MissingFieldError, match=r"^line 2: no field 2") as info:
        run(rc.FieldFraming("\t", 2), data)
    assert info.value.line == 2
    # The records before the error are framed (the engine writes them before raising).
    blocks = rc.FieldFraming("\t", 2).blocks(io.BytesIO(b"a\t1\na\t1\nzzz\n"), 1 << 16)
    first = next(blocks)
    assert len(first) == 2
    with pytest.raises(rc.MissingFieldError, match="line 3"):
        next(blocks)


@pytest.mark.parametrize("bad,message", [("0", "1 <= N <= M"), ("3,2", "1 <= N <= M"), ("a", "N or N,M"),
                                         ("1,2,3", "N or N,M")])
def test_bad_field_specs(bad, message):
    with pytest.raises(ValueError, match=message):
        rc.FieldFraming(",", bad)


@pytest.mark.parametrize("sep", ["ab", "\n", ""])
def test_bad_separators(sep):
    with pytest.raises(ValueError, match="one byte"):
        rc.FieldFraming(sep, 1)


def test_bad_missing_policy():
    with pytest.raises(ValueError, match="missing must be one of keep, drop, error"):
        rc.FieldFraming(",", 1, missing="skip")


# ---- CSV ----


def csv_data(n: int, seed: int, newline: str = "\r\n") -> bytes:
    rng = random.Random(seed)
    out = io.StringIO()
    w = csv.writer(out, lineterminator=newline)
    w.writerow(["id", "event_id", "note"])
    for i in range(n):
        key = rng.choice(["e%d" % rng.randrange(40), 'with "quote"', "multi\nline", "a,b", "ünï", ""])
        w.writerow([i, key, rng.choice(["x", "y\r\nz", '"q"', "plain"])])
    return out.getvalue().encode()


def csv_reference(data: bytes, column: str) -> bytes:
    """Python's csv module: the header, then the first row of each key, re-serialised."""
    rows = list(csv.reader(io.StringIO(data.decode(), newline="")))
    header, body = rows[0], rows[1:]
    i = header.index(column)
    seen, keep = set(), [header]
    for r in body:
        if r[i] not in seen:
            seen.add(r[i])
            keep.append(r)
    return keep


@pytest.mark.parametrize("column", ["event_id", "2", 2])
@pytest.mark.parametrize("block", [5, 1 << 16])
def test_csv_matches_python_csv(column, block):
    data = csv_data(2000, 3)
    kept, dropped = run(rc.CsvFraming(column), data, block)
    # Written exactly as read: parsing the output gives the reference rows.
    assert list(csv.reader(io.StringIO(kept.decode(), newline=""))) == csv_reference(data, "event_id")
    assert kept.startswith(b"id,event_id,note\r\n")
    # Output + dropped is the input as a multiset of records (the header is in both, once).
    records = lambda b: sorted(map(tuple, csv.reader(io.StringIO(b.decode(), newline=""))))  # noqa: E731
    assert dropped.startswith(b"id,event_id,note\r\n")
    assert records(kept + dropped[len(b"id,event_id,note\r\n"):]) == records(data)


def test_csv_missing_column_and_header_errors():
    data = b"a,b\n1,x\n2\n3,x\n"
    assert run(rc.CsvFraming("b", missing="keep"), data)[0] == b"a,b\n1,x\n2\n"
    assert run(rc.CsvFraming("b", missing="drop"), data) == (b"a,b\n1,x\n", b"a,b\n2\n3,x\n")
    with pytest.raises(rc.MissingFieldError, match=r"^line 3: no CSV column 'b'"):
        run(rc.CsvFraming("b"), data)
    with pytest.raises(ValueError, match="no column 'c'"):
        run(rc.CsvFraming("c"), data)
    # The line number counts physical lines: a record after an embedded newline.
    with pytest.raises(rc.MissingFieldError, match=r"^line 4:"):
        run(rc.CsvFraming("b"), b'a,b\n1,"x\ny"\n2\n')
    with pytest.raises(ValueError, match="not valid CSV"):
        run(rc.CsvFraming("b"), b'a,b\n1,"x\n')


def test_csv_last_record_without_newline():
    assert run(rc.CsvFraming(1), b"k\n1\n1\n2")[0] == b"k\n1\n2"


# ---- JSON Lines ----


def test_jsonl_matches_python_json():
    rng = random.Random(5)
    lines = []
    for i in range(2000):
        v = rng.choice([1, "1", 1.5, None, True, [1, 2], {"b": 2, "a": 1}, "ü", 'q"'])
        obj = {"i": i, "a": {"b": {"c": v}}} if rng.random() < 0.9 else {"i": i, "a": {"b": 3}}
        lines.append(json.dumps(obj, ensure_ascii=rng.random() < 0.5) + "\n")
    data = "".join(lines).encode()
    kept, dropped = run(rc.JsonlFraming("a.b.c", missing="keep"), data, 1000)
    seen, want = set(), []
    for line in data.splitlines(keepends=True):
        obj = json.loads(line)
        try:
            key = json.dumps(obj["a"]["b"]["c"], sort_keys=True)
        except TypeError:  # a.b is not an object: no field, kept
            want.append(line)
            continue
        if key not in seen:
            seen.add(key)
            want.append(line)
    assert kept == b"".join(want)
    assert sorted(kept.splitlines() + dropped.splitlines()) == sorted(data.splitlines())


def test_jsonl_key_is_the_json_text():
    data = (b'{"k": 1}\n{"k": "1"}\n{"k": 1}\n{"k": {"x": 1, "y": 2}}\n{"k":{"y":2,"x":1}}\n{"k": 1.0}\n'
            b'{"k": 9007199254740993}\n{"k": 9007199254740992}\n{"k": 1e400}\n{"k": 2e400}\n{"k": "\\u00e9"}\n'
            b'{"k": "\xc3\xa9"}\n')
    # 1 and 1.0 are one number; the others are distinct numbers (no float rounding); a string
    # escaped or not is one key.
    assert run(rc.JsonlFraming("k"), data)[0] == (
        b'{"k": 1}\n{"k": "1"}\n{"k": {"x": 1, "y": 2}}\n{"k": 9007199254740993}\n{"k": 9007199254740992}\n'
        b'{"k": 1e400}\n{"k": 2e400}\n{"k": "\\u00e9"}\n')


def test_jsonl_missing_and_invalid():
    with pytest.raises(rc.MissingFieldError, match=r"^line 2: no JSON field a.b"):
        run(rc.JsonlFraming("a.b"), b'{"a": {"b": 1}}\n{"a": 2}\n')
    with pytest.raises(ValueError, match=r"^line 2: not valid JSON"):
        run(rc.JsonlFraming("a", missing="keep"), b'{"a": 1}\n{oops\n')
    assert run(rc.JsonlFraming("a", missing="drop"), b'{"a": 1}\n\n[1]\n{"a": 1}\n') == (
        b'{"a": 1}\n', b'\n[1]\n{"a": 1}\n')
    with pytest.raises(ValueError, match="dotted path"):
        rc.JsonlFraming("a..b")


def test_filter_path_agrees_with_the_store_path():
    data = tsv(2000, 9)
    assert run(rc.FieldFraming("\t", 2), data, exact=False) == run(rc.FieldFraming("\t", 2), data)
    data = csv_data(500, 4)
    assert run(rc.CsvFraming("event_id"), data, exact=False) == run(rc.CsvFraming("event_id"), data)


def test_framing_of_checks_combinations():
    assert rc.framing_of() is None
    assert isinstance(rc.framing_of(sep="\t", key="2"), rc.FieldFraming)
    assert isinstance(rc.framing_of(csv=True, key="id"), rc.CsvFraming)
    assert isinstance(rc.framing_of(jsonl=True, key="a.b"), rc.JsonlFraming)
    for kwargs, message in [(dict(csv=True, jsonl=True, key="a"), "exclude"), (dict(key="2"), "needs -t"),
                            (dict(csv=True), "-k"), (dict(missing="keep"), "--missing is for keyed"),
                            (dict(csv=True, sep=",", key="a"), "-t is for")]:
        with pytest.raises(ValueError, match=message):
            rc.framing_of(**kwargs)
