"""Writes the seed corpora of fuzz/fuzz_from_bytes.py (small valid filters of several shapes),
fuzz/fuzz_store.py (small valid stores, with and without their snapshot) and
fuzz/fuzz_arrow_ipc.py (small Arrow IPC files and streams; needs pyarrow).

    python fuzz/make_corpus.py      # rewrites fuzz/corpus/{from_bytes,store,arrow_ipc}/*

Deterministic (fixed seeds and keys): rerunning it gives the same files unless the format changes.
"""

from __future__ import annotations

import os

import numpy as np

import cuckoo

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "from_bytes")


def shapes():
    yield "empty_b4_f12", cuckoo.Filter(16, fingerprint_bits=12)
    for b in (2, 4, 8):
        for f in (4, 7, 13, 16, 32):
            flt = cuckoo.Filter(40, fingerprint_bits=f, bucket_size=b, seed=b * 100 + f)
            flt.add_many(np.arange(30, dtype=np.int64))
            yield f"ints_b{b}_f{f}", flt
    flt = cuckoo.Filter(30, fingerprint_bits=9, seed=2**64 - 1)
    flt.update([b"a", b"bb", "\u00e9t\u00e9", -1, 2**64 - 1])
    yield "mixed_seedmax_f9", flt
    grown = cuckoo.Filter(10, fingerprint_bits=8, growable=True, seed=5)
    grown.add_many(np.arange(100, dtype=np.uint32))
    yield f"growable_{len(grown.stages)}stages", grown
    full = cuckoo.Filter(8, fingerprint_bits=5, bucket_size=2, max_kicks=3)
    try:
        full.add_many(np.arange(1000, dtype=np.int16))
    except cuckoo.FilterFullError:
        pass
    yield "full_b2_f5", full


STORE_HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "store")


def store_seeds():
    """Small stores as (name, log bytes, snapshot bytes or b"")."""
    import shutil
    import struct
    import tempfile
    work = tempfile.mkdtemp()
    try:
        for name, tag_bits, ops in (
            ("empty", 16, []),
            ("puts", 16, [("put", i) for i in range(12)]),
            ("overwrites_deletes", 16, [("put", i % 4) for i in range(10)] + [("del", 1), ("del", 9)]),
            ("tags1_grown", 1, [("put", i) for i in range(300)]),
        ):
            path = os.path.join(work, name)
            s = cuckoo.Store(path, seed=3, tag_bits=tag_bits)
            for op, i in ops:
                if op == "put":
                    s[b"k%d" % i] = b"v%d" % i * (i % 3)
                else:
                    s.discard(b"k%d" % i)
            s.close()
            log = open(path, "rb").read()
            idx = open(path + ".idx", "rb").read()
            yield name, log, idx
            yield name + "_noidx", log, b""
    finally:
        shutil.rmtree(work)


ARROW_HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "arrow_ipc")


def arrow_seeds():
    """Small IPC files and streams as (name, bytes): a key column ``k`` of each type dedup takes
    (string, binary, integer, dictionary), with nulls and other columns, in one or more batches."""
    import pyarrow as pa

    ids = [i % 5 for i in range(12)]
    tables = {
        "str": pa.table({"k": pa.array([f"key{i}" for i in ids]), "n": pa.array(ids, pa.int32())}),
        "bin_nulls": pa.table({"k": pa.array([None if i == 3 else b"b%d" % i for i in ids], pa.binary())}),
        "int": pa.table({"k": pa.array(ids, pa.uint16()), "s": pa.array([[i] * (i % 3) for i in ids])}),
        "dict": pa.table({"k": pa.array([f"d{i}" for i in ids]).dictionary_encode()}),
        "large_str": pa.table({"k": pa.array([f"L{i}" for i in ids], pa.large_string())}),
    }
    for name, t in tables.items():
        for fmt, new in (("file", pa.ipc.new_file), ("stream", pa.ipc.new_stream)):
            sink = pa.BufferOutputStream()
            with new(sink, t.schema) as w:
                for b in t.to_batches(max_chunksize=5):  # several batches
                    w.write(b)
            yield f"{name}_{fmt}", sink.getvalue().to_pybytes()


def main() -> None:
    import struct
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        print("pyarrow is missing: the arrow_ipc corpus is left as it is")
    else:
        os.makedirs(ARROW_HERE, exist_ok=True)
        seeds = list(arrow_seeds())
        for name, data in seeds:
            with open(os.path.join(ARROW_HERE, name), "wb") as fh:
                fh.write(data)
        print(f"wrote {len(seeds)} seeds to {ARROW_HERE}")
    os.makedirs(STORE_HERE, exist_ok=True)
    count = 0
    for name, log, idx in store_seeds():
        for mode in (0, 1, 2, 3):  # bit 0: recompute checksums; bit 1: open read-only
            with open(os.path.join(STORE_HERE, f"{name}.mode{mode}"), "wb") as fh:
                fh.write(bytes([mode]) + struct.pack("<H", len(log)) + log + idx)
            count += 1
    print(f"wrote {count} seeds to {STORE_HERE}")
    os.makedirs(HERE, exist_ok=True)
    for name, flt in shapes():
        # The harness reads the first byte as a mode (odd: recompute checksums), the rest as data.
        for mode in (0, 1):
            with open(os.path.join(HERE, f"{name}.mode{mode}"), "wb") as fh:
                fh.write(bytes([mode]) + flt.to_bytes())
    print(f"wrote {2 * len(list(shapes()))} seeds to {HERE}")


if __name__ == "__main__":
    main()
