// Tests of cpp/include/cuckoo/staged.hpp (issue 19): where inserts go in a growable filter, when
// it may grow (never for copies of one key, a failure at low load, or a table that does not fit),
// the set union on fingerprints against a model, and compact().
#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "check.hpp"
#include "cuckoo/staged.hpp"

using cuckoo::Filter;
using cuckoo::InsertFailure;
using cuckoo::MergeMode;
using cuckoo::StagedFilter;

namespace {

const auto kNeverStop = [] { return false; };

std::vector<uint64_t> distinct_keys(uint64_t n, uint64_t salt) {
    std::vector<uint64_t> keys(n);
    for (uint64_t i = 0; i < n; ++i) keys[i] = cuckoo::mix64(i + salt * 0x100000000ull) ^ salt;
    return keys;
}

StagedFilter growable(uint64_t capacity, unsigned bits, unsigned b = 4, unsigned kicks = 500) {
    return StagedFilter(Filter::for_capacity(capacity, 0.0, bits, b, kicks, 7), true);
}

// (lower bucket of the pair, fingerprint) -> copies, over a single-stage filter's table.
std::map<std::pair<uint64_t, uint32_t>, unsigned> entries(const Filter& f) {
    std::map<std::pair<uint64_t, uint32_t>, unsigned> out;
    for (uint64_t e : f.canonical_entries()) ++out[{e >> 32, static_cast<uint32_t>(e & 0xFFFFFFFFu)}];
    return out;
}

}  // namespace

TEST_CASE(copies_of_one_key_never_grow_the_filter) {
    for (unsigned b : {2u, 4u, 8u}) {
        cktest::context() = "b=" + std::to_string(b);
        StagedFilter f = growable(1000, 16, b);
        const uint64_t h = f.hasher().hash_int(42);
        for (unsigned i = 0; i < 2 * b; ++i) REQUIRE(f.insert_hash(h));
        for (int i = 0; i < 1000; ++i) {
            CHECK(!f.insert_hash(h));
            CHECK(f.last_failure() == InsertFailure::copies);
        }
        CHECK_EQ(f.stage_count(), 1u);
        CHECK_EQ(f.size(), 2u * b);
        // the batch path stops at the same key for the same reason
        std::vector<uint64_t> hashes(100, h);
        bool full = false;
        auto at = [&](uint64_t k) { return hashes[k]; };
        CHECK_EQ(f.insert_batch(hashes.size(), at, Filter::InsertMode::Always, nullptr, full, kNeverStop), 0u);
        CHECK(full && f.last_failure() == InsertFailure::copies && f.stage_count() == 1u);
    }
}

TEST_CASE(growth_needs_load_and_memory) {
    // b = 2, no eviction search: an insert fails as soon as both of its buckets are full. Hashes
    // chosen directly: one of fingerprint C in bucket Q, then four of fingerprint A in bucket P,
    // where Q is A's alternate of P. The fourth A finds P and Q full (3 A + C) at a tiny load.
    StagedFilter f(Filter::for_capacity(100000, 0.0, 16, 2, 0, 7), true);
    const Filter& st = f.first();
    auto hash_in = [&](uint64_t bucket, uint64_t high) {
        const uint64_t low = ((bucket << 32) + st.bucket_count() - 1) / st.bucket_count();  // first low word of bucket
        return (high << 32) | low;
    };
    const uint64_t ha = hash_in(77, 0x12345678);
    const cuckoo::KeyHash ka = st.locate(ha);
    REQUIRE(ka.i1 == 77u);
    const uint64_t hc = hash_in(ka.i2, 0x9ABCDEF0);
    REQUIRE(f.insert_hash(hc));
    for (int i = 0; i < 3; ++i) REQUIRE(f.insert_hash(ha));
    CHECK(!f.insert_hash(ha));
    CHECK(f.last_failure() == InsertFailure::low_load);
    CHECK_EQ(f.stage_count(), 1u);
    CHECK_EQ(f.size(), 4u);

    // A filled stage grows, unless the next stage would pass the memory limit.
    StagedFilter g = growable(1000, 16);
    g.set_memory_limit(g.table_bytes() + 100);  // no room for a second stage
    const std::vector<uint64_t> many = distinct_keys(5000, 4);
    uint64_t stored = 0;
    for (uint64_t k : many) {
        if (!g.insert_hash(g.hasher().hash_int(k))) break;
        ++stored;
    }
    CHECK(stored < many.size());
    CHECK(g.last_failure() == InsertFailure::memory);
    CHECK_EQ(g.stage_count(), 1u);
    CHECK(g.first().load_factor() > 0.9);
    g.set_memory_limit(0);  // the available memory: a second stage fits
    for (uint64_t i = stored; i < many.size(); ++i) REQUIRE(g.insert_hash(g.hasher().hash_int(many[i])));
    CHECK(g.stage_count() > 1u);
    for (uint64_t k : many) CHECK(g.contains_hash(g.hasher().hash_int(k)));
}

TEST_CASE(inserts_go_to_the_oldest_stage_with_room) {
    StagedFilter f = growable(1000, 20);
    const std::vector<uint64_t> keys = distinct_keys(3000, 5);
    for (uint64_t k : keys) REQUIRE(f.insert_hash(f.hasher().hash_int(k)));
    REQUIRE(f.stage_count() >= 2u);
    const uint64_t first = f.stage(0).size();
    // The first keys are in stage 0; delete 1000 of them, then insert 500 new keys.
    for (uint64_t i = 0; i < 1000; ++i) REQUIRE(f.erase_hash(f.hasher().hash_int(keys[i])));
    CHECK_EQ(f.stats().deletes, 1000u);
    const size_t stages = f.stage_count();
    for (uint64_t k : distinct_keys(500, 6)) REQUIRE(f.insert_hash(f.hasher().hash_int(k)));
    CHECK_EQ(f.stage_count(), stages);
    CHECK_EQ(f.stage(0).size(), first - 500);
    // Emptied stages go with compact(); the first stays.
    for (uint64_t i = 1000; i < keys.size(); ++i) f.erase_hash(f.hasher().hash_int(keys[i]));
    for (uint64_t k : distinct_keys(500, 6)) f.erase_hash(f.hasher().hash_int(k));
    CHECK_EQ(f.size(), 0u);
    CHECK_EQ(f.compact(), stages - 1);
    CHECK_EQ(f.stage_count(), 1u);
    CHECK_EQ(f.stats().deletes, 3500u);
}

TEST_CASE(set_union_keeps_the_larger_count) {
    for (unsigned b : {2u, 4u, 8u}) {
        cktest::context() = "b=" + std::to_string(b);
        StagedFilter a(Filter::for_capacity(2000, 0.0, 8, b, 500, 1), false);
        StagedFilter o(Filter::for_capacity(2000, 0.0, 8, b, 500, 1), false);
        const std::vector<uint64_t> keys = distinct_keys(1500, 9);
        // 8-bit fingerprints: many keys share fingerprints and buckets, and some keys repeat.
        for (uint64_t i = 0; i < 1000; ++i) a.insert_hash(a.hasher().hash_int(keys[i % 700]));
        for (uint64_t i = 400; i < 1500; ++i) o.insert_hash(o.hasher().hash_int(keys[i % 1100]));
        StagedFilter u = a;
        u.merge(o, MergeMode::max);
        auto ea = entries(a.first()), eo = entries(o.first()), eu = entries(u.first());
        std::map<std::pair<uint64_t, uint32_t>, unsigned> model = ea;
        for (const auto& [key, n] : eo) model[key] = std::max(model[key], n);
        CHECK(eu == model);
        StagedFilter again = u;
        again.merge(o, MergeMode::max);
        CHECK(again == u);  // idempotent
        StagedFilter other_way = o;
        other_way.merge(a, MergeMode::max);
        CHECK(other_way == u);  // commutative
        StagedFilter sum = a;
        try {
            sum.merge(o, MergeMode::add);
            CHECK_EQ(sum.size(), a.size() + o.size());
        } catch (const cuckoo::FilterFullError&) {
            CHECK(sum == a);  // all or nothing
        }
    }
}

// Issue 27: growth stages are nested on the first (cuckoo/locate.hpp), so a key's place at level
// k gives its place at level 0 by dropping low bits; then every delete of an added key succeeds.
TEST_CASE(nested_stages_refine_the_first_and_deletes_always_succeed) {
    for (unsigned f0 : {4u, 13u, 30u}) {
        cktest::context() = "f0=" + std::to_string(f0);
        const Filter base = Filter::for_capacity(1000, 0.0, f0, 4, 500, 3);
        for (unsigned level = 1; level <= 6; ++level) {
            const Filter st = Filter::nested_on(base, level, 1000u << level, false);
            CHECK_EQ(st.bucket_count(), base.bucket_count() << level);
            const unsigned bits = std::min(f0 + level, 32u);
            CHECK_EQ(st.fingerprint_bits(), bits);
            for (uint64_t h : distinct_keys(2000, level)) {
                const cuckoo::KeyHash k = st.locate(h), k0 = base.locate(h);
                CHECK_EQ(k.i1 >> level, k0.i1);
                CHECK_EQ(k.i2 >> level, k0.i2);
                CHECK_EQ(1 + ((k.fp - 1) >> st.fp_shift()), k0.fp);
                CHECK(k.i1 != k.i2 && st.alt_index(k.i2, k.fp) == k.i1);
            }
        }
        // Few fingerprint bits: many keys match in several stages, where deletes were refused.
        StagedFilter g = growable(100, f0 == 30 ? 30 : 6);
        const std::vector<uint64_t> keys = distinct_keys(20000, 27);
        for (uint64_t k : keys) REQUIRE(g.insert_hash(g.hasher().hash_int(k)));
        REQUIRE(g.stage_count() >= 5);
        for (size_t i = 0; i < keys.size(); ++i) {
            CHECK(g.erase_hash(g.hasher().hash_int(keys[i])));
            if (i % 4999 == 0)
                for (size_t j = i + 1; j < keys.size(); ++j) CHECK(g.contains_hash(g.hasher().hash_int(keys[j])));
        }
        CHECK_EQ(g.size(), 0u);
    }
}

int main(int argc, char** argv) { return cktest::run_all(argc, argv); }
