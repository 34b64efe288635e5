"""cuckoo.Store with damage in the middle of its log (issue 47): a read that meets damage makes the
store refuse writes with a FormatError pointing at repair=True; repair=True ignores the index
snapshot, reads the whole log, keeps every intact record and leaves a store that opens cleanly
(docs/store.md, "Repairing deliberately")."""

from __future__ import annotations

import os
import random
import warnings

import pytest
from hypothesis import given, settings, strategies as st

import cuckoo

HEADER = 64
REC = 32  # a record of a 4-byte key and a 12-byte value: 12 + 4 + 12 bytes, padded to 32


def key(i: int) -> bytes:
    return b"k%03d" % i


def value(i: int, gen: int = 0) -> bytes:
    return b"v%02d-%08d" % (gen, i)  # 12 bytes


def make(path, n: int = 10) -> dict:
    """A closed store of n 32-byte records (offset 64 + 32 * i), synced, with its snapshot."""
    with cuckoo.Store(path) as s:
        for i in range(n):
            s[key(i)] = value(i)
    assert os.path.getsize(path) == HEADER + REC * n
    assert os.path.exists(f"{path}.idx")
    return {key(i): value(i) for i in range(n)}


def read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def damage(path, offset: int, data: bytes = b"\xff") -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        old = f.read(len(data))
        f.seek(offset)
        f.write(bytes(a ^ b for a, b in zip(old, data)) if data == b"\xff" else data)


def test_a_read_that_meets_damage_refuses_writes_until_repaired(tmp_path):
    path = tmp_path / "s.ckv"
    make(path)
    damage(path, HEADER + REC * 4 + 20)  # in the value of record 4; the snapshot still matches
    s = cuckoo.Store(path)
    assert s.stats()["snapshot_used"]
    assert s[key(3)] == value(3)
    with pytest.raises(cuckoo.FormatError, match=r"corrupt at offset 192.*repair=True"):
        s[key(4)]
    for write in (lambda: s.__setitem__(b"new", b"x"), lambda: s.put_many([b"a", b"b"], [b"1", b"2"]),
                  lambda: s.__delitem__(key(1)), lambda: s.add_unique_many([b"z"]), lambda: s.compact()):
        with pytest.raises(cuckoo.FormatError, match="refuses writes.*repair=True"):
            write()
    assert s[key(5)] == value(5)  # reads of intact records still work
    s.close()
    assert os.path.getsize(path) == HEADER + REC * 10  # nothing was written
    # What the program saw is what a reopen finds: the damage, now at open (the snapshot that hid
    # it is gone), for writers and readers.
    with pytest.raises(cuckoo.FormatError, match=r"corrupt at offset 192.*repair=True"):
        cuckoo.Store(path)
    with pytest.raises(cuckoo.FormatError, match="corrupt at offset 192"):
        cuckoo.Store(path, readonly=True)


def test_iteration_meets_damage(tmp_path):
    path = tmp_path / "s.ckv"
    make(path)
    damage(path, HEADER + REC * 2 + 5)  # in the key length of record 2
    with cuckoo.Store(path) as s:
        with pytest.raises(cuckoo.FormatError, match="repair=True"):
            list(s.items())
        with pytest.raises(cuckoo.FormatError, match="repair=True"):
            s[b"x"] = b"y"


@pytest.mark.parametrize("with_snapshot", [True, False])
def test_repair_keeps_every_intact_record(tmp_path, with_snapshot):
    path = tmp_path / "s.ckv"
    expected = make(path, 20)
    if not with_snapshot:
        os.unlink(f"{path}.idx")
    damage(path, HEADER + REC * 3 + 14)  # record 3's key
    damage(path, HEADER + REC * 9 + 4)  # record 9's key length
    damage(path, HEADER + REC * 10, b"\0" * (REC * 2))  # records 10 and 11 zeroed
    with pytest.warns(cuckoo.RecoveryWarning, match=r"128 bytes .* in 2 stretch\(es\), the first at offset 160"):
        s = cuckoo.Store(path, repair=True)
    for i in (3, 9, 10, 11):
        del expected[key(i)]
    assert dict(s.items()) == expected
    assert key(3) not in s
    s[b"after"] = b"repair"  # writes work
    del s[key(0)]
    s.close()
    expected[b"after"] = b"repair"
    del expected[key(0)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # opens cleanly: no RecoveryWarning, no FormatError
        with cuckoo.Store(path) as s:
            assert s.stats()["snapshot_used"]
            assert dict(s.items()) == expected
        os.unlink(f"{path}.idx")
        with cuckoo.Store(path, readonly=True) as s:
            assert s.stats()["recovered_bytes"] == 0
            assert dict(s.items()) == expected


def test_repair_of_a_lost_tombstone_brings_the_key_back(tmp_path):
    """What repair loses: a damaged record's write. A lost put leaves the key's previous value
    (or no key); a lost delete leaves the deleted key with its last value (docs/store.md)."""
    path = tmp_path / "s.ckv"
    with cuckoo.Store(path) as s:
        s[b"gone"] = b"old-value"  # at 64: 12 + 4 + 9 bytes -> 32
        s[b"kept"] = b"first-val"  # at 96
        s[b"kept"] = b"secondval"  # at 128: damaged below
        del s[b"gone"]  # tombstone at 160: 12 + 4 -> 16 bytes, damaged below
        s[b"tail"] = b"x"
    damage(path, 128 + 20)
    damage(path, 160 + 13)
    with pytest.warns(cuckoo.RecoveryWarning, match="in 1 stretch"):
        with cuckoo.Store(path, repair=True) as s:
            assert dict(s.items()) == {b"gone": b"old-value", b"kept": b"first-val", b"tail": b"x"}


def test_readonly_repair_reads_around_the_damage_and_writes_nothing(tmp_path):
    path = tmp_path / "s.ckv"
    expected = make(path)
    damage(path, HEADER + REC * 5 + 16)
    before = read(path), read(f"{path}.idx")
    with pytest.warns(cuckoo.RecoveryWarning, match="ignored"):
        with cuckoo.Store(path, readonly=True, repair=True) as s:
            del expected[key(5)]
            assert dict(s.items()) == expected
    assert (read(path), read(f"{path}.idx")) == before


def test_repair_of_a_damaged_tail_after_the_synced_end_still_cuts_it(tmp_path):
    path = tmp_path / "s.ckv"
    expected = make(path, 6)
    with open(path, "ab") as f:
        f.write(b"\x07" * 40)  # a torn append, after the synced end
    with pytest.warns(cuckoo.RecoveryWarning, match="40 bytes"):
        with cuckoo.Store(path, repair=True) as s:
            assert dict(s.items()) == expected
    assert os.path.getsize(path) == HEADER + REC * 6


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), flips=st.integers(1, 12))
def test_random_damage_repair_never_answers_wrong(tmp_path_factory, seed, flips):
    """Random bytes of a log flipped: repair opens it, every answer is a value that was written
    for that key (no false "found"), every key whose last record is untouched keeps that value,
    and the repaired store reopens cleanly with the same contents."""
    rng = random.Random(seed)
    path = tmp_path_factory.mktemp("r") / "s.ckv"
    written: dict[bytes, list[bytes]] = {}
    last_at: dict[bytes, tuple[int, int]] = {}
    with cuckoo.Store(path) as s:
        pos = HEADER
        for n in range(60):
            k = b"key%d" % rng.randrange(25)
            v = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 30)))
            s[k] = v
            size = (12 + len(k) + len(v) + 7) // 8 * 8
            written.setdefault(k, []).append(v)
            last_at[k] = (pos, pos + size)
            pos += size
    end = os.path.getsize(path)
    hit = set()
    with open(path, "r+b") as f:
        for _ in range(flips):
            at = rng.randrange(HEADER, end)
            hit.add(at)
            f.seek(at)
            b = f.read(1)[0]
            f.seek(at)
            f.write(bytes([b ^ (1 << rng.randrange(8))]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cuckoo.RecoveryWarning)
        with cuckoo.Store(path, repair=True) as s:
            got = dict(s.items())
            s[b"new"] = b"write works"
    for k, v in got.items():
        assert v in written[k]
    for k, (lo, hi) in last_at.items():
        if not any(lo <= h < hi for h in hit):
            assert got[k] == written[k][-1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with cuckoo.Store(path) as s:
            assert dict(s.items()) == {**got, b"new": b"write works"}
