"""Reliability: concurrent use from threads (docs/threads.md) and resource limits.

GIL release, readers in parallel and Ctrl-C during add_many are tested in test_threads_gil.py;
this file checks the invariants under a mixed concurrent workload (no crash, no false negative,
len consistent with a model) and what happens when a filter cannot fit in memory.
"""

from __future__ import annotations

import threading
from typing import Callable, List

import numpy as np
import pytest

import cuckoo
from _threads import run_threads

CAPACITY = 200_000
PARAMS = dict(fingerprint_bits=16, seed=7)


def test_two_readers_two_writers_merge_and_round_trips() -> None:
    """2 bulk readers (with to_bytes/from_bytes round trips) and 2 writers (add_many/discard_many of
    their own keys, one also merging small filters in): keys present for the whole run are
    always found, and len matches the model at the end."""
    f = cuckoo.Filter(CAPACITY, **PARAMS)
    present = np.arange(0, 50_000, dtype=np.uint64)  # never removed
    f.add_many(present)
    iterations = 30
    merged: List[int] = []

    def reader(k: int) -> Callable[[], None]:
        def run() -> None:
            for i in range(iterations):
                assert f.contains_many(present).all()
                assert f.count_many(present[:1000]).min() >= 1
                assert len(f) >= len(present)
                if i % 5 == k:
                    g = cuckoo.Filter.from_bytes(f.to_bytes())
                    assert g.contains_many(present).all()
                    assert len(g) >= len(present)

        return run

    def writer(k: int) -> Callable[[], None]:
        def run() -> None:
            for i in range(iterations):
                # Disjoint key sets per writer and per iteration: only this thread removes them.
                start = 1_000_000 * (k + 1) + 10_000 * i
                mine = np.arange(start, start + 5_000, dtype=np.uint64)
                assert f.add_many(mine) == len(mine)
                assert f.contains_many(mine).all()
                assert f.discard_many(mine).all()
                if k == 1 and i % 3 == 0:
                    small = cuckoo.Filter(CAPACITY, **PARAMS)
                    keys = [f"merged-{i}-{j}" for j in range(100)]
                    small.update(keys)
                    f.merge(small)
                    merged.extend(range(len(keys)))
                    assert f.contains_many(keys).all()

        return run

    run_threads([reader(0), reader(1), writer(0), writer(1)])
    assert f.contains_many(present).all()
    assert len(f) == len(present) + len(merged)


def test_growth_while_reading_properties() -> None:
    """A growable filter growing under add_many in one thread while others read len, the
    properties, stages and bulk answers: the stage vector is reallocated by the writer, the
    readers must never see it half-changed."""
    f = cuckoo.Filter(1_000, fingerprint_bits=12, seed=3, growable=True)
    present = np.arange(500, dtype=np.int64)
    f.add_many(present)
    done = threading.Event()
    total = 60_000

    def writer() -> None:
        try:
            for start in range(10_000, 10_000 + total, 1_000):
                f.add_many(np.arange(start, start + 1_000, dtype=np.int64))
        finally:
            done.set()

    def reader() -> None:
        # Bounded: readers that overlap without pause can keep a writer waiting (the lock
        # prefers readers, see docs/threads.md).
        for _ in range(300):
            if done.is_set():
                break
            n = len(f)
            assert n >= len(present)
            # Two reads, each consistent on its own; the filter only grows, so reading the bucket
            # count first keeps the comparison valid across a growth in between.
            buckets = f.bucket_count
            assert f.capacity >= 1_000 and f.slot_count >= buckets
            assert 0.0 <= f.load_factor <= 1.0
            assert sum(s["items"] for s in f.stages) >= len(present)
            assert f.contains_many(present).all()
            assert 0 in f and f.count(1) >= 1
            f.bucket_indices(12345)

    run_threads([writer, reader, reader])
    assert len(f) == len(present) + total
    assert len(f.stages) > 3
    assert f.contains_many(np.arange(10_000, 10_000 + total)).all()


def test_discard_on_growable_filter_loses_no_key() -> None:
    """Single-threaded and deterministic: a growable filter grown to several stages, half of its
    keys discarded; every kept key stays present. A discard whose fingerprint matches in more than
    one stage is refused (False: removing the wrong stage's copy would delete another key), and
    then its key stays present too. Refusals are rare: about the other stages' FPR."""
    f = cuckoo.Filter(4_000, fingerprint_bits=8, seed=1, growable=True)
    keys = np.arange(300_000, dtype=np.uint64)
    f.add_many(keys)
    assert len(f.stages) > 3
    gone = np.random.default_rng(1).permutation(keys)[:150_000]
    removed = f.discard_many(gone)
    kept = np.setdiff1d(keys, gone)
    assert f.contains_many(kept).all(), "no false negatives after deletes"
    assert f.contains_many(gone[~removed]).all(), "a refused discard keeps its key"
    assert len(f) == len(keys) - int(removed.sum())
    assert removed.mean() > 0.95, removed.mean()


def test_discard_on_fixed_filter_loses_no_key() -> None:
    """The same on a fixed (one-stage) filter: deleting added keys never removes another key."""
    f = cuckoo.Filter(330_000, fingerprint_bits=8, seed=1)
    keys = np.arange(300_000, dtype=np.uint64)
    f.add_many(keys)
    gone = np.random.default_rng(1).permutation(keys)[:150_000]
    assert f.discard_many(gone).all()
    assert f.contains_many(np.setdiff1d(keys, gone)).all()
    assert len(f) == 150_000


def test_cross_merges_do_not_deadlock() -> None:
    """a.merge(b) and b.merge(a) at the same time (merge snapshots the other filter before
    locking itself), plus == in both directions. Each thread is the only writer of its filter
    and resets it before each merge."""
    a = cuckoo.Filter(10_000, **PARAMS)
    b = cuckoo.Filter(10_000, **PARAMS)
    rounds = 200

    def merging(mine: cuckoo.Filter, other: cuckoo.Filter, key: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(rounds):
                mine.clear()
                mine.add(key)
                try:
                    mine.merge(other)
                except cuckoo.FilterFullError:
                    pass  # counts can pile up if the threads alternate exactly: all or nothing
                assert key in mine
                _ = mine == other

        return run

    run_threads([merging(a, b, 1), merging(b, a, 2)])
    assert 1 in a and 2 in b


# ---- resource limits ----


def test_capacity_beyond_2_to_32_buckets_raises_value_error_naming_the_limit() -> None:
    with pytest.raises(ValueError, match=r"capacity is too large: 1,000,000,000,000 keys, but .* holds at most [0-9,]+ keys"):
        cuckoo.Filter(10**12)
    with pytest.raises(ValueError, match="too large"):
        cuckoo.Filter(10**12, bucket_size=8)


def _meminfo_bytes(field: str) -> int:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    pytest.skip("needs /proc/meminfo")


def test_table_larger_than_memory_raises_memory_error() -> None:
    """A table bigger than RAM + swap: MemoryError up front, not an over-committed allocation
    that the OOM killer ends later."""
    ram = _meminfo_bytes("MemTotal") + _meminfo_bytes("SwapTotal")
    # bucket_size=8, f=32: 32 bytes a bucket, at most 2^32 buckets (128 GiB).
    table_bytes = 2 * ram
    if table_bytes > (128 << 30):
        pytest.skip("this machine has more memory than the largest possible table")
    capacity = int(table_bytes / 32 * 8 * 0.965)
    with pytest.raises(MemoryError, match=r"needs [0-9.]+ GiB for its table, but only [0-9.]+ GiB"):
        cuckoo.Filter(capacity, bucket_size=8, fingerprint_bits=32)
    # The interpreter is fine afterwards.
    g = cuckoo.Filter(1_000)
    g.add(1)
    assert 1 in g
