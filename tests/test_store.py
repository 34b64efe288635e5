"""cuckoo.Store: exactness against a dict model (scalar and bulk paths, short tags so that tag
collisions and log verification happen all the time), persistence, recovery, locking, inputs."""

from __future__ import annotations

import os
import pickle
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import cuckoo


def kb(key) -> bytes:
    """The bytes a store keeps for a key."""
    if isinstance(key, int):
        return struct.pack("<Q", key % 2**64)
    if isinstance(key, str):
        return key.encode()
    return bytes(key)


# ---- basics ----------------------------------------------------------------------------------

def test_mapping_basics(tmp_path):
    with cuckoo.Store(tmp_path / "s.ckv") as s:
        s["alice"] = b"admin"
        s[b"bob"] = "dev"  # str values are stored as UTF-8
        s[7] = b"seven"
        assert s["alice"] == b"admin" and s[b"alice"] == b"admin"  # str and bytes: one key
        assert s["bob"] == b"dev"
        assert s[7] == b"seven" and s[struct.pack("<Q", 7)] == b"seven"  # int: its 8-byte word
        assert len(s) == 3 and "alice" in s and "carol" not in s
        assert s.get("carol") is None and s.get("carol", b"x") == b"x"
        with pytest.raises(KeyError):
            s["carol"]
        s["alice"] = b"root"  # overwrite moves the key to the end (log order)
        assert list(s) == [b"bob", struct.pack("<Q", 7), b"alice"]
        assert dict(s.items()) == {b"bob": b"dev", struct.pack("<Q", 7): b"seven", b"alice": b"root"}
        del s["bob"]
        with pytest.raises(KeyError):
            del s["bob"]
        assert s.discard("nobody") is False and s.discard(7) is True
        assert list(s.keys()) == [b"alice"] and list(s.values()) == [b"root"]
        assert s.pop("alice") == b"root" and len(s) == 0
        s.update({"x": b"1", "y": b"2"}, z="3")
        assert s.setdefault("x", b"9") == b"1" and s == {b"x": b"1", b"y": b"2", b"z": b"3"}
        assert list(s.values()) == [b"1", b"2", b"3"] and (b"y", b"2") in s.items()
        s.clear()
        assert len(s) == 0 and list(s) == []
        s[b""] = b""  # the empty key and value are keys and values like any other
        assert s[b""] == b"" and b"" in s
    assert s.closed
    with pytest.raises(ValueError, match="closed"):
        s["x"]
    s.close()  # idempotent


def test_bad_keys_and_values_raise_and_change_nothing():
    s = cuckoo.Store()
    s["k"] = b"v"
    for bad in (None, 1.5, object(), [1]):
        with pytest.raises(TypeError):
            s[bad] = b"v"
        with pytest.raises(TypeError):
            s.get(bad)
    with pytest.raises(ValueError):
        s[2**64] = b"v"
    for bad in (None, 1, 1.5, ["x"]):
        with pytest.raises(TypeError, match="bytes or str"):
            s["k"] = bad
    with pytest.raises(TypeError):
        s.put_many(["a", None, "b"])
    for bad in ([True], ["a", False]):  # bool keys are refused, as a Filter refuses them
        with pytest.raises(TypeError, match="bool keys"):
            s.add_unique_many(bad)
    with pytest.raises(TypeError, match="bool keys"):
        s[True] = b"v"
    with pytest.raises(ValueError, match="2 keys but 1 values"):
        s.put_many(["a", "b"], [b"x"])
    assert dict(s.items()) == {b"k": b"v"}
    with pytest.raises(TypeError, match="pickled"):
        pickle.dumps(s)


def test_anonymous_store_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    s = cuckoo.Store()
    s.put_many([f"k{i}" for i in range(1000)])
    assert len(s) == 1000 and s.path is None
    assert os.listdir(tmp_path) == []  # unlinked at once: nothing to clean up after a crash
    with pytest.raises(ValueError):
        s.compact()
    s.close()


# ---- the dict model --------------------------------------------------------------------------

KEYS = st.one_of(st.integers(0, 40), st.binary(max_size=6).map(lambda b: b"b" + b),
                 st.text(alphabet="abcxyz", max_size=4))
VALUES = st.binary(max_size=12)


class StoreMachine(RuleBasedStateMachine):
    """Every operation, scalar and bulk, against a dict whose order is the log's (an overwritten
    key moves to the end). Closing and reopening, compaction and sync along the way."""

    def __init__(self):
        super().__init__()
        self.model: dict = {}
        self.store = None

    @initialize(tag_bits=st.sampled_from([16, 3, 1]))
    def open_store(self, tag_bits):
        import tempfile
        self.dir = tempfile.mkdtemp(prefix="cuckoo-store-machine-")
        self.path = os.path.join(self.dir, "m.ckv")
        self.tag_bits = tag_bits
        self.store = cuckoo.Store(self.path, tag_bits=tag_bits, seed=1)

    def teardown(self):
        if self.store is not None:
            self.store.close()
            import shutil
            shutil.rmtree(self.dir, ignore_errors=True)

    def _set(self, k, v):
        self.model.pop(kb(k), None)
        self.model[kb(k)] = bytes(v)

    @rule(k=KEYS, v=VALUES)
    def put(self, k, v):
        self.store[k] = v
        self._set(k, v)

    @rule(k=KEYS)
    def get(self, k):
        assert self.store.get(k) == self.model.get(kb(k))
        assert (k in self.store) == (kb(k) in self.model)

    @rule(k=KEYS)
    def delete(self, k):
        assert self.store.discard(k) == (self.model.pop(kb(k), None) is not None)

    @rule(ks=st.lists(KEYS, max_size=30), data=st.data())
    def put_many(self, ks, data):
        vs = data.draw(st.lists(VALUES, min_size=len(ks), max_size=len(ks)))
        self.store.put_many(ks, vs)
        for k, v in zip(ks, vs):
            self._set(k, v)

    @rule(ks=st.lists(KEYS, max_size=30))
    def add_unique_many(self, ks):
        got = self.store.add_unique_many(ks).tolist()
        want = []
        for k in ks:
            new = kb(k) not in self.model
            want.append(new)
            if new:
                self.model[kb(k)] = b""
        assert got == want

    @rule(ks=st.lists(KEYS, max_size=30))
    def discard_many(self, ks):
        got = self.store.discard_many(ks).tolist()
        assert got == [self.model.pop(kb(k), None) is not None for k in ks]

    @rule(ks=st.lists(KEYS, max_size=30))
    def read_many(self, ks):
        assert self.store.contains_many(ks).tolist() == [kb(k) in self.model for k in ks]
        assert self.store.get_many(ks) == [self.model.get(kb(k)) for k in ks]

    @rule(ks=st.lists(KEYS, max_size=30), dks=st.lists(KEYS, max_size=10), commit=st.booleans(), data=st.data())
    def batch(self, ks, dks, commit, data):
        """A batch of writes, committed or rolled back by an exception: rolled back, the store
        is as before it, down to the order of its keys."""
        vs = data.draw(st.lists(VALUES, min_size=len(ks), max_size=len(ks)))
        before = dict(self.model)
        try:
            with self.store.batch():
                self.store.put_many(ks, vs)
                for k, v in zip(ks, vs):
                    self._set(k, v)
                assert self.store.discard_many(dks).tolist() == [self.model.pop(kb(k), None) is not None for k in dks]
                assert list(self.store.items()) == list(self.model.items())
                if not commit:
                    raise LookupError
        except LookupError:
            self.model = before
        assert list(self.store.items()) == list(self.model.items())

    @rule()
    def sync(self):
        self.store.sync()

    @rule()
    def compact(self):
        self.store.compact()
        assert self.store.stats()["dead_bytes"] == 0

    @rule(clean=st.booleans())
    def reopen(self, clean):
        if clean:
            self.store.close()
        else:  # as after a crash of this process: what was written reaches the file, no snapshot
            self.store.sync()
            _drop_without_close(self.store)
        self.store = cuckoo.Store(self.path)
        assert self.store.tag_bits == self.tag_bits

    @invariant()
    def agrees(self):
        if self.store is None:
            return
        assert len(self.store) == len(self.model)
        assert list(self.store.items()) == list(self.model.items())


TestStoreAgainstDict = StoreMachine.TestCase
TestStoreAgainstDict.settings = settings(max_examples=60, stateful_step_count=40, deadline=None,
                                         suppress_health_check=[HealthCheck.too_slow])


def test_no_false_positive_among_a_million_absent_keys():
    s = cuckoo.Store(seed=3)
    present = np.arange(1_000_000, dtype=np.uint64)
    s.put_many(present)
    absent = np.arange(1_000_000, 2_000_000, dtype=np.uint64)
    assert not s.contains_many(absent).any()
    assert s.contains_many(present).all()
    st_ = s.stats()
    assert st_["live_keys"] == 1_000_000
    assert st_["index_bytes_per_key"] <= 10.0
    # absent keys cost a log read only on a tag match: about 8 / 2**16 of lookups
    assert st_["log_reads"] < 1_000_000 + 2_000


def test_reserve_skips_growth_and_keeps_every_key():
    s = cuckoo.Store()
    s.put_many(np.arange(1000, dtype=np.uint64))
    grows = s.stats()["grows"]
    s.reserve(200_000)  # rebuilt once, now, from the log
    assert s.stats()["grows"] == grows + 1 and s.contains_many(np.arange(1000, dtype=np.uint64)).all()
    s.put_many(np.arange(1000, 200_000, dtype=np.uint64))
    st_ = s.stats()
    assert st_["grows"] == grows + 1 and len(s) == 200_000 and st_["index_bytes_per_key"] <= 6.5
    assert s.contains_many(np.arange(200_000, dtype=np.uint64)).all()
    with pytest.raises(TypeError):
        s.reserve(-1)


def test_short_tags_verify_every_match():
    s = cuckoo.Store(tag_bits=1)  # every slot's tag matches: every lookup reads the log
    keys = [f"key{i}" for i in range(3000)]
    s.put_many(keys, [k.encode() * 2 for k in keys])
    assert s.contains_many([f"key{i}" for i in range(3000, 6000)]).sum() == 0
    assert s.get_many(keys[:5]) == [k.encode() * 2 for k in keys[:5]]
    assert s.stats()["log_reads_per_lookup"] > 1


# ---- bulk inputs -----------------------------------------------------------------------------

def test_every_input_kind_gives_the_scalar_answers():
    pa = pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    words = ["apple", "pear", "", "plum", "apple", "kiwi-" * 20, "é"]
    ints = np.array([0, 1, 2**63, 5, 1, 7], dtype=np.uint64)
    s = cuckoo.Store()
    s.put_many(words[:3])
    s.put_many(ints[:3])
    expected_w = [w in s for w in words]
    expected_i = [int(i) in s for i in ints]
    assert expected_w == [True, True, True, False, True, False, False]
    for form in (words, tuple(words), iter(words), np.array(words), np.array([w.encode() for w in words]),
                 pa.array(words), pa.chunked_array([words[:2], words[2:]]), pd.Series(words),
                 pa.array(words, type=pa.large_string()), np.array(words, dtype=object)):
        assert s.contains_many(form).tolist() == expected_w, type(form)
    for form in (ints, ints.astype(np.int64), ints.astype(">u8"), [int(i) for i in ints], ints[::-1][::-1],
                 pa.array(ints)):
        assert s.contains_many(form).tolist() == expected_i, type(form)
    small = np.array([1, 2, -1], dtype=np.int8)  # sign-extended to 64 bits, as for the filter
    s.put_many(small)
    assert -1 in s and s.contains_many([-1, 2**64 - 1]).tolist() == [True, True]


def test_get_many_as_list_and_arrow():
    pa = pytest.importorskip("pyarrow")
    s = cuckoo.Store()
    s.put_many(["a", "b", "c"], [b"1", b"", b"333"])
    assert s.get_many(["c", "x", "a", "b"]) == [b"333", None, b"1", b""]
    arr = s.get_many(["c", "x", "a", "b"], format="arrow")
    assert arr.type == pa.large_binary() and arr.to_pylist() == [b"333", None, b"1", b""]
    with pytest.raises(ValueError):
        s.get_many(["a"], format="dict")


def test_put_many_values_of_every_kind():
    pa = pytest.importorskip("pyarrow")
    s = cuckoo.Store()
    s.put_many(["a", "b"], np.array([b"x1", b"y22"]))
    s.put_many(["c", "d"], pa.array(["ü", "v"]))
    s.put_many(["e", "f"], ["w", b"z"])
    assert s.get_many(list("abcdef")) == [b"x1", b"y22", "ü".encode(), b"v", b"w", b"z"]


def test_batches_apply_in_order_like_scalar_calls():
    s = cuckoo.Store()
    assert s.add_unique_many(["a", "b", "a", "c", "b"]).tolist() == [True, True, False, True, False]
    s.put_many(["k", "k", "k"], [b"1", b"2", b"3"])
    assert s["k"] == b"3"
    assert s.discard_many(["k", "k", "a", "zz"]).tolist() == [True, False, True, False]
    assert sorted(s) == [b"b", b"c"]


def test_iteration_sees_a_change_as_an_error():
    s = cuckoo.Store()
    s.put_many([f"k{i}" for i in range(10_000)])
    it = iter(s)
    next(it)
    s["new"] = b"v"
    with pytest.raises(RuntimeError, match="changed during iteration"):
        list(it)


# ---- persistence -----------------------------------------------------------------------------

def test_reopen_uses_the_snapshot_and_replays_what_follows(tmp_path):
    p = tmp_path / "s.ckv"
    with cuckoo.Store(p, seed=5) as s:
        s.put_many([f"k{i}" for i in range(5000)], [b"v%d" % i for i in range(5000)])
        del s["k0"]
    assert (tmp_path / "s.ckv.idx").exists()
    s = cuckoo.Store(p)
    st_ = s.stats()
    assert st_["snapshot_used"] and st_["replayed_records"] == 0 and s.seed == 5
    assert len(s) == 4999 and s["k4999"] == b"v4999" and "k0" not in s
    s["late"] = b"x"
    s.sync()
    _drop_without_close(s)  # the snapshot is now older than the log
    s = cuckoo.Store(p)
    assert s.stats()["snapshot_used"] and s.stats()["replayed_records"] == 1
    assert s["late"] == b"x" and len(s) == 5000
    s.close()
    os.unlink(tmp_path / "s.ckv.idx")
    s = cuckoo.Store(p)  # no snapshot: the whole log is replayed
    assert not s.stats()["snapshot_used"] and s.stats()["replayed_records"] == 5002
    assert len(s) == 5000
    s.close()


def test_corrupt_snapshot_is_ignored_not_trusted(tmp_path):
    p = tmp_path / "s.ckv"
    with cuckoo.Store(p) as s:
        s.put_many([f"k{i}" for i in range(3000)])
    idx = bytearray((tmp_path / "s.ckv.idx").read_bytes())
    for at in (0, 20, 40, 100, len(idx) - 1):
        bad = bytearray(idx)
        bad[at] ^= 0x40
        (tmp_path / "s.ckv.idx").write_bytes(bytes(bad))
        s = cuckoo.Store(p)
        assert not s.stats()["snapshot_used"] and s.stats()["snapshot_note"]
        assert len(s) == 3000 and s.contains_many([f"k{i}" for i in range(3000)]).all()
        s._s.close()  # no new snapshot: keep testing the damaged one
    (tmp_path / "s.ckv.idx").write_bytes(bytes(idx[:50]))
    s = cuckoo.Store(p)
    assert not s.stats()["snapshot_used"] and len(s) == 3000
    s.close()


def test_compact_keeps_live_records_and_order(tmp_path):
    p = tmp_path / "s.ckv"
    s = cuckoo.Store(p)
    for r in range(5):
        s.put_many([f"k{i}" for i in range(1000)], [b"r%d" % r] * 1000)
    s.discard_many([f"k{i}" for i in range(0, 1000, 2)])
    before = list(s.items())
    st_ = s.stats()
    assert st_["dead_bytes"] > 4 * st_["live_bytes"]
    s.compact()
    assert list(s.items()) == before and s.stats()["dead_bytes"] == 0
    assert os.path.getsize(p) == 64 + s.stats()["live_bytes"]
    s.close()
    s = cuckoo.Store(p)
    assert list(s.items()) == before and s.stats()["snapshot_used"]
    s.close()


def test_one_writer_many_readers(tmp_path):
    p = tmp_path / "s.ckv"
    w = cuckoo.Store(p)
    w["a"] = b"1"
    w.sync()
    with pytest.raises(cuckoo.StoreLockedError, match="one writer"):
        cuckoo.Store(p)
    assert issubclass(cuckoo.StoreLockedError, (cuckoo.CuckooError, OSError))
    r = cuckoo.Store(p, readonly=True)
    assert r["a"] == b"1" and r.readonly
    with pytest.raises(cuckoo.ReadOnlyError):
        r["b"] = b"2"
    with pytest.raises(cuckoo.ReadOnlyError):
        r.put_many(["b"])
    w.close()
    cuckoo.Store(p).close()  # the lock went with close()


def test_not_a_store_is_a_format_error(tmp_path):
    p = tmp_path / "junk"
    p.write_bytes(b"not a store at all" * 10)
    with pytest.raises(cuckoo.FormatError, match="not a cuckoo store"):
        cuckoo.Store(p)
    with pytest.raises(ValueError, match="not a regular file"):
        cuckoo.Store(tmp_path)
    with pytest.raises(ValueError, match="not a regular file"):
        cuckoo.Store("/dev/null")
    with pytest.raises(FileNotFoundError):
        cuckoo.Store(tmp_path / "missing" / "s.ckv")


def _drop_without_close(store):
    """What a crash after the last write leaves: the records reach the file (the C++ object
    flushes when destroyed) but no sync marks them durable and no snapshot is written."""
    import gc
    store._s = None
    gc.collect()


def _last_record_setup(tmp_path):
    p = tmp_path / "s.ckv"
    s = cuckoo.Store(p)
    s.put_many([f"k{i}" for i in range(100)], [b"v%d" % i for i in range(100)])
    s.sync()
    synced = os.path.getsize(p)
    s["last"] = b"the last value"
    _drop_without_close(s)
    assert not os.path.exists(str(p) + ".idx")
    return p, p.read_bytes(), synced


def test_torn_last_record_is_cut_and_reported(tmp_path):
    p, data, synced = _last_record_setup(tmp_path)
    for cut in (synced + 1, synced + 11, len(data) - 1):
        p.write_bytes(data[:cut])
        with pytest.warns(cuckoo.RecoveryWarning, match=f"offset {synced}"):
            s = cuckoo.Store(p)
        assert len(s) == 100 and "last" not in s and s["k99"] == b"v99"
        s["again"] = b"ok"
        s.close()
        assert os.path.getsize(p) > synced


def test_bit_flip_in_last_record_is_cut(tmp_path):
    p, data, synced = _last_record_setup(tmp_path)
    bad = bytearray(data)
    bad[synced + 14] ^= 1  # a key byte of the last record (written after the last sync)
    p.write_bytes(bytes(bad))
    with pytest.warns(cuckoo.RecoveryWarning):
        s = cuckoo.Store(p, readonly=True)  # a reader ignores the tail
    assert len(s) == 100
    s.close()
    assert os.path.getsize(p) == len(data)  # a reader never cuts


def test_damage_before_the_synced_end_is_an_error_with_its_offset(tmp_path):
    p = tmp_path / "s.ckv"
    with cuckoo.Store(p) as s:
        s.put_many([f"k{i}" for i in range(100)])
    os.unlink(str(p) + ".idx")
    bad = bytearray(p.read_bytes())
    bad[64 + 13] ^= 1
    p.write_bytes(bytes(bad))
    with pytest.raises(cuckoo.FormatError, match="corrupt at offset 64"):
        cuckoo.Store(p)


def test_threads_read_while_one_writes():
    """Readers (bulk and scalar, GIL released in bulk) and a writer share one store: every key
    a reader saw written stays found, and the end state is the model's."""
    import threading
    s = cuckoo.Store()
    base = np.arange(50_000, dtype=np.uint64)
    s.put_many(base)
    errors = []
    stop = threading.Event()

    def reader():
        try:
            while not stop.is_set():
                assert s.contains_many(base).all()
                assert 7 in s and s.get(12) == b""
                n = len(s)
                assert n >= 50_000
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for r in range(20):
            more = np.arange(100_000 + r * 10_000, 100_000 + (r + 1) * 10_000, dtype=np.uint64)
            s.put_many(more, [b"v"] * len(more))
            s.discard_many(more[::2])
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[0]
    assert len(s) == 50_000 + 20 * 5_000


def test_random_damage_never_crashes(tmp_path):
    """Random byte flips and truncations of the log and the snapshot: opening gives a store that
    answers (a recovered prefix, or the log without its snapshot) or raises FormatError; never a
    crash, never a wrong value."""
    import random
    import warnings
    rng = random.Random(7)
    p = tmp_path / "s.ckv"
    with cuckoo.Store(p, seed=9) as s:
        s.put_many([f"k{i}" for i in range(300)], [b"v%d" % i for i in range(300)])
        s.discard_many([f"k{i}" for i in range(0, 300, 3)])
    log, idx = p.read_bytes(), (tmp_path / "s.ckv.idx").read_bytes()
    outcomes = {"opened": 0, "format_error": 0}
    for trial in range(150):
        damaged_log, damaged_idx = bytearray(log), bytearray(idx)
        target = damaged_log if trial % 2 else damaged_idx
        for _ in range(rng.randint(1, 4)):
            target[rng.randrange(len(target))] ^= 1 << rng.randrange(8)
        if trial % 5 == 0:
            del target[rng.randrange(len(target)):]
        p.write_bytes(bytes(damaged_log))
        (tmp_path / "s.ckv.idx").write_bytes(bytes(damaged_idx))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", cuckoo.RecoveryWarning)
                s = cuckoo.Store(p, readonly=True)
        except cuckoo.FormatError:
            outcomes["format_error"] += 1
            continue
        outcomes["opened"] += 1
        try:
            for k, v in s.items():  # whatever survived is right ...
                assert v == b"v" + k[1:]
            assert len(s.get_many([f"k{i}" for i in range(300)])) == 300
        except cuckoo.FormatError as exc:  # ... or, damaged under a valid snapshot, reported
            assert "corrupt at offset" in str(exc)
            outcomes["read_error"] = outcomes.get("read_error", 0) + 1
        s.close()
    assert outcomes["opened"] and outcomes["format_error"], outcomes


def test_golden_store_file_reads_the_same_forever(tmp_path):
    """tests/data/golden_store_v1.ckv (format version 1) reads with and without its snapshot, and
    today's writer still writes it byte for byte (a change of format must bump the version)."""
    import shutil
    import sys
    data = os.path.join(os.path.dirname(__file__), "data")
    sys.path.insert(0, data)
    try:
        import make_golden_store as golden
    finally:
        sys.path.remove(data)
    for ext in ("", ".idx"):
        shutil.copy(os.path.join(data, "golden_store_v1.ckv" + ext), tmp_path / ("g.ckv" + ext))
    s = cuckoo.Store(tmp_path / "g.ckv", readonly=True)
    assert s.stats()["snapshot_used"] and s.seed == 0x5EED
    assert dict(s.items()) == golden.expected() and len(s) == 101
    assert s[3] == b"int-3" and s["é"] == "ü".encode() and "k95" not in s
    s.close()
    os.unlink(tmp_path / "g.ckv.idx")
    s = cuckoo.Store(tmp_path / "g.ckv", readonly=True)
    assert not s.stats()["snapshot_used"] and dict(s.items()) == golden.expected()
    s.close()
    golden.write(str(tmp_path / "new.ckv"))
    for ext in ("", ".idx"):
        with open(os.path.join(data, "golden_store_v1.ckv" + ext), "rb") as a, open(tmp_path / ("new.ckv" + ext), "rb") as b:
            assert a.read() == b.read(), "the writer no longer writes format version 1 byte for byte"


def test_empty_keys_and_values_on_every_path():
    """The empty key has no storage in some inputs (an empty bytes object, an owned arena of no
    bytes): every path must take it (UBSan caught memcmp(NULL, ..., 0) here)."""
    s = cuckoo.Store()
    assert s.add_unique_many([b"", "", b"x"]).tolist() == [True, False, True]
    s.put_many([b""], [b""])
    assert s.contains_many(np.array([b""], dtype="S1")).tolist() == [True]
    assert s.get_many([""]) == [b""] and s[b""] == b""
    assert s.discard_many([b"", b""]).tolist() == [True, False] and len(s) == 1


def test_keys_sharing_one_bucket_pair_at_every_size_are_all_kept(tmp_path):
    """Nothing is lost when an insert finds no room: 8-byte keys crafted (closed-form XXH3
    inverse, seed 0) to share their low 32 hash bits and their tag fall into one bucket pair for
    every index size, so growth cannot separate them. All but 8 go to the stash; every one stays
    found, by scalar and bulk calls, after deletes, and through the snapshot and a log replay."""
    from _xxh3_inverse import keys_with_hash
    his = np.arange(0x5EED0000, 0x5EED0000 + 300, dtype=np.uint64)
    tags = np.uint64(1) + (((his << np.uint64(16)) - his) >> np.uint64(32))
    his = his[tags == tags[0]]
    keys = keys_with_hash((his << np.uint64(32)) | np.uint64(0x1234567), 0)
    assert len(keys) > 200
    path = tmp_path / "s.ckv"
    s = cuckoo.Store(path, seed=0)
    half = len(keys) // 2
    s.put_many(keys[:half], [b"v%d" % i for i in range(half)])
    for i in range(half, len(keys)):
        s[int(keys[i])] = b"v%d" % i
    st_ = s.stats()
    assert st_["stash"] == len(keys) - 8 and st_["grows"] == 0  # one pair: 8 slots; no futile growth
    assert s.contains_many(keys).all() and [s[int(k)] for k in keys[:3]] == [b"v0", b"v1", b"v2"]
    gone = s.discard_many(keys[::3])
    assert gone.all() and not s.contains_many(keys[::3]).any()
    kept = np.setdiff1d(keys, keys[::3])
    assert s.contains_many(kept).all() and len(s) == len(kept)
    s.close()
    for drop_snapshot in (False, True):
        if drop_snapshot:
            os.unlink(str(path) + ".idx")
        s = cuckoo.Store(path, readonly=True)
        assert s.stats()["snapshot_used"] != drop_snapshot
        assert s.contains_many(kept).all() and not s.contains_many(keys[::3]).any()
        assert s.get_many(kept[:2]) == [s[int(kept[0])], s[int(kept[1])]]
        s.close()


def test_store_without_its_compiled_part_says_why(monkeypatch):
    # On Windows the extension has no _Store (the log needs POSIX files): cuckoo.Store must say
    # so clearly instead of failing on a missing name; StoreLockedError still exists.
    import cuckoo.store

    monkeypatch.setattr(cuckoo.store, "_Store", None)
    with pytest.raises(NotImplementedError, match="not available on Windows.*cuckoo.Filter works"):
        cuckoo.Store()
    assert issubclass(cuckoo.StoreLockedError, OSError)
