"""CSV and delimited-field records in the core (cpp/include/cuckoo/dedup/csv.hpp), through the test
hooks of src/record_keys_binding.cpp, against Python's csv module (strict, the model the header
follows) and against a model of FieldFraming's field ranges."""
from __future__ import annotations

import csv
import io
from typing import List, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuckoo import _core

BOM = b"\xef\xbb\xbf"
CONTENT = st.binary(max_size=12).filter(lambda b: b"\r" not in b and b"\n" not in b)


def leb128(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


@st.composite
def csv_fields(draw: st.DrawFn, delim: int) -> bytes:
    """One field: (raw text, unquoted content). Quoted fields may hold anything; unquoted ones
    hold no delimiter, no CR/LF and do not start with a quote (a quote later is content)."""
    quote = draw(st.booleans())
    if quote:
        content = draw(st.binary(max_size=10) | st.sampled_from([b'a"b', b"x\r\ny", b"\n", b"\r", bytes([delim])]))
        return content, b'"' + content.replace(b'"', b'""') + b'"'
    content = draw(CONTENT.filter(lambda b: bytes([delim]) not in b and not b.startswith(b'"')))
    return content, content


@st.composite
def csv_files(draw: st.DrawFn, delim: int = ord(",")):
    """(data, records, rows): a CSV file, its raw records and the unquoted fields of each."""
    records: List[bytes] = []
    rows: List[List[bytes]] = []
    for _ in range(draw(st.integers(0, 30))):  # past 64 bytes: the vector windows
        n = draw(st.integers(0, 4))
        fields = [draw(csv_fields(delim)) for _ in range(n)]
        if n == 1 and fields[0][1] == b"":
            fields = [(b"", b'""')]
        raw = bytes([delim]).join(f[1] for f in fields)
        records.append(raw + draw(st.sampled_from([b"\n", b"\r\n"])))
        rows.append([f[0] for f in fields])
    if records and records[-1] not in (b"\n", b"\r\n") and draw(st.booleans()):  # no final newline
        records[-1] = records[-1][:-1]
    return b"".join(records), records, rows


def python_rows(data: bytes, delim: int = ord(",")) -> List[List[bytes]]:
    text = data.decode("utf-8", "surrogateescape")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=chr(delim), strict=True)
    return [[f.encode("utf-8", "surrogateescape") for f in row] for row in reader]


def strip_nl(record: bytes) -> bytes:
    return record[:-1] if record.endswith(b"\n") else record


@pytest.mark.every_cpu_level  # the portable and the vector record ends
@settings(max_examples=200, deadline=None)
@given(csv_files(), st.booleans())
def test_records_and_keys_match_python_csv(file, bom) -> None:
    data, records, rows = file
    assert _core._csv_records(data, ord(","), ord('"')) == records
    assert python_rows(data) == rows
    if bom:
        assert _core._bom_length(BOM + data) == 3
    for record, row in zip(records, rows):
        line = strip_nl(record)
        assert _core._csv_fields(line, ord(","), ord('"')) == row
        for col in range(4):
            expected: Optional[bytes] = row[col] if col < len(row) else None
            assert _core._field_key(line, "csv", ord(","), [col], 0, 0) == expected
        if len(row) >= 2:
            assert _core._field_key(line, "csv", ord(","), [1, 0], 0, 0) == (
                leb128(len(row[1])) + row[1] + leb128(len(row[0])) + row[0])


@settings(max_examples=100, deadline=None)
@given(csv_files(ord(";")))
def test_other_delimiter(file) -> None:
    data, records, rows = file
    assert _core._csv_records(data, ord(";"), ord('"')) == records
    assert python_rows(data, ord(";")) == rows
    for record, row in zip(records, rows):
        assert _core._field_key(strip_nl(record), "csv", ord(";"), [0], 0, 0) == (row[0] if row else None)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([b"a", b",", b'"', b"\r", b"\n", b"\r\n"]), max_size=14).map(b"".join))
def test_any_line_valid_or_not_as_python_reads_it(line: bytes) -> None:
    """Arbitrary bytes of the special kinds, given to Python's csv as one line (as the Python
    path gives it the input, split at '\\n'): the core accepts exactly the records Python accepts,
    with the same fields."""
    if line.endswith(b"\n"):
        line = line[:-1]
    try:
        ours: Optional[List[bytes]] = _core._csv_fields(line, ord(","), ord('"'))
    except ValueError as exc:
        assert str(exc).startswith("not valid CSV: ")
        ours = None
    text = line.decode("utf-8", "surrogateescape")
    try:
        theirs: Optional[List[List[bytes]]] = [[f.encode("utf-8", "surrogateescape") for f in row]
                                               for row in csv.reader([text], strict=True)]
    except csv.Error:
        theirs = None
    if ours:
        assert theirs == [ours]
    elif ours is not None:  # no fields: Python yields nothing for "" and one empty row for "\r"
        assert theirs in ([], [[]])
    elif b"\n" not in line:  # (a '\n' outside quotes ends the line for the Python path: two lines)
        assert theirs is None


def field_range_model(line: bytes, sep: int, first: int, last: int) -> Optional[bytes]:
    """FieldFraming (python/cuckoo/_dedup/records.py): one '\\r' stripped, split at every separator."""
    if line.endswith(b"\r"):
        line = line[:-1]
    fields = line.split(bytes([sep]))
    if len(fields) < first + 1:
        return None
    return bytes([sep]).join(fields[first:last + 1])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"bc", b"\t", b'"', b"\r", b",", b""]), max_size=12).map(b"".join),
       st.integers(0, 4), st.integers(0, 3))
def test_field_range_matches_model(line: bytes, first: int, extra: int) -> None:
    last = first + extra
    assert _core._field_key(line, "fields", ord("\t"), [], first, last) == field_range_model(line, ord("\t"), first, last)


def test_field_range_agrees_with_field_framing() -> None:
    from cuckoo._dedup.records import FieldFraming

    data = b"a\tb\tc\r\nd\te\nf\n\n\tg\th\ti\n"
    framing = FieldFraming("\t", "2,3", missing="keep")
    rec, _ = framing.frame(data, False, 1)
    lines = data.split(b"\n")[:-1]
    for k, line in enumerate(lines):
        ours = _core._field_key(line, "fields", ord("\t"), [], 1, 2)
        if rec.forced is not None and rec.forced[k] != 0:
            assert ours is None
        else:
            start, length = int(rec.kstarts[k]), int(rec.klen[k])
            assert ours == data[start:start + length]


def test_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="must be doubled or followed by ','"):
        _core._field_key(b'"a"b,c', "csv", ord(","), [0], 0, 0)
    with pytest.raises(ValueError, match="a quoted field is not closed"):
        _core._field_key(b'a,"b', "csv", ord(","), [0], 0, 0)
    with pytest.raises(ValueError, match="mode must be"):
        _core._field_key(b"a", "json", ord(","), [0], 0, 0)
    with pytest.raises(ValueError, match="delimiter must be a byte"):
        _core._csv_records(b"a", 300, ord('"'))
    with pytest.raises(ValueError, match="at least one column"):
        _core._field_key(b"a", "csv", ord(","), [], 0, 0)


def test_long_field_has_no_limit() -> None:
    big = b"x" * (1 << 18)  # past Python's default field_size_limit of 128 KiB
    line = b'"' + big + b'",1'
    assert _core._field_key(line, "csv", ord(","), [0], 0, 0) == big
    assert _core._csv_records(line + b"\n" + line, ord(","), ord('"')) == [line + b"\n", line]


def test_quoting_off_ends_every_line() -> None:
    assert _core._csv_records(b'"a\nb\n', ord("\t"), 0) == [b'"a\n', b"b\n"]
