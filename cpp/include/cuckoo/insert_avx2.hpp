// Bulk inserts into one-load buckets with AVX2: the placement decisions of a block of keys, four
// at a time in vector registers; Filter::insert_loop_avx2 then applies them in order.
//
// Why: the scalar placement (Filter::place_if_room: two loads, two zero-lane tests, two counts, a
// choice, a store) cost 11-17 ns a key at 10^6 keys, three times a lookup of both buckets with
// the AVX2 lookup kernel, although it reads the same two buckets. Here the decisions of a block
// come from the same bucket reads and vector arithmetic as lookups, and what is left for each
// key is scalar and short: check that its two buckets still hold the words the decision was
// made from, and OR the fingerprint into its slot.
//
// Decisions are taken on the table as it was before the block, but keys are inserted one by one
// in order (bulk == scalar: the same bytes as scalar inserts). A key's decision depends only on
// the contents of its two buckets, so it is still the scalar decision exactly when the 8 bytes
// read at each of its buckets are unchanged; an earlier key of the block that went into one of
// them (a repeated key, two keys sharing a bucket) or an eviction that moved fingerprints there
// changes them, and that key is then placed by the scalar path. (Changed bytes of a neighbouring
// bucket in the same 8 bytes also send a key there: rare, and only slower.)
#pragma once

#include <cstdint>

#include "cuckoo/lookup_avx2.hpp"

namespace cuckoo {

#if CUCKOO_X86_DISPATCH
namespace kernels {

// What inserting each key of a block would do to the table as it was when the block was read.
struct alignas(64) InsertPlan {
    uint64_t word1[kBatchBlock];   // the 8 bytes at bucket 1's first byte, as read
    uint64_t word2[kBatchBlock];   // the same for bucket 2
    uint64_t offset[kBatchBlock];  // the byte of the chosen bucket's first bit
    uint64_t value[kBatchBlock];   // ORed into the 8 bytes at `offset`: the fingerprint in the slot
    uint32_t no_room;              // bit x: both buckets of key x are full
    uint32_t present;              // bit x: either bucket holds key x's fingerprint (Unique plans only)
};

// The plan of keys [0, len) of a located block (lanes up to len rounded up to 4 are read too:
// locate_lanes places padding keys inside the table). Same rule as Filter::place_if_room: the
// bucket with more empty slots, bucket 1 on a tie, its first empty slot.
template <BucketShape Shape, bool Unique>
CUCKOO_AVX2 void plan_inserts(const LookupConstants& c, const unsigned char* data, const LocatedLanes& at,
                              unsigned len, unsigned fp_bits, unsigned word_bits, InsertPlan& plan) {
    static_assert(Shape == BucketShape::Aligned || Shape == BucketShape::OneLoad, "one-load buckets only");
    const __m128i to_lane_bit0 = _mm_cvtsi32_si128(static_cast<int>(fp_bits - 1));
    const __m128i to_top_lane = _mm_cvtsi32_si128(static_cast<int>(word_bits - fp_bits));
    const __m128i lane_width = _mm_cvtsi32_si128(static_cast<int>(fp_bits));
    const __m256i seven = _mm256_set1_epi64x(7), count_mask = _mm256_set1_epi64x(0xF);
    const __m256i zero = _mm256_setzero_si256();
    uint32_t no_room = 0, present = 0;
    for (unsigned x = 0; x < len; x += 4) {
        const __m256i bit1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(at.bit1 + x));
        const __m256i bit2 = _mm256_load_si256(reinterpret_cast<const __m256i*>(at.bit2 + x));
        const __m256i pattern = _mm256_load_si256(reinterpret_cast<const __m256i*>(at.pattern + x));
        const __m256i off1 = _mm256_srli_epi64(bit1, 3), off2 = _mm256_srli_epi64(bit2, 3);
        const __m256i raw1 = stored_words4(c, data, at.bit1 + x), raw2 = stored_words4(c, data, at.bit2 + x);
        _mm256_store_si256(reinterpret_cast<__m256i*>(plan.word1 + x), raw1);
        _mm256_store_si256(reinterpret_cast<__m256i*>(plan.word2 + x), raw2);
        const __m256i shift1 = _mm256_and_si256(bit1, seven), shift2 = _mm256_and_si256(bit2, seven);
        __m256i w1 = raw1, w2 = raw2;
        if constexpr (Shape == BucketShape::OneLoad) {
            w1 = _mm256_srlv_epi64(raw1, shift1);
            w2 = _mm256_srlv_epi64(raw2, shift2);
        }
        // Present: a lane equal to the fingerprint in either bucket (TableProbe::either_contains).
        if constexpr (Unique)
            present |= found4(c, _mm256_and_si256(lane_carries(c, _mm256_xor_si256(w1, pattern)),
                                                  lane_carries(c, _mm256_xor_si256(w2, pattern)))) << x;
        // Empty lanes, as bit 0 of each lane, and their number (TableProbe::lane_count).
        const __m256i empty1 = _mm256_srl_epi64(zero_lanes4(c, lane_carries(c, w1)), to_lane_bit0);
        const __m256i empty2 = _mm256_srl_epi64(zero_lanes4(c, lane_carries(c, w2)), to_lane_bit0);
        const __m256i free1 = _mm256_and_si256(_mm256_srl_epi64(mul_by(empty1, c.ones_lo, c.ones_hi), to_top_lane), count_mask);
        const __m256i free2 = _mm256_and_si256(_mm256_srl_epi64(mul_by(empty2, c.ones_lo, c.ones_hi), to_top_lane), count_mask);
        no_room |= static_cast<uint32_t>(_mm256_movemask_pd(
                       _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_or_si256(empty1, empty2), zero))))
                   << x;
        // Bucket 2 only when it has more empty slots; then its first empty lane's bits.
        const __m256i second = _mm256_cmpgt_epi64(free2, free1);
        const __m256i empty = _mm256_blendv_epi8(empty1, empty2, second);
        const __m256i first = _mm256_and_si256(empty, _mm256_sub_epi64(zero, empty));  // lowest set bit
        const __m256i lane = _mm256_sub_epi64(_mm256_sll_epi64(first, lane_width), first);  // its f bits
        const __m256i value = _mm256_sllv_epi64(_mm256_and_si256(pattern, lane), _mm256_blendv_epi8(shift1, shift2, second));
        _mm256_store_si256(reinterpret_cast<__m256i*>(plan.offset + x), _mm256_blendv_epi8(off1, off2, second));
        _mm256_store_si256(reinterpret_cast<__m256i*>(plan.value + x), value);
    }
    plan.no_room = no_room;
    plan.present = present;
}

}  // namespace kernels
#endif

}  // namespace cuckoo
