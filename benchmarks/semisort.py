"""Semi-sorted against plain buckets, measured in the same run (issue 21).

    python benchmarks/semisort.py                  # 10^6 and 6*10^7 keys (~2 GiB, a few minutes)
    python benchmarks/semisort.py --sizes 1e6      # cache-resident size only
    python benchmarks/semisort.py --cpu all        # every kernel level this CPU has, one after another

For each size n: Filter(n, fpr=0.001) and Filter(n, fpr=0.001, semi_sort=True) (13-bit
fingerprints in both), each filled with n uint64 keys (its capacity) by add_many, then queried
with contains_many on n keys, 50% present. Reported: bits per key at capacity, the FPR measured on
the absent half, and ns per key of the fill and of the lookups, the best of --repeat rounds in
which plain and semi-sorted take turns; the ratio semi-sorted / plain is what to compare (the
speed of a shared machine drifts within seconds, ratios between neighbours in time do not).
Each level (--cpu) is measured with its own plain filter: the rows "semi-sorted / plain" at a
level are the ratios to compare. (For CPU-time ratios of every level in one process on a shared
machine: `bench_core --levels --semi --config 13,4`, cpp/bench.)
"""

from __future__ import annotations

import argparse
from typing import Callable, Sequence

import numpy as np

import cuckoo
from _machine import add_level_option, chosen_levels, header
from bulk import interleaved_best  # benchmarks/bulk.py: run as `python benchmarks/semisort.py`


def bench_size(n: int, fpr: float, repeat: int) -> None:
    rng = np.random.default_rng(21)
    present = rng.integers(0, 2**63, size=n, dtype=np.uint64)  # top bit clear
    absent = rng.integers(2**63, 2**64 - 1, size=n - n // 2, dtype=np.uint64)  # top bit set
    queries = np.concatenate([present[: n // 2], absent])
    rng.shuffle(queries)
    filters = {"plain": cuckoo.Filter(n, fpr=fpr), "semi-sorted": cuckoo.Filter(n, fpr=fpr, semi_sort=True)}

    def filler(f: cuckoo.Filter) -> Callable[[], None]:
        def fill() -> None:
            f.clear()
            f.add_many(present)

        return fill

    fill = interleaved_best({name: filler(f) for name, f in filters.items()}, 1 if n > 10**7 else repeat)
    lookups = interleaved_best(
        {name: (lambda f=f: f.contains_many(queries)) for name, f in filters.items()}, repeat
    )
    print(f"\nkernel level {cuckoo.cpu_level()}: n = {n:,} keys, fpr={fpr} (f = {filters['plain'].fingerprint_bits}),"
          " b = 4, 50% present")
    print(f"{'buckets':<12} {'bits/key':>9} {'FPR':>9} {'fill ns/key':>12} {'lookup ns/key':>14}")
    for name, f in filters.items():
        assert len(f) == n and f.contains_many(present).all()
        measured = float(np.count_nonzero(f.contains_many(absent))) / len(absent)
        print(
            f"{name:<12} {8 * f.nbytes / len(f):9.2f} {measured:9.4%} {fill[name] / n * 1e9:12.1f}"
            f" {lookups[name] / n * 1e9:14.1f}"
        )
    print(
        f"semi-sorted / plain at {cuckoo.cpu_level()}: contains_many {lookups['semi-sorted'] / lookups['plain']:.2f}x, "
        f"add_many {fill['semi-sorted'] / fill['plain']:.2f}x"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1e6,6e7", help="comma-separated key counts (default 1e6,6e7)")
    parser.add_argument("--fpr", type=float, default=0.001)
    parser.add_argument("--repeat", type=int, default=5, help="rounds of each measurement (default 5)")
    add_level_option(parser)
    args = parser.parse_args(argv)
    print(header())
    for level in chosen_levels(parser, args.cpu):
        cuckoo._core._set_cpu_level(level)
        for size in (int(float(s)) for s in args.sizes.split(",")):
            bench_size(size, args.fpr, args.repeat)


if __name__ == "__main__":
    main()
