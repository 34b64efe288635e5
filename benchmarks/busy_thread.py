"""Bulk calls beside a busy Python thread: how much slower a call that runs without the GIL gets
while another Python thread spins (issue 28; Dask workers and pipelines run us in threads).

    python benchmarks/busy_thread.py                # 2*10^7 keys, 5 interleaved rounds
    python benchmarks/busy_thread.py --keys 5000000 --rounds 3

A long call without the GIL must still take it back now and then to run Python's signal
handlers (Ctrl-C), and a spinning thread holds it for up to the switch interval (5 ms) each
time. Each row times one call alone and the same call while a thread runs `x += 1` in a loop,
in interleaved rounds, and prints the median per-round ratio busy / alone (target: at most 1.5x
for `contains_many` on the main thread). Rows:

* `Filter.contains_many` and `Filter.add_many` (into a fresh filter) of N uint64 keys, and
  `Store.contains_many` of N/10 keys, each called on the main thread (where signals are
  checked) and from a worker thread (where they are not);
* `hashlib.sha256` over N*8 bytes, a call that releases the GIL once and never takes it back:
  what the spinning thread costs by competing for the cores alone (the floor for the others).

On a 2-core machine the spinner takes one core; run it when nothing else does (`uptime`).
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import threading
import time
from typing import Callable, List, Optional

import numpy as np

import cuckoo

from _machine import header


def spin(stop: threading.Event) -> None:
    x = 0
    while not stop.is_set():
        x += 1


def timed(fn: Callable[[], object], setup: Optional[Callable[[], object]] = None, on_worker: bool = False) -> float:
    if setup is not None:
        setup()
    if not on_worker:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    out: List[float] = []

    def work() -> None:
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    return out[0]


def busy(fn: Callable[[], float]) -> float:
    stop = threading.Event()
    spinner = threading.Thread(target=spin, args=(stop,), daemon=True)
    spinner.start()
    time.sleep(0.01)  # the spinner is running (and holding the GIL) before the call starts
    try:
        return fn()
    finally:
        stop.set()
        spinner.join()


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=float, default=2e7, help="keys per call (default 2e7)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    args = ap.parse_args(argv)
    n = int(args.keys)
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 2**63, n, dtype=np.uint64)
    queries = rng.integers(0, 2**63, n, dtype=np.uint64)
    f = cuckoo.Filter(n)
    f.add_many(keys)
    store = cuckoo.Store()
    store_keys = keys[: max(1, n // 10)]
    store.put_many(store_keys)
    blob = queries.tobytes()
    fresh: List[cuckoo.Filter] = []

    def new_filter() -> None:
        fresh.clear()
        fresh.append(cuckoo.Filter(n))

    rows = [
        ("Filter.contains_many", "main", lambda: f.contains_many(queries), None, False),
        ("Filter.contains_many", "worker", lambda: f.contains_many(queries), None, True),
        ("Filter.add_many", "main", lambda: fresh[0].add_many(keys), new_filter, False),
        ("Filter.add_many", "worker", lambda: fresh[0].add_many(keys), new_filter, True),
        ("Store.contains_many", "main", lambda: store.contains_many(queries[: len(store_keys)]), None, False),
        ("Store.contains_many", "worker", lambda: store.contains_many(queries[: len(store_keys)]), None, True),
        ("hashlib.sha256 (floor)", "main", lambda: hashlib.sha256(blob).digest(), None, False),
    ]
    print(header())
    print(f"{n:,} keys per call, {args.rounds} interleaved rounds; Python switch interval "
          f"{sys.getswitchinterval() * 1e3:.0f} ms")
    print()
    print(f"| call | thread | alone (ms, median) | beside a spinning thread (ms, median) | ratio (median per round) |")
    print("|---|---|---|---|---|")
    for name, where, fn, setup, on_worker in rows:
        alone: List[float] = []
        beside: List[float] = []
        ratios: List[float] = []
        for _ in range(args.rounds):
            a = timed(fn, setup, on_worker)
            b = busy(lambda: timed(fn, setup, on_worker))
            alone.append(a)
            beside.append(b)
            ratios.append(b / a)
        ratio = statistics.median(ratios)
        mark = "" if "sha256" in name else ("  (target <= 1.5x)" if where == "main" and "contains" in name else "")
        print(f"| {name} | {where} | {statistics.median(alone) * 1e3:.0f} | {statistics.median(beside) * 1e3:.0f} "
              f"| {ratio:.2f}x{mark} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
