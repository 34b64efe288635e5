"""Bulk lookups from every Arrow producer, against the pyarrow path, in one run.

    python benchmarks/arrow_inputs.py            # 10^6 keys like b"user-%016x", half present
    python benchmarks/arrow_inputs.py --n 10000000 --rounds 7

Each row times ``f.contains_many(column)`` (conversion included: that is what a caller pays) for
the same keys held by one producer: a pyarrow StringArray (the baseline: offsets read in place),
Polars (exports string_view: hashed up front), a DuckDB query result (an Arrow stream of record
batches), nanoarrow and arro3 arrays (offsets through the C data interface), and a Python list.
Figures: min and median ns per key over --rounds runs, and the ratio of each min to the baseline's
min measured in the same run. Producers not installed are skipped.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import cuckoo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    n = args.n
    keys = [f"user-{i:016x}" for i in range(2 * n)]
    probe = keys[n // 2 : n // 2 + n]  # half of them present
    f = cuckoo.Filter(n, fpr=0.001)
    f.add_many(keys[:n])

    import pyarrow as pa

    columns = {"pyarrow string (baseline)": pa.array(probe, pa.string())}
    try:
        import polars as pl

        columns["polars Series (string_view)"] = pl.Series(probe)
    except ImportError:
        pass
    try:
        import duckdb

        con = duckdb.connect()
        con.register("probe", pa.table({"k": pa.array(probe, pa.string())}))
        columns["duckdb result"] = None  # a relation streams once: made fresh per run below
    except ImportError:
        con = None
    try:
        import nanoarrow as na

        columns["nanoarrow Array"] = na.Array(pa.array(probe, pa.string()))
    except ImportError:
        pass
    try:
        import arro3.core as a3

        columns["arro3 Array"] = a3.Array(pa.array(probe, pa.string()))
    except ImportError:
        pass
    columns["Python list of str"] = probe

    want = f.contains_many(columns["pyarrow string (baseline)"])
    results = {}
    for name, col in columns.items():
        times = []
        for _ in range(args.rounds):
            if name == "duckdb result":
                col = con.sql("select k from probe")
            t0 = time.perf_counter()
            got = f.contains_many(col)
            times.append(time.perf_counter() - t0)
            assert np.array_equal(got, want), name
        results[name] = (min(times) / n * 1e9, statistics.median(times) / n * 1e9)
    base = results["pyarrow string (baseline)"][0]
    print(f"contains_many of {n:,} keys, half present; min / median of {args.rounds} runs")
    print(f"{'input':<30} {'min ns/key':>11} {'median':>8} {'x pyarrow':>10}")
    for name, (lo, med) in results.items():
        print(f"{name:<30} {lo:>11.1f} {med:>8.1f} {lo / base:>10.2f}")


if __name__ == "__main__":
    main()
