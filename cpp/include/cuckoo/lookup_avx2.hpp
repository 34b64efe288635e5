// Bulk lookups of one-word buckets with AVX2: locate, prefetch and probe a block of keys four at a
// time, from their hashes to one result byte each.
//
// Why a kernel of its own: the generic bulk loop (Filter::for_each_located) locates a block with a
// vectorized loop but then probes key by key, and the probe's scalar work (two loads, two SWAR
// zero-lane tests, a compare and a store) is more than half of a cache-resident lookup. Here the
// probe stays in vector registers: the two bucket words of four keys come with two gathers, and
// the zero-lane tests of both buckets end in one movemask. Only tables whose buckets are read as
// one 8-byte load (BucketShape::Aligned and OneLoad: b*f + 7 <= 64, the common layouts) go this
// way; the others keep the generic loop.
//
// Results are exactly those of Locator::locate followed by TableProbe::either_contains (the C++
// tests compare them on every f and bucket size that reaches this path).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cuckoo/locate.hpp"
#include "cuckoo/table.hpp"

#if CUCKOO_X86_DISPATCH
#include <immintrin.h>
#endif

namespace cuckoo {

// Whether the AVX2 lookup kernel reads buckets of this shape.
constexpr bool lookup_kernel_reads(BucketShape shape) {
    return shape == BucketShape::Aligned || shape == BucketShape::OneLoad;
}

#if CUCKOO_X86_DISPATCH
namespace kernels {

#define CUCKOO_AVX2 __attribute__((target("avx2"), always_inline)) inline

// Low 64 bits of a * b in each lane when a < 2^32 (then a's high half contributes nothing):
// two 32x32->64 multiplies instead of three.
CUCKOO_AVX2 __m256i mul_small_by(__m256i a, __m256i b_lo, __m256i b_hi) {
    return _mm256_add_epi64(_mm256_mul_epu32(a, b_lo), _mm256_slli_epi64(_mm256_mul_epu32(a, b_hi), 32));
}
// Low 64 bits of a * b in each lane, any a.
CUCKOO_AVX2 __m256i mul_by(__m256i a, __m256i b_lo, __m256i b_hi) {
    const __m256i cross = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), b_lo);
    return _mm256_add_epi64(mul_small_by(a, b_lo, b_hi), _mm256_slli_epi64(cross, 32));
}

CUCKOO_AVX2 __m256i splat(uint64_t v) { return _mm256_set1_epi64x(static_cast<long long>(v)); }

// The constants of one block lookup, in vector registers.
struct LookupConstants {
    __m256i low32, m_minus_1, blocks, seven, one, bucket_bits;
    __m128i f;
    __m256i mix1_lo, mix1_hi, mix2_lo, mix2_hi, ones_lo, ones_hi;
    __m256i lane_low, lane_high;
};

__attribute__((target("avx2"))) inline LookupConstants lookup_constants(const Locator& loc, const TableProbe& probe) {
    const uint64_t mix1 = 0xBF58476D1CE4E5B9ull, mix2 = 0x94D049BB133111EBull;  // mix64's multipliers
    LookupConstants c;
    c.low32 = splat(0xFFFFFFFFull);
    c.m_minus_1 = splat(static_cast<uint32_t>(loc.bucket_count - 1));
    c.blocks = splat(static_cast<uint32_t>(loc.block_count));
    c.seven = splat(kBlockBuckets - 1);
    c.one = splat(1);
    c.bucket_bits = splat(static_cast<uint32_t>(probe.bucket_bits));
    c.f = _mm_cvtsi32_si128(static_cast<int>(loc.fp_bits));
    c.mix1_lo = splat(mix1 & 0xFFFFFFFFull);
    c.mix1_hi = splat(mix1 >> 32);
    c.mix2_lo = splat(mix2 & 0xFFFFFFFFull);
    c.mix2_hi = splat(mix2 >> 32);
    c.ones_lo = splat(probe.lane_ones & 0xFFFFFFFFull);
    c.ones_hi = splat(probe.lane_ones >> 32);
    c.lane_low = splat(probe.lane_low);
    c.lane_high = splat(probe.lane_high);
    return c;
}

// Located keys of a block: the first table bit of both buckets and the fingerprint repeated in
// every lane.
struct alignas(64) LocatedLanes {
    uint64_t bit1[kBatchBlock];
    uint64_t bit2[kBatchBlock];
    uint64_t pattern[kBatchBlock];
};

// Locator::locate of four hashes (see locate_block_body for the formulas), as bit positions and
// fingerprint patterns.
CUCKOO_AVX2 void locate4(const LookupConstants& c, __m256i h, __m256i& bit1, __m256i& bit2, __m256i& pattern) {
    const __m256i lo = _mm256_and_si256(h, c.low32), hi = _mm256_srli_epi64(h, 32);
    const __m256i i1 = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epu32(h, c.m_minus_1), lo), 32);
    const __m256i fp =
        _mm256_add_epi64(c.one, _mm256_srli_epi64(_mm256_sub_epi64(_mm256_sll_epi64(hi, c.f), hi), 32));
    // mix64(fp): the first multiplicand is below 2^32 (fp ^ fp >> 30 with fp < 2^32).
    __m256i g = _mm256_xor_si256(fp, _mm256_srli_epi64(fp, 30));
    g = mul_small_by(g, c.mix1_lo, c.mix1_hi);
    g = _mm256_xor_si256(g, _mm256_srli_epi64(g, 27));
    g = mul_by(g, c.mix2_lo, c.mix2_hi);
    g = _mm256_xor_si256(g, _mm256_srli_epi64(g, 31));
    const __m256i hb = _mm256_srli_epi64(_mm256_mul_epu32(g, c.blocks), 32);
    const __m256i ho = _mm256_add_epi64(c.one, _mm256_srli_epi64(_mm256_mul_epu32(_mm256_srli_epi64(g, 32), c.seven), 32));
    const __m256i diff = _mm256_sub_epi64(hb, _mm256_srli_epi64(i1, kBlockShift));
    const __m256i wrapped = _mm256_cmpgt_epi64(_mm256_setzero_si256(), diff);
    const __m256i alt_block = _mm256_add_epi64(diff, _mm256_and_si256(wrapped, c.blocks));
    const __m256i i2 = _mm256_or_si256(_mm256_slli_epi64(alt_block, kBlockShift),
                                       _mm256_xor_si256(_mm256_and_si256(i1, c.seven), ho));
    bit1 = _mm256_mul_epu32(i1, c.bucket_bits);
    bit2 = _mm256_mul_epu32(i2, c.bucket_bits);
    pattern = mul_small_by(fp, c.ones_lo, c.ones_hi);
}

// The bucket words at four table bits: 8-byte gathers from byte offsets, shifted down to the
// bucket's first bit unless buckets are byte-aligned.
template <BucketShape Shape>
CUCKOO_AVX2 __m256i bucket_words4(const unsigned char* data, __m256i bits) {
    const __m256i words =
        _mm256_i64gather_epi64(reinterpret_cast<const long long*>(data), _mm256_srli_epi64(bits, 3), 1);
    if constexpr (Shape == BucketShape::Aligned) return words;
    else return _mm256_srlv_epi64(words, _mm256_and_si256(bits, _mm256_set1_epi64x(7)));
}

// Locates keys [0, len) of a block from their hashes (hash[] has room for kBatchBlock entries;
// those from len up to the next multiple of 4 are zeroed, and locate inside the table too).
CUCKOO_AVX2 void locate_lanes(const LookupConstants& c, uint64_t* hash, unsigned len,
                                                          LocatedLanes& at) {
    const unsigned padded = (len + 3) & ~3u;
    for (unsigned x = len; x < padded; ++x) hash[x] = 0;
    for (unsigned x = 0; x < padded; x += 4) {
        __m256i bit1, bit2, pattern;
        locate4(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hash + x)), bit1, bit2, pattern);
        _mm256_store_si256(reinterpret_cast<__m256i*>(at.bit1 + x), bit1);
        _mm256_store_si256(reinterpret_cast<__m256i*>(at.bit2 + x), bit2);
        _mm256_store_si256(reinterpret_cast<__m256i*>(at.pattern + x), pattern);
    }
}

inline void prefetch_lanes(const TableProbe& probe, const LocatedLanes& at, unsigned len) {
    for (unsigned x = 0; x < len; ++x) {
        probe.prefetch_bit(at.bit1[x]);
        probe.prefetch_bit(at.bit2[x]);
    }
}

// found[x] = 1 if located key x (x < len rounded up to 4) may be in the table, else 0.
template <BucketShape Shape>
CUCKOO_AVX2 void probe_lanes(const LookupConstants& c, const unsigned char* data,
                                                         const LocatedLanes& at, unsigned len, uint8_t* found) {
    static_assert(lookup_kernel_reads(Shape), "the kernel reads one-load buckets only");
    for (unsigned x = 0; x < len; x += 4) {
        const __m256i pattern = _mm256_load_si256(reinterpret_cast<const __m256i*>(at.pattern + x));
        const __m256i bx = bucket_words4<Shape>(data, _mm256_load_si256(reinterpret_cast<const __m256i*>(at.bit1 + x)));
        const __m256i by = bucket_words4<Shape>(data, _mm256_load_si256(reinterpret_cast<const __m256i*>(at.bit2 + x)));
        // TableProbe::either_contains, four keys at once.
        const __m256i vx = _mm256_xor_si256(bx, pattern), vy = _mm256_xor_si256(by, pattern);
        const __m256i tx = _mm256_or_si256(_mm256_add_epi64(_mm256_and_si256(vx, c.lane_low), c.lane_low), vx);
        const __m256i ty = _mm256_or_si256(_mm256_add_epi64(_mm256_and_si256(vy, c.lane_low), c.lane_low), vy);
        const __m256i none = _mm256_andnot_si256(_mm256_and_si256(tx, ty), c.lane_high);  // 0: no match
        const unsigned absent = static_cast<unsigned>(
            _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(none, _mm256_setzero_si256()))));
        // Bit k of the 4-bit mask to byte k (the four shifted copies do not overlap).
        const uint32_t bytes = ((~absent & 0xFu) * 0x204081u) & 0x01010101u;
        std::memcpy(found + x, &bytes, 4);
    }
}

// locate_lanes as a function of its own (what the tests compare with Locator).
__attribute__((target("avx2"))) inline void locate_lanes_avx2(const Locator& loc, const TableProbe& probe, uint64_t* hash,
                                                               unsigned len, LocatedLanes& at) {
    locate_lanes(lookup_constants(loc, probe), hash, len, at);
}

// Filter::contains_batch for a table of shape Shape: same contract (returns the keys done; polls
// should_stop between blocks).
template <BucketShape Shape, class HashAt, class Out, class Stop>
__attribute__((target("avx2"))) uint64_t lookup_batch_avx2(const Locator& loc, const TableProbe& probe, uint64_t n,
                                                           HashAt& hash_at, Out* out, Stop& should_stop) {
    const LookupConstants c = lookup_constants(loc, probe);
    alignas(32) uint64_t hash[kBatchBlock];
    uint8_t found[kBatchBlock];
    LocatedLanes at;
    for (uint64_t start = 0; start < n; start += kBatchBlock) {
        if (should_stop()) return start;
        const unsigned len = static_cast<unsigned>(std::min<uint64_t>(kBatchBlock, n - start));
        hash_keys(hash_at, start, len, hash);
        locate_lanes(c, hash, len, at);
        prefetch_lanes(probe, at, len);
        probe_lanes<Shape>(c, probe.data, at, len, found);
        for (unsigned x = 0; x < len; ++x) out[start + x] = static_cast<Out>(found[x]);
    }
    return n;
}

#undef CUCKOO_AVX2

}  // namespace kernels
#endif

}  // namespace cuckoo
