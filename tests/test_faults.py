"""Allocation failure: every call that runs out of memory leaves the object exactly as before.

The core routes every allocation of a table, an index and a log mapping through one hook
(cpp/include/cuckoo/fault.hpp); ``_core._fail_allocation(n)`` makes the n-th of them from now
fail. ``sweep`` fails each allocation a call reaches in turn: each time the call must raise
MemoryError and the object must answer as before (len, the answers for present and absent keys,
and for stores the log's size, so no record of the failed call is left to reach the file; for
filters the serialized bytes). The sweep ends with the call succeeding once the hook is past
every allocation it makes. One test also runs a store under a real RLIMIT_AS in a subprocess.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cuckoo
from cuckoo import _core

posix_only = pytest.mark.skipif(os.name != "posix", reason="cuckoo.Store needs POSIX files")


def sweep(state, call):
    """Fails allocation 1, 2, ... of `call` until it succeeds; returns how many failed."""
    before = state()
    n = 1
    while True:
        _core._fail_allocation(n)
        try:
            call()
        except MemoryError:
            _core._fail_allocation(0)
            assert state() == before, f"the object changed when allocation {n} failed"
            n += 1
            continue
        finally:
            _core._fail_allocation(0)
        return n - 1


def store_state(s, probes):
    st = s.stats()
    return (len(s), st["log_bytes"], st["live_bytes"], tuple(s.get(k) for k in probes),
            tuple(s.contains_many(probes)))


def fill_to_growth(s, prefix=b"k"):
    """Puts keys until the next new key makes the index grow; returns the keys."""
    st = s.stats()
    n = int(0.94 * 4 * st["buckets"]) - st["live_keys"]
    keys = [prefix + b"%d" % i for i in range(n)]
    s.put_many(keys, [b"v%d" % i for i in range(n)])
    assert s.stats()["grows"] == st["grows"]
    return keys


def check_reopen(path, expected):
    """What the program saw is what a reopen finds (no record of a failed call reached the log)."""
    with cuckoo.Store(path) as r:
        assert {k: r[k] for k in r} == expected


@posix_only
@pytest.mark.parametrize("keys_before", [0, 700])
def test_reserve_fails_cleanly_at_every_allocation(tmp_path, keys_before):
    path = str(tmp_path / "s.ckv")
    s = cuckoo.Store(path)
    s.put_many([b"k%d" % i for i in range(keys_before)], [b"v%d" % i for i in range(keys_before)])
    probes = [b"k0", b"k5", b"k699", b"absent", b"k700"]
    sites = sweep(lambda: store_state(s, probes), lambda: s.reserve(50_000))
    assert sites == (2 if keys_before else 1)  # the table; with keys, also the rebuild's list of offsets
    assert s.stats()["buckets"] * 4 * 0.94 >= 50_000
    assert all(s.get(b"k%d" % i) == b"v%d" % i for i in range(keys_before))
    expected = {k: s[k] for k in s}
    s.close()
    check_reopen(path, expected)


@posix_only
def test_reserve_too_large_for_memory_leaves_a_working_store(tmp_path):
    # f0df2c2: the store was left with 0 buckets and the next get segfaulted.
    s = cuckoo.Store(str(tmp_path / "s.ckv"))
    s.put_many(list(range(100)), [b"x"] * 100)
    with pytest.raises(MemoryError):
        s.reserve(2**33)
    assert len(s) == 100 and s.get(5) == b"x" and s.get(500) is None and 7 in s
    s.close()


@posix_only
def test_growth_inside_put_fails_cleanly(tmp_path):
    path = str(tmp_path / "s.ckv")
    s = cuckoo.Store(path)
    keys = fill_to_growth(s)
    probes = keys[:3] + keys[-3:] + [b"new", b"absent"]
    sites = sweep(lambda: store_state(s, probes), lambda: s.__setitem__(b"new", b"value"))
    assert sites >= 2  # the rebuild's list of offsets and the new table (stash nodes are kept ready already)
    assert s.stats()["grows"] == 1 and s[b"new"] == b"value"
    expected = {k: s[k] for k in s}
    s.close()
    check_reopen(path, expected)


@posix_only
@pytest.mark.parametrize("method", ["put_many", "add_unique_many"])
def test_growth_inside_bulk_writes_fails_cleanly(tmp_path, method):
    path = str(tmp_path / "s.ckv")
    s = cuckoo.Store(path)
    keys = fill_to_growth(s)
    batch = keys[:50] + [b"n%d" % i for i in range(300)] + keys[50:60]  # old and new keys, in a batch that must grow
    probes = keys[:3] + [b"n0", b"n299", b"absent"]
    call = (lambda: s.put_many(batch, [b"w"] * len(batch))) if method == "put_many" else (lambda: s.add_unique_many(batch))
    sites = sweep(lambda: store_state(s, probes), call)
    assert sites >= 2
    assert len(s) == len(keys) + 300 and s.stats()["grows"] >= 1
    expected = {k: s[k] for k in s}
    s.close()
    check_reopen(path, expected)


@posix_only
def test_log_mapping_growth_fails_cleanly(tmp_path):
    # The log is mapped 64 MiB at a time: a batch that carries it past 64 MiB extends the mapping.
    # f0df2c2: a failed mapping left the store unmapped, and the next `in` segfaulted.
    path = str(tmp_path / "s.ckv")
    s = cuckoo.Store(path)
    big = b"x" * (1 << 20)
    s.put_many([b"b%d" % i for i in range(62)], [big] * 62)
    s.sync()
    probes = [b"b0", b"b61", b"c0", b"absent"]
    batch = [b"c%d" % i for i in range(4)]
    sites = sweep(lambda: store_state(s, probes), lambda: s.put_many(batch, [big] * 4))
    assert sites >= 1
    assert s[b"c3"] == big and b"b7" in s
    s.close()
    with cuckoo.Store(path, readonly=True) as r:
        assert len(r) == 66 and r[b"c0"] == big


@posix_only
def test_store_open_survives_failing_allocations(tmp_path):
    """Opening fails with MemoryError or opens a store that answers right (a snapshot whose table
    cannot be allocated is dropped for a rebuild from the log)."""
    path = str(tmp_path / "s.ckv")
    with cuckoo.Store(path) as s:
        s.put_many(list(range(2000)), [b"v"] * 2000)
    n = 1
    while True:  # until the open gets past every allocation and uses the snapshot
        _core._fail_allocation(n)
        try:
            r = cuckoo.Store(path)
        except MemoryError:
            n += 1
            continue
        finally:
            _core._fail_allocation(0)
        assert len(r) == 2000 and r[1999] == b"v" and 2000 not in r
        used = r.stats()["snapshot_used"]
        r.close()
        if used:
            break
        n += 1
    assert n > 2  # the snapshot's table, and at least the log's mapping before it


# ---- filters ----

def filter_state(f, probes):
    return (len(f), f.to_bytes(), tuple(f.contains_many(probes)))


def filter_at_growth(seed=7, expansion=None):
    """A growable filter whose next new key makes it grow, and the keys in it."""
    f = cuckoo.Filter(1000, fpr=0.01, growable=True, seed=seed, expansion=expansion)
    k = 0
    while True:
        g = f.copy()
        g.add(k)
        if stage_count(g) > stage_count(f):
            return f, k
        f.add(k)
        k += 1


def stage_count(f):
    return len(f.stages)


@pytest.fixture
def probes():
    return np.arange(-50, 3000, 7, dtype=np.int64)


# Every growth factor (issue 30's expansion=): 1 adds stages the size of the first, 3 grows like 4
# (stages nest on powers of two), None is the default 2. Each allocates its stages on its own path.
EXPANSIONS = [None, 1, 3, 4]


@pytest.mark.parametrize("expansion", EXPANSIONS)
def test_filter_scalar_growth_fails_cleanly(probes, expansion):
    f, k = filter_at_growth(expansion=expansion)
    before = stage_count(f)
    sites = sweep(lambda: filter_state(f, probes), lambda: f.add(k))
    assert sites >= 1 and stage_count(f) == before + 1 and k in f


@pytest.mark.parametrize("expansion", EXPANSIONS)
@pytest.mark.parametrize("method", ["add_many", "add_unique_many"])
def test_filter_growth_inside_bulk_calls_fails_cleanly(probes, method, expansion):
    f, k = filter_at_growth(expansion=expansion)
    before = stage_count(f)
    keys = np.arange(k, k + 5000, dtype=np.int64)  # three more stages' worth
    sites = sweep(lambda: filter_state(f, probes), lambda: getattr(f, method)(keys))
    assert sites >= 2 and stage_count(f) >= before + 2
    assert f.contains_many(keys).all()


@pytest.mark.parametrize("expansion", EXPANSIONS)
def test_filter_copy_merge_and_load_fail_cleanly(tmp_path, probes, expansion):
    f, k = filter_at_growth(expansion=expansion)
    f.add_many(np.arange(k, k + 3000))
    assert f.expansion == (expansion or 2)
    other = cuckoo.Filter(1000, fpr=0.01, growable=True, seed=7, expansion=expansion)
    other.add_many(np.arange(10**6, 10**6 + 3000))
    state = lambda: filter_state(f, probes)  # noqa: E731
    assert sweep(state, f.copy) >= stage_count(f)
    assert sweep(state, lambda: f | other) >= stage_count(f)

    def merge_in_place():
        g = f.copy()
        g |= other
    assert sweep(state, merge_in_place) >= 1
    data = f.to_bytes()
    assert sweep(state, lambda: cuckoo.Filter.from_bytes(data)) >= stage_count(f)
    f.save(str(tmp_path / "f.cuckoo"))
    assert sweep(state, lambda: cuckoo.Filter.load(str(tmp_path / "f.cuckoo"))) >= stage_count(f)
    # in place: the filter itself, when the merge fails
    g = f.copy()
    sweep(lambda: filter_state(g, probes), lambda: g.__ior__(other))
    assert g.contains_many(np.arange(10**6, 10**6 + 3000)).all()


# ---- a real limit on the address space ----

RLIMIT_SCRIPT = textwrap.dedent("""
    import resource, sys
    import numpy as np
    import cuckoo
    path, phase = sys.argv[1], sys.argv[2]
    s = cuckoo.Store(path)
    s.put_many(np.arange(1_000_000), None)
    s.sync()
    more = np.arange(1_000_000, 4_000_000)    # allocated before the limit
    big = b"x" * (8 << 20)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as fh:
        vm = int(fh.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (vm + (16 << 20), hard))
    extra = 0
    try:
        if phase == "reserve":
            s.reserve(10**8)                      # a table of ~640 MiB
        elif phase == "bulk_growth":              # the index (~6 MiB) must grow past the limit
            for at in range(0, len(more), 20_000):
                s.put_many(more[at:at + 20_000], None)
                extra += 20_000
        else:                                     # the log's mapping (64 MiB) must grow
            for i in range(12):
                s[b"big%d" % i] = big
                extra += 1
        print("no failure")
        sys.exit(3)
    except (MemoryError, OSError) as exc:         # (f0df2c2: OSError for the mapping)
        error = type(exc).__name__
    assert len(s) == 1_000_000 + extra, len(s)
    assert s.get(17) == b"" and 999_999 in s and 10**9 not in s
    assert s.contains_many(np.arange(0, 1_000_000 + extra, 997)).all()
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    s[b"after"] = b"the failure"
    s.close()
    r = cuckoo.Store(path, readonly=True)
    assert len(r) == 1_000_001 + extra and r.get(17) == b"" and r[b"after"] == b"the failure"
    print(error, extra)
""")


@posix_only
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/statm: Linux")
@pytest.mark.parametrize("phase", ["reserve", "bulk_growth", "mapping"])
def test_store_under_a_real_address_space_limit(tmp_path, phase):
    # f0df2c2: the process died of SIGSEGV after the MemoryError (reserve, growth in put_many)
    # or the OSError (ENOMEM from mmap) at the next lookup.
    proc = subprocess.run([sys.executable, "-c", RLIMIT_SCRIPT, str(tmp_path / "s.ckv"), phase],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    error, extra = proc.stdout.split()
    assert error == "MemoryError"
    if phase == "bulk_growth":
        assert int(extra) > 0  # batches went in before the limit stopped one


# ---- the long form: random operations with a random allocation failing ----

@pytest.mark.slow
@posix_only
def test_random_store_operations_fail_cleanly_at_every_allocation(tmp_path):
    """Random writes on a growing store, each swept over every allocation it reaches."""
    rng = random.Random(1)
    path = str(tmp_path / "s.ckv")
    s = cuckoo.Store(path)
    model = {}
    sites = 0
    for step in range(200):
        op = rng.choice(["put", "put_many", "put_many", "add_unique_many", "discard_many", "reserve"])
        keys = [b"k%d" % rng.randrange(300_000) for _ in range(rng.choice([1, 10, 1000, 5000]))]
        probes = keys[:20] + [b"k%d" % rng.randrange(300_000) for _ in range(20)]
        value = b"v%d" % step
        if op == "put":
            call = lambda: s.__setitem__(keys[0], value)  # noqa: E731
            keys = keys[:1]
        elif op == "put_many":
            call = lambda: s.put_many(keys, [value] * len(keys))  # noqa: E731
        elif op == "add_unique_many":
            call = lambda: s.add_unique_many(keys)  # noqa: E731
        elif op == "discard_many":
            call = lambda: s.discard_many(keys)  # noqa: E731
        else:
            extra = rng.randrange(1, 50_000)
            call = lambda: s.reserve(len(s) + extra)  # noqa: E731
        sites += sweep(lambda: store_state(s, probes), call)
        if op in ("put", "put_many"):
            model.update((k, value) for k in keys)
        elif op == "add_unique_many":
            for k in keys:
                model.setdefault(k, b"")
        elif op == "discard_many":
            for k in keys:
                model.pop(k, None)
        if step % 50 == 0:
            assert {k: s[k] for k in s} == model
    assert {k: s[k] for k in s} == model
    assert sites >= 30 and s.stats()["grows"] >= 3
    s.close()
    check_reopen(path, model)


@pytest.mark.slow
def test_random_filter_growth_fails_cleanly_at_every_allocation():
    rng = random.Random(2)
    f = cuckoo.Filter(500, fpr=0.01, growable=True, seed=3)
    added = np.zeros(0, dtype=np.int64)
    probes = np.arange(-1000, 200_000, 13, dtype=np.int64)
    sites = 0
    for _ in range(60):
        keys = np.array([rng.randrange(10**7) for _ in range(rng.choice([1, 100, 3000]))], dtype=np.int64)
        method = rng.choice([f.add_many, f.add_unique_many, f.add])
        call = (lambda: method(int(keys[0]))) if method == f.add else (lambda: method(keys))
        sites += sweep(lambda: filter_state(f, probes), call)
        added = np.concatenate([added, keys[:1] if method == f.add else keys])
        assert f.contains_many(added).all()
    assert sites >= 5 and len(f.stages) >= 5


FILTER_RLIMIT_SCRIPT = textwrap.dedent("""
    import resource, sys
    import numpy as np
    import cuckoo
    f = cuckoo.Filter(100_000, fpr=0.01, growable=True, seed=1)
    f.add_many(np.arange(90_000))
    before = f.to_bytes()
    more = np.arange(10**6, 10**6 + 6_000_000)   # allocated before the limit
    probes = np.arange(0, 10**6 + 6_000_000, 1009)
    answers = f.contains_many(probes)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as fh:
        vm = int(fh.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (vm + (8 << 20), hard))
    try:
        f.add_many(more)                          # needs stages of ~16 MiB in all
        print("no failure")
        sys.exit(3)
    except MemoryError:
        pass
    assert len(f) == 90_000, len(f)
    assert (f.contains_many(probes) == answers).all()
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert f.to_bytes() == before
    f.add_many(more)
    assert f.contains_many(more).all()
    print("ok")
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/statm: Linux")
def test_filter_growth_under_a_real_address_space_limit():
    # f0df2c2: the batch stopped at the stage it could not allocate, with the keys before it added.
    proc = subprocess.run([sys.executable, "-c", FILTER_RLIMIT_SCRIPT], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.split()[-1] == "ok", (proc.returncode, proc.stdout, proc.stderr[-3000:])
