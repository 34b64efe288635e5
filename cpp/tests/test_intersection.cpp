// Tests of the intersection (issue 49): Filter::intersect_from keeps the smaller count of every
// (bucket pair, fingerprint) against a model of the two tables' entries; StagedFilter::intersect
// keeps every key of both when the two filters hold it in stages of different levels, answers
// exactly `in a and in b`, and refuses mismatched filters (and a fixed filter with a grown one),
// leaving both unchanged.
#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "check.hpp"
#include "cuckoo/staged.hpp"

using cuckoo::Filter;
using cuckoo::StagedFilter;

namespace {

std::vector<uint64_t> keys_from(uint64_t first, uint64_t n) {
    std::vector<uint64_t> keys(n);
    for (uint64_t i = 0; i < n; ++i) keys[i] = cuckoo::mix64(first + i);
    return keys;
}

// (lower bucket of the pair, fingerprint) -> copies.
std::map<std::pair<uint64_t, uint32_t>, unsigned> entries(const Filter& f) {
    std::map<std::pair<uint64_t, uint32_t>, unsigned> out;
    for (uint64_t e : f.canonical_entries()) ++out[{e >> 32, static_cast<uint32_t>(e & 0xFFFFFFFFu)}];
    return out;
}

Filter small_filter(unsigned b, unsigned bits, bool semi) {
    return Filter::for_capacity(3000, 0.0, bits, b, 500, 11, cuckoo::HashAlgorithm::xxh3, semi);
}

}  // namespace

TEST_CASE(one_stage_intersection_is_the_entrywise_min) {
    for (auto [b, semi] : {std::pair{2u, false}, std::pair{4u, false}, std::pair{8u, false}, std::pair{4u, true}}) {
        Filter a = small_filter(b, 8, semi), o = small_filter(b, 8, semi);
        // Overlapping key ranges, some keys twice on one side: 8-bit fingerprints give collisions.
        for (uint64_t k : keys_from(0, 2000)) REQUIRE(a.insert_hash(a.hash_int(k)));
        for (uint64_t k : keys_from(0, 300)) REQUIRE(a.insert_hash(a.hash_int(k)));
        for (uint64_t k : keys_from(1000, 2000)) REQUIRE(o.insert_hash(o.hash_int(k)));
        for (uint64_t k : keys_from(1200, 100)) REQUIRE(o.insert_hash(o.hash_int(k)));
        const auto ea = entries(a), eo = entries(o);
        const Filter a_before(a), o_before(o);
        Filter r(a);
        r.intersect_from(o);
        CHECK(a == a_before && o == o_before);
        std::map<std::pair<uint64_t, uint32_t>, unsigned> want;
        uint64_t total = 0;
        for (const auto& [e, n] : ea) {
            const auto it = eo.find(e);
            if (it == eo.end()) continue;
            want[e] = std::min(n, it->second);
            total += want[e];
        }
        CHECK(entries(r) == want);
        CHECK_EQ(r.size(), total);
        CHECK_EQ(r.count_occupied(), total);
        for (uint64_t k : keys_from(0, 3000)) {
            const uint64_t h = a.hash_int(k);
            const uint64_t smaller = std::min(a.count_hash(h), o.count_hash(h));  // a value: CHECK_EQ binds a reference
            CHECK_EQ(r.count_hash(h), smaller);
            CHECK_EQ(r.contains_hash(h), a.contains_hash(h) && o.contains_hash(h));
        }
        Filter r2(o);
        r2.intersect_from(a);
        CHECK(r2 == r);
    }
}

TEST_CASE(grown_filters_keep_keys_held_in_different_stages) {
    for (bool fixed_left : {false, true}) {
        auto make = [](bool growable) {
            return StagedFilter(Filter::for_capacity(500, 0.0, 10, 4, 500, 5), growable);
        };
        StagedFilter a = make(!fixed_left), o = make(true);
        if (fixed_left) {  // a fixed filter cannot take a grown one's stages (as for the union)
            for (uint64_t k = 200; k < 5200; ++k) REQUIRE(o.insert_hash(o.hasher().hash_int(k)));
            const StagedFilter before(a);
            CHECK_THROWS(a.intersect(o), cuckoo::MergeError);
            CHECK(a == before);
            continue;
        }
        // a: keys 0..3999, o: 200..5199, both grown, so the keys 200..399 sit in o's first stage
        // and a's, 2000..3999 in later stages of both.
        const uint64_t a_keys = 4000;
        for (uint64_t k = 0; k < a_keys; ++k) REQUIRE(a.insert_hash(a.hasher().hash_int(k)));
        for (uint64_t k = 200; k < 5200; ++k) REQUIRE(o.insert_hash(o.hasher().hash_int(k)));
        REQUIRE(o.stage_count() >= 3u);
        const StagedFilter a_before(a), o_before(o);
        StagedFilter r(a);
        r.intersect(o);
        CHECK(a == a_before && o == o_before);
        uint64_t lost = 0, not_both = 0;
        for (uint64_t k = 0; k < 6000; ++k) {
            const uint64_t h = a.hasher().hash_int(k);
            if (k >= 200 && k < a_keys) lost += !r.contains_hash(h);
            not_both += r.contains_hash(h) != (a.contains_hash(h) && o.contains_hash(h));
        }
        CHECK_EQ(lost, 0u);
        CHECK_EQ(not_both, 0u);
        StagedFilter self(a);
        self.intersect(a);
        CHECK(self == a);
    }
}

TEST_CASE(mismatched_filters_raise_and_change_nothing) {
    StagedFilter a(Filter::for_capacity(500, 0.0, 10, 4, 500, 5), false);
    StagedFilter seed(Filter::for_capacity(500, 0.0, 10, 4, 500, 6), false);
    StagedFilter width(Filter::for_capacity(500, 0.0, 12, 4, 500, 5), false);
    for (uint64_t k = 0; k < 100; ++k) REQUIRE(a.insert_hash(a.hasher().hash_int(k)));
    const StagedFilter before(a);
    CHECK_THROWS(a.intersect(seed), cuckoo::MergeError);
    CHECK_THROWS(a.intersect(width), cuckoo::MergeError);
    CHECK(a == before);
}

int main(int argc, char** argv) { return cktest::run_all(argc, argv); }
