// XXH64 of a block of short byte keys at once: what bulk loops over string columns (Arrow
// binary/string arrays, NumPy 'S' arrays) use to hash their keys in filters of hash algorithm 1
// (XXH64; filters of algorithm 2, XXH3, sort a block's keys by length class and hash each class in
// its own scalar loop: see xxh3_bytes_block at the end of this file).
//
// Why: the XXH64 of one key of 8 to 31 bytes is a chain of up to 19 dependent 64-bit multiplies
// and ~130 instructions; hashed one key at a time it cost more than the whole lookup of an
// integer key (a cache-resident contains_many of 8-32-byte keys ran at ~2.5x the cost of uint64
// keys). The values are part of the file format of XXH64 filters, so the hash cannot change for
// them; instead the AVX2 kernel below runs XXH64 on four keys at once, one key per 64-bit lane:
//   - each key's first 32 bytes are read with one 32-byte load (a "row"), and the four rows are
//     transposed so that vector Wi holds the i-th 8-byte word of each key;
//   - every step of XXH64's short-input path (three 8-byte words, a 4-byte word, three single
//     bytes, each present or not depending on the length) is computed on all four lanes and kept
//     with a blend only in the lanes whose length has it: no branch depends on a length;
//   - the 4-byte word and the single bytes all lie in word W[len / 8], shifted into place with a
//     per-lane shift.
// Keys of 32 bytes or more, and keys whose 32-byte row would reach past `readable_end` (the end
// of the memory the caller may read), are hashed by the scalar hash_bytes instead, lane by lane.
// Every result is exactly hash_bytes(key, len, seed) (cpp/tests/test_hash.cpp checks each length,
// alignment and end position).
//
// What it buys (2-core AMD EPYC development machine, keys of 8-32 bytes): half the instructions
// (callgrind, contains_many through the extension: ~200 -> ~96 a key for Arrow binary, ~232 ->
// ~117 for NumPy 'S32'), but only ~10-15% less time for the hash itself (4096 hot keys: 13.5-15
// against 15.5-17 ns a key), because AVX2 has no 64-bit multiply (7 operations each) and the
// kernel is bound by its vector arithmetic (~72 instructions a key of it alone, ~9 ns).
// End to end: NumPy 'S32' lookups at 10^6 keys 26 -> 18-21 ns a key (the length also comes from
// the row), Arrow ~3% faster (C++ harness, alternating runs). Interleaving two or four groups,
// or hashing some keys with the scalar code alongside, measured within noise or ~10%.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cuckoo/avx2.hpp"
#include "cuckoo/hash.hpp"
#include "cuckoo/locate.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace cuckoo {

// Longest key the vector kernel hashes (the rest go through the scalar hash).
constexpr size_t kShortKeyMax = 31;
// Bytes the kernel reads from a key's first byte.
constexpr size_t kKeyRowBytes = 32;

// Length of a fixed-width item without its trailing NUL padding (NumPy 'S' items: NumPy drops
// the padding, the scalar of b"ab" in an 'S4' array is b"ab"). Word at a time and without
// data-dependent branches for the whole words: which words are non-zero becomes a bit mask, and the last of them gives the
// length (a loop that stops at the last non-zero word mispredicts on every key of mixed length).
inline size_t unpadded_size(const unsigned char* p, size_t width) noexcept {
#if defined(__SSE2__)
    // Items of 16 to 64 bytes (the common S16..S64): which bytes are non-zero as one 64-bit mask,
    // 16 bytes per compare (the last 16-byte load overlaps the one before it when the width is not
    // a multiple of 16; OR-ing its bits in at their true positions is harmless).
    if (width >= 16 && width <= 64) {
        const __m128i zero = _mm_setzero_si128();
        uint64_t nonzero = 0;
        for (size_t offset = 0; offset < width; offset += 16) {
            const size_t at = offset + 16 <= width ? offset : width - 16;
            const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
            const unsigned zero_bytes = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(chunk, zero)));
            nonzero |= static_cast<uint64_t>(~zero_bytes & 0xFFFFu) << at;
        }
        return nonzero ? 64 - static_cast<size_t>(__builtin_clzll(nonzero)) : 0;
    }
#endif
    const size_t words = width / 8;
    const size_t head = width - 8 * words;  // bytes before the first whole word
    if (words > 0 && words <= 64) {
        const unsigned char* w0 = p + head;
        uint64_t nonzero = 0;
        for (size_t i = 0; i < words; ++i) nonzero |= static_cast<uint64_t>(load_le64(w0 + 8 * i) != 0) << i;
        if (nonzero) {
            const unsigned last = 63u - static_cast<unsigned>(__builtin_clzll(nonzero));
            const uint64_t w = load_le64(w0 + 8 * last);
            return head + 8 * last + 8 - static_cast<size_t>(__builtin_clzll(w) / 8);
        }
        width = head;  // all whole words are padding
    }
    while (width >= 8) {  // items of more than 512 bytes
        const uint64_t w = load_le64(p + width - 8);
        if (w != 0) return width - static_cast<size_t>(__builtin_clzll(w) / 8);
        width -= 8;
    }
    while (width > 0 && p[width - 1] == 0) --width;
    return width;
}

namespace kernels {

inline void hash_bytes_block_generic(const unsigned char* const* key, const uint32_t* len, unsigned n, uint64_t seed,
                                     uint64_t* out) {
    for (unsigned j = 0; j < n; ++j) out[j] = hash_bytes(key[j], len[j], seed);
}

#if CUCKOO_X86_DISPATCH

struct Xxh64Constants {
    Mul64 p1, p2, p3, p5;
    __m256i p4, p3_add, seed_p5;
};

__attribute__((target("avx2"))) inline Xxh64Constants xxh64_constants(uint64_t seed) {
    using namespace xxh64_detail;
    Xxh64Constants c;
    c.p1 = mul64_constant(P1);
    c.p2 = mul64_constant(P2);
    c.p3 = mul64_constant(P3);
    c.p5 = mul64_constant(P5);
    c.p4 = splat(P4);
    c.p3_add = splat(P3);
    c.seed_p5 = splat(seed + P5);
    return c;
}

// Up to kBatchBlock keys of at most 31 bytes, transposed for the vector kernel: group g holds
// keys 4g..4g+3, w[i][g] their i-th 8-byte words, len[g] their lengths.
struct alignas(32) KeyRows {
    static constexpr unsigned kGroups = kBatchBlock / 4;
    __m256i w[4][kGroups];
    __m256i len[kGroups];
};

// Stores group g of `rows` from the 32-byte rows of its four keys (bytes past a key's length are
// ignored by the hash, whatever they are).
CUCKOO_AVX2 void set_group(KeyRows& rows, unsigned g, __m256i r0, __m256i r1, __m256i r2, __m256i r3, __m256i len) {
    // 4x4 transpose of 64-bit words.
    const __m256i t0 = _mm256_unpacklo_epi64(r0, r1), t1 = _mm256_unpackhi_epi64(r0, r1);
    const __m256i t2 = _mm256_unpacklo_epi64(r2, r3), t3 = _mm256_unpackhi_epi64(r2, r3);
    rows.w[0][g] = _mm256_permute2x128_si256(t0, t2, 0x20);
    rows.w[1][g] = _mm256_permute2x128_si256(t1, t3, 0x20);
    rows.w[2][g] = _mm256_permute2x128_si256(t0, t2, 0x31);
    rows.w[3][g] = _mm256_permute2x128_si256(t1, t3, 0x31);
    rows.len[g] = len;
}

// XXH64 (short-input path) of the four keys of group g of `rows`. (One group's steps form a
// chain of ~100 cycles of dependent multiplies; the out-of-order core overlaps consecutive
// groups by itself: interleaving two or four groups by hand measured the same.)
CUCKOO_AVX2 __m256i xxh64_group(const Xxh64Constants& c, const KeyRows& rows, unsigned g) {
    const __m256i len = rows.len[g];
    __m256i h = _mm256_add_epi64(c.seed_p5, len);
    __m256i tail = rows.w[0][g];  // becomes the word after the whole words: its 4-byte word and bytes
    const __m256i words = _mm256_srli_epi64(len, 3);
    for (int i = 0; i < 3; ++i) {
        // Word i when len / 8 > i: h = rotl(h ^ round(0, w), 27) * P1 + P4, with
        // round(0, w) = rotl(w * P2, 31) * P1.
        const __m256i present = _mm256_cmpgt_epi64(words, splat(static_cast<uint64_t>(i)));
        const __m256i k = mul_by(rotl_lanes<31>(mul_by(rows.w[i][g], c.p2)), c.p1);
        const __m256i next = _mm256_add_epi64(mul_by(rotl_lanes<27>(_mm256_xor_si256(h, k)), c.p1), c.p4);
        h = _mm256_blendv_epi8(h, next, present);
        tail = _mm256_blendv_epi8(tail, rows.w[i + 1][g], present);
    }
    // A 4-byte word when len % 8 >= 4: h = rotl(h ^ (u32 * P1), 23) * P2 + P3.
    const __m256i has_word32 = _mm256_cmpgt_epi64(_mm256_and_si256(len, splat(7)), splat(3));
    {
        const __m256i u32 = _mm256_and_si256(tail, splat(0xFFFFFFFFull));
        const __m256i next =
            _mm256_add_epi64(mul_by(rotl_lanes<23>(_mm256_xor_si256(h, mul_small_by(u32, c.p1))), c.p2), c.p3_add);
        h = _mm256_blendv_epi8(h, next, has_word32);
    }
    // Then len % 4 single bytes, the next ones of tail: h = rotl(h ^ (byte * P5), 11) * P1 each.
    tail = _mm256_srlv_epi64(tail, _mm256_and_si256(has_word32, splat(32)));
    const __m256i byte_count = _mm256_and_si256(len, splat(3));
    for (int j = 0; j < 3; ++j) {
        const __m256i present = _mm256_cmpgt_epi64(byte_count, splat(static_cast<uint64_t>(j)));
        const __m256i byte = _mm256_and_si256(_mm256_srli_epi64(tail, 8 * j), splat(0xFF));
        const __m256i next = mul_by(rotl_lanes<11>(_mm256_xor_si256(h, mul_small_by(byte, c.p5))), c.p1);
        h = _mm256_blendv_epi8(h, next, present);
    }
    // Avalanche.
    h = _mm256_xor_si256(h, _mm256_srli_epi64(h, 33));
    h = mul_by(h, c.p2);
    h = _mm256_xor_si256(h, _mm256_srli_epi64(h, 29));
    h = mul_by(h, c.p3);
    return _mm256_xor_si256(h, _mm256_srli_epi64(h, 32));
}
CUCKOO_AVX2 void xxh64_rows(const Xxh64Constants& c, const KeyRows& rows, unsigned groups, __m256i* out) {
    for (unsigned g = 0; g < groups; ++g) out[g] = xxh64_group(c, rows, g);
}

// 32 zero bytes: the row read for lanes that the scalar path hashes instead.
alignas(32) inline constexpr unsigned char kZeroRow[kKeyRowBytes] = {};

CUCKOO_AVX2 __m256i load_row(const unsigned char* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// Whether the vector kernel may hash a key of `len` bytes at p: short enough, and its 32-byte
// row lies below readable_end.
inline bool row_readable(const unsigned char* p, size_t len, const unsigned char* readable_end) {
    return len <= kShortKeyMax && readable_end - p >= static_cast<std::ptrdiff_t>(kKeyRowBytes);
}

// Hashes keys [0, n) (n <= kBatchBlock) from `rows` (every group of them filled by set_group)
// into out; lanes set in `scalar` (bit x: key x) are then overwritten with scalar_hash(x).
template <class ScalarHash>
CUCKOO_AVX2 void finish_block(const Xxh64Constants& c, const KeyRows& rows, unsigned n, uint64_t scalar,
                              ScalarHash&& scalar_hash, uint64_t* out) {
    alignas(32) uint64_t hashes[kBatchBlock];
    const unsigned groups = (n + 3) / 4;
    xxh64_rows(c, rows, groups, reinterpret_cast<__m256i*>(hashes));
    std::memcpy(out, hashes, n * sizeof(uint64_t));
    for (; scalar; scalar &= scalar - 1) {
        const unsigned x = static_cast<unsigned>(__builtin_ctzll(scalar));
        if (x < n) out[x] = scalar_hash(x);
    }
}

__attribute__((target("avx2"))) inline void hash_bytes_block_avx2(const unsigned char* const* key, const uint32_t* len,
                                                                   unsigned n, uint64_t seed,
                                                                   const unsigned char* readable_end, uint64_t* out) {
    const Xxh64Constants c = xxh64_constants(seed);
    for (unsigned start = 0; start < n; start += kBatchBlock) {
        const unsigned part = n - start < kBatchBlock ? n - start : kBatchBlock;
        KeyRows rows;
        uint64_t scalar = 0;  // bit x: key start + x goes through the scalar hash
        for (unsigned g = 0; g * 4 < part; ++g) {
            const unsigned char* at[4];
            alignas(16) uint32_t lens[4];
            for (unsigned l = 0; l < 4; ++l) {
                const unsigned x = 4 * g + l;
                const bool vector = x < part && row_readable(key[start + x], len[start + x], readable_end);
                // Lanes the vector kernel does not hash read a zero row of length 0 (selected
                // without a branch: which keys are long or near the end is data-dependent).
                at[l] = vector ? key[start + x] : kZeroRow;
                lens[l] = vector ? len[start + x] : 0;
                scalar |= static_cast<uint64_t>(!vector) << x;
            }
            set_group(rows, g, load_row(at[0]), load_row(at[1]), load_row(at[2]), load_row(at[3]),
                      _mm256_cvtepu32_epi64(_mm_load_si128(reinterpret_cast<const __m128i*>(lens))));
        }
        finish_block(c, rows, part, scalar,
                     [&](unsigned x) { return hash_bytes(key[start + x], len[start + x], seed); }, out + start);
    }
}

// Keys that are fixed-width items with NUL padding (NumPy 'S'): item j is at first + j * width,
// its key is the item without its trailing NUL bytes. For widths up to 32; the length comes from
// the row itself (a byte compare, a mask of the item's bytes and a bit scan).
__attribute__((target("avx2"))) inline void hash_padded_block_avx2(const unsigned char* first, size_t width, unsigned n,
                                                                    uint64_t seed, const unsigned char* readable_end,
                                                                    uint64_t* out) {
    const Xxh64Constants c = xxh64_constants(seed);
    // The row's bytes that belong to the item (the rest is the next item's).
    const uint32_t item_bytes = width >= 32 ? 0xFFFFFFFFu : (uint32_t(1) << width) - 1;
    const __m256i zero = _mm256_setzero_si256();
    for (unsigned start = 0; start < n; start += kBatchBlock) {
        const unsigned part = n - start < kBatchBlock ? n - start : kBatchBlock;
        const unsigned char* const block = first + start * width;
        KeyRows rows;
        uint64_t scalar = 0;
        for (unsigned g = 0; g * 4 < part; ++g) {
            __m256i row[4];
            alignas(16) uint32_t lens[4];
            for (unsigned l = 0; l < 4; ++l) {
                const unsigned x = 4 * g + l;
                // Lanes past the block read the zero row (no pointer is formed past the items).
                const unsigned char* p = x < part ? block + x * width : kZeroRow;
                const bool readable = x < part && readable_end - p >= static_cast<std::ptrdiff_t>(kKeyRowBytes);
                row[l] = load_row(readable ? p : kZeroRow);
                const uint32_t nonzero =
                    ~static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(row[l], zero))) & item_bytes;
                const uint32_t item_len = nonzero ? 32 - static_cast<uint32_t>(__builtin_clz(nonzero)) : 0;
                const bool vector = readable && item_len <= kShortKeyMax;
                lens[l] = vector ? item_len : 0;
                scalar |= static_cast<uint64_t>(!vector) << x;
            }
            set_group(rows, g, row[0], row[1], row[2], row[3],
                      _mm256_cvtepu32_epi64(_mm_load_si128(reinterpret_cast<const __m128i*>(lens))));
        }
        finish_block(c, rows, part, scalar,
                     [&](unsigned x) {
                         const unsigned char* p = block + x * width;
                         return hash_bytes(p, unpadded_size(p, width), seed);
                     },
                     out + start);
    }
}
#endif  // CUCKOO_X86_DISPATCH

}  // namespace kernels

// out[j] = hash_bytes(key[j], len[j], seed) for j < n. The AVX2 kernel may read up to 32 bytes
// from each key[j] but never at or past readable_end (pass the end of the buffer the keys live in;
// keys too close to it are hashed by the scalar path).
inline void hash_bytes_block(const unsigned char* const* key, const uint32_t* len, unsigned n, uint64_t seed,
                             const unsigned char* readable_end, uint64_t* out) noexcept {
#if CUCKOO_X86_DISPATCH
    if (kernels::use_avx2()) return kernels::hash_bytes_block_avx2(key, len, n, seed, readable_end, out);
#endif
    (void)readable_end;
    kernels::hash_bytes_block_generic(key, len, n, seed, out);
}

// Whether hash_padded_block has a fast path for items of this width (else callers hash item by
// item as they did).
inline bool padded_block_kernel_reads(size_t width) noexcept {
#if CUCKOO_X86_DISPATCH
    return width <= kKeyRowBytes && kernels::use_avx2();
#else
    (void)width;
    return false;
#endif
}

// out[j] = hash_bytes of item j of n fixed-width items at first + j * width without its trailing
// NUL bytes. Widths up to 32 take the AVX2 kernel when the CPU has it (padded_block_kernel_reads),
// whose reads never reach readable_end; other widths are hashed item by item.
inline void hash_padded_block(const unsigned char* first, size_t width, unsigned n, uint64_t seed,
                              const unsigned char* readable_end, uint64_t* out) noexcept {
#if CUCKOO_X86_DISPATCH
    if (padded_block_kernel_reads(width))
        return kernels::hash_padded_block_avx2(first, width, n, seed, readable_end, out);
#endif
    (void)readable_end;
    for (unsigned j = 0; j < n; ++j) {
        const unsigned char* p = first + j * width;
        out[j] = hash_bytes(p, unpadded_size(p, width), seed);
    }
}

// ---- the block hashes of a filter's key hash -------------------------------------------------
// What key sources call: XXH64 filters take the vector kernels above; XXH3 filters take
// xxh3_bytes_block below (XXH3 needs 64x64->128-bit multiplies, which AVX2 lacks; one key costs
// it less than the vector XXH64 of four does).

namespace kernels {

// XXH3 of keys [0, n), grouped by length class before hashing. Why: key by key, keys of mixed
// lengths need either a branch on the length class (mispredicted about every other key for
// 8-32-byte keys) or the branch-free xxh3_8to32, which computes all three paths of its range for
// every key. Here one pass sorts a block's keys into lists by class, 9-16 bytes, 17-32 bytes and
// the others (branch-free: each key's index is written to every list, and only its own list's
// count advances), then each of the two main classes runs its own path in a loop without
// branches; the others go through xxh3_bytes. (A fourth list for 4-8-byte keys cost more in the
// partition pass than it saved on 8-32-byte keys.) Measured on the 2-core development machine
// (C++, 10^6 keys of 8-32 bytes, min of 15 alternating runs): the hash alone 7.7 -> 5.4 ns a
// key, contains_batch 13.1 -> 11.0 ns.
inline void xxh3_bytes_block(const unsigned char* const* key, const uint32_t* len, unsigned n, uint64_t seed,
                             uint64_t* out) noexcept {
    using namespace xxh3_detail;
    for (unsigned start = 0; start < n; start += kBatchBlock) {
        const unsigned part = n - start < kBatchBlock ? n - start : kBatchBlock;
        const unsigned char* const* k = key + start;
        const uint32_t* l = len + start;
        uint64_t* o = out + start;
        unsigned of9to16[kBatchBlock], of17to32[kBatchBlock], others[kBatchBlock];
        unsigned n9 = 0, n17 = 0, n_other = 0;
        for (unsigned j = 0; j < part; ++j) {
            const uint32_t size = l[j];  // unsigned: size - a <= b is a <= size <= a + b
            of9to16[n9] = j;
            n9 += size - 9u <= 7u;
            of17to32[n17] = j;
            n17 += size - 17u <= 15u;
            others[n_other] = j;
            n_other += size - 9u > 23u;
        }
        for (unsigned i = 0; i < n9; ++i) {
            const unsigned j = of9to16[i];
            o[j] = len_9to16(k[j], l[j], seed);
        }
        for (unsigned i = 0; i < n17; ++i) {
            const unsigned j = of17to32[i];
            o[j] = len_17to32(k[j], l[j], seed);
        }
        for (unsigned i = 0; i < n_other; ++i) {
            const unsigned j = others[i];
            o[j] = xxh3_bytes(k[j], l[j], seed);
        }
    }
}

}  // namespace kernels

#if CUCKOO_X86_DISPATCH
namespace kernels {
// xxh3_u64 of four values (XXH3's 4-to-8-byte path at length 8): the 32-bit halves swapped (the
// input's first and last 4 bytes), XORed with the seed's bitflip, then rrmxmx. AVX2 has no 64-bit
// multiply or rotate, so this is ~30 vector operations for four keys against ~14 scalar ones a
// key; integer lookups at 10^6 keys spent 1.5 of their ~5 ns a key hashing with the scalar loop.
CUCKOO_AVX2 __m256i xxh3_u64_4(__m256i value, __m256i bitflip, const Mul64& mx2) {
    __m256i h = _mm256_xor_si256(_mm256_shuffle_epi32(value, 0xB1), bitflip);  // dwords 1,0,3,2
    h = _mm256_xor_si256(h, _mm256_xor_si256(rotl_lanes<49>(h), rotl_lanes<24>(h)));
    h = mul_by(h, mx2);
    h = _mm256_xor_si256(h, _mm256_add_epi64(_mm256_srli_epi64(h, 35), _mm256_set1_epi64x(8)));
    h = mul_by(h, mx2);
    return _mm256_xor_si256(h, _mm256_srli_epi64(h, 28));
}
__attribute__((target("avx2"))) inline void xxh3_u64_block_avx2(const uint64_t* values, unsigned len, uint64_t seed,
                                                                 uint64_t* out) {
    const __m256i bitflip = splat(xxh3_detail::bitflip_4to8(seed));
    const Mul64 mx2 = mul64_constant(xxh3_detail::kMx2);
    unsigned j = 0;
    for (; j + 4 <= len; j += 4) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(values + j));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), xxh3_u64_4(v, bitflip, mx2));
    }
    for (; j < len; ++j) out[j] = xxh3_u64(values[j], seed);
}
// The same with AVX-512's 64-bit multiply and rotate (avx2.hpp): 0.27 instead of 0.71 ns a key.
CUCKOO_AVX512_FUNCTION void xxh3_u64_block_avx512(const uint64_t* values, unsigned len, uint64_t seed, uint64_t* out) {
    const __m256i bitflip = splat(xxh3_detail::bitflip_4to8(seed));
    const __m256i mx2 = splat(xxh3_detail::kMx2);
    unsigned j = 0;
    for (; j + 4 <= len; j += 4) {
        __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(values + j));
        h = _mm256_xor_si256(_mm256_shuffle_epi32(h, 0xB1), bitflip);
        h = _mm256_xor_si256(h, _mm256_xor_si256(_mm256_rol_epi64(h, 49), _mm256_rol_epi64(h, 24)));
        h = _mm256_mullo_epi64(h, mx2);
        h = _mm256_xor_si256(h, _mm256_add_epi64(_mm256_srli_epi64(h, 35), _mm256_set1_epi64x(8)));
        h = _mm256_mullo_epi64(h, mx2);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), _mm256_xor_si256(h, _mm256_srli_epi64(h, 28)));
    }
    for (; j < len; ++j) out[j] = xxh3_u64(values[j], seed);
}
}  // namespace kernels
#endif

// out[j] = hasher.hash_int(values[j]) for j < len.
inline void hash_ints_block(const KeyHasher& hasher, const uint64_t* values, unsigned len, uint64_t* out) noexcept {
    if (hasher.algorithm == HashAlgorithm::xxh64) return hash_u64_block(values, len, hasher.seed, out);
#if CUCKOO_X86_DISPATCH
    if (kernels::use_avx512()) return kernels::xxh3_u64_block_avx512(values, len, hasher.seed, out);
    if (kernels::use_avx2()) return kernels::xxh3_u64_block_avx2(values, len, hasher.seed, out);
#endif
    for (unsigned j = 0; j < len; ++j) out[j] = xxh3_u64(values[j], hasher.seed);
}

// out[j] = hasher.hash_key(key[j], len[j]) for j < n; reads as hash_bytes_block.
inline void hash_bytes_block(const KeyHasher& hasher, const unsigned char* const* key, const uint32_t* len, unsigned n,
                             const unsigned char* readable_end, uint64_t* out) noexcept {
    if (hasher.algorithm == HashAlgorithm::xxh64) return hash_bytes_block(key, len, n, hasher.seed, readable_end, out);
    kernels::xxh3_bytes_block(key, len, n, hasher.seed, out);
}

// out[j] = hasher.hash_key of item j of n fixed-width items without its trailing NUL bytes;
// reads as hash_padded_block.
inline void hash_padded_block(const KeyHasher& hasher, const unsigned char* first, size_t width, unsigned n,
                              const unsigned char* readable_end, uint64_t* out) noexcept {
    if (hasher.algorithm == HashAlgorithm::xxh64) return hash_padded_block(first, width, n, hasher.seed, readable_end, out);
    const unsigned char* key[kBatchBlock];
    uint32_t size[kBatchBlock];
    for (unsigned start = 0; start < n; start += kBatchBlock) {
        const unsigned part = n - start < kBatchBlock ? n - start : kBatchBlock;
        for (unsigned j = 0; j < part; ++j) {
            key[j] = first + (start + j) * width;
            size[j] = static_cast<uint32_t>(unpadded_size(key[j], width));
        }
        kernels::xxh3_bytes_block(key, size, part, hasher.seed, out + start);
    }
}

}  // namespace cuckoo
