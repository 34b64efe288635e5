"""Hash stability: the bucket indices and fingerprint of a key are a fixed function of the key,
the seed and the table parameters, on every platform and in every release.

The key hash is XXH3-64 (hash_algorithm="xxh3", the default) or XXH64 ("xxh64", the only one of
releases before 0.2), both Yann Collet's published algorithms. The compiled hash is not exposed,
so it is checked through what is: ``Filter.bucket_indices``. This file holds

* pure-Python XXH64 and XXH3-64 (tests/_format_ref.py) written from the published algorithms and
  checked against test vectors (the xxHash project's sanity-check table, the python-xxhash
  README, and XXH3 values of the reference implementation on every XXH3 path);
* the derivation of (i1, i2, fp) from one 64-bit hash, written from the description in
  cpp/include/cuckoo/filter.hpp and hash.hpp, compared with ``bucket_indices`` for ints, bytes
  of every length 0..100 (all XXH64 code paths: the 32-byte stripe loop, 8-, 4- and 1-byte
  tails; every XXH3 path up to 100 bytes), str including non-ASCII, several seeds, table sizes,
  bucket sizes and every fingerprint width;
* a golden table of hard-coded results, so that any change of the hash or of the derivation
  fails even if this file's reference were changed along with it.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import cuckoo

M32 = (1 << 32) - 1
M64 = (1 << 64) - 1

# ---- XXH64: the reference implementation of tests/_format_ref.py, checked here against the
# published vectors (one Python XXH64 for the whole suite) ---------------------------------
from _format_ref import xxh3_64, xxh64  # noqa: E402

ALGORITHMS = ["xxh3", "xxh64"]  # Filter(hash_algorithm=...): the default first


# The xxHash project's sanity-check buffer: byte k is the top byte of PRIME32 * PRIME64**k.
PRIME32 = 2654435761
PRIME64 = 11400714785074694797


def sanity_buffer(n: int) -> bytes:
    out = bytearray(n)
    gen = PRIME32
    for k in range(n):
        out[k] = gen >> 56
        gen = (gen * PRIME64) & M64
    return bytes(out)


# (length of the sanity buffer prefix, seed, XXH64): the xxHash project's published table
# (cli/xsum_sanity_check.c, XSUM_XXH64_testdata).
PUBLISHED_SANITY_VECTORS = [
    (0, 0, 0xEF46DB3751D8E999),
    (0, PRIME32, 0xAC75FDA2929B17EF),
    (1, 0, 0xE934A84ADB052768),
    (1, PRIME32, 0x5014607643A9B4C3),
    (4, 0, 0x9136A0DCA57457EE),
    (14, 0, 0x8282DCC4994E35C8),
    (14, PRIME32, 0xC3BD6BF63DEB6DF0),
    (222, 0, 0xB641AE8CB691C174),
    (222, PRIME32, 0x20CB8AB7AE10C14A),
]

# (input, seed, XXH64) from the python-xxhash README.
PUBLISHED_TEXT_VECTORS = [
    (b"xxhash", 0, 0x32DD38952C4BC720),
    (b"xxhash", 20141025, 0xB559B98D844E0635),
]


@pytest.mark.parametrize("length, seed, expected", PUBLISHED_SANITY_VECTORS)
def test_reference_xxh64_matches_published_sanity_vectors(length, seed, expected):
    assert xxh64(sanity_buffer(length), seed) == expected


@pytest.mark.parametrize("data, seed, expected", PUBLISHED_TEXT_VECTORS)
def test_reference_xxh64_matches_published_text_vectors(data, seed, expected):
    assert xxh64(data, seed) == expected


# (length of the sanity buffer prefix, seed, XXH3-64), from the reference implementation (the
# `xxhash` Python package 4.1.0, C library 0.8.4): every XXH3 path, 0 to the long-input blocks.
PUBLISHED_XXH3_VECTORS = [
    (0, 0, 0x2D06800538D394C2),
    (0, PRIME32, 0xF702CA3814DE2125),
    (1, 0, 0xC44BDFF4074EECDB),
    (1, PRIME32, 0xB53D5557E7F76F8D),
    (3, 0, 0x54247382A8D6B94D),
    (3, PRIME32, 0xF173D14DAD53A5DC),
    (4, 0, 0xE5DC74BC51848A51),
    (4, PRIME32, 0x6977C7C3AD9421B9),
    (8, 0, 0x24CCC9ACAA9F65E4),
    (8, PRIME32, 0x360073B0548DBD24),
    (9, 0, 0x14D5001C15DD3F2B),
    (9, PRIME32, 0xCE394E48812AA7E3),
    (16, 0, 0x981B17D36C7498C9),
    (16, PRIME32, 0xB40F1F6CDB1569CC),
    (17, 0, 0x796F5ACD3A60F862),
    (17, PRIME32, 0xAF8CB0BC2C230DAF),
    (32, 0, 0x9FEADDBDBF57EED3),
    (32, PRIME32, 0x04FE6AA559EE0C7E),
    (33, 0, 0xABFB2D081B400A10),
    (33, PRIME32, 0x0F2422E0C42A54FC),
    (64, 0, 0x9CB48487720EC49D),
    (64, PRIME32, 0xEC06A1648C27E203),
    (65, 0, 0xFD81AAC4BEBC3883),
    (65, PRIME32, 0x6BF1B3C68555B92E),
    (96, 0, 0x935A769A7F94776F),
    (96, PRIME32, 0x7C0400A2ADFD81DC),
    (97, 0, 0xCA4CA268FD3C3A6C),
    (97, PRIME32, 0x3B345FC76580A2D1),
    (128, 0, 0xFCFF24126754D861),
    (128, PRIME32, 0xA3CA60447DE981D1),
    (129, 0, 0x98F1B0A679A2CA29),
    (129, PRIME32, 0xC861FFC49C2BF14F),
    (143, 0, 0x7A7813693F1F4EDB),
    (143, PRIME32, 0x25EDFBF621AFC23E),
    (240, 0, 0x81C3C2B67F568CCF),
    (240, PRIME32, 0x507820EA74B895B0),
    (241, 0, 0xC5A639ECD2030E5E),
    (241, PRIME32, 0x5927E3637BAC8149),
    (1024, 0, 0xDD85C9B5C1109C5C),
    (1024, PRIME32, 0xB8B95C07CD4A75FA),
    (1025, 0, 0xD870C0FA13211C6A),
    (1025, PRIME32, 0x2F15255340AE4F6C),
    (2049, 0, 0xD3AFA4329779B921),
    (2049, PRIME32, 0x60E0F49946D79DAF),
]


@pytest.mark.parametrize("length, seed, expected", PUBLISHED_XXH3_VECTORS)
def test_reference_xxh3_matches_the_reference_implementation(length, seed, expected):
    assert xxh3_64(sanity_buffer(length), seed) == expected


def test_sanity_vectors_cover_every_code_path():
    # 222 = 6 * 32 + 3 * 8 + 4 + 2: the stripe loop, then 8-, 4- and 1-byte tails. 14 = 8 + 4 + 2
    # without stripes, 4 and 1 a single tail each, 0 none. If the table above were cut down, the
    # reference (and therefore the filter) would no longer be checked on every path.
    lengths = {n for n, _, _ in PUBLISHED_SANITY_VECTORS}
    assert {0, 1, 4, 14, 222} <= lengths
    assert 222 // 32 > 0 and (222 % 32) // 8 > 0 and (222 % 8) >= 4 and (222 % 4) > 0


# ---- index and fingerprint derivation, from filter.hpp / hash.hpp -----------------------------


# The reference derivation lives in tests/_format_ref.py, next to the file-format reference that
# uses it too.
from _format_ref import alt_index as ref_alt_index  # noqa: E402
from _format_ref import bucket_indices as ref_bucket_indices  # noqa: E402
from _format_ref import key_hash as ref_hash  # noqa: E402
from _format_ref import locate as ref_locate  # noqa: E402


# ---- keys --------------------------------------------------------------------------------------


def _keys():
    r = random.Random(1234)
    ints = [0, 1, 2, 255, 256, 2**31 - 1, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1,
            -1, -2, -(2**31), -(2**63)]
    ints += [r.randrange(-(2**63), 2**64) for _ in range(40)]
    # every length 0..100 (each XXH64 path and every tail combination), random content
    byts = [bytes(r.randrange(256) for _ in range(n)) for n in range(101)]
    byts += [b"\x00", b"\x00" * 8, b"\xff" * 32, b"hello", b"xxhash"]
    strs = ["", "a", "hello world", "é", "ñandú", "日本語のテキスト", "🦆 cuckoo 🐦", "Ωmega\u0000nul",
            "x" * 31, "y" * 32, "z" * 33, "\U0010ffff", "mixed é 日本 🦆 " * 5]
    return ints, byts, strs


INTS, BYTES, STRS = _keys()
ALL_KEYS = INTS + BYTES + STRS
# a smaller sample for the full cross product of table parameters
SAMPLE_KEYS = INTS[:20] + BYTES[::9] + STRS[::2]

SEEDS = [0, 1, 42, PRIME32, 2**32 + 7, 2**63, 2**64 - 1]
# capacities giving bucket counts with 1, 2, odd and even numbers of 8-bucket blocks, small and
# large tables, and powers and non-powers of two
CAPACITIES = [1, 30, 100, 1000, 12_345, 100_003, 2**20]


def _check_filter(flt: cuckoo.Filter, keys, hashes) -> None:
    m, f = flt.bucket_count, flt.fingerprint_bits
    for key, h in zip(keys, hashes):
        expected = ref_locate(h, m, f)
        assert flt.bucket_indices(key) == expected, (key, flt.seed, m, f)


@pytest.mark.parametrize("hash_algorithm", ALGORITHMS)
@pytest.mark.parametrize("seed", SEEDS)
def test_bucket_indices_match_reference_for_every_key(seed, hash_algorithm):
    hashes = [ref_hash(k, seed, hash_algorithm) for k in ALL_KEYS]
    for capacity in (1, 1000, 100_003):
        for b in (2, 4, 8):
            flt = cuckoo.Filter(capacity, fingerprint_bits=16, bucket_size=b, seed=seed, hash_algorithm=hash_algorithm)
            assert flt.hash_algorithm == hash_algorithm
            _check_filter(flt, ALL_KEYS, hashes)


@pytest.mark.parametrize("hash_algorithm", ALGORITHMS)
@pytest.mark.parametrize("seed", SEEDS[:4])
@pytest.mark.parametrize("bucket_size", [2, 4, 8])
def test_bucket_indices_match_reference_for_every_width_and_size(seed, bucket_size, hash_algorithm):
    hashes = [ref_hash(k, seed, hash_algorithm) for k in SAMPLE_KEYS]
    bucket_counts = set()
    for capacity in CAPACITIES:
        for f in range(4, 33):
            flt = cuckoo.Filter(capacity, fingerprint_bits=f, bucket_size=bucket_size, seed=seed, hash_algorithm=hash_algorithm)
            bucket_counts.add(flt.bucket_count)
            _check_filter(flt, SAMPLE_KEYS, hashes)
    # the capacities really gave tables of one block, of an odd number of blocks, and of a
    # number of buckets that is not a power of two
    assert 8 in bucket_counts
    assert any((m // 8) % 2 == 1 and m > 8 for m in bucket_counts)
    assert any(m & (m - 1) for m in bucket_counts)


def test_alt_index_matches_reference():
    r = random.Random(99)
    for capacity in CAPACITIES:
        for b in (2, 4, 8):
            for f in (4, 5, 8, 13, 16, 24, 31, 32):
                flt = cuckoo.Filter(capacity, fingerprint_bits=f, bucket_size=b)
                m = flt.bucket_count
                for _ in range(20):
                    i = r.randrange(m)
                    fp = r.randrange(1, 1 << f)
                    assert flt.alt_index(i, fp) == ref_alt_index(i, fp, m)
                # the extremes of both arguments
                for i in (0, m - 1):
                    for fp in (1, (1 << f) - 1):
                        assert flt.alt_index(i, fp) == ref_alt_index(i, fp, m)


def test_i1_is_the_same_fraction_of_the_table_at_every_size():
    # i1 is a multiply-shift of the low 32 hash bits (no modulo): for one key and seed,
    # i1 = floor(lo32 / 2**32 * bucket_count) at every table size.
    key = b"scaling"
    h = xxh3_64(key, 0)
    frac = (h & M32) / 2**32
    for capacity in CAPACITIES:
        flt = cuckoo.Filter(capacity)
        # exact in double precision: frac has 32 significant bits, bucket_count fewer than 21
        assert flt.bucket_indices(key)[0] == int(frac * flt.bucket_count)


# ---- key encodings through the reference -----------------------------------------------------


@pytest.mark.parametrize("hash_algorithm", ALGORITHMS)
def test_int_keys_hash_as_their_little_endian_word(hash_algorithm):
    flt = cuckoo.Filter(1000, seed=5, hash_algorithm=hash_algorithm)
    for k in INTS:
        word = (k & M64).to_bytes(8, "little")
        assert flt.bucket_indices(k) == flt.bucket_indices(word) == ref_bucket_indices(
            word, 5, flt.bucket_count, flt.fingerprint_bits, hash_algorithm
        )


@pytest.mark.parametrize("hash_algorithm", ALGORITHMS)
def test_numpy_scalars_hash_by_value(hash_algorithm):
    flt = cuckoo.Filter(1000, seed=3, hash_algorithm=hash_algorithm)
    for dtype in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):
        info = np.iinfo(dtype)
        for v in {int(info.min), -1 if info.min < 0 else 0, 0, 1, int(info.max)}:
            assert flt.bucket_indices(dtype(v)) == flt.bucket_indices(v) == ref_bucket_indices(
                v, 3, flt.bucket_count, flt.fingerprint_bits, hash_algorithm
            )


def test_str_keys_hash_as_utf8():
    flt = cuckoo.Filter(1000, seed=11)
    for s in STRS:
        assert flt.bucket_indices(s) == flt.bucket_indices(s.encode("utf-8"))


# ---- golden values ----------------------------------------------------------------------------

# (key, seed, capacity, bucket_size, fingerprint_bits) -> (i1, i2, fp), computed once with the
# reference above, for each hash algorithm. They must never change: a change breaks every saved
# filter of that algorithm.
GOLDEN_XXH64 = [
    (0, 0, 1000, 4, 13, (215, 64, 1689)),
    (1, 0, 1000, 4, 13, (172, 10, 5093)),
    (-1, 0, 1000, 4, 13, (194, 164, 4282)),
    (2**64 - 1, 7, 12345, 4, 16, (349, 1554, 30821)),
    (2**63, 2**64 - 1, 100003, 2, 8, (62163, 42138, 177)),
    (-(2**63), 0, 10000, 4, 8, (2513, 637, 64)),
    (12345678901234567890, 5, 999, 8, 5, (10, 16, 27)),
    (b"", 0, 1000, 4, 13, (86, 271, 7656)),
    (b"cuckoo", 0, 1, 2, 4, (0, 6, 6)),
    (b"x" * 100, 42, 1000000, 8, 32, (66231, 18646, 85153175)),
    ("", 0, 10000, 4, 12, (856, 2342, 3828)),
    ("hello", 1, 10000, 4, 12, (50, 2165, 574)),
    ("\u00e9", 0, 10000, 8, 20, (935, 397, 97654)),
    ("\u65e5\u672c\u8a9e \U0001f986", 123456789, 123457, 2, 31, (4510, 59075, 978381339)),
]

GOLDEN_XXH3 = [
    (0, 0, 1000, 4, 13, (118, 139, 6383)),
    (1, 0, 1000, 4, 13, (107, 162, 1528)),
    (-1, 0, 1000, 4, 13, (133, 268, 2594)),
    (2**64 - 1, 7, 12345, 4, 16, (313, 3150, 16041)),
    (2**63, 2**64 - 1, 100003, 2, 8, (14674, 54273, 201)),
    (-(2**63), 0, 10000, 4, 8, (1262, 2281, 131)),
    (12345678901234567890, 5, 999, 8, 5, (90, 40, 11)),
    (b"", 0, 1000, 4, 13, (60, 246, 1441)),
    (b"cuckoo", 0, 1, 2, 4, (0, 1, 7)),
    (b"x" * 100, 42, 1000000, 8, 32, (45232, 109724, 2507737836)),
    ("", 0, 10000, 4, 12, (594, 64, 721)),
    ("hello", 1, 10000, 4, 12, (1587, 1910, 1867)),
    ("\u00e9", 0, 10000, 8, 20, (551, 429, 1014080)),
    ("\u65e5\u672c\u8a9e \U0001f986", 123456789, 123457, 2, 31, (76878, 17095, 429970145)),
]


GOLDEN = [("xxh64", *row) for row in GOLDEN_XXH64] + [("xxh3", *row) for row in GOLDEN_XXH3]


@pytest.mark.parametrize("hash_algorithm, key, seed, capacity, bucket_size, fingerprint_bits, expected", GOLDEN)
def test_golden_bucket_indices(hash_algorithm, key, seed, capacity, bucket_size, fingerprint_bits, expected):
    flt = cuckoo.Filter(
        capacity, fingerprint_bits=fingerprint_bits, bucket_size=bucket_size, seed=seed, hash_algorithm=hash_algorithm
    )
    assert flt.bucket_indices(key) == expected
    assert ref_bucket_indices(key, seed, flt.bucket_count, fingerprint_bits, hash_algorithm) == expected


# ---- growth stages nested on the first (format version 3) ------------------------------------

from _format_ref import nested_locate as ref_nested_locate  # noqa: E402
import _format_ref as ref  # noqa: E402


@pytest.mark.parametrize("f0", [4, 12, 29, 31])
@pytest.mark.parametrize("bucket_size", [2, 4, 8])
def test_nested_stages_store_keys_where_the_reference_says(f0, bucket_size):
    # Every fingerprint stored in a growth stage sits in a bucket of a key, at the fingerprint,
    # that docs/format.md's nested derivation gives (f0 = 29, 31: the width stops at 32 bits).
    f = cuckoo.Filter(30, fingerprint_bits=f0, bucket_size=bucket_size, growable=True, seed=11)
    keys = list(range(2000))
    f.add_many(keys)
    data = f.to_bytes()
    head = ref.parse(data)
    assert head["version"] == 3 and len(head["stages"]) >= 4
    m0 = head["stages"][0]["bucket_count"]
    hashes = [ref_hash(k, 11) for k in keys]
    for st, table in zip(head["stages"], ref.tables(data)):
        level = st["reserved"] >> 32
        assert st["bucket_count"] == m0 << level and st["fingerprint_bits"] == min(f0 + level, 32)
        where = set()
        for h in hashes:
            i1, i2, fp = ref_nested_locate(h, m0, f0, level) if level else ref_locate(h, m0, f0)
            where |= {(i1, fp), (i2, fp)}
        stored = ref.slots(table, st["fingerprint_bits"])
        for n, fp in enumerate(stored):
            assert fp == 0 or (n // bucket_size, fp) in where, (level, n, fp)
        assert sum(1 for fp in stored if fp) == st["item_count"]
    assert [st["reserved"] >> 32 for st in head["stages"]] == list(range(len(head["stages"])))


def test_nested_derivation_refines_every_lower_level():
    # What makes deletes in a grown filter safe (StagedFilter::erase_hash): a key's bucket pair
    # and fingerprint at level k give them at every level j < k, by dropping low bits.
    r = random.Random(27)
    for _ in range(3000):
        h, m0, f0 = r.getrandbits(64), 8 * r.randrange(1, 5000), r.randrange(4, 33)
        k = r.randrange(1, 12)
        i1, i2, fp = ref_nested_locate(h, m0, f0, k)
        assert i1 != i2 and ref_nested_locate(h, m0, f0, k)[:2] == (i1, i2)
        for j in range(k):
            lo = ref_nested_locate(h, m0, f0, j) if j else ref_locate(h, m0, f0)
            ek, ej = min(k, 32 - f0), min(j, 32 - f0)
            assert lo[2] == 1 + ((fp - 1) >> (ek - ej))
            assert {i1 >> (k - j), i2 >> (k - j)} == {lo[0], lo[1]}
