"""Persistence: to_bytes / from_bytes, save / load (copy and mmap), pickle; the golden file.

The format is specified in docs/format.md; _format_ref.py is an independent Python reading of
that document which these tests hold the core's output against.
"""

from __future__ import annotations

import copy
import json
import mmap
import multiprocessing
import operator
import os
import pickle
import stat
import sys
import threading

import numpy as np
import pytest

import cuckoo
import _format_ref as ref

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
WIDTHS = list(range(4, 33))
BUCKETS = [2, 4, 8]


def keys_present(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**63, size=n, dtype=np.uint64)


def keys_absent(n: int, seed: int = 1) -> np.ndarray:
    # The top bit is set here and clear in keys_present: disjoint by construction.
    return keys_present(n, seed) | np.uint64(1 << 63)


def make(capacity: int, f: int, b: int, fill: float = 0.9, seed: int = 7,
         semi_sort: bool = False) -> "tuple[cuckoo.Filter, np.ndarray]":
    flt = cuckoo.Filter(capacity, fingerprint_bits=f, bucket_size=b, seed=seed, max_kicks=777, semi_sort=semi_sort)
    keys = keys_present(int(capacity * fill), seed=f * 10 + b)
    assert flt.add_many(keys) == len(keys)
    return flt, keys


def same_filter(a: cuckoo.Filter, b: cuckoo.Filter) -> None:
    assert a == b
    for attr in ("capacity", "bucket_count", "bucket_size", "fingerprint_bits", "seed", "max_kicks", "nbytes",
                 "hash_algorithm", "semi_sort", "stages"):
        assert getattr(a, attr) == getattr(b, attr), attr
    assert len(a) == len(b)


def same_answers(a: cuckoo.Filter, b: cuckoo.Filter, present: np.ndarray, absent: np.ndarray) -> None:
    assert b.contains_many(present).all()
    assert np.array_equal(a.contains_many(absent), b.contains_many(absent))
    assert np.array_equal(a.count_many(present[:1000]), b.count_many(present[:1000]))


def round_trips(flt: cuckoo.Filter, tmp_path) -> "list[tuple[str, cuckoo.Filter]]":
    path = tmp_path / "f.cuckoo"
    flt.save(path)
    return [
        ("bytes", cuckoo.Filter.from_bytes(flt.to_bytes())),
        ("file", cuckoo.Filter.load(path)),
        ("mmap", cuckoo.Filter.load(path, mmap=True)),
        ("mmap-verify", cuckoo.Filter.load(str(path), mmap=True, verify=True)),
        ("pickle", pickle.loads(pickle.dumps(flt, protocol=pickle.HIGHEST_PROTOCOL))),
    ]


# ---- round trips -------------------------------------------------------------------------------


# Every plain (f, b), and semi-sorted buckets (b = 4, f <= 16: format version 2) for every f.
SHAPES = [(f, b, False) for b in BUCKETS for f in WIDTHS] + [(f, 4, True) for f in range(4, 17)]


@pytest.mark.parametrize(("f", "b", "semi_sort"), SHAPES)
def test_round_trip_every_shape(f, b, semi_sort, tmp_path):
    flt, present = make(3000, f, b, semi_sort=semi_sort)
    assert flt.to_bytes()[8] == (2 if semi_sort else 1)  # the format version
    absent = keys_absent(3000, seed=f)
    file_bytes = flt.to_bytes()
    for how, back in round_trips(flt, tmp_path):
        same_filter(flt, back)
        same_answers(flt, back, present, absent)
        assert back.read_only == how.startswith("mmap"), how
        assert back.to_bytes() == file_bytes, how
    assert (tmp_path / "f.cuckoo").read_bytes() == file_bytes


# 4-bit fingerprints have only 15 alternates per bucket, so they fill up well below the design
# load at this size: that case gets twice the capacity for its 10^5 keys.
@pytest.mark.parametrize("f, b, capacity", [(4, 2, 200_000), (8, 4, 100_000), (12, 4, 100_000), (16, 4, 100_000),
                                            (17, 8, 100_000), (32, 8, 100_000)])
def test_round_trip_1e5_keys(f, b, capacity, tmp_path):
    flt, present = make(capacity, f, b, fill=100_000 / capacity)
    absent = keys_absent(100_000, seed=3)
    assert len(present) == 100_000
    for how, back in round_trips(flt, tmp_path):
        same_filter(flt, back)
        same_answers(flt, back, present, absent)


def test_round_trip_edge_parameters(tmp_path):
    cases = [
        cuckoo.Filter(1),  # empty, smallest table
        cuckoo.Filter(10, fingerprint_bits=4, bucket_size=2, max_kicks=0, seed=0),
        cuckoo.Filter(1000, fingerprint_bits=32, bucket_size=8, max_kicks=65_536, seed=2**64 - 1),
        cuckoo.Filter(1000, seed=5, hash_algorithm="xxh64"),  # the first releases' hash
    ]
    cases[-1].add_many(["a", "b", b"c", 3, -3, 2**64 - 1])
    cases[2].add_many(["a", "b", b"c", 3, -3, 2**64 - 1])
    assert ref.parse(cases[-1].to_bytes())["hash_algorithm"] == 1
    for flt in cases:
        for how, back in round_trips(flt, tmp_path):
            same_filter(flt, back)


def test_to_bytes_matches_the_documented_layout():
    flt, _ = make(5000, 13, 4)
    data = flt.to_bytes()
    h = ref.parse(data)
    assert h["magic"] == b"CUCKOOF\x00" and h["version"] == 1
    assert h["header_length"] == 136 and h["flags"] == 0 and h["hash_algorithm"] == 2  # XXH3, the default
    assert (h["seed"], h["capacity"], h["max_kicks"], h["stage_count"]) == (7, 5000, 777, 1)
    assert h["header_checksum"] == ref.xxh64(data[:128], 0)
    (s,) = h["stages"]
    assert (s["bucket_size"], s["fingerprint_bits"], s["bucket_count"]) == (4, 13, flt.bucket_count)
    assert (s["item_count"], s["capacity"]) == (len(flt), 5000)
    assert s["table_offset"] == 192 and s["table_length"] == flt.nbytes
    assert s["table_checksum"] == ref.xxh64(ref.tables(data)[0], 0)
    assert h["file_length"] == len(data) and len(data) % 64 == 0
    assert len(data) - (s["table_offset"] + s["table_length"]) >= 16
    assert sum(1 for x in ref.slots(ref.tables(data)[0], 13) if x) == len(flt)
    assert ref.build(h, ref.tables(data)) == data  # every other byte is zero padding


def test_from_bytes_accepts_any_bytes_like(tmp_path):
    flt, _ = make(500, 9, 4)
    data = flt.to_bytes()
    path = tmp_path / "x"
    path.write_bytes(data)
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        sources = [data, bytearray(data), memoryview(data), np.frombuffer(data, dtype=np.uint8), mm,
                   np.frombuffer(data, dtype=np.uint64)]
        for src in sources:
            back = cuckoo.Filter.from_bytes(src)
            assert back == flt and not back.read_only
        del src, sources  # release the exports before the mmap closes
    assert cuckoo.Filter.from_bytes(data=data) == flt


@pytest.mark.parametrize("bad", ["a string", 42, None, [1, 2], np.zeros(100, dtype=np.uint8)[::2]])
def test_from_bytes_rejects_non_bytes(bad):
    with pytest.raises(TypeError, match="bytes-like"):
        cuckoo.Filter.from_bytes(bad)


def test_from_bytes_copies():
    flt, _ = make(500, 9, 4)
    data = bytearray(flt.to_bytes())
    back = cuckoo.Filter.from_bytes(data)
    data[:] = bytes(len(data))
    assert back == flt
    back.add("new")  # writable


def test_load_path_types(tmp_path):
    flt, _ = make(500, 9, 4)
    p = tmp_path / "f.cuckoo"
    flt.save(str(p))
    assert cuckoo.Filter.load(p) == flt
    assert cuckoo.Filter.load(os.fsencode(str(p))) == flt
    flt.save(os.fsencode(str(tmp_path / "g.cuckoo")))
    assert cuckoo.Filter.load(tmp_path / "g.cuckoo", mmap=True) == flt
    with pytest.raises(TypeError, match="mmap must be a bool"):
        cuckoo.Filter.load(p, mmap="yes")
    with pytest.raises(FileNotFoundError):
        cuckoo.Filter.load(tmp_path / "missing")


# ---- memory-mapped filters -----------------------------------------------------------------------


def mapped(tmp_path, f=12, b=4, capacity=5000):
    flt, present = make(capacity, f, b)
    path = tmp_path / "m.cuckoo"
    flt.save(path)
    return flt, present, path, cuckoo.Filter.load(path, mmap=True)


WRITES = [
    ("add", lambda m, k: m.add(k[0])),
    ("add new", lambda m, k: m.add("never added")),
    ("add_unique present", lambda m, k: m.add_unique(k[0])),
    ("add_unique new", lambda m, k: m.add_unique("never added")),
    ("discard", lambda m, k: m.discard(k[0])),
    ("remove", lambda m, k: m.remove(k[0])),
    ("clear", lambda m, k: m.clear()),
    ("add_many", lambda m, k: m.add_many(k[:100])),
    ("add_many empty", lambda m, k: m.add_many([])),
    ("add_unique_many", lambda m, k: m.add_unique_many(np.arange(100))),
    ("add_unique_many present", lambda m, k: m.add_unique_many(k[:100])),
    ("discard_many", lambda m, k: m.discard_many(k[:100])),
    ("update", lambda m, k: m.update(k[:10], ["x", "y"])),
]


@pytest.mark.parametrize("name, write", WRITES, ids=[w[0] for w in WRITES])
def test_mmap_filter_is_read_only(name, write, tmp_path):
    flt, present, path, m = mapped(tmp_path)
    before = m.to_bytes()
    assert m.read_only and "read-only" in repr(m)
    with pytest.raises(cuckoo.ReadOnlyError, match="read-only") as info:
        write(m, present)
    assert isinstance(info.value, cuckoo.CuckooError) and isinstance(info.value, TypeError)
    assert m.to_bytes() == before and m == flt and len(m) == len(flt)
    assert m.contains_many(present).all()


def test_mmap_filter_answers_lookups(tmp_path):
    flt, present, path, m = mapped(tmp_path, capacity=20_000)
    absent = keys_absent(20_000)
    assert all(int(k) in m for k in present[:500])
    assert m.contains_many(present).all()
    assert np.array_equal(m.contains_many(absent), flt.contains_many(absent))
    assert m.count(int(present[0])) >= 1 and m.bucket_indices(5) == flt.bucket_indices(5)
    assert m.load_factor == flt.load_factor and m.stats()["inserts"] == 0


def test_copy_of_mmap_filter_is_writable(tmp_path):
    flt, present, path, m = mapped(tmp_path)
    for c in (m.copy(), copy.copy(m), copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert not c.read_only and c == m
        c.add("fresh key")
        c.discard(int(present[0]))
        assert "fresh key" in c and c != m
    assert "fresh key" not in m or flt.contains_many(["fresh key"])[0]
    assert m == flt  # the mapped filter and the file are untouched
    assert cuckoo.Filter.load(path) == flt


def test_mmap_outlives_file_replacement_and_deletion(tmp_path):
    flt, present, path, m = mapped(tmp_path)
    other = cuckoo.Filter(10)
    other.save(path)  # atomic replace: the mapping keeps the old file's pages
    assert m == flt and m.contains_many(present).all()
    m.save(path)  # a mapped filter saved over its own file
    assert cuckoo.Filter.load(path) == flt
    m2 = cuckoo.Filter.load(path, mmap=True)
    if os.name == "posix":
        os.unlink(path)
        assert m2 == flt and m2.contains_many(present).all()


def test_mmap_filter_keeps_mapping_alive(tmp_path):
    import gc

    flt, present, path, m = mapped(tmp_path)
    gc.collect()
    assert m.contains_many(present).all()  # no reference but the filter's keeps the mapping
    del m
    gc.collect()
    # The file is no longer mapped by us: it can be replaced and reread.
    flt.save(path)
    assert cuckoo.Filter.load(path) == flt


def test_mmap_verify(tmp_path):
    flt, present, path, m = mapped(tmp_path)
    data = bytearray(path.read_bytes())
    data[300] ^= 0x10  # inside the table
    path.write_bytes(bytes(data))
    with pytest.raises(cuckoo.FormatError, match="checksum mismatch in the table"):
        cuckoo.Filter.load(path)
    with pytest.raises(cuckoo.FormatError, match="checksum mismatch in the table"):
        cuckoo.Filter.load(path, mmap=True, verify=True)
    # Documented: without verify only the header is checked, so mapping never reads the table.
    m2 = cuckoo.Filter.load(path, mmap=True)
    assert m2.read_only and len(m2) == len(flt)
    data[20] ^= 1  # inside the header: caught on every load
    path.write_bytes(bytes(data))
    for kwargs in ({}, {"mmap": True}, {"mmap": True, "verify": True}):
        with pytest.raises(cuckoo.FormatError, match="checksum mismatch in the header"):
            cuckoo.Filter.load(path, **kwargs)


def test_load_empty_and_unmappable_files(tmp_path):
    p = tmp_path / "empty"
    p.write_bytes(b"")
    for mm in (False, True):
        with pytest.raises(cuckoo.FormatError, match="truncated"):
            cuckoo.Filter.load(p, mmap=mm)
    if os.name == "posix" and hasattr(os, "mkfifo"):
        flt, _ = make(300, 8, 2)
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        writer = threading.Thread(target=lambda: fifo.write_bytes(flt.to_bytes()))
        writer.start()
        back = cuckoo.Filter.load(fifo, mmap=True)  # not mappable: read, still read-only
        writer.join()
        assert back == flt and back.read_only


# ---- save -------------------------------------------------------------------------------------------


def test_save_is_atomic_on_failure(tmp_path, monkeypatch):
    flt, _ = make(500, 9, 4)
    path = tmp_path / "f.cuckoo"
    flt.save(path)
    original = path.read_bytes()

    def broken(self, fd):
        os.write(fd, b"CUCKOOF\x00partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cuckoo.Filter, "_write_fd", broken)
    with pytest.raises(OSError, match="No space left"):
        cuckoo.Filter(10).save(path)
    assert path.read_bytes() == original
    assert sorted(os.listdir(tmp_path)) == ["f.cuckoo"]  # the temporary file is gone


def test_save_replaces_and_leaves_no_temporary_files(tmp_path):
    path = tmp_path / "f.cuckoo"
    for n in (10, 1000, 100):
        flt, _ = make(n, 10, 4)
        flt.save(path)
        assert cuckoo.Filter.load(path) == flt
    assert os.listdir(tmp_path) == ["f.cuckoo"]
    with pytest.raises(OSError):
        flt.save(tmp_path / "no such dir" / "f.cuckoo")
    assert os.listdir(tmp_path) == ["f.cuckoo"]


@pytest.mark.skipif(not hasattr(os, "symlink") or os.name != "posix", reason="POSIX symlinks")
def test_save_over_a_symlink_writes_its_target(tmp_path):
    a, _ = make(100, 8, 4)
    b = cuckoo.Filter(50)
    target = tmp_path / "target.cuckoo"
    a.save(target)
    link = tmp_path / "link.cuckoo"
    os.symlink(target, link)
    b.save(link)
    # documented (issue 20): the link stays a link, the file it names gets the new bytes
    assert link.is_symlink() and cuckoo.Filter.load(link) == b and cuckoo.Filter.load(target) == b


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_save_permissions(tmp_path):
    flt, _ = make(100, 8, 4)
    new = tmp_path / "new.cuckoo"
    old_umask = os.umask(0o022)
    try:
        flt.save(new)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(os.stat(new).st_mode) == 0o644  # like open(path, "wb"), not mkstemp's 0600
    os.chmod(new, 0o640)
    flt.save(new)
    assert stat.S_IMODE(os.stat(new).st_mode) == 0o640  # an existing file keeps its mode


def test_to_bytes_and_save_while_other_threads_write(tmp_path):
    # The read lock makes every snapshot consistent (its checksum and item count verify), while a
    # writer thread keeps changing the filter between snapshots.
    flt = cuckoo.Filter(400_000, fingerprint_bits=16)
    stop = threading.Event()

    def writer():
        for i in range(0, 300_000, 1000):
            if stop.is_set():
                return
            flt.add_many(np.arange(i, i + 1000))
            flt.discard_many(np.arange(i, i + 500))

    t = threading.Thread(target=writer)
    t.start()
    try:
        for _ in range(20):
            back = cuckoo.Filter.from_bytes(flt.to_bytes())
            assert back.contains_many(np.arange(500, 1000)).all() or len(back) < 500
            flt.save(tmp_path / "f.cuckoo")
            cuckoo.Filter.load(tmp_path / "f.cuckoo")
    finally:
        stop.set()
        t.join()
    assert cuckoo.Filter.from_bytes(flt.to_bytes()) == flt


# ---- pickle and processes ------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", range(2, pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_uses_the_same_bytes(protocol):
    flt, _ = make(50_000, 14, 4)
    data = flt.to_bytes()
    blob = pickle.dumps(flt, protocol=protocol)
    if protocol >= 3:  # protocol 2 has no bytes opcode: it pickles bytes as latin-1 text
        assert data in blob  # the bytes are embedded as they are
        assert len(blob) - len(data) < 100
    back = pickle.loads(blob)
    assert type(back) is cuckoo.Filter and back == flt and not back.read_only


def test_pickle_rejects_corrupt_bytes():
    flt, _ = make(100, 8, 4)
    blob = bytearray(pickle.dumps(flt, protocol=5))
    i = blob.index(flt.to_bytes()) + 250
    blob[i] ^= 1
    with pytest.raises(cuckoo.FormatError):
        pickle.loads(bytes(blob))


def _in_worker(flt: cuckoo.Filter, keys: np.ndarray) -> "tuple[cuckoo.Filter, np.ndarray]":
    found = flt.contains_many(keys)
    flt.add("added in the worker")
    return flt, found


def test_multiprocessing_round_trip():
    flt, present = make(20_000, 12, 4)
    absent = keys_absent(20_000)
    ctx = multiprocessing.get_context("spawn")  # nothing inherited: the pickle must carry everything
    with ctx.Pool(2) as pool:
        results = pool.starmap(_in_worker, [(flt, present), (flt, absent)])
        copied = pool.map(copy.copy, [flt])[0]
        answers = pool.starmap(operator.contains, [(flt, int(present[0])), (flt, "added in the worker")])
    (back1, found1), (back2, found2) = results
    assert found1.all()
    assert np.array_equal(found2, flt.contains_many(absent))
    for back in (back1, back2):
        assert "added in the worker" in back and len(back) == len(flt) + 1
    assert copied == flt and answers[0]
    assert answers[1] == ("added in the worker" in flt)


# ---- errors ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good() -> bytes:
    flt, _ = make(300, 12, 4)
    return flt.to_bytes()


def fails(data: bytes, message: str) -> None:
    with pytest.raises(cuckoo.FormatError, match=message) as info:
        cuckoo.Filter.from_bytes(data)
    assert isinstance(info.value, cuckoo.CuckooError) and isinstance(info.value, ValueError)
    with pytest.raises(cuckoo.FormatError, match=message):
        cuckoo.Filter._from_view(data, True)


def test_error_bad_magic(good):
    fails(b"\x89PNG\r\n\x1a\n" + good[8:], "bad magic: not a serialized cuckoo filter .*89 50 4e 47")
    fails(b"hello", "bad magic")
    fails(b"", "truncated: no data")
    fails(good[:5], "truncated: 5 bytes")


def test_error_version(good):
    fails(good[:8] + (9).to_bytes(4, "little") + good[12:], r"unsupported format version 9 \(this build reads 1\.\.3\)")
    fails(good[:8] + bytes(4) + good[12:], "unsupported format version 0")


def test_error_truncated(good):
    h = ref.parse(good)
    fails(good[:100], "truncated: the header is 136 bytes, only 100 are present")
    fails(good[:150], "truncated: the header says stage 0 has")
    n = h["stages"][0]["table_length"]
    fails(good[:192 + 45], f"truncated: the header says stage 0 has {n} bytes of table at offset 192, 45 present")
    fails(good[:-1], "truncated: the header says")
    for cut in range(len(good)):
        with pytest.raises(cuckoo.FormatError):
            cuckoo.Filter.from_bytes(good[:cut])


def test_error_trailing(good):
    fails(good + b"\x00", "trailing data")
    fails(good + good, "trailing data")


def test_error_checksums(good):
    for i in list(range(8, 136)):  # every header byte after the magic (some fail earlier checks)
        bad = bytearray(good)
        bad[i] ^= 0x40
        with pytest.raises(cuckoo.FormatError):
            cuckoo.Filter.from_bytes(bad)
    bad = bytearray(good)
    bad[60] ^= 1  # the fixed header's reserved field: only the checksum can tell
    fails(bytes(bad), "checksum mismatch in the header")
    bad = bytearray(good)
    bad[200] ^= 1
    fails(bytes(bad), "checksum mismatch in the table of stage 0")


def test_error_padding(good):
    for i in (136, 191, len(good) - 1, len(good) - 16):
        bad = bytearray(good)
        bad[i] = 1
        fails(bytes(bad), f"byte {i} .* must be zero")


def test_growable_flag_marks_a_growable_filter(good):
    g = cuckoo.Filter.from_bytes(ref.rewrite(good, flags=1))
    assert g.growable and len(g.stages) == 1
    assert g == g.copy()


CORRUPT_FIELDS = [
    (dict(flags=4), "unsupported flags 4"),
    (dict(flags=2, reserved=3), "expansion 3 .a growable filter's"),  # expansion without growable
    (dict(flags=3, reserved=0), "expansion 0"),
    (dict(flags=3, reserved=2), "expansion 2 .*without the flag"),
    (dict(flags=3, reserved=5), "expansion 5"),
    (dict(flags=3, reserved=1 + (1 << 32)), "reserved field is not zero"),
    (dict(hash_algorithm=3), "unsupported hash algorithm 3"),
    (dict(hash_algorithm=0), "unsupported hash algorithm 0"),
    (dict(reserved=1), "reserved field is not zero"),
    (dict(stage_reserved=5), "reserved field of stage 0"),
    (dict(stage_count=2), "2 stages need a header of 200 bytes"),
    (dict(stage_count=0), "0 stages need a header"),
    (dict(header_length=200), "truncated|stages need|corrupt"),
    (dict(header_length=137), "header length 137"),
    (dict(header_length=2**32 - 1), "header length"),
    (dict(max_kicks=1_000_001), "invalid max_kicks 1000001"),
    (dict(capacity=0), "invalid capacity 0"),
    (dict(capacity=301), "capacity 301 differs"),
    (dict(stage_capacity=0), "capacity 0 is invalid"),
    (dict(stage_capacity=10**9), "capacity 1000000000 is invalid"),
    (dict(stage_bucket_size=3), "bucket size 3 is invalid"),
    (dict(stage_bucket_size=0), "bucket size 0 is invalid"),
    (dict(stage_bucket_size=16), "bucket size 16 is invalid"),
    (dict(stage_fingerprint_bits=3), "fingerprint width 3 bits is invalid"),
    (dict(stage_fingerprint_bits=33), "fingerprint width 33 bits is invalid"),
    (dict(stage_fingerprint_bits=2**32 - 1), "fingerprint width 4294967295 bits is invalid"),
    (dict(stage_bucket_count=0), "bucket count 0 is invalid"),
    (dict(stage_bucket_count=12), "bucket count 12 is invalid"),
    (dict(stage_bucket_count=2**32 + 8), "bucket count 4294967304 is invalid"),
    (dict(stage_bucket_count=2**64 - 8), "bucket count 18446744073709551608 is invalid"),
    (dict(stage_bucket_count=2**32), "table length .* does not match its parameters"),
    (dict(stage_fingerprint_bits=13), "table length .* does not match"),
    (dict(stage_table_length=0), "table length 0 does not match"),
    (dict(stage_table_length=2**64 - 1), "table length 18446744073709551615 does not match"),
    (dict(stage_item_count=10**9), "item count 1000000000 exceeds its"),
    (dict(stage_item_count=2**64 - 1), "item count 18446744073709551615 exceeds"),
    (dict(stage_item_count=5), "the header says 5 items, the table holds"),
    (dict(stage_table_offset=128), "table offset 128 is not 192"),
    (dict(stage_table_offset=2**64 - 64), "table offset"),
    (dict(file_length=10**12), "file length field says 1000000000000"),
    (dict(file_length=0), "file length field says 0"),
]


@pytest.mark.parametrize("fields, message", CORRUPT_FIELDS, ids=[str(c[0]) for c in CORRUPT_FIELDS])
def test_error_inconsistent_parameters(good, fields, message):
    # Checksums recomputed: only the parameter checks behind them can catch these.
    fails(ref.rewrite(good, **fields), message)


def test_error_table_inconsistent_with_count(good):
    (table,) = ref.tables(good)
    cleared = bytes(len(table))
    fails(ref.rewrite(good, table=cleared), "the header says .* items, the table holds 0")
    back = cuckoo.Filter.from_bytes(ref.rewrite(good, table=cleared, stage_item_count=0))
    assert len(back) == 0 and back.contains_many(np.arange(1000)).sum() == 0
    # A view without verify trusts the table (documented); with verify it checks it.
    data = ref.rewrite(good, table=cleared)
    assert len(cuckoo.Filter._from_view(data, False)) == len(cuckoo.Filter.from_bytes(good))
    with pytest.raises(cuckoo.FormatError, match="items, the table holds 0"):
        cuckoo.Filter._from_view(data, True)


def test_rewrite_round_trip_is_identity(good):
    assert ref.rewrite(good) == good  # the reference writer reproduces the core's bytes exactly


# ---- golden files: hash stability -----------------------------------------------------------------


# One golden file per hash algorithm: golden_v1 (XXH64, written by the first release) and
# golden_v1_xxh3 (XXH3, written when it became the default).
GOLDEN_FILES = {"xxh64": "golden_v1", "xxh3": "golden_v1_xxh3"}


def golden_keys(stem="golden_v1"):
    with open(os.path.join(DATA, f"{stem}_keys.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    out = []
    for k in doc["keys"]:
        key = bytes.fromhex(k["hex"]) if k["type"] == "bytes" else k["value"]
        out.append((key, k))
    return doc, out


def open_golden(stem, how):
    """The golden file's bytes, and the filter read from it by `how` (file, mmap or bytes)."""
    path = os.path.join(DATA, f"{stem}.cuckoo")
    with open(path, "rb") as fh:
        data = fh.read()
    flt = {"file": lambda: cuckoo.Filter.load(path), "mmap": lambda: cuckoo.Filter.load(path, mmap=True),
           "bytes": lambda: cuckoo.Filter.from_bytes(data)}[how]()
    return data, flt


# Every golden file, by its stem, and the format version it holds.
GOLDEN_VERSIONS = {"golden_v1": 1, "golden_v1_xxh3": 1, "golden_v2_semisort": 2}


@pytest.mark.parametrize("stem", sorted(GOLDEN_VERSIONS))
@pytest.mark.parametrize("how", ["file", "mmap", "bytes"])
def test_golden_files(how, stem):
    data, flt = open_golden(stem, how)
    doc, keys = golden_keys(stem)
    p = doc["parameters"]
    assert doc["format_version"] == GOLDEN_VERSIONS[stem] == data[8]
    assert flt.hash_algorithm == p.get("hash_algorithm", "xxh64")
    assert flt.semi_sort == p.get("semi_sort", False)
    assert (flt.capacity, flt.fingerprint_bits, flt.bucket_size, flt.max_kicks, flt.seed) == (
        p["capacity"], p["fingerprint_bits"], p["bucket_size"], p["max_kicks"], p["seed"])
    assert flt.bucket_count == doc["bucket_count"] and len(flt) == doc["items"]
    for key, k in keys:
        assert flt.bucket_indices(key) == (k["i1"], k["i2"], k["fp"]), key
        assert (key in flt) == k["contains"], key
        if k["added"]:
            assert k["contains"] and flt.count(key) >= 1
    as_list = [key for key, _ in keys]
    assert flt.contains_many(as_list).tolist() == [k["contains"] for _, k in keys]
    # This build writes each file's version (1 without semi-sorted stages, 2 with): re-serializing
    # reproduces the file byte for byte.
    assert flt.to_bytes() == data


# Growable filters that grew: golden_v1_grown was written by f0df2c2 (growth stages of their own
# geometry), golden_v3_grown by the nested growth stages of issue 27.
GOLDEN_GROWN = {"golden_v1_grown": 1, "golden_v3_grown": 3}


@pytest.mark.parametrize("stem", sorted(GOLDEN_GROWN))
@pytest.mark.parametrize("how", ["file", "mmap", "bytes"])
def test_golden_grown_files(how, stem):
    data, flt = open_golden(stem, how)
    doc, keys = golden_keys(stem)
    assert doc["format_version"] == GOLDEN_GROWN[stem] == data[8] and flt.growable
    assert [{k: st[k] for k in ("bucket_count", "fingerprint_bits", "capacity", "items")} for st in flt.stages] == doc["stages"]
    assert len(flt.stages) >= 2 and len(flt) == doc["items"]
    for key, k in keys:
        assert flt.bucket_indices(key) == (k["i1"], k["i2"], k["fp"]), key
        assert (key in flt) == k["contains"], key
    assert flt.contains_many([key for key, _ in keys]).tolist() == [k["contains"] for _, k in keys]
    assert flt.to_bytes() == data
    # Still a working filter: it grows further without losing a key, and deletes lose nothing
    # (every delete succeeds with nested stages; with the old stages one may be refused).
    g = flt.copy()
    added = [key for key, k in keys if k["added"]]
    g.add_many(range(10**6, 10**6 + 3000))
    assert g.contains_many(added).all() and g.contains_many(range(10**6, 10**6 + 3000)).all()
    deleted = g.discard_many(added)
    assert g.contains_many(range(10**6, 10**6 + 3000)).all()
    deleted_new = g.discard_many(range(10**6, 10**6 + 3000))
    refused = np.count_nonzero(~deleted) + np.count_nonzero(~deleted_new)
    if GOLDEN_GROWN[stem] == 3:
        assert refused == 0 and len(g) == 0
    else:  # refused only where a key matches in one of the old stages and another stage
        assert refused <= 60 and len(g) == refused


@pytest.mark.parametrize("hash_algorithm, anchor", [("xxh64", (23, 371)), ("xxh3", (4, 416))])
def test_golden_v1_hashes_recomputed_from_the_document(hash_algorithm, anchor):
    # The documented hash (XXH64 or XXH3-64 of the key bytes, index from the low 32 bits,
    # fingerprint from the high 32 bits, alternate by block reflection), computed in pure Python,
    # gives the same numbers.
    doc, keys = golden_keys(GOLDEN_FILES[hash_algorithm])
    p = doc["parameters"]
    for key, k in keys:
        assert ref.bucket_indices(key, p["seed"], doc["bucket_count"], p["fingerprint_bits"], hash_algorithm) == (
            k["i1"], k["i2"], k["fp"]), key
    by_key = {repr(key): k for key, k in keys}
    assert (by_key["0"]["i1"], by_key["0"]["fp"]) == anchor  # spelled out: a visible anchor


@pytest.mark.parametrize("hash_algorithm", sorted(GOLDEN_FILES))
def test_golden_v1_fields(hash_algorithm):
    stem = GOLDEN_FILES[hash_algorithm]
    with open(os.path.join(DATA, f"{stem}.cuckoo"), "rb") as fh:
        data = fh.read()
    h = ref.parse(data)
    assert h["hash_algorithm"] == ref.HASH_ALGORITHMS[hash_algorithm]
    assert h["header_checksum"] == ref.xxh64(data[:128])
    assert h["stages"][0]["table_checksum"] == ref.xxh64(ref.tables(data)[0])
    doc, _ = golden_keys(stem)
    assert h["seed"] == doc["parameters"]["seed"] and h["stages"][0]["item_count"] == doc["items"]


def test_golden_v2_semisort_table_decoded_from_the_document():
    """The reference reading of a semi-sorted table (tests/_format_ref.py, from docs/format.md)
    finds every added key's fingerprint in one of its buckets, and as many fingerprints as items."""
    with open(os.path.join(DATA, "golden_v2_semisort.cuckoo"), "rb") as fh:
        data = fh.read()
    h = ref.parse(data)
    assert h["version"] == 2 and h["stages"][0]["reserved"] == 1  # stage layout 1: semi-sorted
    doc, keys = golden_keys("golden_v2_semisort")
    buckets = ref.semi_sorted_buckets(ref.tables(data)[0], doc["parameters"]["fingerprint_bits"])
    assert len(buckets) == doc["bucket_count"]
    assert all(b == sorted(b) for b in buckets)
    assert sum(fp != 0 for b in buckets for fp in b) == doc["items"]
    for key, k in keys:
        if k["added"]:
            assert k["fp"] in buckets[k["i1"]] or k["fp"] in buckets[k["i2"]], key


def test_golden_int_and_bytes_keys_agree():
    flt = cuckoo.Filter.load(os.path.join(DATA, "golden_v1.cuckoo"))
    assert flt.bucket_indices(0) == flt.bucket_indices(b"\x00" * 8)
    assert flt.bucket_indices(-1) == flt.bucket_indices(2**64 - 1) == flt.bucket_indices(b"\xff" * 8)
    assert flt.bucket_indices("héllo") == flt.bucket_indices("héllo".encode())
    assert sys.byteorder in ("little", "big")  # nothing here depends on it
