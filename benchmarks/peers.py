"""cuckoo.Filter against Python membership peers, measured side by side in one run.

    pip install ".[bench]"                       # the peers: abloom, rbloom, fastbloom-rs, pybloomfiltermmap3, pyprobables
    python benchmarks/peers.py                   # 10^6 keys, 5 rounds, bytes / str / int keys (~3 minutes)
    python benchmarks/peers.py --keys 1e5 --rounds 3 --types bytes

Keys are like b"user-%016x" (bytes), the same text as str, and 63-bit ints; every filter is sized
for --keys keys at fpr 0.001. Lookups ask --keys keys of which half are present, in random order.

Operations (each a Python loop over a list of keys, or one bulk call, as a user writes it):
  add        `add = f.add; for k in keys: add(k)` into an empty filter
  in         `for k in queries: k in f`
  add_unique, discard, count   cuckoo's other scalar calls (discard: every present key once)
  bulk add   one call on the list: add_many / update / add_*_batch
  bulk in    one call on the list: contains_many / contains_*_batch (set: map(s.__contains__))
  numpy add / numpy in   cuckoo's bulk calls on a NumPy array (S for bytes, U for str, uint64 for int)

Every measurement takes turns with the others in each of --rounds rounds (a shared machine's
speed drifts within seconds), each on new key objects (see renew), and the table shows min / median
ns per key over the rounds, and the ratios to abloom's, rbloom's (scalar writes against the peer's
add, scalar reads against its `in`, bulk adds against its update) and `set`'s same operation: the
median over the rounds of the ratio within each round (measurements neighbouring in time). A peer
that is not installed is left out with a note. pyprobables is pure Python: it runs on the first
--slow-keys keys only (its figures are still per key). The header names the CPU and cuckoo's
kernel level (scalar calls do not depend on it; bulk calls do).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import statistics
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

import cuckoo
from _machine import header

FPR = 0.001

# (operation, baseline operation of the Bloom filter peers (abloom, rbloom) it is compared with)
SCALAR_WRITES = ("add", "add_unique", "discard")
SCALAR_READS = ("in", "count")
OPERATIONS = ("add", "add_unique", "discard", "in", "count", "bulk add", "bulk in", "numpy add", "numpy in")
PEER_BASELINE = {"add": "add", "add_unique": "add", "discard": "add", "in": "in", "count": "in",
                   "bulk add": "bulk add", "bulk in": "in", "numpy add": "bulk add", "numpy in": "in"}


def optional(module: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def make_keys(n: int, kind: str, rng: np.random.Generator) -> Tuple[list, list, np.ndarray, np.ndarray]:
    """(present, queries, present as an array, queries as an array): n distinct keys to insert and
    n queries, half of them present, shuffled. The queries are objects of their own (equal to the
    inserted ones for present keys), made in query order, as keys read from input are."""
    values = np.unique(rng.integers(0, 2**63, size=2 * n + n // 8, dtype=np.int64))[: 2 * n]
    rng.shuffle(values)
    order = rng.permutation(n)
    query_values = np.concatenate([values[: n // 2], values[n : n + (n - n // 2)]])[order]
    if kind == "int":
        present = [int(v) for v in values[:n]]
        queries = [int(v) for v in query_values]
        return present, queries, values[:n].astype(np.uint64), query_values.astype(np.uint64)
    as_bytes = lambda vs: [b"user-%016x" % int(v) for v in vs]  # noqa: E731
    present, queries = as_bytes(values[:n]), as_bytes(query_values)
    if kind == "str":
        present = [k.decode() for k in present]
        queries = [k.decode() for k in queries]
        return present, queries, np.array(present, dtype="U21"), np.array(queries, dtype="U21")
    return present, queries, np.array(present, dtype="S21"), np.array(queries, dtype="S21")


class Impl:
    """One structure under test: how to build it empty, and a runner per operation it supports.
    A runner takes the prepared object and returns the number of keys it handled."""

    def __init__(self, name: str, new: Callable[[], object], ops: Dict[str, Callable[[object], int]],
                 prepare: Optional[Dict[str, Callable[[], object]]] = None, limit: Optional[int] = None):
        self.name, self.new, self.ops, self.prepare, self.limit = name, new, ops, prepare or {}, limit


def scalar_loop(method_name: str, keys: list) -> Callable[[object], int]:
    def run(obj: object) -> int:
        method = getattr(obj, method_name)
        for k in keys:
            method(k)
        return len(keys)
    return run


def in_loop(keys: list) -> Callable[[object], int]:
    def run(obj: object) -> int:
        for k in keys:
            k in obj  # noqa: B015 - the lookup is the measured work
        return len(keys)
    return run


def renew(keys: list, kind: str) -> None:
    """Replaces every bytes/str key of `keys` (in place: the runners hold the list) by a new, equal
    object. A str or bytes object caches its hash() once computed; a peer or a set keyed by hash()
    would otherwise find it cached from the previous round (or from filling a structure), which
    keys read from input never have. (cuckoo does not use hash(): its hashes are stable.)"""
    if kind == "bytes":
        keys[:] = [bytes(bytearray(k)) for k in keys]
    elif kind == "str":
        keys[:] = [k.encode().decode() for k in keys]


def impls_for(kind: str, n: int, present: list, queries: list, present_arr: np.ndarray, query_arr: np.ndarray,
              slow_keys: int, notes: List[str]) -> List[Impl]:
    out: List[Impl] = []

    def filled(new: Callable[[], object], fill: Callable[[object], object]) -> Callable[[], object]:
        obj = new()
        fill(obj)
        return lambda: obj

    def set_like(name: str, new: Callable[[], object]) -> Impl:
        """A peer with a set's add / in / update."""
        return Impl(name, new, {
            "add": scalar_loop("add", present),
            "in": in_loop(queries),
            "bulk add": lambda b: (b.update(present), len(present))[1],
        }, prepare={"in": filled(new, lambda b: b.update(present))})

    # cuckoo
    new_filter = lambda: cuckoo.Filter(n, FPR)  # noqa: E731
    full_filter = filled(new_filter, lambda f: f.add_many(present_arr))
    out.append(Impl("cuckoo", new_filter, {
        "add": scalar_loop("add", present),
        "add_unique": scalar_loop("add_unique", present),
        "discard": scalar_loop("discard", present),
        "in": in_loop(queries),
        "count": scalar_loop("count", queries),
        "bulk add": lambda f: f.add_many(present),
        "bulk in": lambda f: len(f.contains_many(queries)),
        "numpy add": lambda f: f.add_many(present_arr),
        "numpy in": lambda f: len(f.contains_many(query_arr)),
    }, prepare={"discard": lambda: full_filter().copy(), "in": full_filter, "count": full_filter,
                "bulk in": full_filter, "numpy in": full_filter}))

    # set
    full_set = filled(set, lambda s: s.update(present))
    out.append(Impl("set", set, {
        "add": scalar_loop("add", present),
        "discard": scalar_loop("discard", present),
        "in": in_loop(queries),
        "bulk add": lambda s: (s.update(present), len(present))[1],
        "bulk in": lambda s: len(list(map(s.__contains__, queries))),
    }, prepare={"discard": lambda: set(full_set()), "in": full_set, "bulk in": full_set}))

    abloom = optional("abloom")
    if abloom is None:
        notes.append("abloom is not installed (pip install abloom): no abloom ratios")
    else:
        out.append(set_like("abloom", lambda: abloom.BloomFilter(n, FPR)))

    rbloom = optional("rbloom")
    if rbloom is None:
        notes.append("rbloom is not installed (pip install rbloom): no rbloom ratios")
    else:
        out.append(set_like("rbloom", lambda: rbloom.Bloom(n, FPR)))

    fastbloom = optional("fastbloom_rs")
    if fastbloom is None:
        notes.append("fastbloom-rs is not installed (pip install fastbloom-rs)")
    else:
        new = lambda: fastbloom.FilterBuilder(n, FPR).build_bloom_filter()  # noqa: E731
        typed = {"bytes": "bytes", "str": "str", "int": "int"}[kind]
        add_batch, contains_batch = "add_%s_batch" % typed, "contains_%s_batch" % typed
        full = filled(new, lambda b: getattr(b, add_batch)(present))
        out.append(Impl("fastbloom-rs", new, {
            "add": scalar_loop("add_%s" % typed, present),
            "in": scalar_loop("contains_%s" % typed, queries),
            "bulk add": lambda b: (getattr(b, add_batch)(present), len(present))[1],
            "bulk in": lambda b: len(getattr(b, contains_batch)(queries)),
        }, prepare={"in": full, "bulk in": full}))

    pybloomfilter = optional("pybloomfilter")
    if pybloomfilter is None:
        notes.append("pybloomfiltermmap3 is not installed (pip install pybloomfiltermmap3)")
    else:
        out.append(set_like("pybloomfiltermmap3", lambda: pybloomfilter.BloomFilter(n, FPR)))

    probables = optional("probables")
    if probables is None:
        notes.append("pyprobables is not installed (pip install pyprobables)")
    elif kind == "int":
        notes.append("pyprobables takes str and bytes keys only: no int row")
    else:
        few_present, few_queries = present[:slow_keys], queries[:slow_keys]
        new = lambda: probables.BloomFilter(est_elements=n, false_positive_rate=FPR)  # noqa: E731
        full = filled(new, lambda b: [b.add(k) for k in present])
        out.append(Impl("pyprobables", new, {
            "add": scalar_loop("add", few_present),
            "in": scalar_loop("check", few_queries),
        }, prepare={"in": full}, limit=slow_keys))
    return out


def measure(run: Callable[[object], int], obj: object) -> float:
    """ns per key of one run, with the garbage collector held off."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        count = run(obj)
        elapsed = time.perf_counter_ns() - t0
    finally:
        gc.enable()
    return elapsed / max(count, 1)


def bench_kind(kind: str, n: int, rounds: int, slow_keys: int, seed: int,
               operations: Sequence[str] = OPERATIONS) -> Tuple[Dict[Tuple[str, str], List[float]], List[str]]:
    rng = np.random.default_rng(seed)
    present, queries, present_arr, query_arr = make_keys(n, kind, rng)
    notes: List[str] = []
    impls = impls_for(kind, n, present, queries, present_arr, query_arr, slow_keys, notes)
    times: Dict[Tuple[str, str], List[float]] = {}
    for _ in range(rounds):
        for op in operations:
            for impl in impls:  # neighbours in time: the ratios compare these
                if op not in impl.ops:
                    continue
                obj = impl.prepare[op]() if op in impl.prepare else impl.new()
                renew(present, kind)
                renew(queries, kind)
                times.setdefault((impl.name, op), []).append(measure(impl.ops[op], obj))
                del obj
    return times, notes


def round_ratio(ts: List[float], base: Optional[List[float]]) -> str:
    """The median over the rounds of ts[r] / base[r]: each ratio between measurements taken in the
    same round, neighbours in time."""
    if not base or len(base) != len(ts):
        return "-"
    return "%.2fx" % statistics.median(t / b for t, b in zip(ts, base))


def report(kind: str, n: int, times: Dict[Tuple[str, str], List[float]], notes: Sequence[str]) -> None:
    print(f"\n{kind} keys, n = {n:,}, fpr {FPR}; ns per key, min / median over {len(next(iter(times.values())))} "
          f"rounds; ratios: median of the per-round ratios")
    print(f"{'operation':<11} {'structure':<19} {'min':>8} {'median':>8} {'x abloom':>9} {'x rbloom':>9} {'x set':>7}")
    for op in OPERATIONS:
        for (name, o), ts in times.items():
            if o != op:
                continue
            ab = times.get(("abloom", PEER_BASELINE[op]))
            rb = times.get(("rbloom", PEER_BASELINE[op]))
            st = times.get(("set", op if op in ("add", "discard", "in", "bulk add", "bulk in") else
                            ("add" if op == "add_unique" else "in")))
            print(f"{op:<11} {name:<19} {min(ts):8.1f} {statistics.median(ts):8.1f} {round_ratio(ts, ab):>9} "
                  f"{round_ratio(ts, rb):>9} {round_ratio(ts, st):>7}")
    for note in notes:
        print("note:", note)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=float, default=1e6, help="keys inserted (and queried); default 10^6")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--types", default="bytes,str,int", help="comma-separated key types: bytes, str, int")
    ap.add_argument("--slow-keys", type=float, default=1e5, help="keys a pure-Python peer runs on")
    ap.add_argument("--ops", default=",".join(OPERATIONS), help="comma-separated operations (default: all)")
    ap.add_argument("--seed", type=int, default=12345)
    args = ap.parse_args(argv)
    n = int(args.keys)
    print(header())
    for kind in args.types.split(","):
        ops = [op.strip() for op in args.ops.split(",")]
        unknown = sorted(set(ops) - set(OPERATIONS))
        if unknown:
            ap.error("unknown operations: %s (known: %s)" % (", ".join(unknown), ", ".join(OPERATIONS)))
        times, notes = bench_kind(kind.strip(), n, args.rounds, int(args.slow_keys), args.seed, ops)
        report(kind.strip(), n, times, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
