"""Issue 20: hostile and careless use must never crash the interpreter, hang, allocate without
bound or end in a RuntimeError. One regression test (or more) per case the adversarial pass found:

0. the first bulk calls of several threads at once in a fresh process (a deadlock on the
   binding's lazily imported helpers), and the README's Dask example on the threaded scheduler
1. an object made by ``Filter.__new__`` without ``__init__``; a second ``__init__``
2. ``load()`` of a FIFO of junk, of ``/dev/zero``: bounded reads, ``FormatError``
3. ``FilterFullError.inserted`` at the 64-stage limit of a growable filter
4. whole-table ``==`` / ``copy()`` / merge release the GIL
5. ``copy()`` / ``save()`` of an unverified mapped filter whose header disagrees with its table
6. ``kill -9`` during ``save()`` leaves no temporary file (or the next save removes it)
7. bool keys, huge ``__length_hint__``, ``Filter(100, 10**400)``, ``max_kicks`` read from files
8. (documented: README, next to ``mmap=True``)
9. ``save()`` through a symlink and over non-regular files; CLI write errors (``/dev/full``)

Hangs are detected with generous timeouts only (subprocesses, thread joins), never with a
wall-clock threshold on something that is expected to finish.
"""

from __future__ import annotations

import copy
import os
import pickle
import signal
import stat
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import cuckoo
import _format_ref as ref
from _threads import MIN_PROGRESS, ProgressCounter, run_until_progress

Filter = cuckoo.Filter
HANG_TIMEOUT = 120  # seconds: only ever reached by a hang
posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX files and signals")


def run_python(code: str, *args: str, timeout: float = HANG_TIMEOUT) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter; a hang fails the test (TimeoutExpired kills it)."""
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"hung for {timeout} s: {exc.cmd[3:]}")


# ---- 0. first bulk calls of several threads at once ---------------------------------------------

FIRST_CALLS = """
    import sys, threading
    kind, n_threads = sys.argv[1], int(sys.argv[2])
    import numpy as np
    import cuckoo

    def keys(i):
        words = [f"key {i} {j}" for j in range(2000)]
        if kind == "pandas":
            import pandas as pd
            return pd.Series(words) if i % 2 else pd.Series(words, dtype="string[pyarrow]")
        if kind == "arrow":
            import pyarrow as pa
            return pa.array(words) if i % 2 else pa.chunked_array([words[:1000], words[1000:]])
        if kind == "numpy":  # a plain array, and a masked one (its own lazily found helper)
            a = np.arange(i * 2000, (i + 1) * 2000, dtype=np.uint64)
            return a if i % 2 else np.ma.masked_array(a, mask=False)
        return words if i % 2 else iter(words)  # a list, and any other iterable

    batches = [keys(i) for i in range(n_threads)]
    start = threading.Barrier(n_threads)
    done = []

    def first_call(i):
        f = cuckoo.Filter(10_000)
        start.wait()
        f.add_many(batches[i])
        done.append(len(f))

    threads = [threading.Thread(target=first_call, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert done == [2000] * n_threads, done
    print("ok")
"""

DASK_README = """
    import dask
    import numpy as np
    import pandas as pd
    import dask.dataframe as dd
    import cuckoo.dask as cd

    users = [f"user {k}" for k in range(20_000)]  # distinct: repeated keys are issue 19's
    events = dd.from_pandas(pd.DataFrame({"user_id": users, "event_id": np.arange(20_000) % 15_000}), npartitions=8)
    other = dd.from_pandas(pd.DataFrame({"user_id": [f"user {k}" for k in range(0, 20_000, 2)]}), npartitions=4)
    with dask.config.set(scheduler="threads"):  # the default for dask.dataframe without a client
        seen = cd.build(events, "user_id", fpr=0.001)          # the README's example, as written
        mask = cd.contains(other, seen, "user_id")
        first = cd.dedup(events, "event_id")
        hits, n_first = mask.compute().to_numpy(), len(first.compute())
    assert seen.contains_many(users).all() and hits.all(), "false negatives"
    assert 14_900 <= n_first <= 15_000, n_first
    print("ok")
"""

KINDS = {"pandas": ("pandas", "pyarrow"), "arrow": ("pyarrow",), "numpy": (), "list": (),
         "dask": ("dask.dataframe", "pandas")}


def first_calls_hang_free(kind: str, processes: int, threads: int = 4) -> None:
    for module in KINDS[kind]:
        pytest.importorskip(module)
    for run in range(processes):
        code, args = (DASK_README, ()) if kind == "dask" else (FIRST_CALLS, (kind, str(threads)))
        proc = run_python(code, *args)
        assert proc.returncode == 0 and proc.stdout.strip() == "ok", (run, proc.stdout, proc.stderr[-2000:])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_first_bulk_calls_of_several_threads_do_not_deadlock(kind):
    # Before the fix: 20 hangs in 20 processes (pandas); the Dask example in 5 of 20.
    first_calls_hang_free(kind, processes=2 if kind == "dask" else 3)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_first_bulk_calls_of_several_threads_do_not_deadlock_20_processes(kind):
    first_calls_hang_free(kind, processes=20)


# ---- 1. an object whose C++ filter was never built ------------------------------------------------

# Arguments for the public methods that take any; every other one is called without.
ARGS = {
    "add": (1,), "add_unique": (1,), "discard": (1,), "remove": (1,), "count": (1,), "__contains__": (1,),
    "add_many": ([1],), "add_unique_many": ([1],), "contains_many": ([1],), "discard_many": ([1],),
    "count_many": ([1],), "update": ([1],), "merge": (None,), "__eq__": (None,), "__ne__": (None,),
    "__or__": (None,), "__ior__": (None,), "__and__": (None,), "__iand__": (None,), "intersection": (None,),
    "bucket_indices": (1,), "alt_index": (0, 1), "__deepcopy__": ({},),
}
NOT_BUILT = "not initialised"


def public_members():
    for name in sorted(dir(Filter)):
        raw = next((vars(k)[name] for k in Filter.__mro__ if name in vars(k)), None)
        if isinstance(raw, (staticmethod, classmethod)) or type(raw).__name__ == "builtin_function_or_method":
            continue  # no instance involved (from_bytes, load, ...)
        if name.startswith("__") and name not in ARGS and name not in ("__len__", "__copy__", "__reduce__", "__repr__"):
            continue  # object's and pybind11's own
        if name.startswith("_") and not name.startswith("__") and name != "_repr_html_":
            continue  # internal helpers, reached through the public calls below
        yield name, raw


def test_every_public_member_of_an_unbuilt_filter_raises_type_error(tmp_path):
    f = Filter.__new__(Filter)
    other = Filter(10)
    checked = []
    for name, raw in public_members():
        if isinstance(raw, property):
            with pytest.raises(TypeError, match=NOT_BUILT):
                getattr(f, name)
        elif name == "save":
            with pytest.raises(TypeError, match=NOT_BUILT):
                f.save(tmp_path / "x.cuckoo")
            assert os.listdir(tmp_path) == []  # no temporary file left either
        else:
            args = tuple(other if a is None else a for a in ARGS.get(name, ()))
            with pytest.raises(TypeError, match=NOT_BUILT):
                getattr(f, name)(*args)
        checked.append(name)
    for must in ("add", "add_many", "capacity", "copy", "clear", "contains_many", "merge", "to_bytes", "__len__",
                 "__eq__", "stats", "stages", "save", "_repr_html_"):
        assert must in checked
    # the same through operators, builtins and the other filter's side
    for call in (lambda: len(f), lambda: 1 in f, lambda: f == other, lambda: other == f, lambda: other != f,
                 lambda: other | f, lambda: other.merge(f), lambda: copy.copy(f), lambda: copy.deepcopy(f),
                 lambda: pickle.dumps(f), lambda: repr(f), lambda: other.__ior__(f), lambda: other & f,
                 lambda: other.__iand__(f)):
        with pytest.raises(TypeError, match=NOT_BUILT):
            call()
    assert len(other) == 0 and other == Filter(10)  # the other filter is unchanged
    # a late __init__ builds it properly
    f.__init__(100, fpr=0.01)
    f.add("x")
    assert "x" in f and len(f) == 1 and f.capacity == 100


def required_parameters(doc: str) -> int:
    """How many arguments after self a pybind11 method needs, from its signature line."""
    inside = doc.splitlines()[0]
    inside = inside[inside.index("(") + 1 : inside.rindex(")")]
    depth, count, current = 0, 0, ""
    for ch in inside + ",":
        depth += ch in "[(" and 1 or ch in "])" and -1 or 0
        if ch == "," and depth == 0:
            count += "=" not in current and current.strip() not in ("", "*")
            current = ""
        else:
            current += ch
    return count - 1  # self


def test_every_member_of_an_unbuilt_store_core_raises_type_error():
    # The compiled part of cuckoo.Store is private, but reachable: it must not crash either.
    S = cuckoo._core._Store
    s = S.__new__(S)
    checked = 0
    for name, raw in sorted(vars(S).items()):
        if isinstance(raw, property):
            with pytest.raises(TypeError, match=NOT_BUILT):
                getattr(s, name)
        elif type(raw).__name__ == "instancemethod" and not name.startswith("_pybind11"):
            args = (None,) * required_parameters(raw.__func__.__doc__)
            with pytest.raises(TypeError, match=NOT_BUILT):
                getattr(s, name)(*args)
        else:
            continue
        checked += 1
    assert checked >= 20
    with pytest.raises(TypeError, match=NOT_BUILT):
        len(s)


def test_a_second_init_raises_and_keeps_the_filter():
    f = Filter(100, seed=3)
    f.add_many([1, 2, 3])
    with pytest.raises(TypeError, match="already initialised"):
        f.__init__(1000)
    assert (f.capacity, f.seed, len(f)) == (100, 3, 3) and all(k in f for k in (1, 2, 3))

    class Sub(Filter):  # subclasses still construct through the guarded __init__
        def __init__(self, n: int) -> None:
            super().__init__(n, fpr=0.01)

    s = Sub(50)
    assert s.capacity == 50 and isinstance(s, Filter)
    with pytest.raises(TypeError, match="already initialised"):
        Filter.__init__(s, 10)


# ---- 2. load() of pipes and devices ---------------------------------------------------------------

@posix_only
@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("mmap", [False, True])
def test_load_dev_zero_is_a_format_error(mmap):
    proc = run_python(f"""
        import cuckoo
        try:
            cuckoo.Filter.load("/dev/zero", mmap={mmap})
        except cuckoo.FormatError as e:
            print("FormatError:", e)
    """)
    assert proc.returncode == 0 and "FormatError: bad magic" in proc.stdout, proc.stderr[-2000:]


@posix_only
def test_load_fifo_of_junk_reads_a_bounded_amount(tmp_path):
    fifo = tmp_path / "junk"
    os.mkfifo(fifo)
    # A writer thread offers 1 GiB of junk; the reader must refuse it after reading the 64-byte
    # fixed header, so its peak RSS stays far below what was offered (before: 1,043 MiB).
    proc = run_python(f"""
        import os, resource, threading
        import cuckoo
        def offer():
            with open({str(fifo)!r}, "wb") as w:
                piece = os.urandom(1 << 20)
                try:
                    for _ in range(1024):
                        w.write(piece)
                except BrokenPipeError:
                    pass
        t = threading.Thread(target=offer, daemon=True)
        t.start()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        try:
            cuckoo.Filter.load({str(fifo)!r})
        except cuckoo.FormatError as e:
            print("FormatError:", e)
        print("grew_mib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024 - before)
    """)
    assert proc.returncode == 0 and "FormatError: bad magic" in proc.stdout, proc.stderr[-2000:]
    grew = int(proc.stdout.split("grew_mib")[1])
    assert grew < 256, f"peak RSS grew by {grew} MiB while 1 GiB of junk was offered"


@posix_only
@pytest.mark.parametrize("mmap", [False, True])
def test_load_fifo_of_a_real_filter_and_of_bad_lengths(tmp_path, mmap):
    f = Filter(1000, seed=9)
    f.add_many(range(600))
    good = f.to_bytes()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def load_through_fifo(data: bytes):
        def offer():
            with open(fifo, "wb") as w:
                try:
                    w.write(data)
                except BrokenPipeError:
                    pass

        t = threading.Thread(target=offer)
        t.start()
        try:
            return Filter.load(fifo, mmap=mmap)
        finally:
            t.join(timeout=HANG_TIMEOUT)
            assert not t.is_alive()

    back = load_through_fifo(good)
    assert back == f and back.read_only == mmap
    for data, message in ((good + b"\0", "trailing data"), (good[:-1], "truncated"), (good[:100], "truncated"),
                          (good[:3], "truncated"), (b"", "no data"), (b"CUCKOOX", "bad magic"),
                          (ref.rewrite(good, header_length=2**32 - 1), "header length"),
                          (ref.rewrite(good, version=7), "unsupported format version 7")):
        with pytest.raises(cuckoo.FormatError, match=message):
            load_through_fifo(data)


def test_bytes_needed_trusts_no_length_before_checking_it():
    f = Filter(1000)
    data = f.to_bytes()
    h = ref.parse(data)
    assert Filter._bytes_needed(b"") == 64
    assert Filter._bytes_needed(data[:10]) == 64
    assert Filter._bytes_needed(data[:64]) == h["header_length"]
    assert Filter._bytes_needed(data[: h["header_length"]]) == len(data)
    assert Filter._bytes_needed(data) == len(data)
    with pytest.raises(cuckoo.FormatError, match="bad magic"):
        Filter._bytes_needed(b"\0" * 5)
    with pytest.raises(cuckoo.FormatError, match="header length"):
        Filter._bytes_needed(ref.rewrite(data, header_length=2**31)[:64])
    # a file length no checked header backs is never returned: the header checksum comes first
    corrupt = bytearray(data[: h["header_length"]])
    corrupt[16] ^= 1
    with pytest.raises(cuckoo.FormatError, match="checksum mismatch in the header"):
        Filter._bytes_needed(bytes(corrupt))
    # a declared size that cannot fit in memory: MemoryError before anything more is read
    # (2^32 buckets x 8 slots x 32 bits = 128 GiB of table)
    declared = 192 + 2**37 + 64
    huge = ref.rewrite(data, stage_bucket_count=2**32, stage_fingerprint_bits=32, stage_bucket_size=8,
                       stage_table_length=2**37, file_length=declared)
    try:
        assert Filter._bytes_needed(huge[: h["header_length"]]) == declared  # a machine with the memory
    except MemoryError as e:
        assert "GiB" in str(e)


# ---- 3. FilterFullError.inserted at the stage limit ------------------------------------------------

STAGE_LIMIT = "most stages a filter may have .64"


def filter_at_the_stage_limit() -> Filter:
    """A growable filter with 64 stages, built by merges (each adds the other's stages: a
    multiset sum; the set union | would keep the stages it has)."""
    f = Filter(8, fpr=0.5, growable=True, bucket_size=2, max_kicks=0)
    g = Filter(8, fpr=0.5, growable=True, bucket_size=2, max_kicks=0)
    g.add_many(np.arange(40, dtype=np.uint64))
    while True:
        try:
            f.merge(g)
        except cuckoo.FilterFullError:
            break
    # then fill the newest stages until one more would be needed
    try:
        f.add_many(np.arange(10**6, 2 * 10**6, dtype=np.uint64))
    except cuckoo.FilterFullError:
        pass
    assert len(f.stages) == 64
    return f


@pytest.mark.parametrize("method", ["add_many", "add_unique_many", "update"])
def test_filter_full_error_at_the_stage_limit_says_how_many_went_in(method):
    f = filter_at_the_stage_limit()
    before = len(f)
    keys = np.arange(5 * 10**6, 5 * 10**6 + 10**5, dtype=np.uint64)
    with pytest.raises(cuckoo.FilterFullError, match=STAGE_LIMIT) as info:
        getattr(f, method)(keys)
    assert info.value.reason == "max_stages"
    inserted = info.value.inserted
    assert len(f) - before <= inserted < len(keys)  # unique: keys seen as present are not stored
    assert f.contains_many(keys[:inserted]).all()  # no false negative for what went in
    with pytest.raises(cuckoo.FilterFullError, match=STAGE_LIMIT) as info:
        for k in range(6 * 10**6, 7 * 10**6):  # scalar adds: full too, before long
            f.add(k)
    assert info.value.inserted == 0 and len(f.stages) == 64


# ---- 4. whole-table calls release the GIL -----------------------------------------------------------

@pytest.fixture(scope="module")
def twins():
    a = Filter(4_000_000, fingerprint_bits=32)
    a.add_many(np.arange(3_000_000, dtype=np.uint64))
    return a, a.copy()


@pytest.mark.skipif(hasattr(sys, "_is_gil_enabled") and not sys._is_gil_enabled(), reason="no GIL")
@pytest.mark.parametrize("call", ["==", "!=", "copy", "merge"])
def test_whole_table_calls_release_the_gil(twins, call):
    a, b = twins
    results = []
    run = {
        "==": lambda: results.append(a == b),
        "!=": lambda: results.append(a != b),
        "copy": lambda: results.append(len(a.copy())),
        "merge": lambda: results.append(merged(b)),
    }[call]
    with ProgressCounter() as counter:
        assert run_until_progress(counter, run) >= MIN_PROGRESS
    assert results[-1] == {"==": True, "!=": False, "copy": 3_000_000, "merge": 3_000_000}[call]


def merged(other: Filter) -> int:
    f = Filter(4_000_000, fingerprint_bits=32)
    f.merge(other)
    return len(f)


# ---- 5. copy() / save() of an unverified mapped filter -----------------------------------------------

def test_copy_and_save_of_a_mapped_filter_with_a_lying_header_raise(tmp_path):
    f = Filter(1000, seed=1)
    f.add_many(range(12))
    lying = ref.rewrite(f.to_bytes(), stage_item_count=11)  # checksums fixed: only a recount sees it
    path = tmp_path / "lying.cuckoo"
    path.write_bytes(lying)
    m = Filter.load(path, mmap=True)  # unverified: opens (documented)
    assert len(m) == 11
    for call in (m.copy, lambda: copy.deepcopy(m), m.to_bytes, lambda: pickle.dumps(m), lambda: m | Filter(1000, seed=1)):
        with pytest.raises(cuckoo.FormatError, match="the header says 11 items, the table holds 12"):
            call()
    out = tmp_path / "out.cuckoo"
    with pytest.raises(cuckoo.FormatError, match="the header says 11 items, the table holds 12"):
        m.save(out)
    assert sorted(os.listdir(tmp_path)) == ["lying.cuckoo"]  # nothing written, no temporary left
    with pytest.raises(cuckoo.FormatError, match="holds 12"):
        Filter.load(path, mmap=True, verify=True)
    # a consistent mapped filter copies and saves as before
    good = tmp_path / "good.cuckoo"
    f.save(good)
    m2 = Filter.load(good, mmap=True)
    assert m2.copy() == f and not m2.copy().read_only
    m2.save(out)
    assert Filter.load(out) == f


# ---- 6. kill -9 during save() ------------------------------------------------------------------------

KILLED_SAVE = """
    import os, signal, sys
    import cuckoo
    from cuckoo import _persist
    if sys.argv[2] == "named":  # as where the OS has no unnamed files
        _persist._unnamed_file = lambda directory: None
    def write_then_die(self, fd):
        os.write(fd, b"x" * 100_000)  # part of the file written, then kill -9
        os.kill(os.getpid(), signal.SIGKILL)
    cuckoo.Filter._write_fd = write_then_die
    cuckoo.Filter(1000).save(sys.argv[1])
"""


@posix_only
@pytest.mark.parametrize("how", ["unnamed", "named"])
def test_a_save_killed_midway_leaves_no_temporary_file(tmp_path, how):
    target = tmp_path / "seen.cuckoo"
    old = Filter(100, seed=5)
    old.add("old")
    old.save(target)
    proc = run_python(KILLED_SAVE, str(target), how)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert Filter.load(target) == old  # atomic: the old file is intact
    leftovers = sorted(set(os.listdir(tmp_path)) - {"seen.cuckoo"})
    if how == "unnamed" and hasattr(os, "O_TMPFILE") and sys.platform.startswith("linux"):
        assert leftovers == []  # the unnamed file died with the process
    else:
        assert len(leftovers) <= 1
    # the next save to the same target removes what a dead process left, and saves
    new = Filter(100, seed=6)
    new.save(target)
    assert sorted(os.listdir(tmp_path)) == ["seen.cuckoo"] and Filter.load(target) == new


@posix_only
def test_a_running_save_temporary_is_not_removed(tmp_path):
    target = tmp_path / "t.cuckoo"
    alive = tmp_path / f".t.cuckoo.{os.getppid()}.0123456789ab.tmp"  # our parent: a live process
    dead = tmp_path / ".t.cuckoo.999999999.0123456789ab.tmp"  # beyond pid_max: no such process
    other = tmp_path / ".u.cuckoo.999999999.0123456789ab.tmp"  # another target's
    for p in (alive, dead, other):
        p.write_bytes(b"partial")
    Filter(10).save(target)
    assert sorted(os.listdir(tmp_path)) == sorted([target.name, alive.name, other.name])


# ---- 7. small gaps ---------------------------------------------------------------------------------------

def test_bool_keys_are_refused_everywhere(wide_filter):
    f = wide_filter
    for call in (lambda: f.add(True), lambda: f.add_unique(False), lambda: True in f, lambda: f.count(True),
                 lambda: f.discard(True), lambda: f.bucket_indices(False), lambda: f.add_many([1, True]),
                 lambda: f.add_many(np.array([1, True], dtype=object)), lambda: f.contains_many(iter([False])),
                 lambda: f.update([2], (True,)), lambda: f.add_many(np.array([True, False]))):
        with pytest.raises(TypeError, match="bool"):
            call()
    assert len(f) == 0  # unchanged
    f.add(1)
    assert 1 in f and f.count(1) == 1


class Liar:
    """An iterable of three keys claiming to have `hint` of them."""

    def __init__(self, hint: int) -> None:
        self.hint = hint

    def __iter__(self):
        return iter([1, 2, 3])

    def __length_hint__(self) -> int:
        return self.hint


@pytest.mark.parametrize("hint", [2**62, 2**40, 2**31, 10**6])
def test_a_length_hint_is_not_trusted(wide_filter, hint):
    assert wide_filter.add_many(Liar(hint)) == 3
    assert wide_filter.contains_many(Liar(hint)).tolist() == [True] * 3
    assert wide_filter.add_unique_many(Liar(hint)).tolist() == [False] * 3


@pytest.mark.parametrize("fpr", [10**400, -(10**400), float("nan"), float("inf"), 0, 1])
def test_an_fpr_out_of_range_is_a_value_error(fpr):
    with pytest.raises(ValueError, match="fpr must be in"):
        Filter(100, fpr)


def test_max_kicks_is_capped_in_files_and_in_the_constructor():
    f = Filter(100, max_kicks=65_536)
    assert f.max_kicks == 65_536
    with pytest.raises(ValueError, match="max_kicks must be between 0 and 65536"):
        Filter(100, max_kicks=65_537)
    data = Filter(100).to_bytes()
    # written by the first 0.2.0 builds (constructor bound 10^6): read with the present bound
    back = Filter.from_bytes(ref.rewrite(data, max_kicks=1_000_000))
    assert back.max_kicks == 65_536 and len(back) == 0
    assert Filter.from_bytes(ref.rewrite(data, max_kicks=777)).max_kicks == 777
    with pytest.raises(cuckoo.FormatError, match="invalid max_kicks 1000001"):
        Filter.from_bytes(ref.rewrite(data, max_kicks=1_000_001))


# ---- 9. save() over symlinks and special files; CLI write errors -------------------------------------

@posix_only
def test_save_writes_through_a_symlink(tmp_path):
    f = Filter(100)
    f.add("k")
    target = tmp_path / "real.cuckoo"
    link = tmp_path / "link.cuckoo"
    link.symlink_to("real.cuckoo")  # dangling at first: the target is created
    f.save(link)
    assert link.is_symlink() and Filter.load(target) == f
    f.add("j")
    f.save(link)
    assert link.is_symlink() and Filter.load(target) == f and Filter.load(link) == f


@posix_only
def test_save_refuses_a_path_that_is_not_a_regular_file(tmp_path):
    f = Filter(100)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    directory = tmp_path / "dir"
    directory.mkdir()
    link_to_fifo = tmp_path / "link"
    link_to_fifo.symlink_to(fifo)
    for path, error, what in ((fifo, FileExistsError, "not a regular file"), (link_to_fifo, FileExistsError, "not a regular file"),
                              (directory, IsADirectoryError, "is a directory")):
        with pytest.raises(error, match=what):
            f.save(path)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and link_to_fifo.is_symlink() and directory.is_dir()
    assert sorted(os.listdir(tmp_path)) == ["dir", "fifo", "link"]
    if os.path.exists("/dev/null"):
        with pytest.raises(FileExistsError, match="not a regular file"):
            f.save("/dev/null")
        assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def cli(*args, stdout=subprocess.PIPE, input=b"a\nb\na\n"):
    return subprocess.run([sys.executable, "-m", "cuckoo", *map(str, args)], input=input, stdout=stdout,
                          stderr=subprocess.PIPE, timeout=HANG_TIMEOUT)


@posix_only
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_cli_write_errors_are_one_line_with_their_own_exit_code(tmp_path):
    src = tmp_path / "in.txt"
    src.write_bytes(b"".join(b"line %d\n" % (k % 5000) for k in range(100_000)))
    filt = tmp_path / "f.cuckoo"
    assert cli("build", src, "-o", filt).returncode == 0
    store = tmp_path / "s.store"
    assert cli("store", "put", store, "k", "value").returncode == 0
    with open("/dev/full", "wb") as full:
        runs = {
            "dedup > /dev/full": cli("dedup", "-q", src, stdout=full),
            "dedup -o /dev/full": cli("dedup", "-q", src, "-o", "/dev/full"),
            "query > /dev/full": cli("query", filt, src, stdout=full),
            "info > /dev/full": cli("info", filt, stdout=full),
            "store get > /dev/full": cli("store", "get", store, "k", stdout=full),
            "store info > /dev/full": cli("store", "info", store, stdout=full),
            "store export -o /dev/full": cli("store", "export", store, "-o", "/dev/full"),
        }
    for what, proc in runs.items():
        err = proc.stderr.decode()
        assert proc.returncode == cli_module().EXIT_WRITE == 4, (what, proc.returncode, err)
        assert err.count("\n") == 1 and "Traceback" not in err, (what, err)
        assert err.startswith("cuckoo: cannot write ") and err.rstrip().endswith("No space left on device"), (what, err)
    # a filter file over a device: refused, exit 2, the device left alone
    proc = cli("dedup", "-q", "--save", "/dev/null", input=b"a\n")
    assert proc.returncode == 2 and b"not a regular file" in proc.stderr and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def cli_module():
    from cuckoo import cli as module

    return module


def test_the_write_error_exit_code_is_documented():
    assert "  4  an output that cannot be written" in cli_module().EXIT_HELP
