// Tests of semi-sorted buckets (cpp/include/cuckoo/semisort.hpp and the semi-sorted paths of
// table.hpp, filter.hpp, staged.hpp, format.hpp): the nibble code, and a semi-sorted filter
// against a plain filter of the same geometry. Both store the same multiset of (bucket pair,
// fingerprint) entries when every insert succeeded, so every lookup and count must agree exactly;
// the invariants (no false negatives, a failed insert changes nothing, batch == scalar, the file
// format) are checked on the semi-sorted filter itself.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "check.hpp"
#include "cuckoo/format.hpp"
#include "cuckoo/semisort.hpp"
#include "int_keys.hpp"

using cuckoo::Filter;

namespace {

const auto kNeverStop = [] { return false; };

// Keys: integers hashed through the filter's own seeded hash (int_keys.hpp).
using cktest::IntKeys;
using cktest::VectorIntKeys;

std::vector<uint64_t> random_keys(uint64_t n, cktest::Rng& rng) {
    std::vector<uint64_t> keys(n);
    for (uint64_t& k : keys) k = rng.next();
    return keys;
}

std::string params(uint64_t m, unsigned f) { return "m=" + std::to_string(m) + " f=" + std::to_string(f); }

#if CUCKOO_X86_DISPATCH
// The AVX2 lookup kernel's two passes and the count kernel as for small and large tables, on
// `keys` of the semi-sorted filter `fl`, with the keys from `Source` (buckets gathered, or read
// with loads for a source hashed by vector code).
struct KernelAnswers {
    std::vector<uint8_t> one, two, counts_small, counts_large;
};
template <class Source>
KernelAnswers run_kernels_from(const Filter& fl, const std::vector<uint64_t>& keys) {
    const uint64_t n = keys.size();
    Source source{&fl, &keys};
    auto never = [] { return false; };
    using namespace cuckoo::kernels;
    constexpr auto kShape = cuckoo::BucketShape::SemiSorted;
    const cuckoo::TableProbe probe = fl.table().probe();
    REQUIRE(probe.shape() == kShape);
    // One more entry than keys, as a guard the kernels must not write.
    KernelAnswers a{std::vector<uint8_t>(n + 1, 7), std::vector<uint8_t>(n + 1, 7), std::vector<uint8_t>(n + 1, 77),
                    std::vector<uint8_t>(n + 1, 77)};
    CHECK_EQ(lookup_one_pass_avx2<kShape>(fl.locator(), probe, n, source, a.one.data(), never), n);
    CHECK_EQ(lookup_two_pass_avx2<kShape>(fl.locator(), probe, n, source, a.two.data(), never), n);
    CHECK_EQ(count_batch_avx2<kShape>(fl.locator(), probe, fl.table_bytes(), n, source, a.counts_small.data(), never), n);
    CHECK_EQ(count_batch_avx2<kShape>(fl.locator(), probe, cuckoo::kTwoPassMinBytes + 1, n, source,
                                      a.counts_large.data(), never),
             n);
    CHECK_EQ(a.one[n], 7);
    CHECK_EQ(a.two[n], 7);
    CHECK_EQ(a.counts_small[n], 77);
    CHECK_EQ(a.counts_large[n], 77);
    return a;
}
// Both ways, which must give the same answers; returns them.
KernelAnswers run_kernels(const Filter& fl, const std::vector<uint64_t>& keys) {
    const KernelAnswers gathered = run_kernels_from<IntKeys>(fl, keys);
    const KernelAnswers loaded = run_kernels_from<VectorIntKeys>(fl, keys);
    CHECK(gathered.one == loaded.one);
    CHECK(gathered.two == loaded.two);
    CHECK(gathered.counts_small == loaded.counts_small);
    CHECK(gathered.counts_large == loaded.counts_large);
    return gathered;
}
#endif

}  // namespace

TEST_CASE(nibble_code_is_a_bijection_onto_0_3875) {
    std::set<uint32_t> codes;
    for (uint32_t a = 0; a < 16; ++a)
        for (uint32_t b = a; b < 16; ++b)
            for (uint32_t c = b; c < 16; ++c)
                for (uint32_t d = c; d < 16; ++d) {
                    const uint32_t code = cuckoo::semisort::encode_nibbles(a, b, c, d);
                    CHECK_EQ(code, cuckoo::semisort::encode_nibbles_by_formula(a, b, c, d));  // the term tables
                    CHECK(code < cuckoo::semisort::kCodes);
                    codes.insert(code);
                    CHECK_EQ(uint32_t(cuckoo::semisort::nibble_table().nibbles[code]), a | b << 4 | c << 8 | d << 12);
                }
    CHECK_EQ(codes.size(), size_t(cuckoo::semisort::kCodes));
    for (uint32_t code = 0; code < cuckoo::semisort::kCodeSpace; ++code)
        CHECK_EQ(cuckoo::semisort::valid_code(code), code < cuckoo::semisort::kCodes);
}

// encode then decode gives the four fingerprints sorted, for every f and random (also equal and
// zero) fingerprints; the stored bucket uses only its 4f - 4 bits.
TEST_CASE(encode_decode_round_trip) {
    cktest::Rng rng(3);
    for (unsigned f = cuckoo::semisort::kMinFingerprintBits; f <= cuckoo::semisort::kMaxFingerprintBits; ++f) {
        cktest::context() = "f=" + std::to_string(f);
        const cuckoo::semisort::Decoder d = cuckoo::semisort::Decoder::for_bits(f);
        for (int i = 0; i < 20000; ++i) {
            uint32_t fps[4];
            for (uint32_t& x : fps) x = rng.below(4) == 0 ? 0 : static_cast<uint32_t>(rng.below(uint64_t(1) << f));
            if (i % 7 == 0) fps[1] = fps[0];
            uint32_t sorted[4] = {fps[0], fps[1], fps[2], fps[3]};
            std::sort(sorted, sorted + 4);
            const uint64_t stored = cuckoo::semisort::encode(fps, f);
            CHECK(stored >> cuckoo::semisort::bucket_bits(f) == 0);
            // Junk above the bucket (the next bucket's bits) must not change the decoded word.
            const uint64_t junk = cuckoo::semisort::bucket_bits(f) < 64 ? rng.next() << cuckoo::semisort::bucket_bits(f) : 0;
            const uint64_t plain = d.decode(stored | junk);
            for (unsigned l = 0; l < 4; ++l) CHECK_EQ(uint32_t((plain >> (l * f)) & ((uint64_t(1) << f) - 1)), sorted[l]);
            CHECK(f * 4 == 64 || plain >> (4 * f) == 0);
        }
    }
}

// The writes' steps on decoded words (Decoder::remove_lane, insert_sorted, replace, encode) give
// exactly the buckets of the sort-and-encode definition (semisort::encode), for every f, every
// slot and random fingerprints (also equal ones, zeros, and the largest f-bit value): a write that
// ordered lanes, moved lanes or packed bits otherwise would store another bucket (and the file
// format would change).
TEST_CASE(sorted_word_writes_equal_sort_and_encode) {
    cktest::Rng rng(11);
    for (unsigned f = cuckoo::semisort::kMinFingerprintBits; f <= cuckoo::semisort::kMaxFingerprintBits; ++f) {
        cktest::context() = "f=" + std::to_string(f);
        const cuckoo::semisort::Decoder d = cuckoo::semisort::Decoder::for_bits(f);
        const uint32_t top = static_cast<uint32_t>((uint64_t(1) << f) - 1);
        auto random_fp = [&] {
            const uint64_t r = rng.below(8);
            return r == 0 ? 0u : r == 1 ? top : static_cast<uint32_t>(rng.below(uint64_t(top) + 1));
        };
        for (int i = 0; i < 20000; ++i) {
            uint32_t fps[4];
            for (uint32_t& x : fps) x = random_fp();
            if (i % 5 == 0) fps[2] = fps[1];
            uint32_t copy[4] = {fps[0], fps[1], fps[2], fps[3]};
            const uint64_t stored = cuckoo::semisort::encode(copy, f);  // sorts copy
            const uint64_t plain = d.decode(stored);
            CHECK_EQ(d.encode(plain), stored);
            const unsigned slot = static_cast<unsigned>(rng.below(4));
            const uint32_t fp = random_fp();
            uint32_t changed[4] = {copy[0], copy[1], copy[2], copy[3]};
            changed[slot] = fp;
            const uint64_t expected = cuckoo::semisort::encode(changed, f);
            CHECK_EQ(d.encode(d.replace(plain, slot, fp)), expected);
            CHECK_EQ(d.replace(plain, slot, fp), d.decode(expected));
            if (copy[0] == 0) {  // a bucket with room: insert_sorted fills its empty lane 0
                uint32_t with_fp[4] = {fp, copy[1], copy[2], copy[3]};
                CHECK_EQ(d.insert_sorted(plain, fp), d.decode(cuckoo::semisort::encode(with_fp, f)));
            }
        }
    }
}

TEST_CASE(semi_sorted_parameters) {
    CHECK_NOTHROW(Filter(64, 4, 13, 500, 0, cuckoo::HashAlgorithm::xxh3, true));
    CHECK_THROWS(Filter(64, 2, 13, 500, 0, cuckoo::HashAlgorithm::xxh3, true), std::invalid_argument);
    CHECK_THROWS(Filter(64, 8, 13, 500, 0, cuckoo::HashAlgorithm::xxh3, true), std::invalid_argument);
    CHECK_THROWS(Filter(64, 4, 17, 500, 0, cuckoo::HashAlgorithm::xxh3, true), std::invalid_argument);
    const Filter fl(64, 4, 13, 500, 0, cuckoo::HashAlgorithm::xxh3, true);
    CHECK(fl.semi_sorted());
    CHECK_EQ(fl.table_bytes(), uint64_t(64 * 48 / 8));  // 4f - 4 = 48 bits a bucket
    // Sized for the semi-sorted design load: 12.6 bits a key or less at capacity for f = 13.
    const Filter big = Filter::for_capacity(1000000, 0.001, 0, 4, 500, 0, cuckoo::HashAlgorithm::xxh3, true);
    CHECK_EQ(big.fingerprint_bits(), 13u);
    CHECK(static_cast<double>(big.table_bytes()) * 8 / 1000000 <= 12.6);
}

// The semi-sorted filter against a plain one of the same geometry, for every f: same inserts
// (keys stored up to 3 times), then lookups and counts of stored and absent keys agree, scalar
// and batch, and deletes keep them in step.
TEST_CASE(semi_sorted_equals_plain) {
    cktest::Rng rng(11);
    for (unsigned f = cuckoo::semisort::kMinFingerprintBits; f <= cuckoo::semisort::kMaxFingerprintBits; ++f) {
        const uint64_t m = 512;
        cktest::context() = params(m, f);
        Filter plain(m, 4, f, 500, 7);
        Filter semi(m, 4, f, 500, 7, cuckoo::HashAlgorithm::xxh3, true);
        // Up to 75% load (f <= 6: 40%; with 63 fingerprints or fewer the eviction searches, which visit
        // slots in a different order, reach their limits and may fail in one filter only).
        const uint64_t target = m * 4 * (f <= 6 ? 40 : 75) / 100;
        const std::vector<uint64_t> stored = random_keys(target / 2, rng);
        for (uint64_t i = 0; i < stored.size(); ++i) {
            for (uint64_t c = 0; c <= i % 3 && plain.size() < target; ++c) {
                const bool a = plain.insert_hash(plain.hash_int(stored[i]));
                const bool b = semi.insert_hash(semi.hash_int(stored[i]));
                if (!a || !b) {  // small f: 2b copies of a fingerprint fill its pair in both
                    CHECK_EQ(a, b);
                    break;
                }
            }
        }
        REQUIRE_EQ(semi.size(), plain.size());
        CHECK(semi.canonical_entries() == plain.canonical_entries());
        CHECK_EQ(semi.count_occupied(), semi.size());
        std::vector<uint64_t> probe_keys = random_keys(3000, rng);
        for (uint64_t i = 0; i < 3000; ++i) probe_keys.push_back(stored[rng.below(stored.size())]);
        std::vector<uint8_t> found(probe_keys.size());
        std::vector<uint32_t> counts(probe_keys.size());
        IntKeys source{&semi, &probe_keys};
        CHECK_EQ(semi.contains_batch(probe_keys.size(), source, found.data(), kNeverStop), probe_keys.size());
        CHECK_EQ(semi.count_batch(probe_keys.size(), source, counts.data(), kNeverStop), probe_keys.size());
        for (uint64_t i = 0; i < probe_keys.size(); ++i) {
            const uint64_t h = semi.hash_int(probe_keys[i]);
            CHECK_EQ(semi.contains_hash(h), plain.contains_hash(h));
            CHECK_EQ(semi.count_hash(h), plain.count_hash(h));
            CHECK_EQ(bool(found[i]), semi.contains_hash(h));
            CHECK_EQ(uint64_t(counts[i]), semi.count_hash(h));
        }
        for (uint64_t i = 0; i < stored.size(); i += 2) {
            const uint64_t h = semi.hash_int(stored[i]);
            CHECK_EQ(semi.erase_hash(h), plain.erase_hash(h));
        }
        CHECK(semi.canonical_entries() == plain.canonical_entries());
        for (uint64_t i = 1; i < stored.size(); i += 2) CHECK(semi.contains_hash(semi.hash_int(stored[i])));
    }
}

// Filled to the first failure (evictions move fingerprints between semi-sorted buckets, whose
// slot numbers change with every write): nothing stored is lost, the failed insert changes no
// byte, and the load reached is that of the plain filter's eviction.
TEST_CASE(semi_sorted_fill_to_first_failure) {
    cktest::Rng rng(12);
    for (unsigned f : {5u, 8u, 13u, 16u}) {
        const uint64_t m = 4096;
        cktest::context() = params(m, f);
        Filter semi(m, 4, f, 500, 5, cuckoo::HashAlgorithm::xxh3, true);
        std::vector<uint64_t> stored;
        while (true) {
            const uint64_t k = rng.next();
            const std::vector<unsigned char> before(semi.table().data(), semi.table().data() + semi.table_bytes());
            const uint64_t n_before = semi.size();
            if (!semi.insert_hash(semi.hash_int(k))) {
                CHECK(std::memcmp(before.data(), semi.table().data(), before.size()) == 0);
                CHECK_EQ(semi.size(), n_before);
                break;
            }
            stored.push_back(k);
        }
        CHECK(semi.load_factor() > 0.93);
        CHECK_EQ(semi.count_occupied(), semi.size());
        for (uint64_t k : stored) CHECK(semi.contains_hash(semi.hash_int(k)));
        std::vector<uint8_t> found(stored.size());
        IntKeys source{&semi, &stored};
        semi.contains_batch(stored.size(), source, found.data(), kNeverStop);
        CHECK(std::all_of(found.begin(), found.end(), [](uint8_t x) { return x == 1; }));
    }
}

// Both passes of the AVX2 lookup kernel and the count kernel (as for small and large tables) on
// semi-sorted buckets equal the scalar answers.
TEST_CASE(semi_sorted_kernels_equal_scalar) {
#if CUCKOO_X86_DISPATCH
    if (!cuckoo::kernels::use_avx2()) return;
    cktest::Rng rng(13);
    for (unsigned f = cuckoo::semisort::kMinFingerprintBits; f <= cuckoo::semisort::kMaxFingerprintBits; ++f) {
        const uint64_t m = 1024;
        cktest::context() = params(m, f);
        Filter fl(m, 4, f, 500, 23, cuckoo::HashAlgorithm::xxh3, true);
        const std::vector<uint64_t> stored = random_keys(m * 4 * 9 / 10, rng);
        for (uint64_t k : stored) fl.insert_hash(fl.hash_int(k));
        for (uint64_t n : {0u, 1u, 31u, 33u, 97u, 1000u}) {
            std::vector<uint64_t> keys(n);
            for (uint64_t& k : keys) k = rng.below(2) ? stored[rng.below(stored.size())] : rng.next();
            const KernelAnswers a = run_kernels(fl, keys);
            for (uint64_t i = 0; i < n; ++i) {
                const uint64_t h = fl.hash_int(keys[i]);
                CHECK_EQ(a.one[i], uint8_t(fl.contains_hash(h)));
                CHECK_EQ(a.two[i], uint8_t(fl.contains_hash(h)));
                CHECK_EQ(a.counts_small[i], uint8_t(fl.count_hash(h)));
                CHECK_EQ(a.counts_large[i], uint8_t(fl.count_hash(h)));
            }
        }
    }
#endif
}

// The kernels compare the low f - 4 bits of the slots first and decode only buckets where some
// slot's low bits match. Keys that get that far and then differ in the high nibble (or match an
// empty slot's zero low bits) must come back absent, and keys present must be found: for every f,
// queries made of such decoys and of stored keys, kernels against the scalar path.
TEST_CASE(semi_sorted_kernels_low_bits_match_nibble_differs) {
#if CUCKOO_X86_DISPATCH
    if (!cuckoo::kernels::use_avx2()) return;
    cktest::Rng rng(29);
    for (unsigned f = cuckoo::semisort::kMinFingerprintBits + 1; f <= cuckoo::semisort::kMaxFingerprintBits; ++f) {
        const uint64_t m = 1024;
        cktest::context() = params(m, f);
        Filter fl(m, 4, f, 500, 31, cuckoo::HashAlgorithm::xxh3, true);
        std::vector<uint64_t> stored;  // the keys inserted (a failed insert stores nothing)
        for (uint64_t k : random_keys(m * 4 * 9 / 10, rng))
            if (fl.insert_hash(fl.hash_int(k))) stored.push_back(k);
        const uint32_t low_mask = (uint32_t(1) << (f - 4)) - 1;
        // A decoy: absent, and some slot of one of its buckets has its low bits.
        auto is_decoy = [&](uint64_t key) {
            const cuckoo::KeyHash k = fl.locate(fl.hash_int(key));
            if (fl.contains_hash(fl.hash_int(key))) return false;
            for (uint64_t bucket : {k.i1, k.i2})
                for (unsigned slot = 0; slot < 4; ++slot)
                    if ((fl.table().get(bucket, slot) & low_mask) == (k.fp & low_mask)) return true;
            return false;
        };
        std::vector<uint64_t> keys;
        uint64_t decoys = 0;
        for (uint64_t tries = 0; decoys < 200 && tries < 2000000; ++tries) {
            const uint64_t key = rng.next();
            if (!is_decoy(key)) continue;
            keys.push_back(key);
            keys.push_back(stored[rng.below(stored.size())]);
            ++decoys;
        }
        CHECK_EQ(decoys, 200u);
        const uint64_t n = keys.size();
        const KernelAnswers a = run_kernels(fl, keys);
        for (uint64_t i = 0; i < n; ++i) {
            const uint64_t h = fl.hash_int(keys[i]);
            const uint8_t expected = i % 2 ? 1 : 0;  // decoys at even positions, stored keys at odd
            CHECK_EQ(uint8_t(fl.contains_hash(h)), expected);
            CHECK_EQ(a.one[i], expected);
            CHECK_EQ(a.two[i], expected);
            CHECK_EQ(a.counts_small[i], uint8_t(fl.count_hash(h)));
            CHECK_EQ(a.counts_large[i], uint8_t(fl.count_hash(h)));
        }
    }
#endif
}

TEST_CASE(semi_sorted_copy_equality_merge) {
    cktest::Rng rng(14);
    Filter a(256, 4, 12, 500, 3, cuckoo::HashAlgorithm::xxh3, true);
    Filter b(256, 4, 12, 500, 3, cuckoo::HashAlgorithm::xxh3, true);
    const std::vector<uint64_t> ka = random_keys(300, rng), kb = random_keys(300, rng);
    for (uint64_t k : ka) CHECK(a.insert_hash(a.hash_int(k)));
    for (uint64_t k : kb) CHECK(b.insert_hash(b.hash_int(k)));
    Filter c(a);
    CHECK(c == a);
    CHECK(c.erase_hash(c.hash_int(ka[0])));
    CHECK(c != a);
    CHECK(a.contains_hash(a.hash_int(ka[0])));
    // The same keys in another order compare equal.
    Filter r(256, 4, 12, 500, 3, cuckoo::HashAlgorithm::xxh3, true);
    for (size_t i = ka.size(); i-- > 0;) CHECK(r.insert_hash(r.hash_int(ka[i])));
    CHECK(r == a);
    // A plain filter never equals a semi-sorted one, and refuses to merge with it.
    Filter p(256, 4, 12, 500, 3);
    for (uint64_t k : ka) p.insert_hash(p.hash_int(k));
    CHECK(p != a);
    CHECK_THROWS(p.merge_from(a), std::invalid_argument);
    Filter m(a);
    REQUIRE(m.merge_from(b));
    for (uint64_t k : ka) CHECK(m.contains_hash(m.hash_int(k)));
    for (uint64_t k : kb) CHECK(m.contains_hash(m.hash_int(k)));
    CHECK_EQ(m.size(), a.size() + b.size());
    Filter u(a);
    REQUIRE(u.union_from(a));
    CHECK(u == a);  // a set union with itself changes nothing
    cuckoo::StagedFilter sa(a, false), sp(p, false);
    CHECK_THROWS(sa.merge(sp), cuckoo::MergeError);
}

// Growth: stages stay semi-sorted while f <= 16, then are plain; lookups see every stage.
TEST_CASE(semi_sorted_growth) {
    cktest::Rng rng(15);
    cuckoo::StagedFilter g(Filter::for_capacity(2000, 0, 14, 4, 500, 1, cuckoo::HashAlgorithm::xxh3, true), true);
    std::vector<uint64_t> keys = random_keys(40000, rng);
    for (uint64_t k : keys) REQUIRE(g.insert_hash(g.hasher().hash_int(k)));
    REQUIRE(g.stage_count() >= 4);
    CHECK(g.stage(0).semi_sorted());
    CHECK(g.stage(2).semi_sorted());   // f = 16
    CHECK(!g.stage(3).semi_sorted());  // f = 17
    for (uint64_t k : keys) CHECK(g.contains_hash(g.hasher().hash_int(k)));
    const std::vector<unsigned char> bytes = cuckoo::format::to_bytes(g);
    CHECK_EQ(cuckoo::format::get_le32(bytes.data() + 8), 3u);  // nested growth stages: version 3
    const cuckoo::StagedFilter back = cuckoo::format::from_bytes(bytes.data(), bytes.size());
    CHECK(back == g);
    CHECK(back.stage(0).semi_sorted() && !back.stage(3).semi_sorted());
}

TEST_CASE(semi_sorted_format) {
    cktest::Rng rng(16);
    cuckoo::StagedFilter f(Filter::for_capacity(1000, 0.001, 0, 4, 500, 9, cuckoo::HashAlgorithm::xxh3, true), false);
    for (uint64_t k : random_keys(900, rng)) REQUIRE(f.insert_hash(f.hasher().hash_int(k)));
    std::vector<unsigned char> bytes = cuckoo::format::to_bytes(f);
    CHECK_EQ(cuckoo::format::get_le32(bytes.data() + 8), 2u);  // version 2
    const cuckoo::StagedFilter back = cuckoo::format::from_bytes(bytes.data(), bytes.size());
    CHECK(back == f);
    CHECK(back.first().semi_sorted());
    // A plain filter is still written as version 1.
    cuckoo::StagedFilter plain(Filter::for_capacity(1000, 0.001, 0, 4, 500, 9), false);
    CHECK_EQ(cuckoo::format::get_le32(cuckoo::format::to_bytes(plain).data() + 8), 1u);
    // An invalid nibble code in the table (checksum fixed up) is reported, not decoded.
    const cuckoo::format::Header h = cuckoo::format::parse_header(bytes.data(), bytes.size());
    const uint64_t at = h.stages[0].table_offset;
    std::vector<unsigned char> bad = bytes;
    bad[at] = 0xFF;
    bad[at + 1] = static_cast<unsigned char>((bad[at + 1] & 0xF0) | 0x0F);  // code 4095
    const uint64_t sum = cuckoo::xxh64(bad.data() + at, static_cast<size_t>(h.stages[0].table_length), 0);
    std::vector<unsigned char> hdr(bad.begin(), bad.begin() + h.header_length);
    cuckoo::format::put_le(bad.data() + 64 + cuckoo::format::v1::kTableChecksumAt, sum, 8);
    cuckoo::format::put_le(bad.data() + h.header_length - 8,
                           cuckoo::xxh64(bad.data(), static_cast<size_t>(h.header_length - 8), 0), 8);
    CHECK_THROWS(cuckoo::format::from_bytes(bad.data(), bad.size()), cuckoo::FormatError);
    // ... and a view that skips verification reads it without going out of bounds.
    const cuckoo::StagedFilter view = cuckoo::format::view_bytes(bad.data(), bad.size(), false);
    CHECK_NOTHROW(view.contains_hash(12345));
    // A layout value this build does not know.
    std::vector<unsigned char> unknown = bytes;
    cuckoo::format::put_le(unknown.data() + 64 + cuckoo::format::v1::kStageLayoutAt, 2, 4);
    cuckoo::format::put_le(unknown.data() + h.header_length - 8,
                           cuckoo::xxh64(unknown.data(), static_cast<size_t>(h.header_length - 8), 0), 8);
    CHECK_THROWS(cuckoo::format::from_bytes(unknown.data(), unknown.size()), cuckoo::FormatError);
}

int main(int argc, char** argv) { return cktest::run_all(argc, argv); }
