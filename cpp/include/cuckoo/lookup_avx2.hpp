// Bulk lookups of one-word buckets with AVX2: locate and probe blocks of keys four at a time, from
// their hashes to one result byte each.
//
// Why a kernel of its own: the generic bulk loop (Filter::for_each_located) locates a block with a
// vectorized loop but then probes key by key, and that scalar probe (two loads, two SWAR zero-lane
// tests, a compare and a store) cost more than hashing and locating together. Here the probe
// stays in vector registers: the bucket words of four keys come as one vector per bucket (four
// loads or one gather: see stored_words4), the zero-lane tests run on four lanes, and one
// movemask gives four results. Only tables whose
// buckets are read as one 8-byte load go this way (BucketShape::Aligned and OneLoad: b*f + 7 <=
// 64, which includes the default layouts; and semi-sorted buckets, compared in two steps, see
// semi_candidates); the others keep the generic loop.
//
// Two ways through a batch, chosen by table size:
// - cache-resident tables (up to kTwoPassMinBytes): per block of 32 keys, locate, then probe both
//   buckets of every key. No software prefetch: the out-of-order core overlaps these reads by
//   itself, and prefetch instructions only added work (10^6 keys, 2 MiB table: 10.2 -> 7.4 ns a
//   key without them, min of 10 alternating runs).
// - larger tables: bucket 2 is read only for keys that bucket 1 does not hold (a stored key sits
//   in bucket 1 about two times in three at 95% load, so a 50%-present batch reads ~1.7 buckets
//   a key instead of 2), and the work is pipelined over three blocks: while block k is located
//   and its first buckets are prefetched, block k-1 probes its first buckets and prefetches the
//   second ones it needs, and block k-2 probes those. Each memory round trip then overlaps a
//   block of work.
// Measured on the 2-core development machine (C++, 50% present, f = 16, b = 4; min of 3 to 10
// alternating runs; one pass vs two passes, ns a key): 4 MiB table 9.0 vs 11.9, 6 MiB 10.5 vs
// 12.7, 10 MiB 19.5 vs 13.5, 20 MiB 25.7 vs 16.3, 122 MiB 36.4 vs 22.6. Hence the switch at 8 MiB.
//
// Results are exactly those of Locator::locate followed by TableProbe::either_contains (the C++
// tests compare them on every f and bucket size that reaches this kernel, both ways).
//
// Counts (count_batch_avx2, at the end) reuse the locate and compare steps: 8.2 against 14.2 ns a
// key with the generic loop at 10^6 keys, 30-31 against 40-41 at 6*10^7 (C++, uint64 keys, 50%
// present, min of 3 to 11 alternating runs on the development machine). Prefetching two or three
// blocks ahead instead of one measured the same within noise at 6*10^7.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuckoo/avx2.hpp"
#include "cuckoo/locate.hpp"
#include "cuckoo/table.hpp"

namespace cuckoo {

// Tables larger than this are read in two passes (see above).
constexpr uint64_t kTwoPassMinBytes = uint64_t(8) << 20;

// A batch with at least half as many keys as a cache-resident table has cache lines would read
// most lines at random, each first read missing the caches if the table is cold (another batch,
// or the caller's own work, evicted it since). Requesting the lines in order first brings the table
// in at the memory's streaming speed instead. Measured on the development machine (10^6 keys,
// 2 MiB table, cold after a 16 MB pass over other data between batches): contains 3.13-3.35 ->
// 3.07-3.23 ns a key; on a warm table the pass costs ~0.03 ns a key.
inline void warm_table(const unsigned char* data, uint64_t table_bytes, uint64_t n) {
    if (table_bytes > kTwoPassMinBytes || n < table_bytes / 128) return;
    for (uint64_t at = 0; at < table_bytes; at += 64) prefetch_read(data + at);
}

// Whether the AVX2 lookup kernel reads buckets of this shape.
constexpr bool lookup_kernel_reads(BucketShape shape) {
    return shape == BucketShape::Aligned || shape == BucketShape::OneLoad || shape == BucketShape::SemiSorted;
}

#if CUCKOO_X86_DISPATCH
namespace kernels {

// The constants of one block lookup, in vector registers.
struct LookupConstants {
    __m256i low32, m_minus_1, blocks, seven, one, bucket_bits;
    __m128i f;
    __m256i mix1_lo, mix1_hi, mix2_lo, mix2_hi, ones_lo, ones_hi;
    __m256i lane_low, lane_high;
    // For the AVX-512 copy of locate4: whole 64-bit multipliers, and whether it runs here.
    __m256i mix1, mix2, lane_ones;
    bool avx512;
    // Whether one-pass reads of all four lanes use scalar loads (else a gather): see stored_words4.
    bool bucket_loads;
    // Semi-sorted tables only (see semi_candidates): the low-bit lanes of a stored bucket, and
    // the scalar probe that checks the candidates exactly.
    __m256i semi_fp_low, semi_ones_lo, semi_ones_hi, semi_lanes_low, semi_lanes_high, semi_every;
    __m256i semi_low_mask[semisort::kSlots], semi_code_mask;  // Decoder::decode's masks (semi_words4)
    TableProbe scalar;
};

__attribute__((target("avx2"))) inline LookupConstants lookup_constants(const Locator& loc, const TableProbe& probe,
                                                                        bool bucket_loads = false) {
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
    c.mix1 = splat(mix1);
    c.mix2 = splat(mix2);
    c.lane_ones = splat(probe.lane_ones);
    c.avx512 = use_avx512();
    c.bucket_loads = bucket_loads;
    c.lane_low = splat(probe.lane_low);
    c.lane_high = splat(probe.lane_high);
    c.semi_fp_low = splat(probe.semi.fp_low_mask);
    c.semi_ones_lo = splat(probe.semi.low_ones & 0xFFFFFFFFull);
    c.semi_ones_hi = splat(probe.semi.low_ones >> 32);
    c.semi_lanes_low = splat(probe.semi.low_lanes_low);
    c.semi_lanes_high = splat(probe.semi.low_lanes_high);
    c.semi_every = splat(probe.semi.every_slot_low_matches ? ~uint64_t(0) : 0);
    for (unsigned l = 0; l < semisort::kSlots; ++l) c.semi_low_mask[l] = splat(probe.semi.low_mask[l]);
    c.semi_code_mask = splat(semisort::kCodeSpace - 1);
    c.scalar = probe;
    return c;
}

// Located keys of a block: the first table bit of both buckets and the fingerprint repeated in
// every lane.
struct alignas(64) LocatedLanes {
    uint64_t bit1[kBatchBlock];
    uint64_t bit2[kBatchBlock];
    uint64_t pattern[kBatchBlock];
};

// The steps of locate4 before mix64: i1 and the fingerprint.
CUCKOO_AVX2 void locate4_first_bucket(const LookupConstants& c, __m256i h, __m256i& i1, __m256i& fp) {
    const __m256i lo = _mm256_and_si256(h, c.low32), hi = _mm256_srli_epi64(h, 32);
    i1 = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epu32(h, c.m_minus_1), lo), 32);
    fp = _mm256_add_epi64(c.one, _mm256_srli_epi64(_mm256_sub_epi64(_mm256_sll_epi64(hi, c.f), hi), 32));
}
// The steps after it: from i1 and g = mix64(fp), the alternate bucket and both buckets' bits.
CUCKOO_AVX2 void locate4_buckets(const LookupConstants& c, __m256i i1, __m256i g, __m256i& bit1, __m256i& bit2) {
    const __m256i hb = _mm256_srli_epi64(_mm256_mul_epu32(g, c.blocks), 32);
    const __m256i ho = _mm256_add_epi64(c.one, _mm256_srli_epi64(_mm256_mul_epu32(_mm256_srli_epi64(g, 32), c.seven), 32));
    const __m256i diff = _mm256_sub_epi64(hb, _mm256_srli_epi64(i1, kBlockShift));
    const __m256i wrapped = _mm256_cmpgt_epi64(_mm256_setzero_si256(), diff);
    const __m256i alt_block = _mm256_add_epi64(diff, _mm256_and_si256(wrapped, c.blocks));
    const __m256i i2 = _mm256_or_si256(_mm256_slli_epi64(alt_block, kBlockShift),
                                       _mm256_xor_si256(_mm256_and_si256(i1, c.seven), ho));
    bit1 = _mm256_mul_epu32(i1, c.bucket_bits);
    bit2 = _mm256_mul_epu32(i2, c.bucket_bits);
}
// Locator::locate of four hashes (see locate_block_body for the formulas), as bit positions and
// fingerprint patterns.
CUCKOO_AVX2 void locate4(const LookupConstants& c, __m256i h, __m256i& bit1, __m256i& bit2, __m256i& pattern) {
    __m256i i1, fp;
    locate4_first_bucket(c, h, i1, fp);
    // mix64(fp): the first multiplicand is below 2^32 (fp ^ fp >> 30 with fp < 2^32).
    __m256i g = _mm256_xor_si256(fp, _mm256_srli_epi64(fp, 30));
    g = mul_small_by(g, c.mix1_lo, c.mix1_hi);
    g = _mm256_xor_si256(g, _mm256_srli_epi64(g, 27));
    g = mul_by(g, c.mix2_lo, c.mix2_hi);
    g = _mm256_xor_si256(g, _mm256_srli_epi64(g, 31));
    locate4_buckets(c, i1, g, bit1, bit2);
    pattern = mul_small_by(fp, c.ones_lo, c.ones_hi);
}

// The bucket words at four table bits: 8-byte gathers from byte offsets, shifted down to the
// bucket's first bit unless buckets are byte-aligned. Lanes outside `wanted` (all ones: read,
// zero: skip) are not read at all and come back as 0.
template <BucketShape Shape>
CUCKOO_AVX2 __m256i bucket_words4(const unsigned char* data, __m256i bits, __m256i wanted) {
    static_assert(lookup_kernel_reads(Shape) && Shape != BucketShape::SemiSorted,
                  "the kernel reads one-load buckets only (semi-sorted ones: semi_candidates)");
    const __m256i words = _mm256_mask_i64gather_epi64(_mm256_setzero_si256(), reinterpret_cast<const long long*>(data),
                                                      _mm256_srli_epi64(bits, 3), wanted, 1);
    if constexpr (Shape == BucketShape::Aligned) {
        return words;
    } else {
        return _mm256_srlv_epi64(words, _mm256_and_si256(bits, _mm256_set1_epi64x(7)));
    }
}

// The first steps of TableProbe's zero-lane test on four words already XORed with their
// patterns: lane l of v is zero iff the top bit of lane l of carries(v) is clear. The results of
// two buckets combine with an AND, as in TableProbe::either_contains.
CUCKOO_AVX2 __m256i lane_carries(const LookupConstants& c, __m256i v) {
    return _mm256_or_si256(_mm256_add_epi64(_mm256_and_si256(v, c.lane_low), c.lane_low), v);
}
// The high bit of each zero lane of v, given carries(v): TableProbe::zero_lanes on four words.
CUCKOO_AVX2 __m256i zero_lanes4(const LookupConstants& c, __m256i carries) {
    return _mm256_andnot_si256(carries, c.lane_high);
}
// Bit i: whether word i of carries(v) has a zero lane (its key's fingerprint is there).
CUCKOO_AVX2 uint32_t found4(const LookupConstants& c, __m256i carries) {
    const __m256i matched = zero_lanes4(c, carries);  // zero: no lane matched
    const unsigned absent = static_cast<unsigned>(
        _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(matched, _mm256_setzero_si256()))));
    return ~absent & 0xFu;
}
// The 8 bytes at the first byte of each of four buckets, as stored (not shifted): four scalar
// loads or one gather, as c.bucket_loads says. Which is faster depends on the code before the
// reads, as measured on the development machine (AMD Zen 4, contains at 10^6 keys, 2 MiB table,
// C++ harness, alternating runs, ns a key, loads against gathers): integer keys hashed by the
// vector XXH3 3.1-3.3 against 3.9-4.1; 8-32-byte keys (a scalar, branchy hash) 13.2 against 9.0;
// precomputed hashes copied into the block 6.5 against 3.7. So sources whose hash_block is vector
// code say so (vector_hash_block, locate.hpp) and get loads; the others keep the gather.
// The same choice holds at the AVX2 level (AVX2 XXH3 and AVX2 locate, no AVX-512 copies), measured
// on the same Zen 4 with CUCKOO_CPU=avx2 (C++, XXH3-hashed uint64 keys a block at a time, 10^6
// keys, medians of 11 alternating runs, thread CPU time, loads / gathers per run): contains
// 0.82-0.87, insert_batch 0.88-0.90; at the AVX-512 level 0.91 and 0.89.
CUCKOO_AVX2 __m256i stored_words4(const LookupConstants& c, const unsigned char* data, const uint64_t* bits) {
    if (c.bucket_loads)
        return _mm256_set_epi64x(
            static_cast<long long>(load_le64(data + (bits[3] >> 3))), static_cast<long long>(load_le64(data + (bits[2] >> 3))),
            static_cast<long long>(load_le64(data + (bits[1] >> 3))), static_cast<long long>(load_le64(data + (bits[0] >> 3))));
    const __m256i at = _mm256_load_si256(reinterpret_cast<const __m256i*>(bits));
    return _mm256_i64gather_epi64(reinterpret_cast<const long long*>(data), _mm256_srli_epi64(at, 3), 1);
}
template <BucketShape Shape>
CUCKOO_AVX2 __m256i bucket_words4(const LookupConstants& c, const unsigned char* data, const uint64_t* bits) {
    static_assert(Shape == BucketShape::Aligned || Shape == BucketShape::OneLoad, "one-load buckets only");
    const __m256i words = stored_words4(c, data, bits);
    if constexpr (Shape == BucketShape::Aligned) {
        return words;
    } else {
        const __m256i at = _mm256_load_si256(reinterpret_cast<const __m256i*>(bits));
        return _mm256_srlv_epi64(words, _mm256_and_si256(at, _mm256_set1_epi64x(7)));
    }
}
// The four words of a bucket array, XORed with the keys' patterns (every lane read).
template <BucketShape Shape>
CUCKOO_AVX2 __m256i compared4(const LookupConstants& c, const unsigned char* data, const uint64_t* bits,
                              const uint64_t* pattern) {
    return _mm256_xor_si256(bucket_words4<Shape>(c, data, bits), _mm256_load_si256(reinterpret_cast<const __m256i*>(pattern)));
}
// The same for the lanes of `wanted` only (the others are not read and compare as 0).
template <BucketShape Shape>
CUCKOO_AVX2 __m256i compared4(const unsigned char* data, const uint64_t* bits,
                              const uint64_t* pattern, __m256i wanted) {
    const __m256i words = bucket_words4<Shape>(data, _mm256_load_si256(reinterpret_cast<const __m256i*>(bits)), wanted);
    return _mm256_xor_si256(words, _mm256_load_si256(reinterpret_cast<const __m256i*>(pattern)));
}

// Lane i all ones where bit i of `group` (4 bits) is set, else zero: a gather mask.
CUCKOO_AVX2 __m256i group_lanes(uint32_t group) {
    const __m256i lane_bit = _mm256_set_epi64x(8, 4, 2, 1);
    return _mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x(group), lane_bit), lane_bit);
}

// Semi-sorted buckets (semisort.hpp) in tables beyond the caches (the two-pass lookups) are
// compared in two steps. First the low g = f - 4 bits of
// the four slots, straight from the stored bucket: a zero-lane test of its four g-bit fields
// against the key's low bits, four buckets at a time, without the code table. Only the keys whose
// low bits match some slot (every key held there; an absent key with probability ~4/2^g) are then
// checked exactly, one at a time: the bucket decoded into the plain layout (one read of the code
// table) and compared in full, as the scalar path does. Decoding every bucket instead (a second
// gather, from the 32 KiB code table) cost ~12-14 ns a key at 6*10^7 keys.
//
// Bit x, for x in `wanted` (a subset of the block's keys): whether some slot of the bucket at
// bits[x] has the low bits of key x's fingerprint. stored[x]: that bucket, in its low 4f - 4 bits.
CUCKOO_AVX2 uint32_t semi_candidates(const LookupConstants& c, const unsigned char* data, const uint64_t* bits,
                                     const uint64_t* pattern, unsigned len, uint32_t wanted, uint64_t* stored) {
    uint32_t candidates = 0;
    for (unsigned x = 0; x < len; x += 4) {
        const uint32_t group = (wanted >> x) & 0xFu;
        if (group == 0) continue;
        const __m256i at = _mm256_load_si256(reinterpret_cast<const __m256i*>(bits + x));
        const __m256i words = group == 0xFu ? stored_words4(c, data, bits + x)
                                            : _mm256_mask_i64gather_epi64(_mm256_setzero_si256(), reinterpret_cast<const long long*>(data),
                                                                          _mm256_srli_epi64(at, 3), group_lanes(group), 1);
        const __m256i bucket = _mm256_srlv_epi64(words, _mm256_and_si256(at, _mm256_set1_epi64x(7)));
        _mm256_store_si256(reinterpret_cast<__m256i*>(stored + x), bucket);
        // The key's low bits (lane 0 of its pattern) repeated in the four low-bit lanes.
        const __m256i low = _mm256_and_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(pattern + x)), c.semi_fp_low);
        const __m256i v = _mm256_xor_si256(bucket, mul_small_by(low, c.semi_ones_lo, c.semi_ones_hi));
        const __m256i carries = _mm256_or_si256(_mm256_add_epi64(_mm256_and_si256(v, c.semi_lanes_low), c.semi_lanes_low), v);
        const __m256i matched = _mm256_or_si256(_mm256_andnot_si256(carries, c.semi_lanes_high), c.semi_every);
        const unsigned none = static_cast<unsigned>(
            _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(matched, _mm256_setzero_si256()))));
        candidates |= (~none & group) << x;
    }
    return candidates;
}
// The semi-sorted buckets at four table bits decoded into the plain layout, as Decoder::decode
// does: the code's lanes by a gather from the code table, the low bits moved up to their lanes.
// Cache-resident tables decode every bucket this way and then compare (probe_both) or count
// (count_both) as plain ones do, with both buckets of a block requested first. Measured on the
// development machine (Zen 4, CUCKOO_CPU=avx2, C++, f = 13, 10^6 keys, 50% present, best of 7
// per process, processes alternating, load 2-4), contains against plain: 1.99-2.04x before
// (low bits first, scalar decode of the candidates, buckets gathered as BlockKeys hid that the
// keys are hashed by vector code), 1.58-1.69x with loads, 1.55-1.63x decoding every bucket,
// 1.49-1.59x with the prefetches; count 1.66-1.81x -> 1.56-1.58x. (Tried and slower: a masked
// gather of candidate buckets only, 1.66-1.68x; one 32-bit gather of both buckets' nibbles
// from the 8 KiB nibble table, 1.76-1.92x; block k + 1 requested while block k is probed, 1.64-1.82x.)
// On an Intel Xeon Skylake-SP (family 6 model 85, 2026-11-26, same harness, f = 13, 10^6 keys,
// medians of 9 alternating rounds, thread CPU time, load ~2.8) the gather from the code table
// lost to four scalar reads of it where the buckets are read by scalar loads anyway
// (c.bucket_loads: integer keys): contains 0.94x (AVX2 level) and 0.85x (AVX-512 level) the
// gather's time, count 0.85x and 0.84x. So those sources decode with scalar reads; the others
// (a gather of the buckets) keep the gather of their codes. Not measured on Zen 4.
CUCKOO_AVX2 __m256i semi_words4(const LookupConstants& c, const unsigned char* data, const uint64_t* bits) {
    __m256i stored, lanes;
    if (c.bucket_loads) {  // each bucket and its code's lanes by scalar loads (see above)
        uint64_t bucket[4], code_lanes[4];
        for (unsigned j = 0; j < 4; ++j) {
            bucket[j] = load_le64(data + (bits[j] >> 3)) >> (bits[j] & 7);
            code_lanes[j] = c.scalar.semi.lanes[bucket[j] & (semisort::kCodeSpace - 1)];
        }
        stored = _mm256_set_epi64x(static_cast<long long>(bucket[3]), static_cast<long long>(bucket[2]),
                                   static_cast<long long>(bucket[1]), static_cast<long long>(bucket[0]));
        lanes = _mm256_set_epi64x(static_cast<long long>(code_lanes[3]), static_cast<long long>(code_lanes[2]),
                                  static_cast<long long>(code_lanes[1]), static_cast<long long>(code_lanes[0]));
    } else {
        const __m256i at = _mm256_load_si256(reinterpret_cast<const __m256i*>(bits));
        stored = _mm256_srlv_epi64(stored_words4(c, data, bits), _mm256_and_si256(at, _mm256_set1_epi64x(7)));
        lanes = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(c.scalar.semi.lanes),
                                       _mm256_and_si256(stored, c.semi_code_mask), 8);
    }
    const __m256i low = _mm256_srli_epi64(stored, semisort::kCodeBits);
    const __m256i low01 = _mm256_or_si256(_mm256_and_si256(low, c.semi_low_mask[0]),
                                          _mm256_slli_epi64(_mm256_and_si256(low, c.semi_low_mask[1]), 4));
    const __m256i low23 = _mm256_or_si256(_mm256_slli_epi64(_mm256_and_si256(low, c.semi_low_mask[2]), 8),
                                          _mm256_slli_epi64(_mm256_and_si256(low, c.semi_low_mask[3]), 12));
    return _mm256_or_si256(lanes, _mm256_or_si256(low01, low23));
}
// Bit x, for x in `wanted`: whether the bucket at bits[x] holds key x's fingerprint.
CUCKOO_AVX2 uint32_t semi_found(const LookupConstants& c, const unsigned char* data, const uint64_t* bits,
                                const uint64_t* pattern, unsigned len, uint32_t wanted) {
    alignas(32) uint64_t stored[kBatchBlock];
    const uint32_t candidates = semi_candidates(c, data, bits, pattern, len, wanted, stored);
    uint32_t found = 0;
    for (uint32_t m = candidates; m; m &= m - 1) {
        const unsigned x = static_cast<unsigned>(ctz64(m));
        found |= uint32_t(c.scalar.zero_lanes(c.scalar.semi.decode(stored[x]) ^ pattern[x]) != 0) << x;
    }
    return found;
}
// The keys of a block of len keys, as a bit set.
inline uint32_t block_keys(unsigned len) { return len == kBatchBlock ? ~0u : (1u << len) - 1; }

// locate4 with AVX-512's 64-bit multiply: mix64's and the pattern's multiplies as one vpmullq
// each (the C++ tests check both copies against Locator).
CUCKOO_AVX512 void locate4_avx512(const LookupConstants& c, __m256i h, __m256i& bit1, __m256i& bit2, __m256i& pattern) {
    __m256i i1, fp;
    locate4_first_bucket(c, h, i1, fp);
    __m256i g = _mm256_xor_si256(fp, _mm256_srli_epi64(fp, 30));
    g = _mm256_mullo_epi64(g, c.mix1);
    g = _mm256_xor_si256(g, _mm256_srli_epi64(g, 27));
    g = _mm256_mullo_epi64(g, c.mix2);
    g = _mm256_xor_si256(g, _mm256_srli_epi64(g, 31));
    locate4_buckets(c, i1, g, bit1, bit2);
    pattern = _mm256_mullo_epi64(fp, c.lane_ones);
}

// The padding of locate_lanes: hashes from len up to the next multiple of 4 are zeroed (their
// keys locate inside the table too); returns that multiple.
inline unsigned pad_block(uint64_t* hash, unsigned len) {
    const unsigned padded = (len + 3) & ~3u;
    for (unsigned x = len; x < padded; ++x) hash[x] = 0;
    return padded;
}
CUCKOO_AVX2 void store_located4(LocatedLanes& at, unsigned x, __m256i bit1, __m256i bit2, __m256i pattern) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(at.bit1 + x), bit1);
    _mm256_store_si256(reinterpret_cast<__m256i*>(at.bit2 + x), bit2);
    _mm256_store_si256(reinterpret_cast<__m256i*>(at.pattern + x), pattern);
}

// locate_lanes on a CPU with AVX-512 (see avx2.hpp): measured on the development machine (Zen 4),
// hashing and locating a block of integer keys took 1.10 instead of 1.92 ns a key.
CUCKOO_AVX512_FUNCTION void locate_lanes_avx512(const LookupConstants& c, uint64_t* hash, unsigned len, LocatedLanes& at) {
    const unsigned padded = pad_block(hash, len);
    for (unsigned x = 0; x < padded; x += 4) {
        __m256i bit1, bit2, pattern;
        locate4_avx512(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hash + x)), bit1, bit2, pattern);
        store_located4(at, x, bit1, bit2, pattern);
    }
}

// Locates keys [0, len) of a block from their hashes (hash[] has room for kBatchBlock entries;
// see pad_block), with the AVX-512 copy where the CPU has it.
CUCKOO_AVX2 void locate_lanes(const LookupConstants& c, uint64_t* hash, unsigned len, LocatedLanes& at) {
    if (c.avx512) return locate_lanes_avx512(c, hash, len, at);
    const unsigned padded = pad_block(hash, len);
    for (unsigned x = 0; x < padded; x += 4) {
        __m256i bit1, bit2, pattern;
        locate4(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hash + x)), bit1, bit2, pattern);
        store_located4(at, x, bit1, bit2, pattern);
    }
}

// Bit x: whether located key x (x < len rounded up to 4) may be in the table, reading both of
// its buckets.
template <BucketShape Shape>
CUCKOO_AVX2 uint32_t probe_both(const LookupConstants& c, const unsigned char* data, const LocatedLanes& at,
                                unsigned len) {
    if constexpr (Shape == BucketShape::SemiSorted) {
        uint32_t found = 0;
        for (unsigned x = 0; x < len; x += 4) {
            const __m256i pattern = _mm256_load_si256(reinterpret_cast<const __m256i*>(at.pattern + x));
            const __m256i tx = lane_carries(c, _mm256_xor_si256(semi_words4(c, data, at.bit1 + x), pattern));
            const __m256i ty = lane_carries(c, _mm256_xor_si256(semi_words4(c, data, at.bit2 + x), pattern));
            found |= found4(c, _mm256_and_si256(tx, ty)) << x;
        }
        return found;
    } else {
        uint32_t found = 0;
        for (unsigned x = 0; x < len; x += 4) {
            const __m256i tx = lane_carries(c, compared4<Shape>(c, data, at.bit1 + x, at.pattern + x));
            const __m256i ty = lane_carries(c, compared4<Shape>(c, data, at.bit2 + x, at.pattern + x));
            found |= found4(c, _mm256_and_si256(tx, ty)) << x;
        }
        return found;
    }
}
// Bit x: whether bucket 1 of located key x holds its fingerprint.
template <BucketShape Shape>
CUCKOO_AVX2 uint32_t probe_first(const LookupConstants& c, const unsigned char* data, const LocatedLanes& at,
                                 unsigned len) {
    if constexpr (Shape == BucketShape::SemiSorted) {
        return semi_found(c, data, at.bit1, at.pattern, len, block_keys(len));
    } else {
        uint32_t found = 0;
        for (unsigned x = 0; x < len; x += 4)
            found |= found4(c, lane_carries(c, compared4<Shape>(c, data, at.bit1 + x, at.pattern + x))) << x;
        return found;
    }
}
// Bit x: whether bucket 2 of located key x holds its fingerprint, for the keys of `wanted` only
// (the others' buckets are not read).
template <BucketShape Shape>
CUCKOO_AVX2 uint32_t probe_second(const LookupConstants& c, const unsigned char* data, const LocatedLanes& at,
                                  unsigned len, uint32_t wanted) {
    if constexpr (Shape == BucketShape::SemiSorted) {
        return semi_found(c, data, at.bit2, at.pattern, len, wanted);
    } else {
        uint32_t found = 0;
        for (unsigned x = 0; x < len; x += 4) {
            const uint32_t group = (wanted >> x) & 0xFu;
            if (group == 0) continue;
            const __m256i mask = group_lanes(group);
            found |= (found4(c, lane_carries(c, compared4<Shape>(data, at.bit2 + x, at.pattern + x, mask))) & group) << x;
        }
        return found;
    }
}

// out[x] = bit x of `found`, for x < len.
template <class Out>
CUCKOO_AVX2 void write_found(uint32_t found, unsigned len, Out* out) {
    // Byte x of the vector = bit x of found: each byte takes the byte of `found` that holds its
    // bit, keeps that bit, and becomes 0 or 1.
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(static_cast<int>(found)),
        _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    const __m256i bytes = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(1));
    if constexpr (sizeof(Out) == 1 && std::is_integral<Out>::value) {  // bool, uint8: bytes 0 and 1 as they are
        if (len == kBatchBlock) {
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), bytes);
            return;
        }
    }
    alignas(32) uint8_t b[kBatchBlock];
    _mm256_store_si256(reinterpret_cast<__m256i*>(b), bytes);
    for (unsigned x = 0; x < len; ++x) out[x] = static_cast<Out>(b[x]);
}

// lookup_batch_avx2 for cache-resident tables: both buckets of a block read in one pass.
template <BucketShape Shape, class HashAt, class Out, class Stop>
__attribute__((target("avx2"))) uint64_t lookup_one_pass_avx2(const Locator& loc, const TableProbe& probe, uint64_t n,
                                                              HashAt& hash_at, Out* out, Stop& should_stop) {
    const LookupConstants c = lookup_constants(loc, probe, uses_vector_hash_block(hash_at));
    alignas(32) uint64_t hash[kBatchBlock];
    LocatedLanes at;
    for (uint64_t start = 0; start < n; start += kBatchBlock) {
        if (should_stop()) return start;
        const unsigned len = static_cast<unsigned>(std::min<uint64_t>(kBatchBlock, n - start));
        hash_keys(hash_at, start, len, hash);
        locate_lanes(c, hash, len, at);
        if constexpr (Shape == BucketShape::SemiSorted) {
            // A semi-sorted bucket's read is followed by a dependent read of the code table
            // (semi_words4), so fewer bucket reads are in flight at once than for plain buckets:
            // requesting them first gains here (measured with semi_words4).
            for (unsigned x = 0; x < len; ++x) {
                probe.prefetch_bit(at.bit1[x]);
                probe.prefetch_bit(at.bit2[x]);
            }
        }
        write_found(probe_both<Shape>(c, probe.data, at, len), len, out + start);
    }
    return n;
}

// One block in flight in the two-pass pipeline.
struct TwoPassBlock {
    LocatedLanes at;
    uint32_t found;    // bit x: key x found (after the first pass: in bucket 1)
    uint32_t missing;  // keys whose bucket 2 is still to be read
    unsigned len;
};

// lookup_batch_avx2 for tables larger than the caches (see the top of this file). Polls
// should_stop once per block and then returns the keys whose results are written.
template <BucketShape Shape, class HashAt, class Out, class Stop>
__attribute__((target("avx2"))) uint64_t lookup_two_pass_avx2(const Locator& loc, const TableProbe& probe_ref, uint64_t n,
                                                              HashAt& hash_at, Out* out, Stop& should_stop) {
    // A local copy: stores into a bool output may alias anything, which would otherwise force
    // every member to be reloaded after each store.
    const TableProbe probe = probe_ref;
    const LookupConstants c = lookup_constants(loc, probe, uses_vector_hash_block(hash_at));
    alignas(32) uint64_t hash[kBatchBlock];
    TwoPassBlock ring[3];
    const uint64_t blocks = (n + kBatchBlock - 1) / kBatchBlock;
    for (uint64_t k = 0; k < blocks + 2; ++k) {
        if (k >= 2 && should_stop()) return (k - 2) * kBatchBlock;
        if (k < blocks) {  // locate block k, request its first buckets
            TwoPassBlock& b = ring[k % 3];
            const uint64_t start = k * kBatchBlock;
            b.len = static_cast<unsigned>(std::min<uint64_t>(kBatchBlock, n - start));
            hash_keys(hash_at, start, b.len, hash);
            locate_lanes(c, hash, b.len, b.at);
            for (unsigned x = 0; x < b.len; ++x) probe.prefetch_bit(b.at.bit1[x]);
        }
        if (k >= 2) {  // block k - 2: the second buckets it needed, then its results
            TwoPassBlock& b = ring[(k - 2) % 3];
            write_found(b.found | probe_second<Shape>(c, probe.data, b.at, b.len, b.missing), b.len,
                        out + (k - 2) * kBatchBlock);
        }
        if (k >= 1 && k <= blocks) {  // block k - 1: first buckets, then request the second ones needed
            TwoPassBlock& b = ring[(k - 1) % 3];
            b.found = probe_first<Shape>(c, probe.data, b.at, b.len);
            b.missing = ~b.found & block_keys(b.len);
            for (uint32_t m = b.missing; m; m &= m - 1) probe.prefetch_bit(b.at.bit2[ctz64(m)]);
        }
    }
    return n;
}

// out[x] = how many lanes of key x's two buckets hold its fingerprint (TableProbe::pair_count),
// for x < len.
template <BucketShape Shape, class Out>
CUCKOO_AVX2 void count_both(const LookupConstants& c, const unsigned char* data, const LocatedLanes& at, unsigned len,
                            Out* out) {
    alignas(32) uint64_t matched[4];
    for (unsigned x = 0; x < len; x += 4) {
        __m256i mx, my;
        if constexpr (Shape == BucketShape::SemiSorted) {  // decoded as probe_both does
            const __m256i pattern = _mm256_load_si256(reinterpret_cast<const __m256i*>(at.pattern + x));
            mx = zero_lanes4(c, lane_carries(c, _mm256_xor_si256(semi_words4(c, data, at.bit1 + x), pattern)));
            my = zero_lanes4(c, lane_carries(c, _mm256_xor_si256(semi_words4(c, data, at.bit2 + x), pattern)));
        } else {
            mx = zero_lanes4(c, lane_carries(c, compared4<Shape>(c, data, at.bit1 + x, at.pattern + x)));
            my = zero_lanes4(c, lane_carries(c, compared4<Shape>(c, data, at.bit2 + x, at.pattern + x)));
        }
        // As in pair_count: the match bits of bucket 2 moved down a bit never meet those of bucket
        // 1 (f >= 4), so one popcount a key counts both. AVX2 has no vector popcount.
        _mm256_store_si256(reinterpret_cast<__m256i*>(matched), _mm256_or_si256(mx, _mm256_srli_epi64(my, 1)));
        const unsigned keys = std::min(4u, len - x);
        for (unsigned l = 0; l < keys; ++l) out[x + l] = static_cast<Out>(popcount64(matched[l]));
    }
}

// Filter::count_batch for one-load buckets: same contract (returns the keys done; polls
// should_stop between blocks). A count needs both buckets of every key, so there is no second
// pass to save; tables larger than the caches get a prefetch distance of one block instead:
// block k is located and both its buckets requested while block k - 1 is counted. (Cache-
// resident tables skip the prefetches, as lookup_one_pass_avx2 does, for the same reason.)
template <BucketShape Shape, class HashAt, class Out, class Stop>
__attribute__((target("avx2"))) uint64_t count_batch_avx2(const Locator& loc, const TableProbe& probe_ref,
                                                          uint64_t table_bytes, uint64_t n, HashAt& hash_at, Out* out,
                                                          Stop& should_stop) {
    const TableProbe probe = probe_ref;  // a local copy: see lookup_two_pass_avx2
    const LookupConstants c = lookup_constants(loc, probe, uses_vector_hash_block(hash_at));
    // Semi-sorted buckets are requested ahead also in cache-resident tables (see lookup_one_pass_avx2).
    const bool prefetch = table_bytes > kTwoPassMinBytes || Shape == BucketShape::SemiSorted;
    warm_table(probe.data, table_bytes, n);
    alignas(32) uint64_t hash[kBatchBlock];
    LocatedLanes ring[2];
    unsigned lens[2] = {0, 0};
    const uint64_t blocks = (n + kBatchBlock - 1) / kBatchBlock;
    for (uint64_t k = 0; k <= blocks; ++k) {
        if (k >= 1 && should_stop()) return (k - 1) * kBatchBlock;
        if (k < blocks) {  // locate block k (and request its buckets)
            LocatedLanes& at = ring[k & 1];
            const uint64_t start = k * kBatchBlock;
            const unsigned len = lens[k & 1] = static_cast<unsigned>(std::min<uint64_t>(kBatchBlock, n - start));
            hash_keys(hash_at, start, len, hash);
            locate_lanes(c, hash, len, at);
            if (prefetch) {
                for (unsigned x = 0; x < len; ++x) {
                    probe.prefetch_bit(at.bit1[x]);
                    probe.prefetch_bit(at.bit2[x]);
                }
            }
        }
        if (k >= 1)  // count block k - 1
            count_both<Shape>(c, probe.data, ring[(k - 1) & 1], lens[(k - 1) & 1], out + (k - 1) * kBatchBlock);
    }
    return n;
}

// locate_lanes as a function of its own (what the tests compare with Locator): the AVX2 steps,
// or (avx512 true, on a CPU that has it) the AVX-512 ones.
__attribute__((target("avx2"))) inline void locate_lanes_avx2(const Locator& loc, const TableProbe& probe, uint64_t* hash,
                                                               unsigned len, LocatedLanes& at, bool avx512 = false) {
    LookupConstants c = lookup_constants(loc, probe);
    c.avx512 = avx512 && use_avx512();
    locate_lanes(c, hash, len, at);
}

// Filter::contains_batch for a table of shape Shape and table_bytes bytes: same contract (returns
// the keys done; polls should_stop between blocks).
template <BucketShape Shape, class HashAt, class Out, class Stop>
uint64_t lookup_batch_avx2(const Locator& loc, const TableProbe& probe, uint64_t table_bytes, uint64_t n,
                           HashAt& hash_at, Out* out, Stop& should_stop) {
    if (table_bytes > kTwoPassMinBytes) return lookup_two_pass_avx2<Shape>(loc, probe, n, hash_at, out, should_stop);
    warm_table(probe.data, table_bytes, n);
    return lookup_one_pass_avx2<Shape>(loc, probe, n, hash_at, out, should_stop);
}

}  // namespace kernels
#endif

}  // namespace cuckoo
