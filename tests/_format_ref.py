"""An independent, pure-Python reading of docs/format.md, for the tests.

Written from the document, not from the C++: XXH64, the key hash and the bucket/fingerprint
derivation, and the version-1 header layout. The tests use it to check that the files the core
writes are what the document says, to recompute golden hashes from scratch, and to build
corrupt files whose checksums are nevertheless right (so that the parameter checks behind the
checksum get exercised too).
"""

from __future__ import annotations

import functools
import operator
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


# ---- XXH3-64 (hash algorithm 2), from the algorithm's description -----------------------------

XXH3_SECRET = bytes.fromhex(
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
    "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
    "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
    "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e"
    "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e"
)
_MX1 = 0x165667919E3779F9
_MX2 = 0x9FB21C651E98DF25
_P32_1, _P32_2, _P32_3 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D


def _le64(b: bytes, at: int) -> int:
    return int.from_bytes(b[at : at + 8], "little")


def _le32(b: bytes, at: int) -> int:
    return int.from_bytes(b[at : at + 4], "little")


def _fold(a: int, b: int) -> int:
    p = a * b
    return (p ^ (p >> 64)) & M64


def _x3_avalanche(h: int) -> int:
    h ^= h >> 37
    h = (h * _MX1) & M64
    return h ^ (h >> 32)


def _mix16(data: bytes, at: int, secret: bytes, s_at: int, seed: int) -> int:
    lo = _le64(data, at) ^ ((_le64(secret, s_at) + seed) & M64)
    hi = _le64(data, at + 8) ^ ((_le64(secret, s_at + 8) - seed) & M64)
    return _fold(lo, hi)


def _x3_long(data: bytes, seed: int) -> int:
    secret = b"".join(
        ((_le64(XXH3_SECRET, i) + seed) & M64).to_bytes(8, "little")
        + ((_le64(XXH3_SECRET, i + 8) - seed) & M64).to_bytes(8, "little")
        for i in range(0, 192, 16)
    )
    acc = [_P32_3, P1, P2, P3, P4, _P32_2, P5, _P32_1]

    def stripe(at: int, s_at: int) -> None:
        for i in range(8):
            value = _le64(data, at + 8 * i)
            keyed = value ^ _le64(secret, s_at + 8 * i)
            acc[i ^ 1] = (acc[i ^ 1] + value) & M64
            acc[i] = (acc[i] + (keyed & 0xFFFFFFFF) * (keyed >> 32)) & M64

    n = len(data)
    blocks = (n - 1) // 1024
    for b in range(blocks):
        for k in range(16):
            stripe(b * 1024 + 64 * k, 8 * k)
        for i in range(8):
            a = acc[i] ^ (acc[i] >> 47) ^ _le64(secret, 128 + 8 * i)
            acc[i] = (a * _P32_1) & M64
    for k in range(((n - 1) - 1024 * blocks) // 64):
        stripe(blocks * 1024 + 64 * k, 8 * k)
    stripe(n - 64, 192 - 64 - 7)
    h = (n * P1) & M64
    for i in range(4):
        h = (h + _fold(acc[2 * i] ^ _le64(secret, 11 + 16 * i), acc[2 * i + 1] ^ _le64(secret, 19 + 16 * i))) & M64
    return _x3_avalanche(h)


def xxh3_64(data: bytes, seed: int = 0) -> int:
    data = bytes(data)
    n = len(data)
    s = XXH3_SECRET
    if n == 0:
        return _avalanche(seed ^ _le64(s, 56) ^ _le64(s, 64))
    if n <= 3:
        combined = (data[0] << 16) | (data[n >> 1] << 24) | data[n - 1] | (n << 8)
        return _avalanche(combined ^ (((_le32(s, 0) ^ _le32(s, 4)) + seed) & M64))
    if n <= 8:
        seed ^= int.from_bytes((seed & 0xFFFFFFFF).to_bytes(4, "little"), "big") << 32
        keyed = (_le32(data, n - 4) + (_le32(data, 0) << 32)) ^ (((_le64(s, 8) ^ _le64(s, 16)) - seed) & M64)
        h = keyed ^ _rotl(keyed, 49) ^ _rotl(keyed, 24)
        h = (h * _MX2) & M64
        h ^= (h >> 35) + n
        h = (h * _MX2) & M64
        return h ^ (h >> 28)
    if n <= 16:
        lo = _le64(data, 0) ^ (((_le64(s, 24) ^ _le64(s, 32)) + seed) & M64)
        hi = _le64(data, n - 8) ^ (((_le64(s, 40) ^ _le64(s, 48)) - seed) & M64)
        swapped = int.from_bytes(lo.to_bytes(8, "little"), "big")
        return _x3_avalanche((n + swapped + hi + _fold(lo, hi)) & M64)
    if n <= 128:
        acc = n * P1
        for k in range((n - 1) // 32 + 1):  # pairs of 16-byte halves from both ends
            acc += _mix16(data, 16 * k, s, 32 * k, seed) + _mix16(data, n - 16 * (k + 1), s, 32 * k + 16, seed)
        return _x3_avalanche(acc & M64)
    if n <= 240:
        acc = n * P1
        for i in range(8):
            acc += _mix16(data, 16 * i, s, 16 * i, seed)
        acc = _x3_avalanche(acc & M64)
        for i in range(8, n // 16):
            acc += _mix16(data, 16 * i, s, 16 * (i - 8) + 3, seed)
        acc += _mix16(data, n - 16, s, 119, seed)
        return _x3_avalanche(acc & M64)
    return _x3_long(data, seed)


# ---- keys -> (i1, i2, fp), as documented ------------------------------------------------------


def key_bytes(key: Any) -> bytes:
    """The bytes a key is hashed as: an integer's (Python or NumPy) 64-bit two's-complement word,
    little-endian; a str's UTF-8; a bytes-like object's content."""
    if isinstance(key, str):
        return key.encode("utf-8")
    if hasattr(key, "__index__"):
        return (operator.index(key) & M64).to_bytes(8, "little")
    return bytes(key)


def mix64(x: int) -> int:
    """The SplitMix64 finaliser."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & M64
    x ^= x >> 31
    return x


def alt_index(index: int, fp: int, bucket_count: int) -> int:
    """Reflect the block of 8 buckets about hb(fp) modulo the block count; XOR the offset inside
    the block with ho(fp) in [1, 7]."""
    blocks = bucket_count >> 3
    g = mix64(fp)
    hb = ((g & 0xFFFFFFFF) * blocks) >> 32
    ho = 1 + (((g >> 32) * 7) >> 32)
    block = index >> 3
    return (((hb - block) % blocks) << 3) | ((index & 7) ^ ho)


HASH_ALGORITHMS = {"xxh64": 1, "xxh3": 2}  # the names Filter(hash_algorithm=...) takes -> format ids


def key_hash(key: Any, seed: int, hash_algorithm: str = "xxh3") -> int:
    """The documented key hash: XXH3-64 (hash algorithm 2, the default) or XXH64 (1)."""
    if hash_algorithm == "xxh3":
        return xxh3_64(key_bytes(key), seed)
    if hash_algorithm == "xxh64":
        return xxh64(key_bytes(key), seed)
    raise ValueError(f"unknown hash algorithm {hash_algorithm!r}")


def locate(h: int, bucket_count: int, fingerprint_bits: int) -> tuple:
    """(i1, i2, fp) of a key hash: i1 from the low 32 bits, fp in [1, 2^f - 1] from the high 32."""
    i1 = ((h & 0xFFFFFFFF) * bucket_count) >> 32
    fp = 1 + (((h >> 32) * ((1 << fingerprint_bits) - 1)) >> 32)
    return (i1, alt_index(i1, fp, bucket_count), fp)


def nested_locate(h: int, base_bucket_count: int, base_fingerprint_bits: int, level: int) -> tuple:
    """(i1, i2, fp) of a key hash in a growth stage of nesting level k >= 1 (format version 3) on
    a first stage of m0 buckets and f0-bit fingerprints: m0 * 2^k buckets, f0 + e bits, e =
    min(k, 32 - f0)."""
    m0, f0, k = base_bucket_count, base_fingerprint_bits, level
    e = min(k, 32 - f0)
    i1 = ((h & 0xFFFFFFFF) * (m0 << k)) >> 32
    fp = 1 + ((((h >> 32) * ((1 << f0) - 1)) << e) >> 32)
    fp0 = 1 + ((fp - 1) >> e)
    s = ((fp - 1) & ((1 << e) - 1)) << (k - e)
    i2 = (alt_index(i1 >> k, fp0, m0) << k) | ((i1 & ((1 << k) - 1)) ^ s)
    return (i1, i2, fp)


def bucket_indices(key: Any, seed: int, bucket_count: int, fingerprint_bits: int, hash_algorithm: str = "xxh3") -> tuple:
    return locate(key_hash(key, seed, hash_algorithm), bucket_count, fingerprint_bits)


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


def semi_sorted_buckets(table: bytes, fingerprint_bits: int) -> List[List[int]]:
    """Every bucket of a semi-sorted table (format version 2, stage layout 1), decoded from the
    document: a bucket is 4f - 4 bits, a 12-bit code of its sorted top nibbles (the rank of
    n0 <= n1 <= n2 <= n3 in the combinatorial number system: C(n0, 1) + C(n1 + 1, 2) +
    C(n2 + 2, 3) + C(n3 + 3, 4)), then the low f - 4 bits of each slot."""
    from itertools import combinations_with_replacement
    from math import comb

    by_code = {}
    for n in combinations_with_replacement(range(16), 4):
        by_code[comb(n[0], 1) + comb(n[1] + 1, 2) + comb(n[2] + 2, 3) + comb(n[3] + 3, 4)] = n
    assert sorted(by_code) == list(range(3876))
    g = fingerprint_bits - 4
    width = 4 * fingerprint_bits - 4
    bits = int.from_bytes(table, "little")
    out = []
    for i in range(len(table) * 8 // width):
        word = (bits >> (i * width)) & ((1 << width) - 1)
        nibbles = by_code[word & 0xFFF]  # KeyError: an invalid code
        out.append([(nibbles[l] << g) | ((word >> (12 + l * g)) & ((1 << g) - 1)) for l in range(4)])
    return out


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
