"""Writes the seed corpus of fuzz/fuzz_from_bytes.py: small valid filters of several shapes.

    python fuzz/make_corpus.py      # rewrites fuzz/corpus/from_bytes/*

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


def main() -> None:
    os.makedirs(HERE, exist_ok=True)
    for name, flt in shapes():
        # The harness reads the first byte as a mode (odd: recompute checksums), the rest as data.
        for mode in (0, 1):
            with open(os.path.join(HERE, f"{name}.mode{mode}"), "wb") as fh:
                fh.write(bytes([mode]) + flt.to_bytes())
    print(f"wrote {2 * len(list(shapes()))} seeds to {HERE}")


if __name__ == "__main__":
    main()
