// Stable, seeded 64-bit hashing of keys, and the derivation of a bucket index and a fingerprint
// from one hash.
//
// Stability is part of the file format: the same key and seed give the same 64-bit hash on every
// platform and in every release that reads the format. Everything here is therefore plain 64-bit
// integer arithmetic on bytes read little-endian; nothing depends on the host's byte order, on
// std::hash, or on a salt chosen at run time.
//
// The key hash is XXH64 (Yann Collet's published algorithm, implemented here from its
// specification and checked against its published test vectors in cpp/tests and tests/).
//   - bytes keys: XXH64(bytes, seed)
//   - str keys:   XXH64(UTF-8 bytes, seed)
//   - int keys:   XXH64(the 8 bytes of the value as a little-endian two's-complement uint64, seed)
// so an integer key equals the 8-byte key of its little-endian representation, in every language.
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

// The key hash of one seed, as a small value that bulk loops capture by copy.
struct KeyHasher {
    uint64_t seed;
    uint64_t hash_int(uint64_t value) const noexcept { return hash_u64(value, seed); }
    uint64_t hash_key(const void* data, size_t len) const noexcept { return hash_bytes(data, len, seed); }
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
