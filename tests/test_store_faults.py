"""cuckoo.Store under I/O errors, and its batches: what a program sees after an error is what a
reopen finds (with and without the index snapshot), a failing call changes nothing, a batch is
all or nothing, and a log cut before its synced end is refused (docs/store.md, "Durability").

Faults are injected deterministically through cuckoo._core._testing_io_fault (the n-th write of
the store's files fails with the given errno after writing half its bytes, as a full disk does),
at every write of a put_many / batch / sync / compact / close sequence; one test meets a real
EFBIG from RLIMIT_FSIZE in a subprocess."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cuckoo
from cuckoo import _core

ERRNOS = [errno.EFBIG, errno.ENOSPC]


@pytest.fixture(autouse=True)
def _disarm():
    yield
    _core._testing_io_fault(0, 0, False)


def contents(path, *, snapshot: bool) -> dict:
    """What a reopen finds, reading the index snapshot or (snapshot=False) rebuilding from the log."""
    if not snapshot and os.path.exists(f"{path}.idx"):
        os.unlink(f"{path}.idx")
    with cuckoo.Store(path, readonly=True) as s:
        assert s.stats()["snapshot_used"] == (snapshot and s.stats()["snapshot_used"])
        return dict(s.items())


def vals(keys, gen: int, width: int = 200) -> list:
    return [(b"%s/%d|" % (k, gen) * (width // 8 + 1))[:width] for k in keys]


def keys(lo: int, hi: int) -> list:
    return [b"k%06d" % i for i in range(lo, hi)]


# The sequence of calls faults are injected into: (name, call on the store, change of the model).
# The bulk writes pass the log's 1 MiB buffer, so that they write during the call.
def _sequence():
    k1, k2, k3, k4 = keys(0, 6000), keys(0, 3000) + keys(6000, 7000), keys(1000, 2000) + keys(90000, 90010), keys(6500, 8000)
    v1, v2 = vals(k1, 1), vals(k2, 2, width=300)

    def put(ks, vs):
        return (lambda s: s.put_many(ks, vs)), (lambda m: m.update(zip(ks, vs)))

    def discard(ks):
        return (lambda s: s.discard_many(ks)), (lambda m: [m.pop(k, None) for k in ks])

    def batch(s):
        with s.batch():
            s.add_unique_many(k4)
            s[b"in-batch"] = b"x" * 100
            s.put_many(keys(0, 10), vals(keys(0, 10), 5))

    def batch_model(m):
        for k in k4:
            m.setdefault(k, b"")
        m[b"in-batch"] = b"x" * 100
        m.update(zip(keys(0, 10), vals(keys(0, 10), 5)))

    def scalar_put(s):
        s[b"scalar"] = b"y"

    def scalar_put_model(m):
        m[b"scalar"] = b"y"

    def nothing(m):
        return None

    return [
        ("put_many", *put(k1, v1)),
        ("sync", lambda s: s.sync(), nothing),
        ("put_many 2", *put(k2, v2)),
        ("discard_many", *discard(k3)),
        ("batch", batch, batch_model),
        ("scalar put", scalar_put, scalar_put_model),
        ("scalar discard", lambda s: s.discard(keys(2000, 2001)[0]), lambda m: m.pop(keys(2000, 2001)[0], None)),
        ("snapshot", lambda s: s.snapshot(), nothing),
        ("compact", lambda s: s.compact(), nothing),
        ("put_many 3", *put(keys(20000, 20300), vals(keys(20000, 20300), 3))),
        ("sync 2", lambda s: s.sync(), nothing),
    ]


def run_sequence(path, nth: int, err: int, *, persistent: bool = False):
    """Runs the sequence with the nth write failing (and, persistent, every write after it);
    returns (writes counted, failures seen, the models a reopen may find)."""
    s = cuckoo.Store(path, seed=7)
    model: dict = {}
    # A failed close() loses what was not written yet, as a crash does: the reopen then finds
    # the model at the end of one of the calls since the last successful sync().
    since_sync = [dict(model)]
    failures = []
    _core._testing_io_fault(nth, err, persistent)
    for name, call, change in _sequence():
        before = dict(model)
        try:
            call(s)
        except OSError as e:
            assert e.errno == err, (name, e)
            failures.append(name)
            # a failed call changed nothing the program can see
            assert dict(s.items()) == before and len(s) == len(before), name
        else:
            change(model)
            if name.startswith("sync") or name in ("snapshot", "compact"):
                since_sync = []
            since_sync.append(dict(model))
    assert dict(s.items()) == model
    try:
        s.close()
    except OSError as e:
        assert e.errno == err
        failures.append("close")
        assert s.closed  # closed once, whatever failed
        s.close()  # and a second close() does nothing
    else:
        since_sync = [model]
    writes = _core._testing_io_fault(0, 0, False)
    return writes, failures, since_sync


def check_reopen(path, allowed: list) -> None:
    with_snapshot = contents(path, snapshot=True)
    assert with_snapshot in allowed
    assert contents(path, snapshot=False) == with_snapshot


@pytest.mark.parametrize("err", ERRNOS)
def test_io_error_at_every_write(tmp_path, err):
    """EFBIG / ENOSPC at each write of the sequence, once: every call either completes or
    changes nothing, and the reopen (with and without the snapshot) finds exactly the model."""
    writes, failures, models = run_sequence(tmp_path / "count.ckv", 0, err)
    assert failures == [] and writes >= 15
    hit = set()
    for nth in range(1, writes + 1):
        path = tmp_path / f"s{nth}.ckv"
        _, failures, models = run_sequence(path, nth, err)
        assert len(failures) == 1, (nth, failures)
        hit.add(failures[0])
        if failures != ["close"]:
            assert len(models) == 1  # one fault: nothing left unwritten at close
        check_reopen(path, models)
    # every kind of call met a fault somewhere
    assert {"put_many", "sync", "put_many 2", "batch", "compact", "snapshot", "close"} <= hit, hit


def persistent_faults(tmp_path, err, step: int) -> None:
    writes, _, _ = run_sequence(tmp_path / "count.ckv", 0, err)
    for nth in range(1, writes + 1, step):
        path = tmp_path / f"s{nth}.ckv"
        _, failures, models = run_sequence(path, nth, err, persistent=True)
        assert failures and failures[-1] == "close"
        check_reopen(path, models)


def test_persistent_io_error_from_every_third_write(tmp_path):
    """A full disk stays full: every write from the nth on fails. Each call still completes or
    changes nothing; close() then fails, closes, and the reopen finds the store as it was at
    the end of one of the calls since the last successful sync() (never a part of a call)."""
    persistent_faults(tmp_path, errno.ENOSPC, 3)


@pytest.mark.slow
@pytest.mark.parametrize("err", ERRNOS)
def test_persistent_io_error_from_every_write(tmp_path, err):
    persistent_faults(tmp_path, err, 1)


def test_failed_put_many_is_not_written_later(tmp_path):
    """Issue 27 item 4: the failing call's records used to stay buffered and reach the log at
    the next flush (present after sync + reopen without a snapshot, absent with one)."""
    path = tmp_path / "s.ckv"
    with cuckoo.Store(path) as s:
        s.put_many(keys(0, 100), vals(keys(0, 100), 0))
        _core._testing_io_fault(1, errno.ENOSPC, False)
        with pytest.raises(OSError) as e:
            s.put_many(keys(100, 8000), vals(keys(100, 8000), 0))  # > 1 MiB: flushes inside
        assert e.value.errno == errno.ENOSPC
        assert len(s) == 100 and keys(100, 101)[0] not in s
        assert s.put_many(keys(0, 1), [b"v"]) is None
    model = dict(zip(keys(0, 100), vals(keys(0, 100), 0)))
    model[keys(0, 1)[0]] = b"v"
    check_reopen(path, [model])


def random_trial(path, rng, err: int, nth: int, persistent: bool) -> None:
    """Random calls (bulk and scalar writes, batches that commit or raise, sync, snapshot,
    compact) with the nth write failing; after each call the program's view is the model of the
    calls that succeeded, and the reopen agrees."""
    s = cuckoo.Store(path, seed=rng.randrange(2**64))
    model: dict = {}
    since_sync = [{}]
    _core._testing_io_fault(nth, err, persistent)

    def bulk_keys():
        lo = rng.randrange(0, 20000)
        return keys(lo, lo + rng.choice([1, 10, 500, 3000, 9000]))

    for _ in range(rng.randrange(3, 12)):
        op = rng.choice(["put", "put", "add", "discard", "scalar", "batch", "sync", "snapshot", "compact"])
        trial = dict(model)
        ok = True
        try:
            if op == "put":
                ks = bulk_keys()
                vs = vals(ks, rng.randrange(100), rng.choice([0, 30, 250]))
                s.put_many(ks, vs)
                trial.update(zip(ks, vs))
            elif op == "add":
                ks = bulk_keys()
                s.add_unique_many(ks)
                for k in ks:
                    trial.setdefault(k, b"")
            elif op == "discard":
                ks = bulk_keys()
                s.discard_many(ks)
                for k in ks:
                    trial.pop(k, None)
            elif op == "scalar":
                k = keys(rng.randrange(20000), 20000)[0]
                if rng.random() < 0.5:
                    s[k] = b"scalar"
                    trial[k] = b"scalar"
                elif s.discard(k):
                    del trial[k]
            elif op == "batch":
                fail = rng.random() < 0.3
                try:
                    with s.batch():
                        ks = bulk_keys()
                        s.put_many(ks, vals(ks, 7))
                        trial.update(zip(ks, vals(ks, 7)))
                        ks = bulk_keys()
                        s.discard_many(ks)
                        for k in ks:
                            trial.pop(k, None)
                        if fail:
                            raise LookupError
                except LookupError:
                    trial = dict(model)
            else:
                getattr(s, op)()
        except OSError as e:
            assert e.errno == err
            trial, ok = model, False
        model = trial
        assert dict(s.items()) == model, op
        if op in ("sync", "snapshot", "compact") and ok:
            since_sync = []
        since_sync.append(dict(model))
    try:
        s.close()
    except OSError:
        assert s.closed
    else:
        since_sync = [model]
    _core._testing_io_fault(0, 0, False)
    check_reopen(path, since_sync)


@pytest.mark.slow
def test_random_calls_with_a_fault_anywhere(tmp_path):
    import random

    for t in range(150):
        rng = random.Random(t)
        random_trial(tmp_path / f"s{t}.ckv", rng, rng.choice(ERRNOS), rng.randrange(1, 40), rng.random() < 0.5)


# ---- batches ------------------------------------------------------------------------------------

def test_batch_commits_or_rolls_back(tmp_path):
    path = tmp_path / "s.ckv"
    with cuckoo.Store(path) as s:
        s.put_many(keys(0, 100), vals(keys(0, 100), 0))
        s.sync()
        before = dict(s.items())
        size = os.path.getsize(path)
        with pytest.raises(ZeroDivisionError):
            with s.batch():
                s.put_many(keys(50, 6000), vals(keys(50, 6000), 1))  # overwrites and 1.2 MB new
                assert os.path.getsize(path) == size  # held in memory: nothing reaches the file
                s.discard_many(keys(0, 10))
                assert s.add_unique_many(keys(0, 20)).tolist() == [True] * 10 + [False] * 10
                del s[keys(30, 31)[0]]
                assert len(s) == 5999
                1 / 0
        assert dict(s.items()) == before and s.stats()["log_bytes"] == size
        with s.batch():
            s.put_many(keys(200, 300), vals(keys(200, 300), 2))
            del s[keys(0, 1)[0]]
        before.update(zip(keys(200, 300), vals(keys(200, 300), 2)))
        del before[keys(0, 1)[0]]
        assert dict(s.items()) == before and os.path.getsize(path) > size  # handed to the OS
        with pytest.raises(KeyboardInterrupt):
            with s.batch():
                s.put_many(keys(0, 300), vals(keys(0, 300), 3))
                raise KeyboardInterrupt
        assert dict(s.items()) == before
    check_reopen(path, [before])


def test_batch_refusals_and_close_inside(tmp_path):
    path = tmp_path / "s.ckv"
    s = cuckoo.Store(path)
    s[b"a"] = b"1"
    with s.batch():
        with pytest.raises(RuntimeError, match="do not nest"):
            with s.batch():
                pass
        for call in (s.sync, s.snapshot, s.compact):
            with pytest.raises(RuntimeError, match="inside a batch"):
                call()
        s[b"b"] = b"2"
    assert dict(s.items()) == {b"a": b"1", b"b": b"2"}
    with pytest.raises(ValueError, match="closed"):
        with s.batch():
            s[b"c"] = b"3"
            s.close()  # rolls the open batch back
    assert s.closed
    check_reopen(path, [{b"a": b"1", b"b": b"2"}])
    with cuckoo.Store(path, readonly=True) as r:
        with pytest.raises(cuckoo.ReadOnlyError):
            with r.batch():
                pass


def test_batch_commit_failure_rolls_back(tmp_path):
    path = tmp_path / "s.ckv"
    with cuckoo.Store(path) as s:
        s[b"a"] = b"1"
        _core._testing_io_fault(1, errno.EFBIG, False)
        with pytest.raises(OSError) as e:
            with s.batch():
                s.put_many(keys(0, 100), vals(keys(0, 100), 0))
        assert e.value.errno == errno.EFBIG
        assert dict(s.items()) == {b"a": b"1"}  # the batch and nothing else is gone
    check_reopen(path, [{b"a": b"1"}])


def test_crash_inside_a_batch_leaves_none_of_it(tmp_path):
    """A batch's records reach the file only when it commits: a process that dies inside one
    (here os._exit, as SIGKILL) leaves the store as the last committed write left it."""
    path = tmp_path / "s.ckv"
    script = textwrap.dedent(f"""
        import os, cuckoo
        s = cuckoo.Store({str(path)!r})
        s.put_many([b"a%d" % i for i in range(10)], [b"v"] * 10)
        with s.batch():
            s[b"committed"] = b"1"
        with s.batch():
            s.put_many([b"b%06d" % i for i in range(20000)], [b"w" * 100] * 20000)  # 2.6 MB
            os._exit(0)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=60)
    assert contents(path, snapshot=False) == {**{b"a%d" % i: b"v" for i in range(10)}, b"committed": b"1"}


# ---- a real EFBIG: RLIMIT_FSIZE in a subprocess -------------------------------------------------

REAL_FAULT = textwrap.dedent("""
    import errno, json, resource, sys
    import cuckoo
    path = sys.argv[1]
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    s = cuckoo.Store(path, seed=3)
    s.put_many([b"base%d" % i for i in range(100)], [b"b" * 50] * 100)
    s.sync()
    model = dict(s.items())
    resource.setrlimit(resource.RLIMIT_FSIZE, (s.stats()["log_bytes"] + 600_000, hard))
    err = None
    for gen in range(100):
        ks = [b"g%d-%d" % (gen, i) for i in range(1000)]
        vs = [b"%d" % gen * 60] * 1000
        try:
            s.put_many(ks, vs)
        except OSError as e:
            err = e.errno
            break
        model.update(zip(ks, vs))
    assert err == errno.EFBIG, err
    assert dict(s.items()) == model, "the program sees more or less than before the failing call"
    closing = None
    if sys.argv[2] == "close":  # close() itself meets the limit: it raises once and closes
        try:
            s.close()
        except OSError as e:
            closing = e.errno
        assert s.closed, "closed stays False after a failed close()"
        s.close()
    else:
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
        s.sync()
        s.close()
    print(json.dumps({"closing": closing, "model": {k.hex(): v.hex() for k, v in model.items()}}))
""")


@pytest.mark.parametrize("ending", ["sync", "close"])
def test_real_efbig_from_rlimit_fsize(tmp_path, ending):
    """Issue 27 item 4 with a real fault: after an EFBIG inside put_many the program sees the
    store as before the call, and a reopen (with and without the snapshot) finds exactly that;
    ending "close": close() fails on the limit too, raises once, and is closed."""
    path = tmp_path / "s.ckv"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", REAL_FAULT, str(path), ending], env=env, timeout=120,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout)
    model = {bytes.fromhex(k): bytes.fromhex(v) for k, v in out["model"].items()}
    if ending == "close":
        assert out["closing"] == errno.EFBIG
        # the buffered records of calls that succeeded are lost, as in a crash; the synced ones
        # and whole calls only are found
        found = contents(path, snapshot=False)
        assert found.items() <= model.items() and len(found) % 1000 == 100
    else:
        check_reopen(path, [model])


# ---- a log cut before its synced end ------------------------------------------------------------

def _synced_store(path, n=10):
    with cuckoo.Store(path) as s:
        s.put_many([b"k%03d" % i for i in range(n)], [b"v" * 12] * n)  # 32-byte records from 64
        s.sync()
    return 64 + 32 * n


@pytest.mark.parametrize("snapshot", [True, False])
@pytest.mark.parametrize("readonly", [False, True])
def test_log_cut_before_synced_end_is_refused(tmp_path, snapshot, readonly):
    """Issue 27 item 2: a log cut at a record boundary before its synced end used to open
    silently without the synced records after the cut (and the next close recorded the
    smaller synced end)."""
    path = tmp_path / "s.ckv"
    end = _synced_store(path)
    if not snapshot:
        os.unlink(f"{path}.idx")
    os.truncate(path, end - 32 * 4)
    with pytest.raises(cuckoo.FormatError, match="before the end of its synced data.*repair=True"):
        cuckoo.Store(path, readonly=readonly)
    assert os.path.getsize(path) == end - 32 * 4  # nothing rewritten
    with pytest.raises(cuckoo.FormatError):
        cuckoo.Store(path)


def test_repair_accepts_the_loss(tmp_path):
    path = tmp_path / "s.ckv"
    end = _synced_store(path)
    os.truncate(path, end - 32 * 4)
    with pytest.warns(cuckoo.RecoveryWarning, match="128 bytes"):
        with cuckoo.Store(path, repair=True) as s:
            assert sorted(s) == [b"k%03d" % i for i in range(6)]
    with cuckoo.Store(path) as s:  # repaired for good: opens without complaint
        assert len(s) == 6
    # a record corrupt before the synced end: refused, then skipped by repair, which keeps every
    # intact record after it (tests/test_store_repair.py)
    end = _synced_store(tmp_path / "t.ckv")
    os.unlink(tmp_path / "t.ckv.idx")  # (a snapshot would skip reading the record at open)
    with open(tmp_path / "t.ckv", "r+b") as f:
        f.seek(64 + 32 * 3 + 14)
        f.write(b"X")
    with pytest.raises(cuckoo.FormatError, match="corrupt at offset 160"):
        cuckoo.Store(tmp_path / "t.ckv")
    with pytest.warns(cuckoo.RecoveryWarning):
        with cuckoo.Store(tmp_path / "t.ckv", repair=True) as s:
            assert sorted(s) == [b"k%03d" % i for i in range(10) if i != 3]


# ---- smaller (issue 27 item 8) ------------------------------------------------------------------

def test_snapshot_on_readonly_store_raises_readonlyerror(tmp_path):
    path = tmp_path / "s.ckv"
    _synced_store(path)
    with cuckoo.Store(path, readonly=True) as s:
        with pytest.raises(cuckoo.ReadOnlyError):
            s.snapshot()


@pytest.mark.parametrize("values", [[1], (7,), iter([5]), np.array([1], dtype=np.int64), [b"ok", 2]])
def test_one_rule_for_values(tmp_path, values):
    """put_many used to store an int value as its 8-byte word where s[k] = 1 raises TypeError."""
    n = len(values) if hasattr(values, "__len__") else 1
    with cuckoo.Store(tmp_path / "s.ckv") as s:
        with pytest.raises(TypeError, match="store values must be bytes or str"):
            s[b"k"] = 1
        with pytest.raises(TypeError, match="store values must be bytes or str, not (int|integers)"):
            s.put_many([b"k%d" % i for i in range(n)], values)
        assert len(s) == 0


def test_none_value_is_named_as_a_value(tmp_path):
    with cuckoo.Store(tmp_path / "s.ckv") as s:
        with pytest.raises(TypeError, match=r"values must be bytes or str, not NoneType \(put_many value 1\)"):
            s.put_many([b"a", b"b"], [b"x", None])
        with pytest.raises(TypeError, match="values must be bytes or str, not NoneType"):
            s[b"a"] = None
        s.put_many([b"a"], np.array([b"x"]))  # NumPy 'S' and Arrow binary values stay accepted
        s.put_many([b"b"], ["text"])
        assert s[b"a"] == b"x" and s[b"b"] == b"text"


def test_close_after_an_io_error_closes_once(tmp_path):
    path = tmp_path / "s.ckv"
    s = cuckoo.Store(path)
    s.put_many(keys(0, 10), vals(keys(0, 10), 0))
    s.sync()
    s[b"late"] = b"1"  # buffered
    _core._testing_io_fault(1, errno.ENOSPC, True)  # every write fails from now on
    with pytest.raises(OSError):
        s.close()
    assert s.closed
    s.close()
    with pytest.raises(ValueError, match="closed"):
        len(s)
    _core._testing_io_fault(0, 0, False)
    assert contents(path, snapshot=False) == dict(zip(keys(0, 10), vals(keys(0, 10), 0)))
    cuckoo.Store(path).close()  # the lock was released


CLOSE_ON_FULL = textwrap.dedent("""
    import resource, sys
    import cuckoo
    s = cuckoo.Store(sys.argv[1])
    s[b"a"] = b"1"
    s.sync()
    s[b"b"] = b"2"  # buffered: close() must write it, past the limit
    resource.setrlimit(resource.RLIMIT_FSIZE, (s.stats()["log_bytes"] - 8, resource.RLIM_INFINITY))
    try:
        s.close()
    except OSError as e:
        print(e.errno, s.closed)
    s.close()  # no second error
    print(s.closed)
""")


def test_close_on_a_real_efbig_closes_once(tmp_path):
    """Issue 27 item 8: close() after a write error raised on every call and closed stayed False."""
    path = tmp_path / "s.ckv"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", CLOSE_ON_FULL, str(path)], env=env, timeout=60,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == [str(errno.EFBIG), "True", "True"]
    assert contents(path, snapshot=False) == {b"a": b"1"}


def test_dropped_store_is_closed(tmp_path):
    """docs/store.md: a store dropped without close() is closed when it is collected (synced,
    snapshot written)."""
    path = tmp_path / "s.ckv"
    s = cuckoo.Store(path)
    s[b"a"] = b"1"
    del s
    with cuckoo.Store(path) as r:
        assert r.stats()["snapshot_used"] and r[b"a"] == b"1"
