"""cuckoo.Window (windowed dedup, issue 49) against Python models: a count window against a deque
of the last N keys, a time window against the list of every remembered (key, time) with late
records; bulk == scalar; the approximate mode's one-sided error; bad input leaves the window as
it was."""

from __future__ import annotations

import collections
import datetime
import gc
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cuckoo

KEYS = st.one_of(st.integers(0, 12), st.sampled_from(["a", "b", "é", ""]), st.sampled_from([b"a", b"x" * 20]))


class DequeModel:
    """Count window: a duplicate iff among the last n keys (duplicates included)."""

    def __init__(self, n):
        self.last = collections.deque(maxlen=n)

    def seen(self, key):
        k = _norm(key)
        dup = k in self.last
        self.last.append(k)
        return dup


class EventTimeModel:
    """Time window D, lateness L: late (kept, not remembered) when t < max - L; else a duplicate
    iff a remembered time of the key lies strictly within D; then remembered."""

    def __init__(self, d, lateness=None):
        self.d = d
        self.lateness = d if lateness is None else lateness
        self.max = None
        self.times = collections.defaultdict(list)
        self.late = 0

    def verdict(self, key, t):
        if self.max is not None and t < self.max - self.lateness:
            self.late += 1
            return "late"
        k = _norm(key)
        dup = any(abs(t - u) < self.d for u in self.times[k])
        self.times[k].append(t)
        self.max = t if self.max is None else max(self.max, t)
        return "dup" if dup else "new"

    def seen(self, key, t):
        return self.verdict(key, t) == "dup"


def _norm(key):
    """Keys as the window compares them: an int by its 8 little-endian bytes, a str by its UTF-8."""
    if isinstance(key, int):
        return key.to_bytes(8, "little", signed=key < 0)
    if isinstance(key, str):
        return key.encode()
    return bytes(key)


# ---- count windows ----------------------------------------------------------------------------


@given(n=st.integers(1, 12), generations=st.integers(1, 6), keys=st.lists(KEYS, max_size=400))
def test_count_window_equals_a_deque_of_the_last_n(n, generations, keys):
    w = cuckoo.Window(records=n, generations=generations)
    model = DequeModel(n)
    for i, k in enumerate(keys):
        assert w.seen(k) == model.seen(k), (i, k)
    assert w.processed == len(keys)
    assert w.generations <= generations + 2  # memory: the window and one generation


def test_count_window_thousands_of_random_ops_small_windows():
    rng = np.random.default_rng(1)
    for n in (1, 2, 5, 17):
        for generations in (1, 3, 8):
            w = cuckoo.Window(records=n, generations=generations, seed=3)
            model = DequeModel(n)
            keys = rng.integers(0, n + 4, 5000).tolist()
            got = [w.seen(k) for k in keys]
            assert got == [model.seen(k) for k in keys]
            assert w.duplicates == sum(got)


@pytest.mark.parametrize("records, generations", [(256, 1), (257, 1), (512, 2), (65536, 1), (65537, 1),
                                                  (131074, 2)])
def test_count_window_positions_at_every_width(records, generations):
    # A key's last position in its generation is kept in as few bytes as the generation's size
    # needs (1 up to 256 records, 2 up to 65,536, then 3): every width, at its edges, against the
    # model. Keys repeat at distances around the window, so that many fall on either side of it.
    rng = np.random.default_rng(records)
    keys = rng.integers(0, int(records * 1.3), int(records * 3.5)).tolist()
    w = cuckoo.Window(records=records, generations=generations, seed=11)
    last = {}  # key -> position of its last occurrence (the deque model, without an O(N) lookup)
    expected = []
    for i, k in enumerate(keys):
        expected.append(k in last and i - last[k] <= records)
        last[k] = i
    got = w.seen_many(np.array(keys, dtype=np.uint64))
    assert got.tolist() == expected
    assert 0 < sum(expected) < len(keys)
    w2 = cuckoo.Window(records=records, generations=generations, seed=11)
    assert [w2.seen(k) for k in keys[:3000]] == expected[:3000]


def test_count_window_edge_exactly_n_back():
    w = cuckoo.Window(records=3, generations=2)
    # "a" recurs exactly 3 records later (in the window), then 4 later (out of it)
    assert [w.seen(k) for k in ["a", "b", "c", "a", "d", "e", "f", "a"]] == [
        False, False, False, True, False, False, False, False]


# ---- time windows -----------------------------------------------------------------------------

# Times on a grid of quarter seconds (so that distances of exactly D occur), out of order.
TIMED = st.lists(st.tuples(KEYS, st.integers(-40, 40)), max_size=300)


@given(d4=st.integers(1, 12), late4=st.one_of(st.none(), st.integers(0, 16)), generations=st.integers(1, 6),
       ops=TIMED, drift=st.integers(0, 3))
def test_time_window_equals_the_event_time_model(d4, late4, generations, ops, drift):
    d = d4 / 4
    lateness = None if late4 is None else late4 / 4
    w = cuckoo.Window(seconds=d, lateness=lateness, generations=generations)
    model = EventTimeModel(d, lateness)
    for i, (k, jitter) in enumerate(ops):
        t = i * drift / 4 + jitter / 4  # a stream that advances, with records out of order
        assert w.seen(k, t) == model.seen(k, t), (i, k, t)
    assert w.late == model.late
    assert w.processed == len(ops)


def test_time_window_thousands_of_random_ops_with_late_records():
    rng = np.random.default_rng(2)
    for d in (0.5, 1.0, 3.0):
        for lateness in (None, 0.0, 0.25, 5.0):
            w = cuckoo.Window(seconds=d, lateness=lateness, generations=3, seed=1)
            model = EventTimeModel(d, lateness)
            now = 0.0
            for _ in range(3000):
                now += float(rng.integers(0, 4)) / 8
                t = now - float(rng.integers(0, 9)) / 4 * float(rng.integers(0, 2))
                k = int(rng.integers(0, 15))
                assert w.seen(k, t) == model.seen(k, t)
            assert w.late == model.late
            if (d if lateness is None else lateness) < 1.5:
                assert w.late > 0


def test_late_records_are_kept_counted_and_not_remembered():
    w = cuckoo.Window(seconds=10)  # lateness 10
    assert not w.seen("k", 100.0)
    assert w.watermark == 90.0
    assert not w.seen("k", 85.0)  # late: kept, although 100 - 85 > 10 anyway
    assert not w.seen("x", 89.0) and not w.seen("x", 89.5)  # late twice: never dropped
    assert w.late == 3
    assert w.seen("k", 91.0)  # within 10 of 100
    assert not w.seen("y", 90.0)
    assert w.seen("y", 99.9) and not w.seen("y", 110.0)  # |110 - 99.9| >= 10; 90 is 20 away


def test_arrival_time_uses_the_injected_clock():
    now = [0.0]
    w = cuckoo.Window(seconds=60, clock=lambda: now[0])
    assert not w.seen("a")
    now[0] = 59.0
    assert w.seen("a")  # 59 s after the first "a"
    now[0] = 118.5
    assert w.seen("a")  # 59.5 s after the second (duplicates count)
    now[0] = 200.0
    assert list(w.seen_many(["a", "b", "b"])) == [False, False, True]  # one time for the batch
    with pytest.raises(ValueError, match="arrival time"):
        w.seen("a", 201.0)
    assert w.processed == 6
    assert w.lateness == 0.0 and w.late == 0  # arrival time needs no lateness: one window of state
    assert cuckoo.Window(seconds=60, lateness=5, clock=lambda: 0.0).lateness == 5
    e = cuckoo.Window(seconds=60)
    e.seen("a", 1.0)
    assert e.lateness == 60.0


def test_event_time_window_refuses_a_missing_time_after_times():
    w = cuckoo.Window(seconds=1)
    w.seen("a", 5.0)
    with pytest.raises(ValueError, match="event times"):
        w.seen("a")
    with pytest.raises(ValueError, match="event times"):
        w.seen_many(["a"])
    assert w.processed == 1


def test_time_window_memory_is_bounded_by_the_window():
    w = cuckoo.Window(seconds=10, lateness=0)
    keys = np.arange(200_000, dtype=np.uint64)
    times = keys / 100.0  # 100 new keys a second
    assert not w.seen_many(keys, times).any()
    # The state spans D + L = 10 s of event time and one generation (W = 2.5 s): ~1250 keys.
    assert len(w) <= 1300
    assert w.generations <= 6


# ---- bulk == scalar ------------------------------------------------------------------------------


@pytest.mark.parametrize("exact", [True, False])
@given(n=st.integers(1, 9), keys=st.lists(st.integers(0, 20), max_size=300), cut=st.integers(0, 300))
def test_count_bulk_equals_scalar(exact, n, keys, cut):
    kw = {} if exact else {"fpr": 0.01}
    a = cuckoo.Window(records=n, seed=7, **kw)
    b = cuckoo.Window(records=n, seed=7, **kw)
    scalar = [a.seen(k) for k in keys]
    bulk = np.concatenate([b.seen_many(np.array(keys[:cut], dtype=np.int64)), b.seen_many(keys[cut:])])
    assert bulk.dtype == np.bool_
    assert bulk.tolist() == scalar
    assert len(a) == len(b) and a.duplicates == b.duplicates


@pytest.mark.parametrize("exact", [True, False])
@given(ops=st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.integers(-20, 60)), max_size=300),
       cut=st.integers(0, 300))
def test_time_bulk_equals_scalar(exact, ops, cut):
    kw = {} if exact else {"fpr": 0.01}
    a = cuckoo.Window(seconds=2.5, seed=7, **kw)
    b = cuckoo.Window(seconds=2.5, seed=7, **kw)
    keys = [k for k, _ in ops]
    times = [t / 4 for _, t in ops]
    scalar = [a.seen(k, t) for k, t in zip(keys, times)]
    bulk = b.seen_many(keys[:cut], times[:cut]).tolist() + b.seen_many(keys[cut:], np.array(times[cut:])).tolist()
    assert bulk == scalar
    assert a.late == b.late
    keep = cuckoo.Window(seconds=2.5, seed=7, **kw).keep_many(keys, times)
    assert keep.tolist() == [not s for s in scalar]


def test_bulk_key_kinds_hash_like_the_scalar_keys():
    w1, w2 = cuckoo.Window(records=100), cuckoo.Window(records=100)
    assert not w1.seen_many(np.array([b"ab", b"c"], dtype="S2")).any()
    assert w1.seen_many(["ab", b"c", 5]).tolist() == [True, True, False]
    assert w2.seen_many(np.array(["ab", "é"])).tolist() == [False, False]
    assert w2.seen("é") and w2.seen(b"ab")


# ---- approximate mode ------------------------------------------------------------------------------


@given(n=st.integers(1, 12), generations=st.integers(1, 6), keys=st.lists(st.integers(0, 30), max_size=400),
       fpr=st.sampled_from([0.5, 0.01]))
def test_approximate_count_window_errs_one_way_only(n, generations, keys, fpr):
    """Against the deque model: every duplicate found; a False is always right. (fpr=0.5: many
    collisions, so the one-way property is tested where errors happen.)"""
    w = cuckoo.Window(records=n, generations=generations, fpr=fpr, seed=5)
    model = DequeModel(n)
    for k in keys:
        want = model.seen(k)
        assert w.seen(k) or not want


@given(d4=st.integers(1, 12), late4=st.one_of(st.none(), st.integers(0, 16)), ops=TIMED, drift=st.integers(0, 3),
       fpr=st.sampled_from([0.5, 0.01]))
def test_approximate_time_window_errs_one_way_only(d4, late4, ops, drift, fpr):
    w = cuckoo.Window(seconds=d4 / 4, lateness=None if late4 is None else late4 / 4, fpr=fpr, seed=5)
    model = EventTimeModel(d4 / 4, None if late4 is None else late4 / 4)
    for i, (k, jitter) in enumerate(ops):
        t = i * drift / 4 + jitter / 4
        want = model.verdict(k, t)
        got = w.seen(k, t)
        if want == "dup":
            assert got
        if want == "late":
            assert not got
    assert w.late == model.late


def test_approximate_never_misses_a_duplicate_within_the_window():
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 3000, 50_000)
    w = cuckoo.Window(records=1000, fpr=0.01, seed=11)
    got = w.seen_many(keys)
    model = DequeModel(1000)
    want = np.array([model.seen(int(k)) for k in keys])
    assert not (want & ~got).any()  # no duplicate within the window missed
    assert w.fpr_bound <= 0.01 + 1e-12
    # What it adds: keys up to one generation (250 records) beyond the window, and collisions.
    beyond = DequeModel(1250)
    near = np.array([beyond.seen(int(k)) for k in keys])
    false_pos = got & ~near
    assert false_pos.mean() <= 0.01


def test_approximate_collision_rate_on_distinct_keys():
    w = cuckoo.Window(records=20_000, fpr=0.01, seed=3)
    got = w.seen_many(np.arange(200_000, dtype=np.uint64))  # all distinct: every True is a collision
    assert got.mean() <= w.fpr_bound
    exact = cuckoo.Window(records=20_000)
    assert not exact.seen_many(np.arange(200_000, dtype=np.uint64)).any()
    assert w.nbytes * 4 < exact.nbytes  # about 2 bytes a key against 20 and more


def test_approximate_time_window_never_misses():
    rng = np.random.default_rng(6)
    w = cuckoo.Window(seconds=5, exact=False, seed=2)
    model = EventTimeModel(5)
    times = np.arange(20_000) * 0.01 - rng.integers(0, 300, 20_000) * 0.01
    keys = rng.integers(0, 2000, 20_000)
    got = w.seen_many(keys, times)
    want = [model.verdict(int(k), float(t)) for k, t in zip(keys, times)]
    assert all(g for g, v in zip(got, want) if v == "dup")
    assert not any(g for g, v in zip(got, want) if v == "late")
    assert w.late == model.late


# ---- arguments and bad input -----------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, exc", [
    ({}, TypeError),
    ({"records": 3, "seconds": 1}, TypeError),
    ({"records": 0}, ValueError),
    ({"records": 2.5}, TypeError),
    ({"records": True}, TypeError),
    ({"seconds": 0}, ValueError),
    ({"seconds": float("inf")}, ValueError),
    ({"seconds": "10m"}, TypeError),
    ({"seconds": 1, "lateness": -1}, ValueError),
    ({"records": 3, "lateness": 1}, TypeError),
    ({"records": 3, "fpr": 0.01, "exact": True}, ValueError),
    ({"records": 3, "fpr": 1.5}, ValueError),
    ({"records": 3, "generations": 0}, ValueError),
])
def test_bad_arguments(kwargs, exc):
    with pytest.raises(exc):
        cuckoo.Window(**kwargs)


def test_timedelta_seconds():
    w = cuckoo.Window(seconds=datetime.timedelta(minutes=10))
    assert w.seconds == 600.0 and w.lateness == 600.0


@pytest.mark.parametrize("exact", [True, False])
def test_bad_keys_and_times_leave_the_window_unchanged(exact):
    kw = {} if exact else {"fpr": 0.01}
    w = cuckoo.Window(records=5, **kw)
    w.seen_many(["a", "b"])
    before = (w.processed, len(w), w.duplicates)
    for bad in (["c", None], ["c", 1.5], ["c", 2**64], [b"c", True], np.array([1.5, 2.5])):
        with pytest.raises((TypeError, ValueError)):
            w.seen_many(bad)
    for bad_key in (None, 1.5, -(2**63) - 1, object()):
        with pytest.raises((TypeError, ValueError)):
            w.seen(bad_key)
    with pytest.raises(ValueError, match="no time"):
        w.seen("a", 1.0)
    with pytest.raises(ValueError, match="no times"):
        w.seen_many(["a"], [1.0])
    assert (w.processed, len(w), w.duplicates) == before
    assert w.seen("a")

    t = cuckoo.Window(seconds=1, **kw)
    t.seen_many(["a"], [1.0])
    before = (t.processed, len(t))
    for keys, times in ((["a", "b"], [2.0, float("nan")]), (["a", "b"], [2.0, float("inf")]), (["a"], [1.0, 2.0]),
                        (["a"], ["x"]), (["a", None], [1.0, 1.0]), (["a"], [1e300])):
        with pytest.raises((TypeError, ValueError)):
            t.seen_many(keys, times)
    for bad_time in (float("nan"), "1", True):
        with pytest.raises((TypeError, ValueError)):
            t.seen("a", bad_time)
    assert (t.processed, len(t)) == before
    assert t.seen("a", 1.5)


def test_repr_len_and_memory():
    w = cuckoo.Window(records=1000)
    w.seen_many(range(3000))
    assert 1000 <= len(w) <= 1250
    assert w.nbytes == w.memory > 0
    r = repr(w)
    assert "records=1_000" in r and "exact=True" in r and "3_000 records" in r and "generations" in r
    t = cuckoo.Window(seconds=5, fpr=0.001)
    assert "watermark" not in repr(t)
    t.seen("a", 10.0)
    assert "fpr=0.001" in repr(t) and "watermark 5" in repr(t) and "late" in repr(t)
    with pytest.raises(TypeError):
        pickle.dumps(w)


def test_memory_is_given_back_as_generations_expire():
    w = cuckoo.Window(records=10_000)
    w.seen_many(np.arange(100_000, dtype=np.uint64))
    peak = w.nbytes
    w.seen_many(np.zeros(100_000, dtype=np.uint64))  # one key over and over
    assert len(w) == w.generations <= 5 and w.nbytes <= peak  # key 0, once a generation
    gc.collect()


def test_docstring_example_runs():
    import doctest

    import cuckoo.window

    assert doctest.testmod(cuckoo.window, extraglobs={"cuckoo": cuckoo}).failed == 0


def test_threads_share_a_window_one_call_at_a_time():
    """seen_many runs without the GIL and scalar calls wait for it without holding the GIL: two
    bulk threads and a scalar one finish, and every record is counted once."""
    import threading

    w = cuckoo.Window(records=50_000)
    keys = np.arange(200_000, dtype=np.uint64)

    def bulk():
        for s in range(0, len(keys), 10_000):
            w.seen_many(keys[s : s + 10_000])

    def scalar():
        for k in range(20_000):
            w.seen(k)

    threads = [threading.Thread(target=f) for f in (bulk, bulk, scalar)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert w.processed == 420_000


def test_datetimes_are_epoch_seconds():
    w = cuckoo.Window(seconds=datetime.timedelta(minutes=10))
    t0 = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.timezone.utc)
    assert not w.seen("a", t0)
    assert w.seen("a", t0 + datetime.timedelta(minutes=9))
    times = np.array(["2026-11-29T12:20", "2026-11-29T12:29:59", "2026-11-29T12:40"], dtype="datetime64[s]")
    assert w.seen_many(["a", "a", "a"], times).tolist() == [False, True, False]
    assert w.watermark == t0.timestamp() + 40 * 60 - 600
    with pytest.raises(ValueError):
        w.seen_many(["a"], np.array(["NaT"], dtype="datetime64[s]"))
    assert w.processed == 5
