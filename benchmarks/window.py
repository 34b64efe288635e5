"""cuckoo.Window (windowed dedup) against Python models of the same window, in one run.

    python benchmarks/window.py                       # 2*10^6 records, a window of 10^5
    python benchmarks/window.py --records 10000000 --window 1000000

The stream: `--records` keys of 16 hex bytes (NumPy 'S16'), drawn from `--distinct` keys, so that
a fraction of them recur within the window. Measured:
- throughput: `seen_many` over the whole stream in batches of `--batch`, exact and approximate,
  count and time windows, as ns a record; against the Python models (a deque of the last N with a
  dict of counts; a dict of last times for the time window, in order), on the first
  `--model-records` records, scaled;
- memory: the window's `nbytes` at the end, against an exact set of one window's distinct keys
  (`cuckoo.Window`'s own key set would hold them as `--exact` dedup does: the same KeySet, read
  through a `_core._KeySet` filled with one window of keys) and against Python's `set` of them
  (tracemalloc);
- agreement: the exact window's answers equal the deque model's on the records both ran.
"""

from __future__ import annotations

import argparse
import collections
import time
import tracemalloc

import numpy as np

import cuckoo
from _machine import header


def stream(n: int, distinct: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, distinct, n, dtype=np.uint64)
    return np.char.mod("%016x", ids).astype("S16")


def run_window(w: cuckoo.Window, keys: np.ndarray, batch: int, times: np.ndarray | None = None):
    out = np.empty(len(keys), bool)
    t0 = time.perf_counter()
    for s in range(0, len(keys), batch):
        out[s : s + batch] = w.seen_many(keys[s : s + batch], None if times is None else times[s : s + batch])
    return time.perf_counter() - t0, out


def deque_model(keys: list, n: int):
    """Count window: a deque of the last n keys and a dict of their counts (O(1) a record)."""
    last: collections.deque = collections.deque()
    counts: dict = {}
    out = []
    t0 = time.perf_counter()
    for k in keys:
        out.append(k in counts)
        last.append(k)
        counts[k] = counts.get(k, 0) + 1
        if len(last) > n:
            old = last.popleft()
            c = counts[old] - 1
            if c:
                counts[old] = c
            else:
                del counts[old]
    return time.perf_counter() - t0, out


def time_model(keys: list, times: list, d: float):
    """Time window, in-order times: a dict of each key's last time (no expiry: the fastest model)."""
    last: dict = {}
    out = []
    t0 = time.perf_counter()
    for k, t in zip(keys, times):
        u = last.get(k)
        out.append(u is not None and t - u < d)
        last[k] = t
    return time.perf_counter() - t0, out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=2_000_000)
    p.add_argument("--window", type=int, default=100_000)
    p.add_argument("--distinct", type=int, default=0, help="distinct keys in the stream (default: 20x the window)")
    p.add_argument("--batch", type=int, default=65_536)
    p.add_argument("--model-records", type=int, default=500_000)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    distinct = a.distinct or 20 * a.window
    keys = stream(a.records, distinct, a.seed)
    times = np.arange(a.records, dtype=np.float64) / 1000.0  # 1000 records a second
    seconds = a.window / 1000.0  # a time window of about `window` records
    print(header())
    print(f"{a.records:_} records of 16 bytes from {distinct:_} keys; window {a.window:_} records "
          f"(time window {seconds:g} s at 1000 records/s); batches of {a.batch:_}")
    m = min(a.model_records, a.records)
    mk = keys[:m].tolist()
    t_deque, want = deque_model(mk, a.window)
    t_time, _ = time_model(mk, times[:m].tolist(), seconds)
    ns_deque = t_deque / m * 1e9
    ns_time = t_time / m * 1e9

    rows = []
    for label, kw, timed in (
        ("count, exact", {"records": a.window}, False),
        ("count, fpr=0.001", {"records": a.window, "fpr": 0.001}, False),
        ("time, exact", {"seconds": seconds, "lateness": 0}, True),
        ("time, fpr=0.001", {"seconds": seconds, "lateness": 0, "fpr": 0.001}, True),
    ):
        w = cuckoo.Window(seed=3, **kw)
        secs, out = run_window(w, keys, a.batch, times if timed else None)
        if label == "count, exact":
            assert out[:m].tolist() == want, "the exact window disagrees with the deque model"
        ns = secs / a.records * 1e9
        base = ns_time if timed else ns_deque
        rows.append((label, ns, base / ns, w.nbytes, len(w), int(out.sum())))

    # One window's distinct keys in an exact key set (what --exact dedup holds for them), and in a set.
    last = keys[-a.window :]
    ks = cuckoo._core._KeySet(1, 0)
    ks.add_unique_many(last)
    n_distinct = len(ks)
    tracemalloc.start()
    pyset = set(last.tolist())
    py_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del pyset
    # _KeySet has no size in bytes: the key set's needed bytes (KeySet::expected_bytes: keys,
    # a length byte each, 8.5 bytes of index a key at its 94% growth load).
    keyset_bytes = n_distinct * (16 + 1 + 32 / (4 * 0.94))

    print(f"\nmodels on the first {m:_} records: deque+dict {ns_deque:.0f} ns/record, dict of last times "
          f"{ns_time:.0f} ns/record (the exact window agrees with the deque model)")
    print(f"\n{'window':18} {'ns/record':>10} {'vs model':>9} {'nbytes':>12} {'keys held':>10} {'dups':>10}")
    for label, ns, ratio, nbytes, held, dups in rows:
        print(f"{label:18} {ns:10.0f} {ratio:8.1f}x {nbytes:12_} {held:10_} {dups:10_}")
    print(f"\none window's {n_distinct:_} distinct keys: exact key set ~{keyset_bytes:,.0f} bytes "
          f"(what --exact holds for them), Python set {py_bytes:_} bytes")
    for label, _, _, nbytes, _, _ in rows:
        print(f"  {label:18} nbytes / exact key set of one window = {nbytes / keyset_bytes:.2f}")


if __name__ == "__main__":
    main()
