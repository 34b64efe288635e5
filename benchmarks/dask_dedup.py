"""cuckoo.dask on a LocalCluster: build vs a local filter, dedup vs Dask's drop_duplicates.

    python benchmarks/dask_dedup.py                       # 10^7 rows, 16 partitions, 2 workers
    python benchmarks/dask_dedup.py --rows 1000000 --key str
    python benchmarks/dask_dedup.py --only exact          # the exact dedup section alone

Needs the `dask` extra. Starts a fresh dask.distributed LocalCluster (worker processes, one thread
each) for every timed method, generates the data on the workers (N rows, N/2 distinct keys, every
distinct key exactly twice at random places; int64 keys or Arrow strings) and persists it, then
times the method (its result persisted on the cluster, not fetched) while a thread samples every worker's RSS
(psutil, every 50 ms): "peak MiB/worker" is the largest rise above the worker's RSS before the
method started. The checks (printed, and the exit status is 1 if one fails):

- `build` over N distinct keys in P partitions == Filter(N).add_unique_many(the same keys) built locally;
- `dedup` keeps a subset of the exact first occurrences, in order, and its mask equals the local
  Filter(N).add_unique_many(keys) mask; the first occurrences it drops (false positives) are
  printed beside the expected number (distinct keys x the final filter's expected_fpr, an upper
  bound on the average over the pass);
- len(pickle.dumps(filter)) is within 100 bytes of len(filter.to_bytes()).
- `dedup(exact=True)` against Dask's own `ddf.drop_duplicates(subset="key")`, in two cases: "few"
  (N rows whose keys are repeated 1..--max-repeats times each, uniform counts, rows shuffled: the
  issue's case, ~20,000 distinct keys at 10^7 rows) and "many" (repeated 1..--many-repeats times:
  millions of distinct keys). --rounds interleaved rounds (the two methods' order alternating),
  each measurement on a fresh cluster after a warm-up on a tiny frame; per method and case the
  median wall time, CPU time (workers + this process, which runs the scheduler) and peak RSS rise
  of the busier worker (VmHWM after resetting it, exact), with the load average. The cuckoo
  result is checked once per case against pandas' drop_duplicates(keep="first") of the same
  data, and the last lines say per case whether cuckoo was faster (median of the same-round time
  ratios < 1) at a lower peak per worker (median of the same-round ratios < 1).

    python benchmarks/dask_dedup.py --only exact --rows 1000000 --rounds 1   # a quick look
"""

from __future__ import annotations

import argparse
import pickle
import platform
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

M64 = (1 << 64) - 1


def mix(x: np.ndarray) -> np.ndarray:
    """A bijective 64-bit mixer (the splitmix64 finalizer), as int64."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return z.view(np.int64)


def bounds(n: int, parts: int) -> List[Tuple[int, int]]:
    edges = np.linspace(0, n, parts + 1).astype(np.int64)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def key_ids(n: int, lo: int, hi: int, seed: int) -> np.ndarray:
    """Rows lo..hi of the dedup data: distinct id = perm[r] mod n/2 (each id exactly twice)."""
    perm = np.random.default_rng(seed).permutation(n)
    return perm[lo:hi] % (n // 2)


def to_keys(ids: np.ndarray, kind: str) -> Any:
    import pandas as pd

    k = mix(ids)
    if kind == "int":
        return k
    return pd.array(np.char.add("key-", k.astype("U20")), dtype="string[pyarrow]")


def dedup_partition(bounds_: Tuple[int, int], n: int, kind: str, seed: int) -> Any:
    import pandas as pd

    lo, hi = bounds_
    return pd.DataFrame({"key": to_keys(key_ids(n, lo, hi, seed), kind), "pos": np.arange(lo, hi, dtype=np.int64)},
                        index=pd.RangeIndex(lo, hi))


def repeated_ids(n: int, lo: int, hi: int, seed: int, most: int) -> np.ndarray:
    """Rows lo..hi of the exact-dedup data: distinct ids repeated 1..most times each (uniform),
    the first n of those rows, shuffled."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, most + 1, size=2 * n // most + 16)
    while counts.sum() < n:  # pragma: no cover - the size above is always enough in practice
        counts = np.concatenate([counts, rng.integers(1, most + 1, size=len(counts))])
    ids = np.repeat(np.arange(len(counts), dtype=np.int64), counts)[:n]
    return ids[rng.permutation(n)[lo:hi]]


def distinct_partition(bounds_: Tuple[int, int], kind: str) -> Any:
    import pandas as pd

    lo, hi = bounds_
    return pd.DataFrame({"key": to_keys(np.arange(lo, hi, dtype=np.int64), kind)}, index=pd.RangeIndex(lo, hi))


def rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


class PeakSampler:
    """Samples every worker's RSS in a thread; peak rise above the starting RSS, per worker."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.base = client.run(rss)
        self.peak = dict(self.base)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                for w, v in self.client.run(rss).items():
                    self.peak[w] = max(self.peak.get(w, 0), v)
            except Exception:  # pragma: no cover - cluster shutting down
                return
            self.stop.wait(0.05)

    def __enter__(self) -> "PeakSampler":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.thread.join()
        for w, v in self.client.run(rss).items():
            self.peak[w] = max(self.peak.get(w, 0), v)

    def rises_mib(self) -> List[float]:
        return [(self.peak[w] - self.base[w]) / 2**20 for w in sorted(self.base)]


def start_cluster(args: argparse.Namespace) -> Tuple[Any, Any]:
    """A fresh LocalCluster of --workers processes x 1 thread, and its client. No dashboard; the
    scheduler's HTTP server on a free port (8787 may be taken by another cluster on the machine)."""
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.worker.daemon": False, "distributed.scheduler.active-memory-manager.start": False}):
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=40, memory_limit=0,
                               scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
        return cluster, Client(cluster)


def on_cluster(args: argparse.Namespace, make: Callable[[Any], Any], run: Callable[[Any, Any], Any],
               after: Callable[[Any], Any] = lambda out: out) -> Dict[str, Any]:
    """A fresh cluster: data persisted, then `run(client, ddf)` timed with the memory sampler;
    `after(result)` (e.g. fetching the result for the checks) runs untimed on the same cluster."""
    from distributed import wait

    cluster, client = start_cluster(args)
    try:
        ddf = make(client).persist()
        wait(ddf)
        with PeakSampler(client) as sampler:
            t0 = time.perf_counter()
            out = run(client, ddf)
            seconds = time.perf_counter() - t0
        return {"seconds": seconds, "peaks": sampler.rises_mib(), "out": after(out)}
    finally:
        client.close()
        cluster.close()


def run_drop_duplicates(client: Any, ddf: Any) -> Any:
    """Dask's own exact dedup, persisted on the cluster (the baseline of both dedup sections)."""
    from distributed import wait

    out = ddf.drop_duplicates(subset="key", keep="first").persist()
    wait(out)
    return out


def main(argv: Any = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--partitions", type=int, default=16)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--fpr", type=float, default=0.001)
    p.add_argument("--key", choices=["int", "str"], default="int")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-repeats", type=int, default=1000, help="exact section: keys repeated 1..this many times")
    p.add_argument("--shards", type=int, default=None, help="exact section: shards (default: cuckoo.dask's)")
    p.add_argument("--many-repeats", type=int, default=3,
                   help="exact section, case 'many': keys repeated 1..this many times (millions distinct)")
    p.add_argument("--cases", default="few,many", help="exact section: comma-separated cases, of: few, many")
    p.add_argument("--rounds", type=int, default=3, help="exact section: interleaved rounds (median reported)")
    p.add_argument("--only", choices=["all", "filter", "exact"], default="all",
                   help="run only the filter sections (build, dedup) or only the exact-dedup section")
    args = p.parse_args(argv)
    if args.rows < 4 or args.rows % 2:
        p.error("--rows must be an even number >= 4")
    args.cases = [c for c in args.cases.split(",") if c]
    if not args.cases or any(c not in CASES for c in args.cases):
        p.error(f"--cases takes a comma-separated list of: {', '.join(CASES)}")
    if args.rounds < 1:
        p.error("--rounds must be >= 1")
    args.verdicts = []

    import dask
    import distributed
    import pandas as pd

    n, P, kind = args.rows, args.partitions, args.key
    parts = bounds(n, P)
    print(f"# {platform.machine()} {platform.python_version()}, dask {dask.__version__}, distributed "
          f"{distributed.__version__}, pandas {pd.__version__}; {n:,} rows, {P} partitions, "
          f"{args.workers} worker processes x 1 thread, {kind} keys, fpr {args.fpr}")
    ok = True
    rows: List[Tuple[str, float, List[float], str]] = []

    pk = tb = 0
    if args.only in ("all", "filter"):
        ok &= filter_sections(args, rows, parts)
        pk, tb = rows.pop()[1:3]  # type: ignore[misc]
    if args.only in ("all", "exact"):
        ok &= exact_section(args, rows, parts)

    print()
    print(f"| method | seconds | peak MiB/worker (rise) | notes |")
    print(f"|---|---:|---:|---|")
    for name, s, peaks, note in rows:
        if name == "verdicts":
            continue
        mem = " / ".join(f"{x:.0f}" for x in peaks) if peaks else "-"
        print(f"| {name} | {s:.2f} | {mem} | {note} |")
    print()
    if pk:
        print(f"pickle: len(pickle.dumps(f)) = {pk:,}, len(f.to_bytes()) = {tb:,} (difference {pk - tb} bytes)")
    for v in args.verdicts:
        print(f"exact dedup against Dask, {v}")
    print("all checks passed" if ok else "A CHECK FAILED")
    return 0 if ok else 1


# ---- the exact section: both regimes, interleaved rounds, medians, a verdict ----

CASES = {"few": "keys repeated 1..--max-repeats times (the issue's case: few distinct keys)",
         "many": "keys repeated 1..--many-repeats times (millions of distinct keys)"}


def load_partition(bounds_: Tuple[int, int], path: str, kind: str) -> Any:
    """Rows lo..hi of a case's key ids, saved once by the client (every cluster reads the same data)."""
    import pandas as pd

    lo, hi = bounds_
    ids = np.array(np.load(path, mmap_mode="r")[lo:hi])
    return pd.DataFrame({"key": to_keys(ids, kind), "pos": np.arange(lo, hi, dtype=np.int64)},
                        index=pd.RangeIndex(lo, hi))


def worker_reset() -> Tuple[int, float]:
    """On a worker, before a timed method: return freed memory to the OS, reset the peak RSS
    (VmHWM, Linux /proc/self/clear_refs), and report (RSS, CPU seconds) now."""
    import ctypes
    import gc

    import psutil

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:  # pragma: no cover - not glibc
        pass
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    p = psutil.Process()
    t = p.cpu_times()
    return p.memory_info().rss, t.user + t.system


def worker_peak() -> Tuple[int, float]:
    """On a worker, after a timed method: (peak RSS since worker_reset, CPU seconds now)."""
    import psutil

    with open("/proc/self/status") as f:
        hwm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    t = psutil.Process().cpu_times()
    return hwm, t.user + t.system


def loadavg() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def measure(args: argparse.Namespace, parts: List[Tuple[int, int]], path: str, method: str, check: Any) -> Dict[str, Any]:
    """One fresh 2-worker cluster: the data persisted, the method warmed up on a tiny frame (imports
    on the client and the workers), then the method timed over the data. Returns wall seconds, CPU
    seconds (workers + this process, which runs the scheduler), the peak RSS rise of each worker
    above its RSS when the method started (exact: VmHWM, not sampled), the load average, and
    check(result) computed untimed."""
    import dask.dataframe as dd
    import pandas as pd
    import psutil
    from distributed import wait

    import cuckoo.dask as cd

    def run(ddf: Any) -> Any:
        if method == "cuckoo":
            out = cd.dedup(ddf, "key", exact=True, shards=args.shards)
        else:
            out = ddf.drop_duplicates(subset="key", keep="first")
        out = out.persist()
        wait(out)
        return out

    cluster, client = start_cluster(args)
    try:
        ddf = dd.from_map(load_partition, parts, path=path, kind=args.key, enforce_metadata=False).persist()
        wait(ddf)
        tiny = pd.DataFrame({"key": to_keys(np.arange(64) % 8, args.key), "pos": np.arange(64)})
        run(dd.from_pandas(tiny, npartitions=len(parts), sort=False)).compute()  # warm-up
        load0 = loadavg()
        before = client.run(worker_reset)
        me = psutil.Process()
        c0 = sum(me.cpu_times()[:2])
        t0 = time.perf_counter()
        out = run(ddf)
        seconds = time.perf_counter() - t0
        c1 = sum(me.cpu_times()[:2])
        after = client.run(worker_peak)
        load1 = loadavg()
        rises = [(after[w][0] - before[w][0]) / 2**20 for w in sorted(before)]
        cpu = sum(after[w][1] - before[w][1] for w in before) + (c1 - c0)
        return {"seconds": seconds, "cpu": cpu, "peaks": rises, "load": (load0, load1), "check": check(out)}
    finally:
        client.close()
        cluster.close()


def exact_section(args: argparse.Namespace, rows: List[Any], parts: List[Tuple[int, int]]) -> bool:
    """cuckoo.dask.dedup(exact=True) against Dask's drop_duplicates, per case, --rounds interleaved
    rounds on fresh clusters (the order of the two methods alternating), medians, and a verdict."""
    import os
    import statistics
    import tempfile

    import pandas as pd

    n, kind = args.rows, args.key
    ok = True
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="cuckoo-dask-bench-") as tmp:
        data = {}
        for case in args.cases:
            most = args.max_repeats if case == "few" else args.many_repeats
            ids = repeated_ids(n, 0, n, args.seed, most)
            path = os.path.join(tmp, f"{case}.npy")
            np.save(path, ids)
            first = np.flatnonzero(~pd.Series(to_keys(ids, kind)).duplicated(keep="first").to_numpy())
            data[case] = (path, first, most)
            print(f"# case {case}: {n:,} rows, keys repeated 1..{most} times (uniform), {len(first):,} distinct")
        results: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
        for r in range(args.rounds):
            for case in args.cases:
                path, first, most = data[case]
                order = ["cuckoo", "dask"] if r % 2 == 0 else ["dask", "cuckoo"]
                for method in order:
                    if method == "cuckoo" and r == 0:  # the answer, checked once per case (untimed)
                        check = lambda out, first=first: bool(np.array_equal(out["pos"].compute().to_numpy(), first))
                    else:
                        check = lambda out: None
                    res = measure(args, parts, path, method, check)
                    results.setdefault((case, method), []).append(res)
                    if res["check"] is False:
                        ok = False
                    print(f"# round {r + 1} {case:4s} {method:6s}: {res['seconds']:.2f} s, CPU {res['cpu']:.2f} s, "
                          f"peak rise " + " / ".join(f"{x:.0f}" for x in res["peaks"]) +
                          f" MiB, load {res['load'][0]:.1f}-{res['load'][1]:.1f}" +
                          ("" if res["check"] is None else f", == pandas drop_duplicates: {res['check']}"), flush=True)
    med = statistics.median
    for case in args.cases:
        _, first, most = data[case]
        stat = {}
        for method, name in (("cuckoo", "cuckoo.dask.dedup(exact=True)"), ("dask", "ddf.drop_duplicates(subset='key')")):
            rs = results[(case, method)]
            stat[method] = (med(x["seconds"] for x in rs), med(x["cpu"] for x in rs), med(max(x["peaks"]) for x in rs))
            loads = [v for x in rs for v in x["load"]]
            rows.append((f"{case}: {name}", stat[method][0], [stat[method][2]],
                         f"median of {len(rs)}; CPU {stat[method][1]:.2f} s; load {min(loads):.1f}-{max(loads):.1f}; "
                         f"{len(first):,} distinct of {n:,} (repeats 1..{most})"))
        (cs, cc, cm), (ds, dc, dm) = stat["cuckoo"], stat["dask"]
        # Same-round ratios (both methods at about the same load), then their median: steadier
        # than a ratio of medians when other jobs come and go.
        pairs = list(zip(results[(case, "cuckoo")], results[(case, "dask")]))
        time_ratio = med(a["seconds"] / b["seconds"] for a, b in pairs)
        cpu_ratio = med(a["cpu"] / b["cpu"] for a, b in pairs)
        mem_ratio = med(max(a["peaks"]) / max(max(b["peaks"]), 1e-9) for a, b in pairs)
        faster, leaner = time_ratio < 1, mem_ratio < 1
        verdicts.append(f"{case}: time {cs:.2f} s vs {ds:.2f} s (same-round ratio {time_ratio:.2f}x, CPU "
                        f"{cpu_ratio:.2f}x): {'FASTER' if faster else 'NOT FASTER'}; peak/worker {cm:.0f} vs "
                        f"{dm:.0f} MiB ({mem_ratio:.2f}x): {'LOWER' if leaner else 'NOT LOWER'} -> target "
                        f"{'MET' if faster and leaner else 'NOT MET'} ({len(pairs)} rounds)")
    rows.append(("verdicts", 0.0, [], ""))
    args.verdicts = verdicts
    return ok


def filter_sections(args: argparse.Namespace, rows: List[Any], parts: List[Tuple[int, int]]) -> bool:
    """build vs a local filter; dedup (filter) vs drop_duplicates on N rows, N/2 distinct keys.
    Appends its rows, then a last entry (name, pickle bytes, to_bytes bytes) that main pops."""
    import dask.dataframe as dd
    import pandas as pd
    from distributed import wait

    import cuckoo
    import cuckoo.dask as cd

    n, kind = args.rows, args.key
    ok = True
    # ---- build: N distinct keys, compared with a local filter ----
    def make_distinct(client: Any) -> Any:
        return dd.from_map(distinct_partition, parts, kind=kind, enforce_metadata=False)

    res = on_cluster(args, make_distinct, lambda c, ddf: cd.build(ddf, "key", fpr=args.fpr))
    built = res["out"]
    t0 = time.perf_counter()
    local = cuckoo.Filter(n, fpr=args.fpr)
    local.add_unique_many(to_keys(np.arange(n, dtype=np.int64), kind))  # build's set semantics
    local_s = time.perf_counter() - t0
    equal = built == local
    ok &= equal
    rows.append(("cuckoo.dask.build (cluster)", res["seconds"], res["peaks"], f"== local: {equal}, {built!r}"))
    rows.append(("Filter.add_unique_many (one process)", local_s, [], "reference for build"))
    pk, tb = len(pickle.dumps(built)), len(built.to_bytes())
    ok &= abs(pk - tb) <= 100
    del local

    # ---- dedup vs drop_duplicates on N rows with N/2 distinct keys ----
    def make_dups(client: Any) -> Any:
        return dd.from_map(dedup_partition, parts, n=n, kind=kind, seed=args.seed, enforce_metadata=False)

    def run_dedup(client: Any, ddf: Any) -> Any:
        out = cd.dedup(ddf, "key", fpr=args.fpr).persist()
        wait(out)
        return out

    res = on_cluster(args, make_dups, run_dedup, lambda out: out["pos"].compute().to_numpy())
    kept_pos = res["out"]
    all_keys = to_keys(key_ids(n, 0, n, args.seed), kind)
    first = ~pd.Series(all_keys).duplicated(keep="first").to_numpy()
    kept = np.zeros(n, bool)
    kept[kept_pos] = True
    ref_filter = cuckoo.Filter(n, fpr=args.fpr)
    ref = ref_filter.add_unique_many(all_keys)
    in_order = bool(np.all(np.diff(kept_pos) > 0))
    subset = not bool((kept & ~first).any())
    same_as_local = bool(np.array_equal(kept, ref))
    missing = int((first & ~kept).sum())
    expected = int(first.sum()) * ref_filter.expected_fpr
    ok &= in_order and subset and same_as_local
    rows.append(("cuckoo.dask.dedup (cluster)", res["seconds"], res["peaks"],
                 f"kept {len(kept_pos):,}; first occurrences dropped {missing} (expected <= {expected:.0f}); "
                 f"subset+ordered: {subset and in_order}; == local mask: {same_as_local}"))

    res = on_cluster(args, make_dups, run_drop_duplicates, len)
    rows.append(("dask drop_duplicates (cluster)", res["seconds"], res["peaks"], f"kept {res['out']:,} (exact)"))
    rows.append(("pickle", pk, tb))
    return ok


if __name__ == "__main__":
    sys.exit(main())
