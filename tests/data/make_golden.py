"""Writes a golden file of format version 1 and the list of its keys:

    python tests/data/make_golden.py xxh3    # golden_v1_xxh3.cuckoo, golden_v1_xxh3_keys.json
    python tests/data/make_golden.py xxh64   # golden_v1.cuckoo, golden_v1_keys.json (the first)
    python tests/data/make_golden.py semisort  # golden_v2_semisort.*: version 2, semi-sorted buckets
    python tests/data/make_golden.py grown-v1  # golden_v1_grown.*: a growable filter that grew, with
                                               # the growth stages of f0df2c2 (written by that build)
    python tests/data/make_golden.py grown-v3  # golden_v3_grown.*: the same with nested stages

They are committed and must never be regenerated: tests/test_persistence.py checks that every
later release still reads each golden file and gives the same answers and the same (i1, i2,
fingerprint) for every key listed with it. That is the guard for hash stability (docs/format.md,
"Hashing"), for each hash algorithm. A new format version adds golden_v2.* next to them.

The filter: capacity 100, 12-bit fingerprints, 4 slots a bucket, max_kicks 500, and a seed above
2^63 (so that the seed's full 64 bits matter), holding the "present" keys below, added in order
with add(). The keys cover every key type and the code paths of both hashes (inputs of 0..100 bytes):
int keys in [-2^63, 2^64), str keys (hashed as UTF-8, incl. non-ASCII), bytes keys. Note that
int 0 and bytes b"\\0" * 8 are the same key, as documented. The "absent" keys were not added; their
recorded answer is what the filter said when the file was made (False unless a false positive).
"""

from __future__ import annotations

import json
import os
import sys

import cuckoo

HERE = os.path.dirname(os.path.abspath(__file__))
PARAMS = dict(capacity=100, fingerprint_bits=12, bucket_size=4, max_kicks=500, seed=0x9E3779B97F4A7C15)

PRESENT = (
    [0, 1, -1, 2, 255, 256, 2**31, 2**32, 2**63 - 1, -(2**63), 2**63, 2**64 - 1, 12345678901234567890]
    + ["", "a", "hello", "naïve café", "日本語", "\U0001F986", "x" * 31, "y" * 32, "z" * 33]
    + [b"", b"\x00", b"\xff" * 7, b"abcdefgh", bytes(range(64)), bytes(range(100))]
    + [f"key-{i}" for i in range(40)]
)
ABSENT = [10**9 + i for i in range(25)] + [f"absent-{i}" for i in range(25)] + [b"\x00" * 7, b"\x00" * 9]


def encode(key: object) -> dict:
    if isinstance(key, int):
        return {"type": "int", "value": key}
    if isinstance(key, str):
        return {"type": "str", "value": key}
    assert isinstance(key, bytes)
    return {"type": "bytes", "hex": key.hex()}


def main(hash_algorithm: str) -> None:
    version = 1
    if hash_algorithm.startswith("grown-"):  # growable, capacity 8: the keys make it grow
        params = dict(PARAMS, capacity=8, hash_algorithm="xxh3", growable=True)
        version = int(hash_algorithm[-1])
        stem = f"golden_v{version}_grown"
    elif hash_algorithm == "semisort":  # format version 2: the same filter with semi-sorted buckets
        params = dict(PARAMS, hash_algorithm="xxh3", semi_sort=True)
        stem, version = "golden_v2_semisort", 2
    elif hash_algorithm == "xxh64":
        # The first golden file (XXH64) was written before the hash_algorithm parameter existed.
        params, stem = PARAMS, "golden_v1"
    else:
        params, stem = dict(PARAMS, hash_algorithm=hash_algorithm), f"golden_v1_{hash_algorithm}"
    f = cuckoo.Filter(**dict(params, hash_algorithm=params.get("hash_algorithm", "xxh64")))
    for key in PRESENT:
        f.add(key)
    keys = []
    for present, group in ((True, PRESENT), (False, ABSENT)):
        for key in group:
            i1, i2, fp = f.bucket_indices(key)
            keys.append(dict(encode(key), added=present, contains=key in f, i1=i1, i2=i2, fp=fp))
    doc = {
        "format_version": version,
        "file": f"{stem}.cuckoo",
        "parameters": params,
        "bucket_count": f.bucket_count,
        "stages": [{k: st[k] for k in ("bucket_count", "fingerprint_bits", "capacity", "items")} for st in f.stages],
        "items": len(f),
        "keys": keys,
    }
    f.save(os.path.join(HERE, f"{stem}.cuckoo"))
    with open(os.path.join(HERE, f"{stem}_keys.json"), "w", encoding="utf-8") as fh:
        # One key a line: diffs and reviews stay readable.
        head = json.dumps({k: v for k, v in doc.items() if k != "keys"}, indent=1)
        fh.write(head[:-2] + ',\n "keys": [\n')
        fh.write(",\n".join("  " + json.dumps(k, ensure_ascii=True) for k in keys))
        fh.write("\n ]\n}\n")
    print(f"wrote {stem}.cuckoo ({len(f.to_bytes())} bytes, {len(f)} items) and {stem}_keys.json")


if __name__ == "__main__":
    main(sys.argv[1])
