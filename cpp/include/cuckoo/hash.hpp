// Stable, seeded 64-bit hashing of keys, and the derivation of a bucket index and a fingerprint
// from one hash.
//
// Stability is part of the file format: the same key and seed give the same 64-bit hash on every
// platform and in every release that reads the format. Everything here is therefore plain 64-bit
// integer arithmetic on bytes read little-endian; nothing depends on the host's byte order, on
// std::hash, or on a salt chosen at run time.
//
// Two key hashes, both Yann Collet's published algorithms, implemented here from their
// descriptions and checked against test vectors of the reference implementation (cpp/tests and
// tests/). A filter uses one of them for its whole life; the file format records which:
//   - HashAlgorithm::xxh3 (format value 2, the default since it was added): XXH3-64;
//   - HashAlgorithm::xxh64 (format value 1, the only one of the first releases): XXH64.
// Files of either stay readable and answer the same forever. For both:
//   - bytes keys: H(bytes, seed)
//   - str keys:   H(UTF-8 bytes, seed)
//   - int keys:   H(the 8 bytes of the value as a little-endian two's-complement uint64, seed)
// so an integer key equals the 8-byte key of its little-endian representation, in every language.
//
// Why XXH3 became the default: an 8-32-byte string key costs XXH64 ~130 instructions with up to
// 19 dependent multiplies, more than the whole rest of a cache-resident lookup; XXH3 reads such a
// key as one or two 16-byte halves and spends 2-3 64x64->128-bit multiplies on it. Measured on
// the 2-core development machine (C++, contains_batch, 8-32-byte keys, alternating runs): 10^6
// keys 18-19 -> 12 ns a key; 6*10^7 keys 39.5 -> 32 ns; integer keys unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace cuckoo {

// ---- byte-order-independent loads and stores ------------------------------------------------

#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define CUCKOO_BIG_ENDIAN 1
#else
#define CUCKOO_BIG_ENDIAN 0
#endif

inline uint64_t byteswap64(uint64_t v) noexcept {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_bswap64(v);
#else
    v = ((v & 0x00FF00FF00FF00FFull) << 8) | ((v >> 8) & 0x00FF00FF00FF00FFull);
    v = ((v & 0x0000FFFF0000FFFFull) << 16) | ((v >> 16) & 0x0000FFFF0000FFFFull);
    return (v << 32) | (v >> 32);
#endif
}

// memcpy, not a pointer cast: unaligned and type-punning-free; compilers emit one mov.
inline uint64_t load_le64(const void* p) noexcept {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
#if CUCKOO_BIG_ENDIAN
    v = byteswap64(v);
#endif
    return v;
}

inline void store_le64(void* p, uint64_t v) noexcept {
#if CUCKOO_BIG_ENDIAN
    v = byteswap64(v);
#endif
    std::memcpy(p, &v, sizeof v);
}

inline uint32_t load_le32(const void* p) noexcept {
    const auto* b = static_cast<const unsigned char*>(p);
    return uint32_t(b[0]) | (uint32_t(b[1]) << 8) | (uint32_t(b[2]) << 16) | (uint32_t(b[3]) << 24);
}

inline uint64_t rotl64(uint64_t x, int r) noexcept { return (x << r) | (x >> (64 - r)); }

// ---- XXH64 --------------------------------------------------------------------------------

namespace xxh64_detail {
constexpr uint64_t P1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t P2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t P3 = 0x165667B19E3779F9ull;
constexpr uint64_t P4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t P5 = 0x27D4EB2F165667C5ull;

inline uint64_t round(uint64_t acc, uint64_t input) noexcept {
    acc += input * P2;
    acc = rotl64(acc, 31);
    return acc * P1;
}

inline uint64_t merge_round(uint64_t acc, uint64_t val) noexcept {
    acc ^= round(0, val);
    return acc * P1 + P4;
}

inline uint64_t avalanche(uint64_t h) noexcept {
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}
}  // namespace xxh64_detail

// cond ? if_true : if_false, without a branch: compilers turn a plain `?:` into a jump when they
// guess the condition predictable, which it is not here. One cmov on x86-64, masks elsewhere.
inline uint64_t select_if(bool cond, uint64_t if_true, uint64_t if_false) noexcept {
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
    __asm__("test %2, %2\n\tcmovnz %1, %0" : "+r"(if_false) : "r"(if_true), "r"(static_cast<uint64_t>(cond)) : "cc");
    return if_false;
#else
    const uint64_t keep = uint64_t(0) - static_cast<uint64_t>(cond);
    return (if_true & keep) | (if_false & ~keep);
#endif
}

// XXH64 of 8 to 31 bytes without branches that depend on the length. The reference loop's trip
// counts (8-byte words, a 4-byte word, single bytes) change with the length, and keys of mixed
// lengths then cost several branch mispredictions each, more than the hashing itself. Here every
// step is computed and kept only when the length has it (select_if); steps that are absent
// read from the key's first bytes, so nothing past its end is read.
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))  // into the bulk loops (through hash_bytes): a call costs ~10%
#endif
inline uint64_t xxh64_8to31(const unsigned char* p, size_t len, uint64_t seed) noexcept {
    using namespace xxh64_detail;
    uint64_t h = seed + P5 + static_cast<uint64_t>(len);
    const size_t words = len >> 3;  // 1 to 3
    h = rotl64(h ^ round(0, load_le64(p)), 27) * P1 + P4;
    for (size_t i = 1; i < 3; ++i) {
        const bool present = i < words;
        const uint64_t next = rotl64(h ^ round(0, load_le64(p + select_if(present, 8 * i, 0))), 27) * P1 + P4;
        h = select_if(present, next, h);
    }
    const size_t tail = 8 * words;
    const size_t rest = len & 7;
    const bool has_word32 = rest >= 4;
    const uint64_t with_word32 = rotl64(h ^ (static_cast<uint64_t>(load_le32(p + select_if(has_word32, tail, 0))) * P1), 23) * P2 + P3;
    h = select_if(has_word32, with_word32, h);
    const size_t first_byte = tail + (has_word32 ? 4 : 0);
    const size_t bytes = rest & 3;
    for (size_t j = 0; j < 3; ++j) {
        const bool present = j < bytes;
        const uint64_t next = rotl64(h ^ (static_cast<uint64_t>(p[select_if(present, first_byte + j, 0)]) * P5), 11) * P1;
        h = select_if(present, next, h);
    }
    return avalanche(h);
}

inline uint64_t xxh64(const void* data, size_t len, uint64_t seed) noexcept {
    using namespace xxh64_detail;
    const auto* p = static_cast<const unsigned char*>(data);
    if (len >= 8 && len < 32) return xxh64_8to31(p, len, seed);
    const unsigned char* const end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
        const unsigned char* const limit = end - 32;
        do {
            v1 = round(v1, load_le64(p));
            v2 = round(v2, load_le64(p + 8));
            v3 = round(v3, load_le64(p + 16));
            v4 = round(v4, load_le64(p + 24));
            p += 32;
        } while (p <= limit);
        h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
        h = merge_round(h, v1);
        h = merge_round(h, v2);
        h = merge_round(h, v3);
        h = merge_round(h, v4);
    } else {
        h = seed + P5;
    }
    h += static_cast<uint64_t>(len);
    while (end - p >= 8) {
        h ^= round(0, load_le64(p));
        h = rotl64(h, 27) * P1 + P4;
        p += 8;
    }
    if (end - p >= 4) {
        h ^= static_cast<uint64_t>(load_le32(p)) * P1;
        h = rotl64(h, 23) * P2 + P3;
        p += 4;
    }
    while (p < end) {
        h ^= static_cast<uint64_t>(*p) * P5;
        h = rotl64(h, 11) * P1;
        ++p;
    }
    return avalanche(h);
}

// XXH64 of the 8 little-endian bytes of `value`, without going through memory: identical to
// xxh64(&le_bytes, 8, seed), which the tests check.
inline uint64_t hash_u64(uint64_t value, uint64_t seed) noexcept {
    using namespace xxh64_detail;
    uint64_t h = seed + P5 + 8;
    h ^= round(0, value);
    h = rotl64(h, 27) * P1 + P4;
    return avalanche(h);
}

// The key hash of bytes: XXH64. The common short-key case is inlined into bulk loops (xxh64 as a
// whole is too large for the compiler to inline, and a call per key costs a tenth of the hash).
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
inline uint64_t hash_bytes(const void* data, size_t len, uint64_t seed) noexcept {
    if (len >= 8 && len < 32) return xxh64_8to31(static_cast<const unsigned char*>(data), len, seed);
    return xxh64(data, len, seed);
}

// ---- XXH3-64 --------------------------------------------------------------------------------

namespace xxh3_detail {
// The algorithm's default secret: 192 published bytes (a constant of XXH3's definition).
constexpr size_t kSecretSize = 192;
alignas(64) constexpr unsigned char kSecret[kSecretSize] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};
constexpr uint64_t P32_1 = 0x9E3779B1u, P32_2 = 0x85EBCA77u, P32_3 = 0xC2B2AE3Du;
constexpr uint64_t kMx1 = 0x165667919E3779F9ull;  // XXH3's avalanche multiplier
constexpr uint64_t kMx2 = 0x9FB21C651E98DF25ull;  // rrmxmx's multiplier

// Secret words, little-endian: compile-time constants wherever the offset is.
constexpr uint64_t secret64(size_t at) noexcept {
    uint64_t v = 0;
    for (size_t i = 0; i < 8; ++i) v |= static_cast<uint64_t>(kSecret[at + i]) << (8 * i);
    return v;
}
constexpr uint64_t secret32(size_t at) noexcept { return secret64(at) & 0xFFFFFFFFull; }

// The 128-bit product of a and b, its two halves XORed.
inline uint64_t mul128_fold64(uint64_t a, uint64_t b) noexcept {
#if defined(__SIZEOF_INT128__)
    __extension__ typedef unsigned __int128 uint128;  // __extension__: no -Wpedantic warning
    const uint128 p = static_cast<uint128>(a) * b;
    return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
#else
    const uint64_t lo_lo = (a & 0xFFFFFFFFull) * (b & 0xFFFFFFFFull);
    const uint64_t hi_lo = (a >> 32) * (b & 0xFFFFFFFFull);
    const uint64_t lo_hi = (a & 0xFFFFFFFFull) * (b >> 32);
    const uint64_t hi_hi = (a >> 32) * (b >> 32);
    const uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xFFFFFFFFull) + lo_hi;
    const uint64_t upper = (hi_lo >> 32) + (cross >> 32) + hi_hi;
    const uint64_t lower = (cross << 32) | (lo_lo & 0xFFFFFFFFull);
    return lower ^ upper;
#endif
}

inline uint64_t avalanche(uint64_t h) noexcept {
    h ^= h >> 37;
    h *= kMx1;
    return h ^ (h >> 32);
}

inline uint64_t rrmxmx(uint64_t h, uint64_t len) noexcept {
    h ^= rotl64(h, 49) ^ rotl64(h, 24);
    h *= kMx2;
    h ^= (h >> 35) + len;
    h *= kMx2;
    return h ^ (h >> 28);
}

inline uint64_t mix16(const unsigned char* p, const unsigned char* secret, uint64_t seed) noexcept {
    return mul128_fold64(load_le64(p) ^ (load_le64(secret) + seed), load_le64(p + 8) ^ (load_le64(secret + 8) - seed));
}

// What the input of 4 to 8 bytes is XORed with: depends on the seed only.
inline uint64_t bitflip_4to8(uint64_t seed) noexcept {
    seed ^= static_cast<uint64_t>(byteswap64(static_cast<uint32_t>(seed)) >> 32) << 32;
    return (secret64(8) ^ secret64(16)) - seed;
}

// Inputs of 4 to 8 bytes, given as their first 4 and last 4 bytes (they overlap below 8).
inline uint64_t len_4to8(uint32_t first4, uint32_t last4, uint64_t len, uint64_t seed) noexcept {
    const uint64_t input64 = last4 + (static_cast<uint64_t>(first4) << 32);
    return rrmxmx(input64 ^ bitflip_4to8(seed), len);
}

inline uint64_t len_9to16(const unsigned char* p, uint64_t len, uint64_t seed) noexcept {
    const uint64_t lo = load_le64(p) ^ ((secret64(24) ^ secret64(32)) + seed);
    const uint64_t hi = load_le64(p + len - 8) ^ ((secret64(40) ^ secret64(48)) - seed);
    return avalanche(len + byteswap64(lo) + hi + mul128_fold64(lo, hi));
}

inline uint64_t len_0to16(const unsigned char* p, size_t len, uint64_t seed) noexcept {
    if (len > 8) return len_9to16(p, len, seed);
    if (len >= 4) return len_4to8(load_le32(p), load_le32(p + len - 4), len, seed);
    if (len > 0) {
        const uint32_t combined = (static_cast<uint32_t>(p[0]) << 16) | (static_cast<uint32_t>(p[len >> 1]) << 24) |
                                  static_cast<uint32_t>(p[len - 1]) | (static_cast<uint32_t>(len) << 8);
        return xxh64_detail::avalanche(combined ^ ((secret32(0) ^ secret32(4)) + seed));
    }
    return xxh64_detail::avalanche(seed ^ secret64(56) ^ secret64(64));
}

// Inputs of 17 to 32 bytes: len_17to128 without its branches for longer inputs.
inline uint64_t len_17to32(const unsigned char* p, size_t len, uint64_t seed) noexcept {
    return avalanche(len * xxh64_detail::P1 + mix16(p, kSecret, seed) + mix16(p + len - 16, kSecret + 16, seed));
}

inline uint64_t len_17to128(const unsigned char* p, size_t len, uint64_t seed) noexcept {
    const unsigned char* s = kSecret;
    uint64_t acc = len * xxh64_detail::P1;
    if (len > 32) {
        if (len > 64) {
            if (len > 96) {
                acc += mix16(p + 48, s + 96, seed);
                acc += mix16(p + len - 64, s + 112, seed);
            }
            acc += mix16(p + 32, s + 64, seed);
            acc += mix16(p + len - 48, s + 80, seed);
        }
        acc += mix16(p + 16, s + 32, seed);
        acc += mix16(p + len - 32, s + 48, seed);
    }
    acc += mix16(p, s, seed);
    acc += mix16(p + len - 16, s + 16, seed);
    return avalanche(acc);
}

inline uint64_t len_129to240(const unsigned char* p, size_t len, uint64_t seed) noexcept {
    const unsigned char* s = kSecret;
    uint64_t acc = len * xxh64_detail::P1;
    for (size_t i = 0; i < 8; ++i) acc += mix16(p + 16 * i, s + 16 * i, seed);
    acc = avalanche(acc);
    const size_t rounds = len / 16;
    for (size_t i = 8; i < rounds; ++i) acc += mix16(p + 16 * i, s + 16 * (i - 8) + 3, seed);
    acc += mix16(p + len - 16, s + 136 - 17, seed);
    return avalanche(acc);
}

// Inputs over 240 bytes: 8 accumulators over 64-byte stripes, scrambled every 16 stripes.
inline void accumulate_stripe(uint64_t* acc, const unsigned char* p, const unsigned char* secret) noexcept {
    for (size_t i = 0; i < 8; ++i) {
        const uint64_t value = load_le64(p + 8 * i);
        const uint64_t keyed = value ^ load_le64(secret + 8 * i);
        acc[i ^ 1] += value;
        acc[i] += (keyed & 0xFFFFFFFFull) * (keyed >> 32);
    }
}

inline void scramble(uint64_t* acc, const unsigned char* secret) noexcept {
    for (size_t i = 0; i < 8; ++i) {
        uint64_t a = acc[i];
        a ^= a >> 47;
        a ^= load_le64(secret + 8 * i);
        acc[i] = a * P32_1;
    }
}

inline uint64_t hash_long(const unsigned char* p, size_t len, uint64_t seed) noexcept {
    // With a seed, the secret is the default one with the seed added to its even words and
    // subtracted from its odd ones.
    alignas(8) unsigned char secret[kSecretSize];
    for (size_t i = 0; i < kSecretSize; i += 16) {
        store_le64(secret + i, load_le64(kSecret + i) + seed);
        store_le64(secret + i + 8, load_le64(kSecret + i + 8) - seed);
    }
    uint64_t acc[8] = {P32_3, xxh64_detail::P1, xxh64_detail::P2, xxh64_detail::P3,
                       xxh64_detail::P4, P32_2, xxh64_detail::P5, P32_1};
    constexpr size_t kStripesPerBlock = (kSecretSize - 64) / 8;  // 16
    constexpr size_t kBlockBytes = 64 * kStripesPerBlock;
    const size_t blocks = (len - 1) / kBlockBytes;
    for (size_t b = 0; b < blocks; ++b) {
        for (size_t k = 0; k < kStripesPerBlock; ++k) accumulate_stripe(acc, p + b * kBlockBytes + 64 * k, secret + 8 * k);
        scramble(acc, secret + kSecretSize - 64);
    }
    const size_t stripes = ((len - 1) - kBlockBytes * blocks) / 64;
    for (size_t k = 0; k < stripes; ++k) accumulate_stripe(acc, p + blocks * kBlockBytes + 64 * k, secret + 8 * k);
    accumulate_stripe(acc, p + len - 64, secret + kSecretSize - 64 - 7);
    uint64_t result = len * xxh64_detail::P1;
    for (size_t i = 0; i < 4; ++i)
        result += mul128_fold64(acc[2 * i] ^ load_le64(secret + 11 + 16 * i), acc[2 * i + 1] ^ load_le64(secret + 11 + 16 * i + 8));
    return avalanche(result);
}
}  // namespace xxh3_detail

// XXH3-64 of len bytes with a seed (XXH3_64bits_withSeed of the reference implementation).
inline uint64_t xxh3_64(const void* data, size_t len, uint64_t seed) noexcept {
    using namespace xxh3_detail;
    const auto* p = static_cast<const unsigned char*>(data);
    if (len <= 16) return len_0to16(p, len, seed);
    if (len <= 128) return len_17to128(p, len, seed);
    if (len <= 240) return len_129to240(p, len, seed);
    return hash_long(p, len, seed);
}

// XXH3-64 of 8 to 32 bytes without branches that depend on the length (see xxh64_8to31 for why):
// the three paths of this range (8, 9-16 and 17-32 bytes) are all computed, the right one kept.
// Every read lies inside the key.
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
inline uint64_t xxh3_8to32(const unsigned char* p, size_t len, uint64_t seed) noexcept {
    using namespace xxh3_detail;
    const uint64_t first = load_le64(p);
    const uint64_t of8 = len_4to8(static_cast<uint32_t>(first), static_cast<uint32_t>(first >> 32), len, seed);
    const uint64_t of9to16 = len_9to16(p, len, seed);
    // The 17-32 path's four words; for shorter keys (result unused) words inside the key instead.
    const bool long_key = len >= 16;
    const uint64_t w1 = load_le64(p + select_if(long_key, 8, 0));
    const uint64_t w2 = load_le64(p + select_if(long_key, len - 16, 0));
    const uint64_t w3 = load_le64(p + len - 8);
    const uint64_t of17to32 = avalanche(len * xxh64_detail::P1 +
                                        mul128_fold64(first ^ (secret64(0) + seed), w1 ^ (secret64(8) - seed)) +
                                        mul128_fold64(w2 ^ (secret64(16) + seed), w3 ^ (secret64(24) - seed)));
    return select_if(len == 8, of8, select_if(len > 16, of17to32, of9to16));
}

// XXH3-64 of the 8 little-endian bytes of `value`, without going through memory.
inline uint64_t xxh3_u64(uint64_t value, uint64_t seed) noexcept {
    return xxh3_detail::len_4to8(static_cast<uint32_t>(value), static_cast<uint32_t>(value >> 32), 8, seed);
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
inline uint64_t xxh3_bytes(const void* data, size_t len, uint64_t seed) noexcept {
    if (len >= 8 && len <= 32) return xxh3_8to32(static_cast<const unsigned char*>(data), len, seed);
    return xxh3_64(data, len, seed);
}

// ---- the key hash of a filter ---------------------------------------------------------------

// The values are those of the file format's hash_algorithm field.
enum class HashAlgorithm : uint32_t { xxh64 = 1, xxh3 = 2 };

inline bool valid_hash_algorithm(uint32_t v) noexcept {
    return v == static_cast<uint32_t>(HashAlgorithm::xxh64) || v == static_cast<uint32_t>(HashAlgorithm::xxh3);
}
inline const char* hash_algorithm_name(HashAlgorithm a) noexcept { return a == HashAlgorithm::xxh64 ? "xxh64" : "xxh3"; }

// The key hash of one filter (algorithm and seed), as a small value that bulk loops capture by
// copy. Block callers test `algorithm` once per block (hash_block.hpp), not once per key.
struct KeyHasher {
    uint64_t seed;
    HashAlgorithm algorithm = HashAlgorithm::xxh3;
    uint64_t hash_int(uint64_t value) const noexcept {
        return algorithm == HashAlgorithm::xxh3 ? xxh3_u64(value, seed) : hash_u64(value, seed);
    }
    uint64_t hash_key(const void* data, size_t len) const noexcept {
        return algorithm == HashAlgorithm::xxh3 ? xxh3_bytes(data, len, seed) : hash_bytes(data, len, seed);
    }
    // The same hash of one key hashed on its own (a Python object: scalar calls, list items), by
    // the reference XXH3 with its length branches. Faster there than xxh3_8to32, which computes
    // all three paths of 8-32 bytes: measured on Zen 4 (C++, 10^4 keys hashed 100 times, ns a key)
    // 2.7 against 6.2 for 21-byte keys and 2.5-2.8 against 5.8-7.1 for lengths mixed at random in
    // 8-32; as a dependent chain (one call's latency) 4.9-5.1 against 7.8-8.4.
    uint64_t hash_one_key(const void* data, size_t len) const noexcept {
        return algorithm == HashAlgorithm::xxh3 ? xxh3_64(data, len, seed) : hash_bytes(data, len, seed);
    }
};

// The bytes of one key, as the store takes them (it keeps and compares them, where a filter
// needs only their hash).
struct KeySpan {
    const unsigned char* data;
    uint64_t len;
};

// ---- small mixing and range reduction ------------------------------------------------------

// The SplitMix64 finaliser: a bijective, well-avalanching mix of one 64-bit word. Used to hash a
// fingerprint for the alternate-bucket computation (seed-independent by design: the alternate
// bucket must be computable from a stored fingerprint alone).
inline uint64_t mix64(uint64_t x) noexcept {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}

// Maps a uniform 32-bit value onto [0, n) without division (Lemire's multiply-shift).
inline uint64_t reduce32(uint32_t x, uint64_t n) noexcept {
    return (static_cast<uint64_t>(x) * n) >> 32;
}

}  // namespace cuckoo
