"""Keys chosen by their hash: XXH3-64 of 8-byte inputs inverted in closed form (issue 19).

For inputs of 4 to 8 bytes XXH3-64 is a bijection of the 64-bit word ``first4 << 32 | last4``:
an XOR with a secret-and-seed constant, then ``rrmxmx`` (xor-rotate, multiply, xor-shift,
multiply, xor-shift), every step invertible. So anyone can compute, in microseconds, an 8-byte
key (or an integer key, hashed as its 8 little-endian bytes) with any chosen 64-bit hash for a
known seed, and with it any chosen bucket and fingerprint: what an attacker does against a
filter with a public seed. Vectorized with NumPy; the inverse is checked against the forward
hash (and the filter itself in the tests).
"""

from __future__ import annotations

import numpy as np

MASK = (1 << 64) - 1
# XXH3's default secret, bytes 8..23 (the only part the 4-8-byte path reads), and rrmxmx's multiplier.
SECRET_8 = 0x1CAD21F72C81017C  # little-endian bytes 8..15 of the secret
SECRET_16 = 0xDB979083E96DD4DE  # bytes 16..23
MX2 = 0x9FB21C651E98DF25
MX2_INV = pow(MX2, -1, 1 << 64)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _circulant_inverse() -> list:
    """Rotations r with x = XOR of rotl(y, r) when y = x ^ rotl(x, 49) ^ rotl(x, 24).

    The map is multiplication by p = 1 + t^49 + t^24 in GF(2)[t]/(t^64 - 1); since t^64 = 1 and
    squaring is linear in characteristic 2, p^64 = p(t^64) = p(1) = 1, so p^-1 = p^63."""

    def mul(a: int, b: int) -> int:
        out = 0
        for i in range(64):
            if b >> i & 1:
                out ^= ((a << i) | (a >> (64 - i))) & MASK if i else a
        return out

    p = 1 | (1 << 49) | (1 << 24)
    inv, base, e = 1, p, 63
    while e:
        if e & 1:
            inv = mul(inv, base)
        base = mul(base, base)
        e >>= 1
    assert mul(inv, p) == 1
    return [i for i in range(64) if inv >> i & 1]


_INV_ROTATIONS = _circulant_inverse()


def xxh3_8(words: np.ndarray, seed: int = 0) -> np.ndarray:
    """XXH3-64 of the 8 little-endian bytes of each uint64 (the hash of an integer key)."""
    v = np.asarray(words, dtype=np.uint64)
    first4 = v & np.uint64(0xFFFFFFFF)  # bytes 0..3
    last4 = v >> np.uint64(32)  # bytes 4..7
    x = (last4 + (first4 << np.uint64(32))) ^ np.uint64(_bitflip(seed))
    with np.errstate(over="ignore"):
        x = x ^ _rotl(x, 49) ^ _rotl(x, 24)
        x = x * np.uint64(MX2)
        x = x ^ ((x >> np.uint64(35)) + np.uint64(8))
        x = x * np.uint64(MX2)
    return x ^ (x >> np.uint64(28))


def _bitflip(seed: int) -> int:
    s = seed & MASK
    swapped = int.from_bytes((s & 0xFFFFFFFF).to_bytes(4, "little"), "big")
    s ^= swapped << 32
    return ((SECRET_8 ^ SECRET_16) - s) & MASK


def keys_with_hash(hashes: np.ndarray, seed: int = 0) -> np.ndarray:
    """The uint64 integer keys whose XXH3-64 (as a filter with this seed hashes them) is `hashes`."""
    h = np.asarray(hashes, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = h ^ (h >> np.uint64(28)) ^ (h >> np.uint64(56))  # undo x ^= x >> 28
        x = x * np.uint64(MX2_INV)
        y = x.copy()  # undo x ^= (x >> 35) + 8: the top 35 bits are fixed first, then the rest
        for _ in range(3):
            y = x ^ ((y >> np.uint64(35)) + np.uint64(8))
        x = y * np.uint64(MX2_INV)
        out = np.zeros_like(x)
        for r in _INV_ROTATIONS:
            out ^= _rotl(x, r) if r else x
    input64 = out ^ np.uint64(_bitflip(seed))
    first4 = input64 >> np.uint64(32)
    last4 = input64 & np.uint64(0xFFFFFFFF)
    keys = first4 | (last4 << np.uint64(32))
    assert (xxh3_8(keys, seed) == h).all(), "the inverse must round-trip"
    return keys


def colliding_keys(n: int, bucket_count: int, fingerprint_hash: int = 0x5EED5EED, seed: int = 0, start: int = 0) -> np.ndarray:
    """n distinct integer keys that a filter of `bucket_count` buckets (first stage) and this seed
    puts into one bucket pair with one fingerprint: the same high 32 hash bits (the fingerprint)
    and low 32 bits inside one bucket's range of the multiply-shift index."""
    width = (1 << 32) // bucket_count  # low words mapping to one bucket: floor(low * m / 2^32)
    if n > width:
        raise ValueError(f"at most {width} colliding keys for {bucket_count} buckets")
    low0 = ((start % bucket_count) * (1 << 32) + bucket_count - 1) // bucket_count  # first low word of the bucket
    hashes = (np.uint64(fingerprint_hash) << np.uint64(32)) | (np.uint64(low0) + np.arange(n, dtype=np.uint64))
    return keys_with_hash(hashes, seed)
