"""cuckoo.Store against sqlite3 and LMDB (py-lmdb), in one run on the same data.

    python benchmarks/store.py                  # 10^7 keys of 16 bytes, values of 16 bytes
    python benchmarks/store.py --keys 1000000

Measures, each on a fresh file in a temporary directory (removed at the end):
- bulk write of every item, made durable: cuckoo `put_many(keys, values)` + `sync()` (keys and
  values as NumPy 'S16' arrays, and as lists of bytes); sqlite3 in WAL mode, one transaction,
  `executemany` into a WITHOUT ROWID table with the key as primary key, then commit; LMDB, one
  write transaction, `cursor.putmulti`, then commit (LMDB syncs on commit);
- bulk read of 10^6 random present keys: cuckoo `get_many` (a list of bytes) against LMDB
  `cursor.getmulti` and sqlite3 `SELECT` one key at a time (on 10^5 keys, scaled);
- index memory: cuckoo's index bytes per key against a Python dict of the same items (tracemalloc
  over 10^6 items, scaled), and the files on disk;
- reopening the store: from its index snapshot, and from the log alone (snapshot removed), as
  records per second.
Ratios are against cuckoo in the same run. Install the peers with `pip install lmdb` (sqlite3 is
part of Python).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import shutil
import sqlite3
import sys
import tempfile
import time
import tracemalloc

import numpy as np

import cuckoo


def items(n: int, seed: int):
    """n distinct 16-byte keys (random) and 16-byte values, as 'S16' arrays."""
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 2**63, size=(n, 2), dtype=np.int64).view(np.uint8).reshape(n, 16)
    keys = raw.copy().view("S16").ravel()
    # 'S' arrays drop trailing NUL bytes; keep every key exactly 16 bytes
    keys_u8 = keys.view(np.uint8).reshape(n, 16)
    keys_u8[:, 15] |= 1
    values = rng.integers(0, 2**63, size=(n, 2), dtype=np.int64).view(np.uint8).reshape(n, 16).copy()
    values[:, 15] |= 1
    return keys, values.view("S16").ravel()


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def dir_bytes(paths):
    return sum(os.path.getsize(p) for p in paths if os.path.exists(p))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=10_000_000)
    ap.add_argument("--reads", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--dir", default=None, help="where to put the temporary directory")
    args = ap.parse_args(argv)
    n = args.keys
    try:
        import lmdb
    except ImportError:
        lmdb = None
        print("py-lmdb is not installed (pip install lmdb): LMDB is left out")

    tmp = tempfile.mkdtemp(prefix="cuckoo-store-bench-", dir=args.dir)
    rows = []
    try:
        keys, values = items(n, args.seed)
        key_list, value_list = keys.tolist(), values.tolist()
        rng = np.random.default_rng(args.seed + 1)
        read_idx = rng.integers(0, n, size=min(args.reads, n))
        read_keys = keys[read_idx]
        read_list = read_keys.tolist()
        print(f"{n:,} items (16-byte keys, 16-byte values); {len(read_idx):,} random reads of present keys")
        print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
              f"SQLite {sqlite3.sqlite_version}" + (f", LMDB {'.'.join(map(str, lmdb.version()))}" if lmdb else ""))

        # ---- cuckoo: NumPy input ----
        path = os.path.join(tmp, "c.ckv")
        s = cuckoo.Store(path)
        _, t_put = timed(lambda: (s.put_many(keys, values), s.sync()))
        got, t_get = timed(lambda: s.get_many(read_keys))
        assert got == values[read_idx].tolist(), "cuckoo get_many returned wrong values"
        st = s.stats()
        s.close()
        files_c = dir_bytes([path, path + ".idx"])
        s, t_open = timed(lambda: cuckoo.Store(path, readonly=True))
        assert len(s) == n and s.stats()["snapshot_used"]
        s.close()
        os.rename(path + ".idx", path + ".idx.off")
        s, t_rebuild = timed(lambda: cuckoo.Store(path, readonly=True))
        assert len(s) == n and not s.stats()["snapshot_used"]
        replayed = s.stats()["replayed_records"]
        s.close()
        shutil.rmtree(tmp)
        os.makedirs(tmp)
        rows.append(("cuckoo.Store (NumPy S16)", t_put, t_get, files_c))

        # ---- cuckoo: lists of bytes ----
        path = os.path.join(tmp, "l.ckv")
        s = cuckoo.Store(path)
        _, t_put_l = timed(lambda: (s.put_many(key_list, value_list), s.sync()))
        got, t_get_l = timed(lambda: s.get_many(read_list))
        assert got == values[read_idx].tolist()
        s.close()
        rows.append(("cuckoo.Store (lists)", t_put_l, t_get_l, dir_bytes([path, path + ".idx"])))
        shutil.rmtree(tmp)
        os.makedirs(tmp)

        # ---- sqlite3 ----
        path = os.path.join(tmp, "s.sqlite")
        db = sqlite3.connect(path)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID")

        def sqlite_put():
            with db:
                db.executemany("INSERT INTO kv VALUES (?, ?)", zip(key_list, value_list))

        _, t_put_s = timed(sqlite_put)
        few = read_list[: max(1, len(read_list) // 10)]

        def sqlite_get():
            cur = db.cursor()
            return [cur.execute("SELECT v FROM kv WHERE k = ?", (k,)).fetchone()[0] for k in few]

        got, t_get_s = timed(sqlite_get)
        assert got == values[read_idx[: len(few)]].tolist()
        t_get_s *= len(read_list) / len(few)
        db.close()
        rows.append(("sqlite3 (WAL, executemany)", t_put_s, t_get_s, dir_bytes([path, path + "-wal", path + "-shm"])))
        shutil.rmtree(tmp)
        os.makedirs(tmp)

        # ---- LMDB ----
        if lmdb:
            path = os.path.join(tmp, "l.mdb")
            env = lmdb.open(path, map_size=max(1 << 30, n * 200), subdir=False, lock=True)

            def lmdb_put():
                with env.begin(write=True) as txn:
                    txn.cursor().putmulti(zip(key_list, value_list))

            _, t_put_m = timed(lmdb_put)

            def lmdb_get():
                with env.begin() as txn:
                    return [v for _, v in txn.cursor().getmulti(read_list)]

            got, t_get_m = timed(lmdb_get)
            assert got == values[read_idx].tolist()
            env.close()
            rows.append(("LMDB (putmulti/getmulti)", t_put_m, t_get_m, dir_bytes([path])))
            shutil.rmtree(tmp)
            os.makedirs(tmp)

        # ---- a dict of the same items (memory only) ----
        m = min(n, 1_000_000)
        gc.collect()
        tracemalloc.start()
        d = dict(zip(keys[:m].tolist(), values[:m].tolist()))
        dict_bytes = tracemalloc.get_traced_memory()[0] / m
        tracemalloc.stop()
        del d

        print()
        print(f"{'store':<30}{'put+sync s':>11}{'x cuckoo':>9}{'ns/item':>9}{'get s':>8}{'x cuckoo':>9}"
              f"{'ns/read':>9}{'files MiB':>11}")
        base_put, base_get = rows[0][1], rows[0][2]
        for name, tp, tg, fb in rows:
            print(f"{name:<30}{tp:>11.2f}{tp / base_put:>9.2f}{tp / n * 1e9:>9.0f}{tg:>8.2f}{tg / base_get:>9.2f}"
                  f"{tg / len(read_list) * 1e9:>9.0f}{fb / 2**20:>11.0f}")
        print()
        print(f"index memory: {st['index_bytes_per_key']:.2f} bytes per key ({st['index_bytes'] / 2**20:.0f} MiB, "
              f"{st['buckets']:,} buckets, load {st['load_factor']:.1%}); a Python dict of the same items: "
              f"{dict_bytes:.0f} bytes per item ({dict_bytes / st['index_bytes_per_key']:.0f}x); "
              f"target <= 10 bytes per key: {st['index_bytes_per_key'] <= 10}")
        print(f"reopen with the snapshot: {t_open:.2f} s (target < 1 s: {t_open < 1}); rebuild from the log alone: "
              f"{t_rebuild:.2f} s = {replayed / t_rebuild / 1e6:.2f} M records/s")
        verdicts = [f"put_many faster than {name.split(' ')[0]}: {tp > rows[0][1]}" for name, tp, _, _ in rows[2:]]
        if lmdb:
            verdicts.append(f"get_many faster than LMDB getmulti: {rows[-1][2] > rows[0][2]}")
        print("; ".join(verdicts))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
