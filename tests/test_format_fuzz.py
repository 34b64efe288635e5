"""Fuzzing the format reader: mutated, truncated and extended serialized filters.

Whatever the bytes, reading them either returns a valid filter or raises cuckoo.FormatError:
never another exception, a crash or a hang. Every byte of a file is covered by a checksum, by the
exact-length check or by the zero-padding check, so a reader that verifies the table must reject
EVERY change; the tests assert exactly that. Mutations behind recomputed checksums
(_format_ref.rewrite) reach the parameter checks, which the checksums would otherwise shadow.

About 10^4 cases in total (the sum of max_examples below), a few tens of seconds.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cuckoo
import _format_ref as ref

FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# (capacity, fingerprint_bits, bucket_size, keys added, seed[, semi_sort]): small filters of
# several shapes; the semi-sorted ones are format version 2.
SHAPES = [
    (8, 4, 2, 5, 0),
    (20, 7, 4, 15, 1),
    (50, 12, 4, 40, 2**64 - 1),
    (30, 16, 8, 25, 3),
    (40, 32, 8, 30, 4),
    (100, 5, 2, 60, 5),
    (10, 9, 4, 0, 6),  # empty
    (50, 12, 4, 40, 7, True),
    (20, 5, 4, 12, 8, True),
    (30, 16, 4, 25, 9, True),  # 60-bit buckets: every other one starts mid-byte
]


def _build(capacity, f, b, n, seed, semi_sort=False):
    flt = cuckoo.Filter(capacity, fingerprint_bits=f, bucket_size=b, seed=seed, max_kicks=100, semi_sort=semi_sort)
    flt.add_many(np.arange(n, dtype=np.int64) * 7919 - 100)
    return flt, flt.to_bytes()


CASES = [_build(*s) for s in SHAPES]
PROBE = list(range(-100, 300, 3)) + ["a", b"b"]


def exercise(g: cuckoo.Filter) -> None:
    """Use a filter that was read without verifying its table: answers may be wrong, but every
    operation must work. Copying or serializing recounts the table first: a header whose item
    count disagrees is reported (FormatError), not carried on (issue 20)."""
    g.contains_many(PROBE)
    g.count_many(PROBE)
    for k in PROBE[:20]:
        _ = k in g
        g.bucket_indices(k)
    len(g), repr(g), g.load_factor, g.expected_fpr
    try:
        c = g.copy()
    except cuckoo.FormatError as e:
        # A count that disagrees with the header, or (semi-sorted tables) a bucket whose nibble
        # code is not one of the 3876 valid ones: both found by the recount, both refused again
        # by to_bytes.
        assert "inconsistent data" in str(e) or "invalid code" in str(e), str(e)
        with pytest.raises(cuckoo.FormatError, match="inconsistent data|invalid code"):
            g.to_bytes()
        return
    c.discard_many(PROBE[:10])
    try:
        c.add_many(PROBE[:10])
    except cuckoo.FilterFullError:
        pass
    g.to_bytes()


def check(data: bytes, index: int) -> None:
    flt, original = CASES[index]
    for read in (cuckoo.Filter.from_bytes, lambda d: cuckoo.Filter._from_view(d, True)):
        try:
            g = read(data)
        except cuckoo.FormatError:
            assert data != original, "a valid file was rejected"
        else:
            assert data == original, "a changed file was accepted by a verifying reader"
            assert g == flt
    try:
        g = cuckoo.Filter._from_view(data, False)
    except cuckoo.FormatError:
        # Only the table is unchecked here: a rejection means a change outside the table.
        assert data != original
    else:
        exercise(g)


shape = st.integers(0, len(CASES) - 1)


# Strategies are kept flat (a few integers per example): Hypothesis' own cost per example is
# what bounds the number of cases that fit in a few tens of seconds.
OPS = st.lists(st.tuples(st.booleans(), st.integers(0, 2**16 - 1), st.integers(0, 255)), min_size=1, max_size=4)


def apply_ops(data: bytes, ops) -> bytes:
    out = bytearray(data)
    for flip, pos, v in ops:
        # Half the positions fall in the header and the gap after it, where the parsing logic is.
        at = (pos >> 1) % 192 if pos & 1 else (pos >> 1) % len(out)
        if flip:
            out[at] ^= 1 << (v & 7)
        else:
            out[at] = v
    return bytes(out)


@st.composite
def mutated(draw):
    i = draw(shape)
    return i, apply_ops(CASES[i][1], draw(OPS))


@settings(FUZZ, max_examples=4000)
@given(mutated())
def test_mutated_bytes(case):
    check(case[1], case[0])


@st.composite
def resized(draw):
    i = draw(shape)
    data = CASES[i][1]
    cut, extra, flip = draw(st.integers(-len(data), 100)), draw(st.integers(0, 255)), draw(st.integers(-1, 2**16))
    if cut < 0:  # truncated by -cut bytes
        out = data[:cut]
    elif cut == 0:  # doubled
        out = data + data
    else:  # extended by `cut` bytes of value `extra`
        out = data + bytes([extra]) * cut
    if out and flip >= 0:  # and maybe a flipped bit too
        pos = flip % len(out)
        out = out[:pos] + bytes([out[pos] ^ (1 << (flip & 7))]) + out[pos + 1 :]
    return i, out


@settings(FUZZ, max_examples=2500)
@given(resized())
def test_truncated_and_extended_bytes(case):
    check(case[1], case[0])


U32 = st.one_of(st.sampled_from([0, 1, 2, 3, 4, 7, 8, 16, 31, 32, 33, 64, 136, 200, 2**31, 2**32 - 1]),
                st.integers(0, 2**32 - 1))
U64 = st.one_of(st.sampled_from([0, 1, 8, 16, 64, 192, 2**32, 2**32 + 8, 2**37, 2**63, 2**64 - 1]),
                st.integers(0, 2**64 - 1))
FIELDS = {
    "version": U32, "header_length": U32, "file_length": U64, "flags": U32, "hash_algorithm": U32,
    "seed": U64, "capacity": U64, "max_kicks": U32, "stage_count": U32, "reserved": U64,
    "stage_bucket_size": U32, "stage_fingerprint_bits": U32, "stage_bucket_count": U64,
    "stage_item_count": U64, "stage_capacity": U64, "stage_table_offset": U64, "stage_table_length": U64,
    "stage_reserved": U64,
}


@st.composite
def rewritten(draw):
    i = draw(shape)
    names = draw(st.lists(st.sampled_from(sorted(FIELDS)), min_size=1, max_size=3, unique=True))
    fields = {name: draw(FIELDS[name]) for name in names}
    return i, fields, ref.rewrite(CASES[i][1], **fields)


@settings(FUZZ, max_examples=2500)
@given(rewritten())
def test_fields_behind_valid_checksums(case):
    i, fields, data = case
    flt, original = CASES[i]
    h = ref.parse(original)
    s = h["stages"][0]
    for name, v in fields.items():
        if name.startswith("stage_") and name != "stage_count":
            s[name[len("stage_"):]] = v
        else:
            h[name] = v
    for verifies, read in ((True, cuckoo.Filter.from_bytes), (True, lambda d: cuckoo.Filter._from_view(d, True)),
                           (False, lambda d: cuckoo.Filter._from_view(d, False))):
        try:
            g = read(data)
        except cuckoo.FormatError:
            continue
        # Accepted: then it is exactly what the header says, and the header describes this table.
        assert h["version"] in (1, 2, 3) and h["stage_count"] == 1 and h["hash_algorithm"] in (1, 2)
        # stage layout (versions 2 and 3): 0 plain, 1 semi-sorted; the nesting level of version 3
        # (the reserved field's high half) is 0 for the first stage
        assert g.semi_sort == (h["version"] >= 2 and s["reserved"] == 1)
        assert g.hash_algorithm == {1: "xxh64", 2: "xxh3"}[h["hash_algorithm"]]
        assert h["flags"] in (0, 1) and g.growable == bool(h["flags"])  # bit 0: growable
        # max_kicks: read as at most 65,536 (issue 20)
        assert (g.seed, g.max_kicks, g.capacity) == (h["seed"], min(h["max_kicks"], 65_536), s["capacity"])
        assert (g.bucket_size, g.fingerprint_bits, g.bucket_count) == (
            s["bucket_size"], s["fingerprint_bits"], s["bucket_count"])
        # (A rewrite can describe another valid table: e.g. twice the buckets, with a table length
        # to match, still inside the file's padding. Then the filter is that one.)
        assert len(g) == s["item_count"] and g.nbytes == s["table_length"]
        if verifies:
            assert len(g) == len(flt)  # the count was checked against the table
        exercise(g)


@st.composite
def retabled(draw):
    i = draw(shape)
    flt, data = CASES[i]
    table = bytearray(ref.tables(data)[0])
    for _ in range(draw(st.integers(1, 3))):
        table[draw(st.integers(0, len(table) - 1))] ^= 1 << draw(st.integers(0, 7))
    fix_count = draw(st.booleans())
    if flt.semi_sort:
        try:
            buckets = ref.semi_sorted_buckets(bytes(table), flt.fingerprint_bits)
        except KeyError:  # a code no bucket can have: the table is corrupt whatever the count
            occupied = -1
        else:
            occupied = sum(1 for b in buckets for x in b if x)
    else:
        occupied = sum(1 for x in ref.slots(bytes(table), flt.fingerprint_bits) if x)
    fields = {"stage_item_count": occupied} if fix_count and occupied >= 0 else {}
    return i, bytes(table), occupied, ref.rewrite(data, table=bytes(table), **fields)


@settings(FUZZ, max_examples=1000)
@given(retabled())
def test_table_changes_behind_valid_checksums(case):
    # A table with a right checksum is accepted exactly when the item count matches it.
    i, table, occupied, data = case
    flt, _ = CASES[i]
    count = ref.parse(data)["stages"][0]["item_count"]
    for read in (cuckoo.Filter.from_bytes, lambda d: cuckoo.Filter._from_view(d, True)):
        if occupied < 0:
            with pytest.raises(cuckoo.FormatError, match="invalid code"):
                read(data)
        elif count != occupied:
            with pytest.raises(cuckoo.FormatError, match="items, the table holds"):
                read(data)
        else:
            g = read(data)
            assert len(g) == occupied and g.to_bytes() == data
            exercise(g)


@settings(FUZZ, max_examples=300)
@given(mutated())
def test_files_through_load(tmp_path_factory, case):
    i, data = case
    path = tmp_path_factory.mktemp("fuzz") / "f.cuckoo"
    path.write_bytes(data)
    for kwargs in ({}, {"mmap": True, "verify": True}):
        try:
            g = cuckoo.Filter.load(path, **kwargs)
        except cuckoo.FormatError:
            assert data != CASES[i][1]
        else:
            assert data == CASES[i][1] and g == CASES[i][0]
    try:
        g = cuckoo.Filter.load(path, mmap=True)
    except cuckoo.FormatError:
        pass
    else:
        exercise(g)
