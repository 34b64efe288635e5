"""Bulk throughput of cuckoo.Filter against baselines measured in the same run.

    python benchmarks/bulk.py                  # 10^6 and 6*10^7 keys (needs ~4 GiB, ~2 minutes)
    python benchmarks/bulk.py --sizes 1e6      # cache-resident size only
    python benchmarks/bulk.py --cpu all        # every kernel level this CPU has, one after another
    python benchmarks/bulk.py --cpu avx2       # one level (as CUCKOO_CPU=avx2 does)

For each size n, a filter with capacity n (b = 4, f = 16 unless --fingerprint-bits) is filled
to 95% of its slots with add_many (uint64 keys), then refilled to 95% with half uint64 and half
string keys and queried with 50% present keys of each kind. Figures are nanoseconds per key, the
best of --repeat rounds in which the measurements compared with each other take turns (the speed
of a shared machine drifts within seconds; ratios are taken between neighbours in time), next to:

- gather: np.take of n random positions from a uint64 array as large as the filter's table, on
  transparent huge pages as the table is (the share the kernel gave is printed)
  (what touching memory at random costs on this machine, this run);
- set: `k in s` in a Python loop over a set of the same keys, and the set's memory;
- uint64: for string keys, the same lookups with uint64 keys.

The header names the CPU and the kernel level (cuckoo.cpu_level()); each level's table is
measured with its own baselines.
"""

from __future__ import annotations

import argparse
import gc
import mmap
import sys
import time
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np

import cuckoo
from _machine import add_level_option, chosen_levels, header


def best_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def string_keys(rng: np.random.Generator, n: int) -> np.ndarray:
    """n distinct-ish keys of 8 to 32 bytes as a NumPy 'S32' array."""
    lengths = rng.integers(8, 33, size=n)
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)
    raw = alphabet[rng.integers(0, len(alphabet), size=(n, 32))]
    raw[np.arange(32)[None, :] >= lengths[:, None]] = 0  # NUL padding = shorter key
    return raw.view("S32").ravel()


def set_memory(s: set) -> int:
    return sys.getsizeof(s) + sum(sys.getsizeof(k) for k in s)


Row = Tuple[str, str, float, str]


def interleaved_best(fns: Dict[str, Callable[[], object]], repeat: int) -> Dict[str, float]:
    """Best time of each function, running them in turn `repeat` times: on a shared machine the
    speed drifts within seconds, and ratios between measurements taken at the same moment are
    what this benchmark reports."""
    best = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            best[name] = min(best[name], best_time(fn, 1))
    return best


_HUGE_PAGE = 2 << 20


def huge_page_array(count: int) -> Tuple[np.ndarray, float]:
    """np.arange(count) as uint64 in an anonymous mapping advised MADV_HUGEPAGE and aligned to
    2 MiB, and the fraction of it that the kernel backs with huge pages (AnonHugePages in
    /proc/self/smaps; 0.0 where that cannot be read)."""
    nbytes = count * 8
    # Private and anonymous: mmap.mmap(-1, n) alone maps shared memory, which THP does not back.
    mm = mmap.mmap(-1, nbytes + _HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    base = np.frombuffer(mm, dtype=np.uint8)
    start = (-base.ctypes.data) % _HUGE_PAGE
    if hasattr(mmap, "MADV_HUGEPAGE"):
        mm.madvise(mmap.MADV_HUGEPAGE)
    arr = base[start : start + nbytes].view(np.uint64)
    arr[:] = np.arange(count, dtype=np.uint64)  # touch every page after the advice
    _KEEP_MAPPINGS.append(mm)
    return arr, _huge_fraction(base.ctypes.data, nbytes)


_KEEP_MAPPINGS: List[mmap.mmap] = []


def _huge_fraction(address: int, nbytes: int) -> float:
    try:
        with open("/proc/self/smaps") as smaps:
            inside = False
            for line in smaps:
                head = line.split()[0]
                if "-" in head and not head.endswith(":"):
                    lo, hi = (int(x, 16) for x in head.split("-"))
                    inside = lo <= address < hi
                elif inside and head == "AnonHugePages:":
                    return min(1.0, int(line.split()[1]) * 1024 / nbytes)
    except OSError:
        pass
    return 0.0


def bench_size(n: int, f_bits: int, repeat: int, with_set: bool) -> List[Row]:
    rng = np.random.default_rng(12345)
    rows: List[Row] = []
    filt = cuckoo.Filter(n, fingerprint_bits=f_bits, bucket_size=4)
    fill = int(0.95 * filt.slot_count)
    present = rng.integers(0, 2**63, size=fill, dtype=np.uint64)

    # Baseline: random gather over an array as large as the table, on transparent huge pages like
    # the table itself (without them every random read also misses the TLB: measured here, np.take
    # over 122 MiB took 26 ns a read on 4 KiB pages and 12 ns on huge pages).
    table, table_huge = huge_page_array(max(filt.nbytes // 8, 1))
    positions = rng.integers(0, len(table), size=n)

    def gather() -> None:
        np.take(table, positions)

    # Fill from empty to 95% load.
    def fill_filter() -> None:
        filt.clear()
        filt.add_many(present)

    fill_repeat = 1 if n > 10**7 else repeat
    times = interleaved_best({"gather": gather, "fill": fill_filter}, fill_repeat)
    t_fill = times["fill"] / fill * 1e9
    t_gather_fill = times["gather"] / n * 1e9

    # Lookups, 50% present, against one filter at 95% load that holds half uint64 and half
    # string keys: uint64, NumPy 'S' and Arrow queries read the same table, interleaved with the
    # gather baseline.
    half = fill // 2
    skeys = string_keys(rng, fill - half)
    filt.clear()
    filt.add_many(present[:half])
    filt.add_many(skeys)
    absent = rng.integers(2**63, 2**64 - 1, size=n - n // 2, dtype=np.uint64)
    queries = np.concatenate([present[: n // 2], absent])
    rng.shuffle(queries)
    squeries = np.concatenate([skeys[: n // 2], string_keys(np.random.default_rng(7), n - n // 2)])
    rng.shuffle(squeries)
    lookups: Dict[str, Callable[[], object]] = {
        "gather": gather,
        "uint64": lambda: filt.contains_many(queries),
        "S": lambda: filt.contains_many(squeries),
        "count": lambda: filt.count_many(queries),
    }
    try:
        import pyarrow as pa

        arrow = pa.array([bytes(k) for k in squeries.tolist()], type=pa.binary())
        lookups["arrow"] = lambda: filt.contains_many(arrow)
    except ImportError:
        arrow = None
    times = {name: t / n * 1e9 for name, t in interleaved_best(lookups, repeat).items()}
    # The gather's best over both phases is the baseline of every ratio (the first np.take of a
    # size also pays for faulting in its output array).
    t_gather = min(times["gather"], t_gather_fill)
    t_contains = times["uint64"]
    rows.append(("gather (np.take)", "baseline", t_gather,
                 f"table {filt.nbytes / 2**20:.1f} MiB, gather array {100 * table_huge:.0f}% on huge pages"))
    rows.append(("add_many to 95% load", "uint64", t_fill, f"{t_fill / t_gather:.1f}x gather"))
    rows.append(("contains_many 50% present", "uint64", t_contains, f"{t_contains / t_gather:.2f}x gather"))
    rows.append(("count_many", "uint64", times["count"], f"{times['count'] / t_gather:.2f}x gather"))
    rows.append(("contains_many 50% present", "bytes 8-32 (NumPy S)", times["S"], f"{times['S'] / t_contains:.2f}x uint64"))
    if arrow is not None:
        rows.append(("contains_many 50% present", "bytes 8-32 (Arrow)", times["arrow"], f"{times['arrow'] / t_contains:.2f}x uint64"))
    else:
        rows.append(("contains_many 50% present", "bytes (Arrow)", float("nan"), "pyarrow not installed"))
    del arrow, squeries

    # add_unique_many on a batch that is half new, then discard_many of the same keys.
    batch = np.concatenate([present[: n // 4], rng.integers(2**63, 2**64 - 1, size=n // 4, dtype=np.uint64)])
    work = filt.copy()
    work.discard_many(skeys[: n // 4])  # room for the new half
    base = work.copy()

    def unique_then_discard() -> Tuple[float, float]:
        w = base.copy()
        t0 = time.perf_counter()
        w.add_unique_many(batch)
        t1 = time.perf_counter()
        w.discard_many(batch)
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1

    runs = [unique_then_discard() for _ in range(repeat)]
    t_unique = min(r[0] for r in runs) / len(batch) * 1e9
    t_discard = min(r[1] for r in runs) / len(batch) * 1e9
    rows.append(("add_unique_many (half new)", "uint64", t_unique, f"{t_unique / t_gather:.2f}x gather"))
    rows.append(("discard_many", "uint64", t_discard, f"{t_discard / t_gather:.2f}x gather"))
    del work, base, skeys

    if with_set:
        s = set(present[:n].tolist())
        probe = queries.tolist()

        def set_loop() -> int:
            hits = 0
            for k in probe:
                if k in s:
                    hits += 1
            return hits

        def filter_loop() -> int:
            hits = 0
            for k in probe:
                if k in filt:
                    hits += 1
            return hits

        loops = interleaved_best({"set": set_loop, "filter": filter_loop}, repeat)
        t_set, t_scalar = loops["set"] / n * 1e9, loops["filter"] / n * 1e9
        mem_set = set_memory(s)
        rows.append(("`k in s` loop, Python set", "int", t_set, f"contains_many is {t_set / t_contains:.0f}x faster"))
        rows.append(("`k in f` loop, scalar", "int", t_scalar, f"{t_scalar / t_set:.2f}x set"))
        rows.append((
            "memory per key",
            "set vs filter",
            mem_set / len(s),
            f"set {mem_set / 2**20:.0f} MiB vs filter {filt.nbytes / 2**20:.1f} MiB: {mem_set / filt.nbytes:.0f}x less",
        ))
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1e6,6e7", help="comma-separated key counts (default 1e6,6e7)")
    parser.add_argument("--fingerprint-bits", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=5, help="rounds of each measurement (default 5)")
    add_level_option(parser)
    args = parser.parse_args(argv)
    print(header())
    for level in chosen_levels(parser, args.cpu):
        cuckoo._core._set_cpu_level(level)
        for size in (int(float(s)) for s in args.sizes.split(",")):
            rows = bench_size(size, args.fingerprint_bits, args.repeat, with_set=size <= 10**7)
            print(f"\nkernel level {level}: n = {size:,} keys, f = {args.fingerprint_bits}, b = 4")
            print(f"{'operation':<30} {'keys':<22} {'ns/key':>9}  vs baseline")
            for op, kind, ns, note in rows:
                unit = "bytes" if op == "memory per key" else ""
                value = f"{ns:9.1f}" if unit == "" else f"{ns:6.1f} B "
                print(f"{op:<30} {kind:<22} {value}  {note}")


if __name__ == "__main__":
    main()
