// Semi-sorted buckets (Fan, Andersen, Kaminsky, Mitzenmacher, CoNEXT 2014, section 5.2): a bucket
// of 4 fingerprints of f bits stored in 4f - 4 bits instead of 4f.
//
// The order of the slots in a bucket carries no information, so a bucket is kept sorted. Then the
// four most significant nibbles (the top 4 bits of each fingerprint, empty slots counting as 0)
// form a sorted 4-tuple of values 0..15, and there are only C(16 + 4 - 1, 4) = 3876 of those:
// their rank fits in 12 bits instead of 16. A bucket is
//
//   bits [0, 12)                 the rank ("code") of the sorted nibble tuple
//   bits [12 + l*g, 12 + (l+1)*g)  the low g = f - 4 bits of the fingerprint of slot l
//
// and the fingerprint of slot l is (nibble l of the code) << g | low bits l. The rank is the
// combinatorial number system on multisets: n0 <= n1 <= n2 <= n3 map to the strictly increasing
// m_i = n_i + i in [0, 19), and code = C(m0, 1) + C(m1, 2) + C(m2, 3) + C(m3, 4).
//
// Scalar lookups and writes decode a bucket into the plain layout (four f-bit lanes, see
// table.hpp) with one table load (the code's nibbles already placed at the top of their lanes, a
// table per f) and a few shifts and masks for the low bits, and from there the plain filter's
// SWAR comparisons run unchanged. Writes decode the bucket, change one slot and encode again,
// keeping the lanes sorted without a sort (Decoder::replace, insert_sorted) and adding four
// entries of a small table for the code (kCodeTerms). The decoded (sorted) order is what slot
// numbers refer to. The AVX2 bulk lookups and counts of cache-resident tables decode four buckets
// at once (lookup_avx2.hpp, semi_words4: a gather from the code table); those of larger tables
// first compare the key's low g bits with the four low-bit fields of the stored bucket, which
// needs no table, and decode only the buckets where some slot's low bits match: every bucket
// holding the key, and ~4/2^g of the others (semi_candidates). Their answers are the scalar ones
// (the C++ tests compare them, including keys whose low bits match a slot whose high nibble
// differs).
//
// Cost (benchmarks/semisort.py, fpr 0.001 so f = 13, 50% present, shared 2-core machine, the
// best of 7 alternating rounds per run): contains_many at 6*10^7 keys 1.09x, 1.08x and 1.12x the
// plain filter's in three runs (plain 33.7, 27.8 and 25.3 ns a key); at 10^6 keys 1.60x and
// 1.90x (plain 10.7 and 5.5 ns). Before the low-bits-first compare, when every bucket was decoded
// with a second gather from the 32 KiB code table: 1.25-1.61x at 6*10^7 (1.61x with plain at
// 23.5 ns on a quiet machine) and 1.7-2.4x at 10^6. count_many at 10^6: 1.13x (plain 9.1 ns).
//
// Codes 3876..4095 are never written; data holding one is corrupt (the format reader rejects it
// when it verifies a table), and it decodes to an empty nibble tuple rather than reading outside
// the table.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>

namespace cuckoo {
namespace semisort {

constexpr unsigned kSlots = 4;          // only buckets of 4 slots are semi-sorted
constexpr unsigned kCodeBits = 12;      // bits of the nibble code
constexpr unsigned kCodes = 3876;       // sorted 4-tuples of nibbles: C(19, 4)
constexpr unsigned kCodeSpace = 1u << kCodeBits;
constexpr unsigned kMinFingerprintBits = 4;
// A bucket of 4f - 4 bits is read with one 8-byte load from its first byte: buckets start at
// multiples of 4 bits (4f - 4 is a multiple of 4), so the shift is 0 or 4 and 4f - 4 + 4 <= 64.
constexpr unsigned kMaxFingerprintBits = 16;

constexpr bool supports(unsigned bucket_size, unsigned fingerprint_bits) {
    return bucket_size == kSlots && fingerprint_bits >= kMinFingerprintBits && fingerprint_bits <= kMaxFingerprintBits;
}
constexpr uint64_t bucket_bits(unsigned fingerprint_bits) { return uint64_t(kSlots) * fingerprint_bits - 4; }

namespace detail {
constexpr uint32_t binomial(uint32_t n, uint32_t k) {
    if (k > n) return 0;
    uint32_t r = 1;
    for (uint32_t i = 1; i <= k; ++i) r = r * (n - k + i) / i;
    return r;
}
}  // namespace detail

// The code of sorted nibbles n[0] <= n[1] <= n[2] <= n[3].
constexpr uint32_t encode_nibbles_by_formula(uint32_t n0, uint32_t n1, uint32_t n2, uint32_t n3) {
    return detail::binomial(n0, 1) + detail::binomial(n1 + 1, 2) + detail::binomial(n2 + 2, 3) +
           detail::binomial(n3 + 3, 4);
}
// Its four terms by position and nibble, so that writes add four small table entries (the
// formula's loops compiled to integer divisions: a third of a semi-sorted insert's time).
struct CodeTerms {
    uint16_t term[kSlots][16];
};
constexpr CodeTerms make_code_terms() {
    CodeTerms t{};
    for (uint32_t n = 0; n < 16; ++n) {
        t.term[0][n] = static_cast<uint16_t>(detail::binomial(n, 1));
        t.term[1][n] = static_cast<uint16_t>(detail::binomial(n + 1, 2));
        t.term[2][n] = static_cast<uint16_t>(detail::binomial(n + 2, 3));
        t.term[3][n] = static_cast<uint16_t>(detail::binomial(n + 3, 4));
    }
    return t;
}
inline constexpr CodeTerms kCodeTerms = make_code_terms();
constexpr uint32_t encode_nibbles(uint32_t n0, uint32_t n1, uint32_t n2, uint32_t n3) {
    return uint32_t(kCodeTerms.term[0][n0]) + kCodeTerms.term[1][n1] + kCodeTerms.term[2][n2] + kCodeTerms.term[3][n3];
}

// Code -> the four nibbles (nibble l at bits 4l), for every 12-bit value (invalid codes: 0).
struct NibbleTable {
    std::array<uint16_t, kCodeSpace> nibbles{};
    std::array<bool, kCodeSpace> valid{};
};
constexpr NibbleTable make_nibble_table() {
    NibbleTable t{};
    for (uint32_t a = 0; a < 16; ++a)
        for (uint32_t b = a; b < 16; ++b)
            for (uint32_t c = b; c < 16; ++c)
                for (uint32_t d = c; d < 16; ++d) {
                    const uint32_t code = encode_nibbles(a, b, c, d);
                    t.nibbles[code] = static_cast<uint16_t>(a | b << 4 | c << 8 | d << 12);
                    t.valid[code] = true;
                }
    return t;
}
inline const NibbleTable& nibble_table() {
    static constexpr NibbleTable table = make_nibble_table();
    return table;
}
inline bool valid_code(uint32_t code) { return code < kCodeSpace && nibble_table().valid[code]; }

// For fingerprints of f bits: code -> the code's nibbles at the top of four f-bit lanes (nibble l
// at bits l*f + f - 4), i.e. the plain bucket word with every low bit zero. Built once per f
// (32 KiB), on first use, thread-safely.
inline const uint64_t* lane_table(unsigned fingerprint_bits) {
    struct Tables {
        std::once_flag once[kMaxFingerprintBits + 1];
        std::unique_ptr<uint64_t[]> table[kMaxFingerprintBits + 1];
    };
    static Tables tables;
    const unsigned f = fingerprint_bits;
    std::call_once(tables.once[f], [&] {
        std::unique_ptr<uint64_t[]> t(new uint64_t[kCodeSpace]);
        const NibbleTable& n = nibble_table();
        for (unsigned code = 0; code < kCodeSpace; ++code) {
            uint64_t w = 0;
            for (unsigned l = 0; l < kSlots; ++l) w |= uint64_t((n.nibbles[code] >> (4 * l)) & 15) << (l * f + f - 4);
            t[code] = w;
        }
        tables.table[f] = std::move(t);
    });
    return tables.table[f].get();
}

// How a table of f-bit fingerprints turns a stored bucket into the plain bucket word: the lane
// table above and the masks that move the low bits of slot l from bit 12 + l*g to bit l*f.
struct Decoder {
    const uint64_t* lanes = nullptr;  // lane_table(f); null: the table is not semi-sorted
    uint64_t low_mask[kSlots] = {};    // low bits of slot l, where they sit after `>> 12`
    // The low g bits of the four slots as four g-bit lanes of the stored bucket (from bit 12),
    // for a zero-lane test against a key's low bits without the code table (lookup_avx2.hpp):
    // low_ones has bit 0 of every lane, low_lanes_low the bits below each lane's top bit,
    // low_lanes_high each lane's top bit. With g = 0 (f = 4) there are no lanes and
    // every_slot_low_matches is set instead.
    uint64_t low_ones = 0, low_lanes_low = 0, low_lanes_high = 0;
    uint32_t fp_low_mask = 0;  // a fingerprint's low g bits
    bool every_slot_low_matches = false;
    unsigned fp_bits = 0, low_bits = 0;  // f and g = f - 4
    uint64_t below[kSlots + 1] = {};     // below[k]: the bits of plain lanes 0..k-1 (k f-bit lanes)

    static Decoder for_bits(unsigned fingerprint_bits) {
        Decoder d;
        d.lanes = lane_table(fingerprint_bits);
        const unsigned g = fingerprint_bits - 4;
        const uint64_t ones = g ? (uint64_t(1) << g) - 1 : 0;
        for (unsigned l = 0; l < kSlots; ++l) {
            d.low_mask[l] = ones << (l * g);
            if (g) {
                d.low_ones |= uint64_t(1) << (kCodeBits + l * g);
                d.low_lanes_high |= uint64_t(1) << (kCodeBits + l * g + g - 1);
            }
        }
        d.low_lanes_low = (d.low_mask[0] | d.low_mask[1] | d.low_mask[2] | d.low_mask[3]) << kCodeBits & ~d.low_lanes_high;
        d.fp_low_mask = static_cast<uint32_t>(ones);
        d.every_slot_low_matches = g == 0;
        d.fp_bits = fingerprint_bits;
        d.low_bits = g;
        for (unsigned k = 0; k <= kSlots; ++k)
            d.below[k] = k * fingerprint_bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << (k * fingerprint_bits)) - 1;
        return d;
    }
    // `stored` holds the bucket in its low 4f - 4 bits; bits above it are ignored.
    uint64_t decode(uint64_t stored) const noexcept {
        const uint64_t low = stored >> kCodeBits;
        return lanes[stored & (kCodeSpace - 1)] | (low & low_mask[0]) | ((low & low_mask[1]) << 4) |
               ((low & low_mask[2]) << 8) | ((low & low_mask[3]) << 12);
    }

    // Writes work on the plain word of a bucket (decode's result: four f-bit lanes, sorted, so
    // empty slots are the lowest lanes) and keep it sorted, without a sort and without branches.
    // The plain word sorted as `plain` with lane `slot` taken out: the lanes below it move up one
    // lane and lane 0 becomes empty.
    uint64_t remove_lane(uint64_t plain, unsigned slot) const noexcept {
        return ((plain & below[slot]) << fp_bits) | (plain & ~below[slot + 1]);
    }
    // The sorted plain word with `fp` (fp < 2^f) put into it, for a sorted word whose lane 0 is
    // empty: the p lanes above lane 0 that are below fp move down one lane and fp goes to lane p.
    uint64_t insert_sorted(uint64_t plain, uint32_t fp) const noexcept {
        const uint64_t mask = below[1];
        const unsigned p = unsigned(((plain >> fp_bits) & mask) < fp) + unsigned(((plain >> (2 * fp_bits)) & mask) < fp) +
                           unsigned(((plain >> (3 * fp_bits)) & mask) < fp);
        return ((plain >> fp_bits) & below[p]) | (uint64_t(fp) << (p * fp_bits)) | (plain & ~below[p + 1]);
    }
    // The plain word of a bucket whose slot `slot` now holds fp (0: emptied), sorted again.
    // (insert_sorted of 0 puts it in lane 0, which remove_lane emptied: no branch needed.)
    uint64_t replace(uint64_t plain, unsigned slot, uint32_t fp) const noexcept {
        return insert_sorted(remove_lane(plain, slot), fp);
    }
    // A sorted plain word as a stored bucket (bits above 4f - 4 zero): decode's inverse.
    uint64_t encode(uint64_t plain) const noexcept {
        const unsigned g = low_bits, f = fp_bits;
        const uint64_t code = uint64_t(kCodeTerms.term[0][(plain >> g) & 15]) + kCodeTerms.term[1][(plain >> (f + g)) & 15] +
                              kCodeTerms.term[2][(plain >> (2 * f + g)) & 15] + kCodeTerms.term[3][(plain >> (3 * f + g)) & 15];
        const uint64_t low = (plain & low_mask[0]) | ((plain >> 4) & low_mask[1]) | ((plain >> 8) & low_mask[2]) |
                             ((plain >> 12) & low_mask[3]);
        return code | low << kCodeBits;
    }
};

// Four fingerprints of f bits (any order) as a stored bucket (sorted; bits above 4f - 4 zero).
inline uint64_t encode(uint32_t fps[kSlots], unsigned fingerprint_bits) {
    // Sorting network for 4 values.
    auto order = [&](unsigned i, unsigned j) {
        if (fps[j] < fps[i]) {
            const uint32_t t = fps[i];
            fps[i] = fps[j];
            fps[j] = t;
        }
    };
    order(0, 1);
    order(2, 3);
    order(0, 2);
    order(1, 3);
    order(1, 2);
    const unsigned g = fingerprint_bits - 4;
    const uint32_t low_ones = (uint32_t(1) << g) - 1;
    uint64_t w = encode_nibbles(fps[0] >> g, fps[1] >> g, fps[2] >> g, fps[3] >> g);
    for (unsigned l = 0; l < kSlots; ++l) w |= uint64_t(fps[l] & low_ones) << (kCodeBits + l * g);
    return w;
}

}  // namespace semisort
}  // namespace cuckoo
