// From a key hash to the two candidate buckets and the fingerprint: one key at a time (Locator)
// and a block of keys at a time (locate_block, hash_u64_block), the latter written as plain loops
// over arrays that the compiler vectorizes.
//
//   h  = hash(key, seed)                 one 64-bit hash per key
//   i1 = reduce(low 32 bits of h, m)     m buckets, any even multiple of kBlockBuckets
//   fp = 1 + reduce(high 32 bits of h, 2^f - 1)   f bits, never 0 (0 marks an empty slot)
//   i2 = alt(i1, fp)
//
// Table sizes that are not a power of two. The paper's alt(i, fp) = i XOR H(fp) needs m to be a
// power of two, which doubles the memory of an unlucky capacity. Here the table is a sequence of
// blocks of kBlockBuckets = 8 buckets; a bucket index is (block, offset) and
//
//   alt((block, offset), fp) = ((hb(fp) - block) mod block_count, offset XOR ho(fp))
//
// with hb(fp) in [0, block_count) and ho(fp) in [1, 7]. Both components are involutions (a
// reflection and an XOR), so alt(alt(i, fp), fp) == i for every i and fp; the offset always
// changes (ho != 0), so alt(i, fp) != i. Unlike XOR inside small blocks, the reflection spreads
// the alternate over the whole table, so the cuckoo graph stays as random as in a power-of-two
// table and the load reached before the first failure is the same (~95.5% for b = 4).
//
// Why blocks of keys: a lookup is two random memory reads plus ~60 instructions of hashing and
// index arithmetic. Bulk loops hash and locate kBatchBlock keys at once (here), prefetch all
// their buckets, and only then probe, so that the reads overlap. The block kernels are the same
// loops compiled twice on x86-64: for the baseline ISA (SSE2, whose 2 lanes do not help 64-bit
// multiplies, so this copy is effectively scalar) and for AVX2, chosen at run time when the
// CPU has it (cpu.hpp: the kernel level). Both compute exactly Locator's formulas (cpp/tests check
// them against each other).
#pragma once

#include <cstdint>
#include <type_traits>

#include "cuckoo/cpu.hpp"  // CUCKOO_X86_DISPATCH, kernels::use_avx2
#include "cuckoo/hash.hpp"


#if defined(__GNUC__) || defined(__clang__)
#define CUCKOO_ALWAYS_INLINE __attribute__((always_inline)) inline
#define CUCKOO_RESTRICT __restrict__
#else
#define CUCKOO_ALWAYS_INLINE inline
#define CUCKOO_RESTRICT
#endif

namespace cuckoo {

constexpr uint64_t kBlockBuckets = 8;
constexpr unsigned kBlockShift = 3;
// Keys hashed and prefetched together in bulk loops. 32 at every level: at the AVX2 level (Zen 4,
// CUCKOO_CPU=avx2, 10^6 keys, C++, medians of 11 runs) blocks of 16 took 4.9-5.1 ns a lookup and
// 19.4-20.8 an insert against 4.4-4.5 and 14.4-14.5 with 32. (The kernels keep a block's results
// in 32-bit masks: 32 is also the most they take.)
constexpr unsigned kBatchBlock = 32;

struct KeyHash {  // what one 64-bit hash gives
    uint64_t i1;
    uint64_t i2;
    uint32_t fp;
};

// Key hash -> (i1, i2, fp) for one table geometry, as a small value (see TableProbe for why bulk
// loops keep such values in locals).
//
// Nested stages (level k >= 1, the growth stages of a growable filter; see staged.hpp). A stage
// of level k refines a base geometry of m0 = bucket_count >> k buckets and f0 = f - e fingerprint
// bits (e = fp_shift = min(k, 32 - f0) extra bits), so that a key's bucket pair and fingerprint
// at level k determine them at every lower level, the base included:
//
//   i1 = reduce(lo, m0 << k)                 so i1 >> k is the base i1 (reduce32 is monotone)
//   fp = 1 + ((x * (2^f0 - 1)) << e) >> 32   so 1 + ((fp - 1) >> e) is the base fingerprint
//   alt((base, sub), fp) = (alt0(base, fp0), sub XOR s)   base = i >> k, sub = i mod 2^k
//
// with alt0 the formula above on the base geometry, fp0 = 1 + ((fp - 1) >> e) and s the e extra
// fingerprint bits shifted up by k - e (so the top j bits of s are s at level j). Both parts are
// involutions and alt0 moves the base bucket, so alt(alt(i)) == i and alt(i) != i as before.
// Level 0 is exactly the plain formulas.
struct Locator {
    uint64_t bucket_count;  // at most 2^32
    uint64_t block_count;
    unsigned fp_bits;  // f
    unsigned level = 0;     // k: 0, or a nested stage's level
    unsigned fp_shift = 0;  // e: fingerprint bits beyond the base's (nested stages only)

    uint32_t fingerprint_of(uint64_t h) const noexcept {
        // 1 + reduce32(x, 2^f - 1) with the multiply written as a shift and a subtraction:
        // x * (2^f - 1) == (x << f) - x, exactly (x < 2^32, f <= 32: no overflow). Nested:
        // x * (2^f0 - 1) * 2^e < 2^(32 + f0 + e) = 2^(32 + f): no overflow either.
        const uint64_t x = h >> 32;
        const unsigned f0 = fp_bits - fp_shift;
        return 1 + static_cast<uint32_t>((((x << f0) - x) << fp_shift) >> 32);
    }
    uint64_t index_of(uint64_t h) const noexcept { return reduce32(static_cast<uint32_t>(h), bucket_count); }
    uint64_t alt_index(uint64_t index, uint32_t fp) const noexcept {
        if (level != 0) return nested_alt_index(index, fp);
        return base_alt_index(index, fp, block_count);
    }
    // The plain alternate over `blocks` blocks. A full mix of the fingerprint: the low half picks
    // the block, the high half the in-block offset. (A single Fibonacci multiply is cheaper but
    // measurably worse for small f: b = 4, f = 4 fails at 84% load instead of 95%.)
    static uint64_t base_alt_index(uint64_t index, uint32_t fp, uint64_t blocks) noexcept {
        const uint64_t g = mix64(fp);
        const uint64_t hb = reduce32(static_cast<uint32_t>(g), blocks);
        const uint64_t ho = 1 + reduce32(static_cast<uint32_t>(g >> 32), kBlockBuckets - 1);
        const uint64_t block = index >> kBlockShift;
        const uint64_t alt_block = hb >= block ? hb - block : hb + blocks - block;
        return (alt_block << kBlockShift) | ((index & (kBlockBuckets - 1)) ^ ho);
    }
    uint64_t nested_alt_index(uint64_t index, uint32_t fp) const noexcept {
        const uint64_t sub_mask = (uint64_t(1) << level) - 1;
        const uint32_t fp0 = 1 + ((fp - 1) >> fp_shift);
        const uint64_t s = static_cast<uint64_t>((fp - 1) & ((uint32_t(1) << fp_shift) - 1)) << (level - fp_shift);
        const uint64_t base = base_alt_index(index >> level, fp0, block_count >> level);
        return (base << level) | ((index & sub_mask) ^ s);
    }
    KeyHash locate(uint64_t h) const noexcept {
        KeyHash k;
        k.fp = fingerprint_of(h);
        k.i1 = index_of(h);
        k.i2 = alt_index(k.i1, k.fp);
        return k;
    }
};

// A block of keys located at once, as arrays (what vectorized loops read and write). bit1/bit2
// are the first table bits of the two buckets (index * bucket bits), what probes and prefetches
// address.
struct alignas(64) LocatedBlock {
    uint64_t hash[kBatchBlock];
    uint64_t bit1[kBatchBlock];
    uint64_t bit2[kBatchBlock];
    uint32_t i1[kBatchBlock];
    uint32_t i2[kBatchBlock];
    uint32_t fp[kBatchBlock];

    KeyHash key(unsigned x) const noexcept { return KeyHash{i1[x], i2[x], fp[x]}; }
};

namespace kernels {

// Locator::locate for hash[0, len), written for the vectorizer: only 32x32->64-bit multiplies
// where the operands allow (vpmuludq), the conditional add of the reflection as a mask, and no
// branches. Equal to Locator::locate for every input (tested).
CUCKOO_ALWAYS_INLINE void locate_block_body(const Locator loc, uint64_t bucket_bits, unsigned len,
                                            LocatedBlock& CUCKOO_RESTRICT b) {
    // i1 = (lo * m) >> 32 with m <= 2^32 written as lo * (m - 1) + lo, so both factors of the
    // multiply fit in 32 bits. The sum cannot overflow: it is lo * m < 2^64.
    const uint64_t m_minus_1 = static_cast<uint32_t>(loc.bucket_count - 1);
    const uint64_t blocks = static_cast<uint32_t>(loc.block_count);
    const unsigned f = loc.fp_bits;
    const uint64_t bb = static_cast<uint32_t>(bucket_bits);
    for (unsigned j = 0; j < len; ++j) {
        const uint64_t h = b.hash[j];
        const uint64_t lo = h & 0xFFFFFFFFull, hi = h >> 32;
        const uint64_t i1 = (lo * m_minus_1 + lo) >> 32;
        const uint64_t fp = 1 + (((hi << f) - hi) >> 32);
        const uint64_t g = mix64(fp);
        const uint64_t hb = ((g & 0xFFFFFFFFull) * blocks) >> 32;
        const uint64_t ho = 1 + (((g >> 32) * (kBlockBuckets - 1)) >> 32);
        // (hb - block) mod blocks: the difference wraps below zero exactly when hb < block, and
        // then adding `blocks` brings it back into range.
        const uint64_t diff = hb - (i1 >> kBlockShift);
        const uint64_t alt_block = diff + (blocks & (0 - (diff >> 63)));
        const uint64_t i2 = (alt_block << kBlockShift) | ((i1 & (kBlockBuckets - 1)) ^ ho);
        b.i1[j] = static_cast<uint32_t>(i1);
        b.i2[j] = static_cast<uint32_t>(i2);
        b.fp[j] = static_cast<uint32_t>(fp);
        b.bit1[j] = (i1 & 0xFFFFFFFFull) * bb;
        b.bit2[j] = (i2 & 0xFFFFFFFFull) * bb;
    }
}

CUCKOO_ALWAYS_INLINE void hash_u64_block_body(const uint64_t* CUCKOO_RESTRICT values, unsigned len, uint64_t seed,
                                              uint64_t* CUCKOO_RESTRICT out) {
    for (unsigned j = 0; j < len; ++j) out[j] = hash_u64(values[j], seed);
}

inline void locate_block_generic(const Locator& loc, uint64_t bucket_bits, unsigned len, LocatedBlock& b) {
    locate_block_body(loc, bucket_bits, len, b);
}
inline void hash_u64_block_generic(const uint64_t* values, unsigned len, uint64_t seed, uint64_t* out) {
    hash_u64_block_body(values, len, seed, out);
}

#if CUCKOO_X86_DISPATCH
__attribute__((target("avx2"))) inline void locate_block_avx2(const Locator& loc, uint64_t bucket_bits, unsigned len,
                                                               LocatedBlock& b) {
    locate_block_body(loc, bucket_bits, len, b);
}
__attribute__((target("avx2"))) inline void hash_u64_block_avx2(const uint64_t* values, unsigned len, uint64_t seed,
                                                                 uint64_t* out) {
    hash_u64_block_body(values, len, seed, out);
}
#endif

}  // namespace kernels

// Locates keys [0, len) of a block from b.hash (len <= kBatchBlock).
inline void locate_block(const Locator& loc, uint64_t bucket_bits, unsigned len, LocatedBlock& b) noexcept {
    if (loc.level != 0) {  // a nested stage: the scalar formulas (the block kernels are level 0 only)
        for (unsigned j = 0; j < len; ++j) {
            const KeyHash k = loc.locate(b.hash[j]);
            b.i1[j] = static_cast<uint32_t>(k.i1);
            b.i2[j] = static_cast<uint32_t>(k.i2);
            b.fp[j] = k.fp;
            b.bit1[j] = k.i1 * bucket_bits;
            b.bit2[j] = k.i2 * bucket_bits;
        }
        return;
    }
#if CUCKOO_X86_DISPATCH
    if (kernels::use_avx2()) return kernels::locate_block_avx2(loc, bucket_bits, len, b);
#endif
    kernels::locate_block_generic(loc, bucket_bits, len, b);
}

// out[j] = hash_u64(values[j], seed) for j < len.
inline void hash_u64_block(const uint64_t* values, unsigned len, uint64_t seed, uint64_t* out) noexcept {
#if CUCKOO_X86_DISPATCH
    if (kernels::use_avx2()) return kernels::hash_u64_block_avx2(values, len, seed, out);
#endif
    kernels::hash_u64_block_generic(values, len, seed, out);
}

// ---- key sources ------------------------------------------------------------------------------
// Bulk loops take their keys as a callable `keys(k) -> uint64_t`, the hash of key k. A source may
// also have `keys.hash_block(start, len, out)`, hashing keys [start, start + len) at once (integer
// keys: the vectorized XXH64 above); hash_keys uses it when it exists.

// A source may also declare `static constexpr bool kVectorHashBlock = true` when its hash_block
// computes and stores a block's hashes with vector code (integer keys): the vector kernels then
// read buckets with scalar loads rather than gathers, which is faster after such a block and
// slower after others (measurements at stored_words4, lookup_avx2.hpp).
namespace detail {
template <class Keys, class = void>
struct VectorHashBlock : std::false_type {};
template <class Keys>
struct VectorHashBlock<Keys, std::void_t<decltype(Keys::kVectorHashBlock)>> : std::bool_constant<Keys::kVectorHashBlock> {};
}  // namespace detail
template <class Keys>
constexpr bool vector_hash_block() {
    return detail::VectorHashBlock<std::remove_cv_t<std::remove_reference_t<Keys>>>::value;
}

namespace detail {
template <class Keys>
auto hash_keys_impl(Keys& keys, uint64_t start, unsigned len, uint64_t* out, int)
    -> decltype(keys.hash_block(start, len, out), void()) {
    keys.hash_block(start, len, out);
}
template <class Keys>
void hash_keys_impl(Keys& keys, uint64_t start, unsigned len, uint64_t* out, long) {
    for (unsigned j = 0; j < len; ++j) out[j] = keys(start + j);
}
}  // namespace detail

template <class Keys>
void hash_keys(Keys& keys, uint64_t start, unsigned len, uint64_t* out) {
    detail::hash_keys_impl(keys, start, len, out, 0);
}

// Any key source behind one type: a block of hashes through a function pointer. Loops that are
// instantiated for a rarely used table layout (semi-sorted buckets) take their keys this way, so
// that they are compiled once per output type instead of once per key layout (the binding has a
// dozen); the cost is one indirect call per block of kBatchBlock keys.
class BlockKeys {
public:
    template <class Keys>
    explicit BlockKeys(Keys& keys)
        : keys_(&keys),
          hash_block_([](const void* k, uint64_t start, unsigned len, uint64_t* out) {
              // Keys is the source's own type, const or not: the cast restores what was erased.
              hash_keys(*static_cast<Keys*>(const_cast<void*>(k)), start, len, out);
          }),
          vector_hash_block_(cuckoo::vector_hash_block<Keys>()) {}
    // The source's vector_hash_block, kept at run time (see uses_vector_hash_block).
    bool vector_hash_block() const noexcept { return vector_hash_block_; }
    uint64_t operator()(uint64_t k) const {
        uint64_t h;
        hash_block_(keys_, k, 1, &h);
        return h;
    }
    void hash_block(uint64_t start, unsigned len, uint64_t* out) const { hash_block_(keys_, start, len, out); }

private:
    const void* keys_;
    void (*hash_block_)(const void*, uint64_t, unsigned, uint64_t*);
    bool vector_hash_block_;
};

// Whether a block of `keys` is hashed by vector code (vector_hash_block), also through BlockKeys,
// which erases the type but keeps the answer: the semi-sorted kernels then read buckets with
// loads as the plain ones do.
template <class Keys>
bool uses_vector_hash_block(const Keys&) noexcept {
    return cuckoo::vector_hash_block<Keys>();
}
inline bool uses_vector_hash_block(const BlockKeys& keys) noexcept { return keys.vector_hash_block(); }

// The keys of `keys` from `offset` on, as a key source (keeps hash_block when there is one).
template <class Keys>
struct OffsetKeys {
    static constexpr bool kVectorHashBlock = vector_hash_block<Keys>();
    Keys& keys;
    uint64_t offset;
    uint64_t operator()(uint64_t k) const { return keys(offset + k); }
    void hash_block(uint64_t start, unsigned len, uint64_t* out) const { hash_keys(keys, offset + start, len, out); }
};
template <class Keys>
OffsetKeys<Keys> offset_keys(Keys& keys, uint64_t offset) {
    return OffsetKeys<Keys>{keys, offset};
}

}  // namespace cuckoo
