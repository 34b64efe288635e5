"""An independent, pure-Python reading of docs/format.md, for the tests.

Written from the document, not from the C++: XXH64, the key hash and the bucket/fingerprint
derivation, and the version-1 header layout. The tests use it to check that the files the core
writes are what the document says, to recompute golden hashes from scratch, and to build
corrupt files whose checksums are nevertheless right (so that the parameter checks behind the
checksum get exercised too).
"""

from __future__ import annotations

import functools
import struct
from typing import Any, Dict, List

M64 = (1 << 64) - 1
P1 = 0x9E3779B185EBCA87
P2 = 0xC2B2AE3D27D4EB4F
P3 = 0x165667B19E3779F9
P4 = 0x85EBCA77C2B2AE63
P5 = 0x27D4EB2F165667C5


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & M64


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * P2) & M64
    return (_rotl(acc, 31) * P1) & M64


def _avalanche(h: int) -> int:
    h ^= h >> 33
    h = (h * P2) & M64
    h ^= h >> 29
    h = (h * P3) & M64
    h ^= h >> 32
    return h


def xxh64(data: bytes, seed: int = 0) -> int:
    data = bytes(data)
    n = len(data)
    p = 0
    if n >= 32:
        v = [(seed + P1 + P2) & M64, (seed + P2) & M64, seed, (seed - P1) & M64]
        while p + 32 <= n:
            for i in range(4):
                v[i] = _round(v[i], int.from_bytes(data[p + 8 * i : p + 8 * i + 8], "little"))
            p += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & M64
        for x in v:
            h ^= _round(0, x)
            h = (h * P1 + P4) & M64
    else:
        h = (seed + P5) & M64
    h = (h + n) & M64
    while p + 8 <= n:
        h ^= _round(0, int.from_bytes(data[p : p + 8], "little"))
        h = (_rotl(h, 27) * P1 + P4) & M64
        p += 8
    if p + 4 <= n:
        h ^= (int.from_bytes(data[p : p + 4], "little") * P1) & M64
        h = (_rotl(h, 23) * P2 + P3) & M64
        p += 4
    while p < n:
        h ^= (data[p] * P5) & M64
        h = (_rotl(h, 11) * P1) & M64
        p += 1
    return _avalanche(h)


# ---- keys -> (i1, i2, fp), as documented ------------------------------------------------------


def key_bytes(key: Any) -> bytes:
    if isinstance(key, int):
        return (key & M64).to_bytes(8, "little")
    if isinstance(key, str):
        return key.encode("utf-8")
    return bytes(key)


def mix64(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & M64
    x ^= x >> 31
    return x


def alt_index(index: int, fp: int, bucket_count: int) -> int:
    blocks = bucket_count >> 3
    g = mix64(fp)
    hb = ((g & 0xFFFFFFFF) * blocks) >> 32
    ho = 1 + (((g >> 32) * 7) >> 32)
    block = index >> 3
    return (((hb - block) % blocks) << 3) | ((index & 7) ^ ho)


def bucket_indices(key: Any, seed: int, bucket_count: int, fingerprint_bits: int) -> tuple:
    h = xxh64(key_bytes(key), seed)
    i1 = ((h & 0xFFFFFFFF) * bucket_count) >> 32
    fp = 1 + (((h >> 32) * ((1 << fingerprint_bits) - 1)) >> 32)
    return (i1, alt_index(i1, fp, bucket_count), fp)


# ---- version-1 layout ---------------------------------------------------------------------------

MAGIC = b"CUCKOOF\x00"
FIXED = struct.Struct("<8sIIQIIQQIIQ")  # 64 bytes
STAGE = struct.Struct("<IIQQQQQQQ")  # 64 bytes
FIXED_FIELDS = (
    "magic", "version", "header_length", "file_length", "flags", "hash_algorithm",
    "seed", "capacity", "max_kicks", "stage_count", "reserved",
)
STAGE_FIELDS = (
    "bucket_size", "fingerprint_bits", "bucket_count", "item_count", "capacity",
    "table_offset", "table_length", "table_checksum", "reserved",
)
assert FIXED.size == 64 and STAGE.size == 64


def parse(data: bytes) -> Dict[str, Any]:
    """The header fields of a well-formed version-1 file (no validation beyond the layout)."""
    data = bytes(data)
    head = dict(zip(FIXED_FIELDS, FIXED.unpack_from(data, 0)))
    stages: List[Dict[str, Any]] = []
    for i in range(head["stage_count"]):
        stages.append(dict(zip(STAGE_FIELDS, STAGE.unpack_from(data, 64 + 64 * i))))
    end = 64 + 64 * head["stage_count"]
    head["header_checksum"] = int.from_bytes(data[end : end + 8], "little")
    head["stages"] = stages
    return head


@functools.lru_cache(maxsize=256)
def _table_checksum(table: bytes) -> int:
    return xxh64(table, 0)


def build(head: Dict[str, Any], tables: List[bytes], fix_checksums: bool = True) -> bytes:
    """Serialize header fields and tables with the documented layout; recompute checksums."""
    stages = head["stages"]
    out = bytearray(FIXED.pack(*(head[k] for k in FIXED_FIELDS)))
    for s, t in zip(stages, tables):
        if fix_checksums:
            s = dict(s, table_checksum=_table_checksum(bytes(t)))
        out += STAGE.pack(*(s[k] for k in STAGE_FIELDS))
    checksum = xxh64(bytes(out), 0) if fix_checksums else head["header_checksum"]
    out += checksum.to_bytes(8, "little")
    for t in tables:  # placed by the layout rule, whatever the (maybe corrupt) offset fields say
        out += bytes(-len(out) % 64)
        out += t
        out += bytes(16)
        out += bytes(-len(out) % 64)
    return bytes(out)


def tables(data: bytes) -> List[bytes]:
    head = parse(data)
    return [bytes(data[s["table_offset"] : s["table_offset"] + s["table_length"]]) for s in head["stages"]]


def slots(table: bytes, fingerprint_bits: int) -> List[int]:
    """Every slot of a packed table (the table read as one little-endian bit string)."""
    bits = int.from_bytes(table, "little")
    n = len(table) * 8 // fingerprint_bits
    mask = (1 << fingerprint_bits) - 1
    return [(bits >> (k * fingerprint_bits)) & mask for k in range(n)]


def rewrite(data: bytes, stage: int = 0, table: "bytes | None" = None, **fields: Any) -> bytes:
    """``data`` with some header or stage fields replaced (``stage_<name>=``), checksums fixed."""
    head = parse(data)
    ts = tables(data)
    if table is not None:
        ts[stage] = table
    for k, v in fields.items():
        if k.startswith("stage_") and k != "stage_count":  # stage_count is a header field
            head["stages"][stage][k[len("stage_"):]] = v
        else:
            head[k] = v
    return build(head, ts)
