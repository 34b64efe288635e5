// Tests of cpp/include/cuckoo/filter.hpp: bucket-index algebra, sizing, the no-false-negative and
// failed-insert-changes-nothing invariants, multiset semantics against a std::map model, batch ==
// scalar, copy and equality, and the hash-to-bucket mapping as a frozen format.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "cuckoo/filter.hpp"
#include "cuckoo/hash_block.hpp"
#include "int_keys.hpp"

using cuckoo::Filter;

namespace {

const unsigned kBucketSizes[] = {2, 4, 8};

std::string params(uint64_t m, unsigned b, unsigned f) {
    return "m=" + std::to_string(m) + " b=" + std::to_string(b) + " f=" + std::to_string(f);
}

std::vector<unsigned char> bytes_of(const Filter& fl) {
    const unsigned char* p = fl.table().data();
    return std::vector<unsigned char>(p, p + fl.table().allocated_bytes());
}

const auto kNeverStop = [] { return false; };

// Keys: integers hashed through the filter's own seeded hash (int_keys.hpp).
using cktest::IntKeys;
using cktest::VectorIntKeys;

std::vector<uint64_t> distinct_keys(uint64_t n, uint64_t salt) {
    std::vector<uint64_t> keys(n);
    for (uint64_t i = 0; i < n; ++i) keys[i] = cuckoo::mix64(i + salt * 0x100000000ull) ^ salt;  // mix64 is a bijection
    return keys;
}

// The expected-FPR formula written out directly (long double: 1 - p loses digits of a tiny p).
double fpr_formula(unsigned f, unsigned b, double load) {
    const long double p = 1.0L / (std::ldexp(1.0L, static_cast<int>(f)) - 1.0L);
    return static_cast<double>(1.0L - std::pow(1.0L - p, static_cast<long double>(2.0 * b * load)));
}

}  // namespace

// ---- parameters and sizing ---------------------------------------------------------------------

TEST_CASE(parameter_validation) {
    CHECK_NOTHROW(Filter(8, 4, 16, 500, 0));
    CHECK_THROWS(Filter(0, 4, 16, 500, 0), std::invalid_argument);
    CHECK_THROWS(Filter(12, 4, 16, 500, 0), std::invalid_argument);  // not a multiple of 8
    CHECK_THROWS(Filter((uint64_t(1) << 32) + 8, 2, 4, 500, 0), std::invalid_argument);
    for (unsigned b : {0u, 1u, 3u, 5u, 16u}) CHECK_THROWS(Filter(8, b, 16, 500, 0), std::invalid_argument);
    for (unsigned f : {0u, 3u, 33u, 64u}) CHECK_THROWS(Filter(8, 4, f, 500, 0), std::invalid_argument);
    for (unsigned f = 4; f <= 32; ++f) CHECK_NOTHROW(Filter(8, 2, f, 500, 0));

    CHECK_THROWS(Filter::for_capacity(0, 0.01, 0, 4, 500, 0), std::invalid_argument);
    CHECK_THROWS(Filter::for_capacity(100, 0.01, 0, 3, 500, 0), std::invalid_argument);
    CHECK_THROWS(Filter::for_capacity(100, 0.0, 0, 4, 500, 0), std::invalid_argument);
    CHECK_THROWS(Filter::for_capacity(100, 0.01, 33, 4, 500, 0), std::invalid_argument);
    CHECK_THROWS(cuckoo::bucket_count_for(uint64_t(1) << 40, 2), std::length_error);
    CHECK_THROWS(cuckoo::bucket_count_for(~uint64_t(0), 4), std::length_error);

    const Filter fl = Filter::for_capacity(1000, 0.001, 0, 4, 123, 77);
    CHECK_EQ(fl.fingerprint_bits(), 13u);  // ceil(log2(2 * 4 / 0.001)) = ceil(12.97)
    CHECK_EQ(fl.bucket_size(), 4u);
    CHECK_EQ(fl.max_kicks(), 123u);
    CHECK_EQ(fl.seed(), 77u);
    CHECK_EQ(fl.capacity(), 1000u);
    CHECK_EQ(fl.bucket_count(), cuckoo::bucket_count_for(1000, 4));
    CHECK_EQ(fl.slot_count(), fl.bucket_count() * 4);
    CHECK_EQ(fl.size(), 0u);
    CHECK_EQ(fl.load_factor(), 0.0);
    CHECK_EQ(fl.table_bytes(), (fl.slot_count() * 13 + 7) / 8);
    const Filter explicit_f = Filter::for_capacity(1000, 0.5, 20, 2, 500, 0);  // fingerprint_bits wins
    CHECK_EQ(explicit_f.fingerprint_bits(), 20u);
    // Without a given capacity, capacity() is the design load of the slots.
    const Filter raw(800, 4, 16, 500, 0);
    CHECK_EQ(raw.capacity(), static_cast<uint64_t>(3200 * cuckoo::design_load(4)));
}

TEST_CASE(fingerprint_bits_for) {
    CHECK_EQ(cuckoo::fingerprint_bits_for(0.001, 4), 13u);
    CHECK_EQ(cuckoo::fingerprint_bits_for(0.001, 2), 12u);
    CHECK_EQ(cuckoo::fingerprint_bits_for(0.001, 8), 14u);
    CHECK_EQ(cuckoo::fingerprint_bits_for(0.01, 4), 10u);
    // Exact powers of two: 2b/fpr = 2^13 needs exactly 13 bits, not 14.
    CHECK_EQ(cuckoo::fingerprint_bits_for(std::ldexp(1.0, -10), 4), 13u);
    CHECK_EQ(cuckoo::fingerprint_bits_for(std::ldexp(1.0, -10) * (1 - 1e-6), 4), 14u);
    CHECK_EQ(cuckoo::fingerprint_bits_for(std::ldexp(8.0, -32), 4), 32u);  // 2b/2^32: the widest
    CHECK_THROWS(cuckoo::fingerprint_bits_for(std::ldexp(8.0, -32) * (1 - 1e-6), 4), std::invalid_argument);
    // Clamped below at 4 bits.
    CHECK_EQ(cuckoo::fingerprint_bits_for(0.5, 2), 4u);
    CHECK_EQ(cuckoo::fingerprint_bits_for(0.9, 4), 4u);
    // Out of range.
    for (double bad : {0.0, 1.0, -0.1, 1.5, std::numeric_limits<double>::quiet_NaN(),
                       std::numeric_limits<double>::infinity()})
        CHECK_THROWS(cuckoo::fingerprint_bits_for(bad, 4), std::invalid_argument);
    CHECK_THROWS(cuckoo::fingerprint_bits_for(1e-12, 4), std::invalid_argument);
    // So small that 2b/fpr overflows to infinity: must be refused, not wrapped to a small width.
    CHECK_THROWS(cuckoo::fingerprint_bits_for(std::numeric_limits<double>::denorm_min(), 4), std::invalid_argument);
    CHECK_THROWS(cuckoo::fingerprint_bits_for(1e-310, 2), std::invalid_argument);
    // The smallest f with 2b / 2^f <= fpr, over a sweep.
    for (unsigned b : kBucketSizes) {
        for (double fpr = 0.9; fpr > 1e-8; fpr *= 0.83) {
            const unsigned f = cuckoo::fingerprint_bits_for(fpr, b);
            cktest::context() = "fpr=" + cktest::show(fpr) + " b=" + std::to_string(b);
            CHECK(2.0 * b / std::ldexp(1.0, static_cast<int>(f)) <= fpr * (1 + 1e-9));
            if (f > cuckoo::kMinFingerprintBits) CHECK(2.0 * b / std::ldexp(1.0, static_cast<int>(f) - 1) > fpr);
        }
    }
}

TEST_CASE(expected_fpr_formula) {
    for (unsigned b : kBucketSizes) {
        for (unsigned f = 4; f <= 32; ++f) {
            cktest::context() = "b=" + std::to_string(b) + " f=" + std::to_string(f);
            CHECK_EQ(cuckoo::expected_fpr(f, b, 0.0), 0.0);
            double previous = 0.0;
            for (double load : {0.1, 0.5, 0.9, 0.95, 1.0}) {
                const double got = cuckoo::expected_fpr(f, b, load);
                const double want = fpr_formula(f, b, load);
                CHECK(std::fabs(got - want) <= 2e-6 * want);
                CHECK(got > previous);
                // Below the union bound 2 b load / (2^f - 1), and close to it when small.
                const double union_bound = 2.0 * b * load / (std::ldexp(1.0, static_cast<int>(f)) - 1.0);
                if (2.0 * b * load >= 1.0) CHECK(got <= union_bound * (1 + 1e-12));  // Bernoulli
                if (union_bound < 1e-3) CHECK(got >= union_bound * (1 - 1e-3));
                previous = got;
            }
        }
    }
    // Filter accessors use it at the current load and at load 1.
    Filter fl(64, 4, 8, 500, 1);
    const std::vector<uint64_t> keys = distinct_keys(100, 1);
    for (uint64_t k : keys) REQUIRE(fl.insert_hash(fl.hash_int(k)));
    CHECK_EQ(fl.load_factor(), 100.0 / 256.0);
    CHECK_EQ(fl.expected_fpr(), cuckoo::expected_fpr(8, 4, 100.0 / 256.0));
    CHECK_EQ(fl.fpr_bound(), cuckoo::expected_fpr(8, 4, 1.0));
}

TEST_CASE(bucket_count_for_sizing) {
    for (unsigned b : kBucketSizes) {
        uint64_t previous = 0;
        for (uint64_t n : {uint64_t(1), uint64_t(7), uint64_t(100), uint64_t(1000), uint64_t(10000), uint64_t(12345),
                           uint64_t(100003), uint64_t(1000000), uint64_t(60000000), uint64_t(1000000007)}) {
            const uint64_t m = cuckoo::bucket_count_for(n, b);
            cktest::context() = "n=" + std::to_string(n) + " b=" + std::to_string(b);
            CHECK_EQ(m % cuckoo::kBlockBuckets, 0u);
            CHECK(m >= cuckoo::kBlockBuckets);
            CHECK(static_cast<double>(m) * b * cuckoo::design_load(b) >= static_cast<double>(n));
            // No more than one block of rounding above the exact need.
            CHECK(static_cast<double>(m - cuckoo::kBlockBuckets) * b * cuckoo::design_load(b) < static_cast<double>(n) + b);
            CHECK(m >= previous);
            previous = m;
        }
    }
    // b = 4 at n >= 10,000: within 10% of the memory of a table at load 0.95.
    for (uint64_t n : {uint64_t(10000), uint64_t(12345), uint64_t(100003), uint64_t(1000000), uint64_t(60000000)}) {
        for (unsigned f : {8u, 12u, 16u}) {
            const double bits = static_cast<double>(cuckoo::bucket_count_for(n, 4)) * 4 * f;
            const double ideal = static_cast<double>(n) * f / 0.95;
            cktest::context() = "n=" + std::to_string(n) + " f=" + std::to_string(f);
            CHECK(bits >= 0.9 * ideal && bits <= 1.1 * ideal);
        }
    }
}

TEST_CASE(filling_to_capacity_succeeds) {
    struct Case {
        uint64_t n;
        unsigned b;
        double fpr;
    };
    const Case cases[] = {{10000, 4, 0.001},  {12345, 4, 0.001}, {100003, 4, 0.001}, {1000000, 4, 0.001},
                          {12345, 4, 0.5},    {12345, 2, 0.001}, {100003, 2, 0.001}, {12345, 8, 0.001},
                          {100003, 8, 0.001}, {10000, 4, 1e-8}};
    uint64_t seed = 0;
    for (const Case& c : cases) {
        ++seed;
        Filter fl = Filter::for_capacity(c.n, c.fpr, 0, c.b, 500, seed);
        cktest::context() = "n=" + std::to_string(c.n) + " " + params(fl.bucket_count(), c.b, fl.fingerprint_bits());
        const std::vector<uint64_t> keys = distinct_keys(c.n, seed);
        bool full = false;
        const uint64_t done = fl.insert_batch(c.n, IntKeys{&fl, &keys}, Filter::InsertMode::Always, nullptr, full, kNeverStop);
        CHECK_EQ(done, c.n);
        CHECK(!full);
        CHECK_EQ(fl.size(), c.n);
        CHECK_EQ(fl.count_occupied(), c.n);
        std::unique_ptr<bool[]> found(new bool[c.n]);
        fl.contains_batch(c.n, IntKeys{&fl, &keys}, found.get(), kNeverStop);
        uint64_t missing = 0;
        for (uint64_t i = 0; i < c.n; ++i) missing += !found[i];
        CHECK_EQ(missing, 0u);
    }
}

// ---- bucket indices ----------------------------------------------------------------------------

TEST_CASE(alt_index_xor_duality) {
    cktest::Rng rng(20);
    std::vector<uint64_t> sizes;
    for (uint64_t m = 8; m <= 264; m += 8) sizes.push_back(m);
    for (uint64_t m : {1000u, 1024u, 4104u, 65536u, 65544u, 1048568u, 1048576u}) sizes.push_back(m);
    for (uint64_t m : sizes) {
        for (unsigned f = 4; f <= 32; ++f) {
            cktest::context() = params(m, 2, f);
            const Filter fl(m, 2, f, 500, 0);
            const uint32_t max_fp = static_cast<uint32_t>((uint64_t(1) << f) - 1);
            std::vector<uint32_t> fps;
            if (f <= 6) {
                for (uint32_t fp = 1; fp <= max_fp; ++fp) fps.push_back(fp);
            } else {
                fps = {1, 2, max_fp, max_fp - 1, max_fp / 2, max_fp / 2 + 1};
                for (int i = 0; i < 40; ++i) fps.push_back(1 + static_cast<uint32_t>(rng.below(max_fp)));
            }
            std::vector<uint64_t> indices;
            if (m <= 136) {
                for (uint64_t i = 0; i < m; ++i) indices.push_back(i);
            } else {
                indices = {0, 1, 7, 8, m / 2, m - 9, m - 8, m - 1};
                for (int i = 0; i < 100; ++i) indices.push_back(rng.below(m));
            }
            bool ok = true;
            for (uint32_t fp : fps) {
                for (uint64_t i : indices) {
                    const uint64_t a = fl.alt_index(i, fp);
                    const bool good = a < m && a != i && ((a ^ i) & 7) != 0 && fl.alt_index(a, fp) == i;
                    if (!good && ok) {
                        CHECK_MSG(good, "i=" + std::to_string(i) + " fp=" + std::to_string(fp) + " alt=" + std::to_string(a));
                        ok = false;
                    }
                }
            }
            CHECK(ok);
        }
    }
}

TEST_CASE(locate_ranges_and_extremes) {
    cktest::Rng rng(21);
    for (uint64_t m : {8u, 24u, 1000u, 65544u}) {
        for (unsigned f : {4u, 5u, 12u, 16u, 31u, 32u}) {
            cktest::context() = params(m, 4, f);
            const Filter fl(m, 4, f, 500, 3);
            const uint64_t max_fp = (uint64_t(1) << f) - 1;
            // fp = 1 + floor(hi32 * (2^f - 1) / 2^32): never 0, reaches 1 and 2^f - 1.
            CHECK_EQ(fl.fingerprint_of(0), 1u);
            CHECK_EQ(fl.fingerprint_of(0x00000000FFFFFFFFull), 1u);
            CHECK_EQ(fl.fingerprint_of(0xFFFFFFFF00000000ull), max_fp);
            CHECK_EQ(fl.index_of(0), 0u);
            CHECK_EQ(fl.index_of(0xFFFFFFFF00000000ull), 0u);
            CHECK_EQ(fl.index_of(0x00000000FFFFFFFFull), m - 1);
            for (int i = 0; i < 2000; ++i) {
                const uint64_t h = rng.next();
                const cuckoo::KeyHash k = fl.locate(h);
                CHECK(k.fp >= 1 && k.fp <= max_fp);
                CHECK(k.i1 < m && k.i2 < m);
                CHECK_EQ(k.i1, (static_cast<uint64_t>(static_cast<uint32_t>(h)) * m) >> 32);
                CHECK_EQ(k.fp, 1 + (((h >> 32) * max_fp) >> 32));
                CHECK_EQ(k.i2, fl.alt_index(k.i1, k.fp));
            }
        }
    }
    // The key hash is the seeded XXH3-64 (the default) or XXH64 of the key.
    const Filter fl(8, 4, 16, 500, 42);
    CHECK(fl.hash_algorithm() == cuckoo::HashAlgorithm::xxh3);
    CHECK_EQ(fl.hash_int(5), cuckoo::xxh3_u64(5, 42));
    CHECK_EQ(fl.hash_key("abc", 3), cuckoo::xxh3_64("abc", 3, 42));
    CHECK_EQ(fl.hash_key("abc", 3), 0xD8438DEF21BBDCC3ull);  // xxhash.xxh3_64_intdigest(b"abc", 42)
    const Filter old(8, 4, 16, 500, 42, cuckoo::HashAlgorithm::xxh64);
    CHECK_EQ(old.hash_int(5), cuckoo::hash_u64(5, 42));
    CHECK_EQ(old.hash_key("abc", 3), cuckoo::xxh64("abc", 3, 42));
}

TEST_CASE(hash_to_bucket_mapping_is_frozen) {
    // Invariant 6: (key, seed, bucket_count, f) -> (i1, i2, fp) is part of the file format.
    // Expected values computed independently in Python from the documented formulas:
    //   h = xxhash.xxh64_intdigest(key.to_bytes(8, "little"), seed)     (hash algorithm 1)
    //   h = xxhash.xxh3_64_intdigest(key.to_bytes(8, "little"), seed)   (hash algorithm 2)
    //   i1 = ((h & 0xFFFFFFFF) * m) >> 32;  fp = 1 + (((h >> 32) * (2**f - 1)) >> 32)
    //   g = splitmix64_finaliser(fp); hb = ((g & 0xFFFFFFFF) * (m // 8)) >> 32
    //   ho = 1 + (((g >> 32) * 7) >> 32); i2 = ((hb - (i1 >> 3)) % (m // 8)) * 8 + ((i1 & 7) ^ ho)
    struct Golden {
        cuckoo::HashAlgorithm algorithm;
        uint64_t m;
        unsigned f;
        uint64_t seed, key, h, i1, i2;
        uint32_t fp;
    };
    const Golden golden[] = {
        {cuckoo::HashAlgorithm::xxh64, 8, 4, 0x0ull, 0x0ull, 0x34C96ACDCADB1BBBull, 6, 0, 4},
        {cuckoo::HashAlgorithm::xxh64, 8, 4, 0x0ull, 0x1ull, 0x9F29CB17A2A49995ull, 5, 4, 10},
        {cuckoo::HashAlgorithm::xxh64, 8, 4, 0x0ull, 0x8000000000000000ull, 0x3F425EACF01544E0ull, 7, 1, 4},
        {cuckoo::HashAlgorithm::xxh64, 8, 4, 0x0ull, 0xFFFFFFFFFFFFFFFFull, 0x85D136ADB773C6C9ull, 5, 3, 8},
        {cuckoo::HashAlgorithm::xxh64, 8, 4, 0x0ull, 0x75BCD15ull, 0xCB7C2941B198004Dull, 5, 7, 12},
        {cuckoo::HashAlgorithm::xxh64, 1000, 12, 0x0ull, 0x0ull, 0x34C96ACDCADB1BBBull, 792, 364, 845},
        {cuckoo::HashAlgorithm::xxh64, 1000, 12, 0x0ull, 0x1ull, 0x9F29CB17A2A49995ull, 635, 709, 2546},
        {cuckoo::HashAlgorithm::xxh64, 1000, 12, 0x0ull, 0x8000000000000000ull, 0x3F425EACF01544E0ull, 937, 486, 1012},
        {cuckoo::HashAlgorithm::xxh64, 1000, 12, 0x0ull, 0xFFFFFFFFFFFFFFFFull, 0x85D136ADB773C6C9ull, 716, 5, 2141},
        {cuckoo::HashAlgorithm::xxh64, 1000, 12, 0x0ull, 0x75BCD15ull, 0xCB7C2941B198004Dull, 693, 400, 3255},
        {cuckoo::HashAlgorithm::xxh64, 123456, 16, 0x2Aull, 0x0ull, 0xB71B47EBDA15746Cull, 105170, 106216, 46875},
        {cuckoo::HashAlgorithm::xxh64, 123456, 16, 0x2Aull, 0x1ull, 0x9ED50FD59358D232ull, 71058, 112189, 40661},
        {cuckoo::HashAlgorithm::xxh64, 123456, 16, 0x2Aull, 0x8000000000000000ull, 0x88608019C494C1F4ull, 94801, 97467, 34912},
        {cuckoo::HashAlgorithm::xxh64, 123456, 16, 0x2Aull, 0xFFFFFFFFFFFFFFFFull, 0x358AE035BFB46FD2ull, 92449, 50664, 13707},
        {cuckoo::HashAlgorithm::xxh64, 123456, 16, 0x2Aull, 0x75BCD15ull, 0x2F64F8F3490DEF3Full, 35230, 21762, 12133},
        {cuckoo::HashAlgorithm::xxh64, 1048576, 32, 0xFFFFFFFFFFFFFFFFull, 0x0ull, 0x60B899029D747159ull, 644935, 740764, 1622710530},
        {cuckoo::HashAlgorithm::xxh64, 1048576, 32, 0xFFFFFFFFFFFFFFFFull, 0x1ull, 0x0CF2B890E8D9479Full, 953748, 281053, 217233552},
        {cuckoo::HashAlgorithm::xxh64, 1048576, 32, 0xFFFFFFFFFFFFFFFFull, 0x8000000000000000ull, 0xB0BDB479FE9B7026ull, 1042871, 117197, 2965222521u},
        {cuckoo::HashAlgorithm::xxh64, 1048576, 32, 0xFFFFFFFFFFFFFFFFull, 0xFFFFFFFFFFFFFFFFull, 0x1A158C94ABF6A8B1ull, 704362, 823317, 437619860},
        {cuckoo::HashAlgorithm::xxh64, 1048576, 32, 0xFFFFFFFFFFFFFFFFull, 0x75BCD15ull, 0xA934ACFFB529B206ull, 742043, 619584, 2838801663u},
        {cuckoo::HashAlgorithm::xxh3, 8, 4, 0x0ull, 0x0ull, 0xC77B3ABB6F87ACD9ull, 3, 1, 12},
        {cuckoo::HashAlgorithm::xxh3, 8, 4, 0x0ull, 0x1ull, 0x2FBC593564DB792Eull, 3, 2, 3},
        {cuckoo::HashAlgorithm::xxh3, 8, 4, 0x0ull, 0x8000000000000000ull, 0x828F2476789A0E5Full, 3, 5, 8},
        {cuckoo::HashAlgorithm::xxh3, 8, 4, 0x0ull, 0xFFFFFFFFFFFFFFFFull, 0x5111C7E47D784413ull, 3, 6, 5},
        {cuckoo::HashAlgorithm::xxh3, 8, 4, 0x0ull, 0x75BCD15ull, 0x27196AB4438F6AD5ull, 2, 3, 3},
        {cuckoo::HashAlgorithm::xxh3, 1000, 12, 0x0ull, 0x0ull, 0xC77B3ABB6F87ACD9ull, 435, 527, 3191},
        {cuckoo::HashAlgorithm::xxh3, 1000, 12, 0x0ull, 0x1ull, 0x2FBC593564DB792Eull, 393, 109, 764},
        {cuckoo::HashAlgorithm::xxh3, 1000, 12, 0x0ull, 0x8000000000000000ull, 0x828F2476789A0E5Full, 471, 673, 2089},
        {cuckoo::HashAlgorithm::xxh3, 1000, 12, 0x0ull, 0xFFFFFFFFFFFFFFFFull, 0x5111C7E47D784413ull, 490, 739, 1297},
        {cuckoo::HashAlgorithm::xxh3, 1000, 12, 0x0ull, 0x75BCD15ull, 0x27196AB4438F6AD5ull, 263, 889, 626},
        {cuckoo::HashAlgorithm::xxh3, 123456, 16, 0x2Aull, 0x0ull, 0x4596708167F8EB2Eull, 50140, 55573, 17815},
        {cuckoo::HashAlgorithm::xxh3, 123456, 16, 0x2Aull, 0x1ull, 0xE3ACD5DEC7D7D3FBull, 96374, 94577, 58284},
        {cuckoo::HashAlgorithm::xxh3, 123456, 16, 0x2Aull, 0x8000000000000000ull, 0x8FFD6E7EAE2CB767ull, 83995, 30508, 36861},
        {cuckoo::HashAlgorithm::xxh3, 123456, 16, 0x2Aull, 0xFFFFFFFFFFFFFFFFull, 0x412B089853A0709Eull, 40328, 33044, 16683},
        {cuckoo::HashAlgorithm::xxh3, 123456, 16, 0x2Aull, 0x75BCD15ull, 0xCB54F640BF059482ull, 92120, 41367, 52053},
        {cuckoo::HashAlgorithm::xxh3, 1048576, 32, 0xFFFFFFFFFFFFFFFFull, 0x0ull, 0x278EE7FDE0BA32CCull, 920483, 407890, 663676925},
        {cuckoo::HashAlgorithm::xxh3, 1048576, 32, 0xFFFFFFFFFFFFFFFFull, 0x1ull, 0x7928E38151286E3Cull, 332422, 705017, 2032722817},
        {cuckoo::HashAlgorithm::xxh3, 1048576, 32, 0xFFFFFFFFFFFFFFFFull, 0x8000000000000000ull, 0xC91F577A3C1A4966ull, 246180, 213959, 3374274426u},
        {cuckoo::HashAlgorithm::xxh3, 1048576, 32, 0xFFFFFFFFFFFFFFFFull, 0xFFFFFFFFFFFFFFFFull, 0xDA8F77A4D5C399EAull, 875577, 672034, 3666835364u},
        {cuckoo::HashAlgorithm::xxh3, 1048576, 32, 0xFFFFFFFFFFFFFFFFull, 0x75BCD15ull, 0xBDD133C29EBF3AA8ull, 650227, 316396, 3184604098u},
    };
    for (const Golden& g : golden) {
        const Filter fl(g.m, 2, g.f, 500, g.seed, g.algorithm);
        cktest::context() = params(g.m, 2, g.f) + " key=" + cktest::show(g.key) + " " +
                            cuckoo::hash_algorithm_name(g.algorithm);
        const uint64_t h = fl.hash_int(g.key);
        CHECK_EQ(h, g.h);
        const cuckoo::KeyHash k = fl.locate(h);
        CHECK_EQ(k.i1, g.i1);
        CHECK_EQ(k.i2, g.i2);
        CHECK_EQ(k.fp, g.fp);
    }
}

// ---- inserts, failures, no false negatives -----------------------------------------------------

TEST_CASE(no_false_negatives_after_filling_to_first_failure) {
    uint64_t seed = 100;
    for (unsigned b : kBucketSizes) {
        for (unsigned f : {4u, 7u, 12u, 16u, 32u}) {
            for (unsigned kicks : {0u, 1u, 10u, 500u}) {
                ++seed;
                const uint64_t m = 1000;
                cktest::context() = params(m, b, f) + " kicks=" + std::to_string(kicks);
                Filter fl(m, b, f, kicks, seed);
                const std::vector<uint64_t> keys = distinct_keys(m * b + 1, seed);
                std::vector<uint64_t> inserted;
                uint64_t i = 0;
                for (; i < keys.size(); ++i) {
                    if (!fl.insert_hash(fl.hash_int(keys[i]))) break;
                    inserted.push_back(keys[i]);
                }
                REQUIRE(i < keys.size());  // more keys than slots: some insert must fail
                {
                    // The failed insert changed nothing: the filter equals a replay of the
                    // successful inserts (inserts are deterministic), byte for byte.
                    Filter replay(m, b, f, kicks, seed);
                    for (uint64_t k : inserted) REQUIRE(replay.insert_hash(replay.hash_int(k)));
                    CHECK(bytes_of(fl) == bytes_of(replay));
                    CHECK_EQ(fl.size(), replay.size());
                }
                const double load = fl.load_factor();
                // Loads at the first failure; a BFS over 500 buckets gets close to the known
                // thresholds (~0.84 / 0.955 / 0.98 for b = 2 / 4 / 8).
                if (kicks == 500) {
                    const double floor = b == 2 ? 0.80 : b == 4 ? 0.93 : 0.96;
                    CHECK_MSG(load >= floor, "load " + cktest::show(load));
                }
                CHECK_EQ(fl.stats().failed_inserts, 1u);
                // Keep inserting past the first failure: every failure changes nothing, some
                // later keys still fit.
                for (uint64_t j = i + 1; j < keys.size() && j < i + 300; ++j) {
                    const std::vector<unsigned char> before = bytes_of(fl);
                    if (fl.insert_hash(fl.hash_int(keys[j])))
                        inserted.push_back(keys[j]);
                    else
                        CHECK(bytes_of(fl) == before);
                }
                CHECK_EQ(fl.size(), inserted.size());
                CHECK_EQ(fl.count_occupied(), inserted.size());
                uint64_t missing = 0;
                for (uint64_t k : inserted) missing += !fl.contains_hash(fl.hash_int(k));
                CHECK_EQ(missing, 0u);
                if (f == 32) {
                    // 32-bit fingerprints of distinct keys do not collide here: each key is stored
                    // exactly once, so no eviction chain duplicated or dropped a fingerprint.
                    uint64_t not_once = 0;
                    for (uint64_t k : inserted) not_once += fl.count_hash(fl.hash_int(k)) != 1;
                    CHECK_EQ(not_once, 0u);
                }
            }
        }
    }
}

TEST_CASE(a_key_fits_at_most_2b_times) {
    for (unsigned b : kBucketSizes) for (unsigned f : {4u, 5u, 16u}) {
        Filter fl(64, b, f, 500, 5);
        cktest::context() = "b=" + std::to_string(b) + " f=" + std::to_string(f);
        // Some other keys around, so that the copies have to evict.
        const std::vector<uint64_t> others = distinct_keys(40, 5);
        for (uint64_t k : others) REQUIRE(fl.insert_hash(fl.hash_int(k)));
        const uint64_t h = fl.hash_int(0xDEADBEEF);
        for (unsigned i = 0; i < 2 * b; ++i) CHECK(fl.insert_hash(h));
        CHECK_EQ(fl.count_hash(h), 2u * b);
        // The bulk count of a pair holding 2b copies (the most a count can be) at this level.
        const std::vector<uint64_t> key{0xDEADBEEF};
        uint8_t counted = 0;
        CHECK_EQ(fl.count_batch(1, IntKeys{&fl, &key}, &counted, kNeverStop), 1u);
        CHECK_EQ(counted, 2u * b);
        const std::vector<unsigned char> before = bytes_of(fl);
        CHECK(!fl.insert_hash(h));
        CHECK(bytes_of(fl) == before);
        CHECK_EQ(fl.count_hash(h), 2u * b);
        for (uint64_t k : others) CHECK(fl.contains_hash(fl.hash_int(k)));
        for (unsigned i = 0; i < 2 * b; ++i) CHECK(fl.erase_hash(h));
        CHECK(!fl.erase_hash(h));
        CHECK(!fl.contains_hash(h));
        CHECK_EQ(fl.size(), others.size());
    }
}

TEST_CASE(multiset_semantics_against_a_model) {
    // f = 32: no two keys of the universe share a fingerprint, so counts are exact. f = 4: many
    // fingerprints collide, so counts may only be larger than the model's (false positives), never
    // smaller (false negatives). Erase is applied only to keys present (erasing an absent key may
    // remove another key's fingerprint: that is inherent to filters, not tested here).
    for (unsigned f : {32u, 4u}) {
        for (unsigned b : kBucketSizes) {
            const uint64_t m = 256;
            cktest::context() = params(m, b, f);
            Filter fl(m, b, f, 500, 9);
            const std::vector<uint64_t> universe = distinct_keys(60, 9);
            std::map<uint64_t, unsigned> model;
            uint64_t model_size = 0;
            if (f == 32) {
                std::set<uint32_t> fps;
                for (uint64_t k : universe) fps.insert(fl.locate(fl.hash_int(k)).fp);
                REQUIRE_EQ(fps.size(), universe.size());
            }
            cktest::Rng rng(30 + b + f);
            for (int op = 0; op < 20000; ++op) {
                const uint64_t key = universe[rng.below(universe.size())];
                const uint64_t h = fl.hash_int(key);
                unsigned& n = model[key];
                const uint64_t r = rng.below(100);
                if (r < 40) {
                    const std::vector<unsigned char> before = bytes_of(fl);
                    const bool ok = fl.insert_hash(h);
                    // Both buckets full of its fingerprint: no room. (Below 2b an insert may still
                    // fail when its neighbourhood is full of repeated keys; then it changes nothing.)
                    if (n == 2 * b) CHECK(!ok);
                    if (ok) {
                        ++n;
                        ++model_size;
                    } else {
                        CHECK(bytes_of(fl) == before);
                    }
                } else if (r < 55) {
                    const std::vector<unsigned char> before = bytes_of(fl);
                    bool was_new = false;
                    const bool ok = fl.insert_unique_hash(h, was_new);
                    if (f == 32) CHECK_EQ(was_new, n == 0);
                    if (n > 0) CHECK(ok && !was_new);  // present: never a false negative
                    if (!ok) {
                        CHECK(was_new);  // only an absent key needs room
                        CHECK(bytes_of(fl) == before);
                    } else if (was_new) {
                        ++n;
                        ++model_size;
                    }
                } else if (r < 85) {
                    if (n > 0 || f == 32) {
                        const bool erased = fl.erase_hash(h);
                        CHECK_EQ(erased, n > 0);
                        if (erased) {
                            --n;
                            --model_size;
                        }
                    }
                } else {
                    if (f == 32) {
                        CHECK_EQ(fl.count_hash(h), n);
                        CHECK_EQ(fl.contains_hash(h), n > 0);
                    } else {
                        CHECK(fl.count_hash(h) >= n);
                        if (n > 0) CHECK(fl.contains_hash(h));
                    }
                }
                CHECK_EQ(fl.size(), model_size);
            }
            for (const auto& [key, n] : model) {
                const uint64_t h = fl.hash_int(key);
                if (f == 32)
                    CHECK_EQ(fl.count_hash(h), n);
                else
                    CHECK(fl.count_hash(h) >= n);
            }
            CHECK_EQ(fl.count_occupied(), model_size);
        }
    }
}

// ---- batches -------------------------------------------------------------------------------------

TEST_CASE(batch_operations_equal_scalar_operations) {
    cktest::Rng rng(40);
    uint64_t batches = 0, completed = 0;
    for (unsigned b : kBucketSizes) {
        // Every f, so every BucketShape (aligned, one load, one word, several words) and every
        // lane layout the AVX2 lookup kernel reads.
        for (unsigned f = cuckoo::kMinFingerprintBits; f <= cuckoo::kMaxFingerprintBits; ++f) {
            for (uint64_t n : {0u, 1u, 31u, 32u, 33u, 64u, 100u, 400u}) {
                const uint64_t m = 512;
                cktest::context() = params(m, b, f) + " n=" + std::to_string(n);
                Filter base(m, b, f, 500, 11);
                // A filter a third full to start from (at most 72% after the batch).
                const std::vector<uint64_t> prefill = distinct_keys(m * b / 3, 11);
                for (uint64_t k : prefill) REQUIRE(base.insert_hash(base.hash_int(k)));
                // Batch keys: some present, some absent, some repeated within the batch (a key at
                // most 3 times in all, below the 2b = 4 copies a key can have at b = 2).
                std::vector<uint64_t> keys(n);
                std::map<uint64_t, unsigned> uses;
                for (uint64_t k : prefill) uses[k] = 1;
                for (uint64_t i = 0; i < n; ++i) {
                    const uint64_t r = rng.below(3);
                    uint64_t key = rng.next();
                    if (r == 0) key = prefill[rng.below(prefill.size())];
                    else if (r == 1 && i > 0) key = keys[rng.below(i)];
                    if (uses[key] >= 3) key = rng.next();
                    ++uses[key];
                    keys[i] = key;
                }

                // contains / count
                std::unique_ptr<bool[]> contained(new bool[n + 1]);
                std::vector<uint8_t> contained8(n + 1, 7), counts(n + 1, 77);
                std::vector<uint32_t> counts32(n + 1, 77);
                CHECK_EQ(base.contains_batch(n, IntKeys{&base, &keys}, contained.get(), kNeverStop), n);
                CHECK_EQ(base.contains_batch(n, IntKeys{&base, &keys}, contained8.data(), kNeverStop), n);
                CHECK_EQ(base.count_batch(n, IntKeys{&base, &keys}, counts.data(), kNeverStop), n);
                CHECK_EQ(base.count_batch(n, IntKeys{&base, &keys}, counts32.data(), kNeverStop), n);
                for (uint64_t i = 0; i < n; ++i) {
                    const uint64_t h = base.hash_int(keys[i]);
                    CHECK_EQ(contained[i], base.contains_hash(h));
                    CHECK_EQ(contained8[i], static_cast<uint8_t>(base.contains_hash(h)));
                    CHECK_EQ(counts[i], base.count_hash(h));
                    CHECK_EQ(counts32[i], base.count_hash(h));
                }
                CHECK_EQ(contained8[n], 7);  // nothing written past n
                CHECK_EQ(counts[n], 77);

                // insert (Always): same table bytes as inserting one by one, stopping at the same
                // key if one finds no room (repeated keys can saturate a neighbourhood).
                {
                    Filter batch = base, scalar = base;
                    bool full = true;
                    const uint64_t done = batch.insert_batch(n, IntKeys{&batch, &keys}, Filter::InsertMode::Always,
                                                             nullptr, full, kNeverStop);
                    uint64_t expected_done = 0;
                    while (expected_done < n && scalar.insert_hash(scalar.hash_int(keys[expected_done]))) ++expected_done;
                    CHECK_EQ(done, expected_done);
                    CHECK_EQ(full, done < n);
                    CHECK(bytes_of(batch) == bytes_of(scalar));
                    CHECK_EQ(batch.size(), scalar.size());
                    CHECK(batch == scalar);
                    ++batches;
                    completed += done == n;
                }
                // insert (Unique): was_new and table equal the scalar unique inserts; a key repeated
                // in the batch is new only the first time.
                {
                    Filter batch = base, scalar = base;
                    std::unique_ptr<bool[]> was_new(new bool[n + 1]);
                    bool full = true;
                    const uint64_t done = batch.insert_batch(n, IntKeys{&batch, &keys}, Filter::InsertMode::Unique,
                                                             was_new.get(), full, kNeverStop);
                    CHECK_EQ(full, done < n);
                    std::set<uint64_t> seen;
                    uint64_t expected_done = 0;
                    for (; expected_done < n; ++expected_done) {
                        const uint64_t i = expected_done;
                        bool expected = false;
                        if (!scalar.insert_unique_hash(scalar.hash_int(keys[i]), expected)) break;
                        CHECK_EQ(was_new[i], expected);
                        if (!seen.insert(keys[i]).second) CHECK(!was_new[i]);  // repeat in this batch
                    }
                    CHECK_EQ(done, expected_done);
                    ++batches;
                    completed += done == n;
                    CHECK(bytes_of(batch) == bytes_of(scalar));
                    CHECK_EQ(batch.size(), scalar.size());
                    // Without a was_new array.
                    Filter batch2 = base;
                    batch2.insert_batch(n, IntKeys{&batch2, &keys}, Filter::InsertMode::Unique, nullptr, full, kNeverStop);
                    CHECK(bytes_of(batch2) == bytes_of(scalar));
                }
                // erase
                {
                    Filter batch = base, scalar = base;
                    std::unique_ptr<bool[]> erased(new bool[n + 1]);
                    CHECK_EQ(batch.erase_batch(n, IntKeys{&batch, &keys}, erased.get(), kNeverStop), n);
                    for (uint64_t i = 0; i < n; ++i) CHECK_EQ(erased[i], scalar.erase_hash(scalar.hash_int(keys[i])));
                    CHECK(bytes_of(batch) == bytes_of(scalar));
                    CHECK_EQ(batch.size(), scalar.size());
                    Filter batch2 = base;
                    batch2.erase_batch(n, IntKeys{&batch2, &keys}, static_cast<bool*>(nullptr), kNeverStop);
                    CHECK(bytes_of(batch2) == bytes_of(scalar));
                }
            }
        }
    }
    // Most batches fit entirely (the full-batch path is what is being compared).
    CHECK_MSG(completed * 10 >= batches * 9, std::to_string(completed) + " of " + std::to_string(batches));
}

// Inserts keys into `scalar` one by one (unique inserts or not) until one fails; returns how many
// went in, checking that each unique insert's was_new[k] (from a batch) says what the scalar one did.
uint64_t scalar_inserts_until_failure(Filter& scalar, const std::vector<uint64_t>& keys, bool unique, const bool* was_new) {
    uint64_t done = 0;
    for (; done < keys.size(); ++done) {
        const uint64_t h = scalar.hash_int(keys[done]);
        bool fresh = true;
        if (!(unique ? scalar.insert_unique_hash(h, fresh) : scalar.insert_hash(h))) break;
        if (unique) CHECK_EQ(was_new[done], fresh);
    }
    return done;
}

TEST_CASE(insert_batch_stops_at_the_first_failure) {
    for (unsigned b : kBucketSizes) {
        for (auto mode : {Filter::InsertMode::Always, Filter::InsertMode::Unique}) {
            const bool unique = mode == Filter::InsertMode::Unique;
            const uint64_t m = 16;
            cktest::context() = params(m, b, 12) + (unique ? " unique" : " always");
            Filter batch(m, b, 12, 20, 13);
            Filter scalar = batch;
            // More keys than slots, with repeats, so that the batch must stop part way.
            std::vector<uint64_t> keys = distinct_keys(m * b + 50, 13);
            for (uint64_t i = 5; i < keys.size(); i += 7) keys[i] = keys[i - 3];
            std::unique_ptr<bool[]> was_new(new bool[keys.size()]);
            bool full = false;
            const uint64_t done =
                batch.insert_batch(keys.size(), IntKeys{&batch, &keys}, mode, was_new.get(), full, kNeverStop);
            CHECK(full);
            CHECK(done < keys.size());
            const uint64_t expected_done = scalar_inserts_until_failure(scalar, keys, unique, was_new.get());
            CHECK_EQ(done, expected_done);
            CHECK(bytes_of(batch) == bytes_of(scalar));  // nothing after the failing key went in
            CHECK_EQ(batch.size(), scalar.size());
            CHECK_EQ(batch.stats().failed_inserts, 1u);
        }
    }
}

// Batch inserts filling a table to its first failure, with evictions among the keys of every
// block (the AVX2 insert loop plans a block on the table as it was before the block, and must
// notice every bucket an earlier key or an eviction changed): the same bytes, counts and
// statistics as scalar inserts, for every bucket shape, with repeated keys, both modes.
TEST_CASE(insert_batch_to_the_first_failure_equals_scalar_inserts) {
    for (unsigned b : kBucketSizes) {
        for (unsigned f : {4u, 8u, 9u, 12u, 13u, 16u, 17u, 24u, 32u}) {
            for (int variant = 0; variant < 4; ++variant) {
                const auto mode = variant % 2 ? Filter::InsertMode::Unique : Filter::InsertMode::Always;
                const bool unique = mode == Filter::InsertMode::Unique;
                const bool vector_keys = variant >= 2;  // buckets read with loads instead of gathers
                const uint64_t m = 2048;
                cktest::context() = params(m, b, f) + (unique ? " unique" : " always") + (vector_keys ? " loads" : "");
                Filter batch(m, b, f, 500, 21);
                Filter scalar = batch;
                std::vector<uint64_t> keys = distinct_keys(m * b + 64, 21 + f);
                for (uint64_t i = 9; i < keys.size(); i += 13) keys[i] = keys[i - 1 - i % 5];  // repeats, some in-block
                std::unique_ptr<bool[]> was_new(new bool[keys.size()]);
                bool full = false;
                const uint64_t done =
                    vector_keys
                        ? batch.insert_batch(keys.size(), VectorIntKeys{&batch, &keys}, mode, was_new.get(), full, kNeverStop)
                        : batch.insert_batch(keys.size(), IntKeys{&batch, &keys}, mode, was_new.get(), full, kNeverStop);
                const uint64_t expected_done = scalar_inserts_until_failure(scalar, keys, unique, was_new.get());
                CHECK_EQ(done, expected_done);
                CHECK_EQ(full, done < keys.size());
                if (f >= 8) CHECK(done > m * b / 2);  // into the eviction-heavy range (4-bit ones saturate early)
                CHECK(bytes_of(batch) == bytes_of(scalar));
                CHECK_EQ(batch.size(), scalar.size());
                CHECK_EQ(batch.stats().inserts, scalar.stats().inserts);
                CHECK_EQ(batch.stats().kicked_inserts, scalar.stats().kicked_inserts);
                CHECK_EQ(batch.stats().moves, scalar.stats().moves);
            }
        }
    }
}

// The eviction search's lookahead (how far ahead of the bucket examined it generates and
// prefetches candidates: evict.hpp, chosen by table size and CPU vendor) changes only when buckets
// are requested, never the result: on a nearly full table, every lookahead finds the same bucket
// and slot, moves as many items and leaves the same table as expanding whole levels.
TEST_CASE(eviction_search_result_is_the_same_for_every_lookahead) {
    struct SlotTable {  // b tags a bucket, 0 empty
        std::vector<uint32_t> tags;
        unsigned b;
        unsigned slots_per_bucket() const { return b; }
        uint32_t tag(uint64_t bucket, unsigned slot) const { return tags[bucket * b + slot]; }
        int empty_slot(uint64_t bucket) const {
            for (unsigned s = 0; s < b; ++s)
                if (tags[bucket * b + s] == 0) return static_cast<int>(s);
            return -1;
        }
        void move(uint64_t from, unsigned from_slot, uint64_t to, unsigned to_slot) {
            tags[to * b + to_slot] = tags[from * b + from_slot];
        }
        void prefetch(uint64_t) const {}
    };
    cktest::Rng rng(77);
    for (unsigned b : kBucketSizes) {
        const uint64_t m = 4096;
        const unsigned f = 12;
        cktest::context() = params(m, b, f);
        const cuckoo::Locator loc{m, m / cuckoo::kBlockBuckets, f};
        SlotTable full{std::vector<uint32_t>(m * b), b};
        for (uint32_t& t : full.tags)  // 97% of the slots hold a tag (any tag may sit in any bucket)
            t = rng.coin(97) ? static_cast<uint32_t>(1 + rng.below((1u << f) - 1)) : 0;
        std::vector<cuckoo::EvictNode> nodes;
        uint64_t searches_found = 0;
        for (int trial = 0; trial < 300; ++trial) {
            const uint64_t i1 = rng.below(m);
            const uint64_t i2 = loc.alt_index(i1, static_cast<uint32_t>(1 + rng.below((1u << f) - 1)));
            const unsigned max_kicks = trial % 3 == 0 ? 20 : 500;  // budgets that run out, too
            SlotTable whole = full;
            const cuckoo::EvictResult expected =
                cuckoo::evict_search(whole, loc, i1, i2, max_kicks, nodes, cuckoo::kEvictWholeLevel);
            searches_found += expected.found;
            for (size_t lookahead : {size_t(1), size_t(2), cuckoo::kEvictLookaheadCached, cuckoo::kEvictLookaheadIntel,
                                     size_t(16), cuckoo::evict_lookahead_beyond_caches()}) {
                SlotTable t = full;
                const cuckoo::EvictResult r = cuckoo::evict_search(t, loc, i1, i2, max_kicks, nodes, lookahead);
                CHECK_EQ(r.found, expected.found);
                CHECK_EQ(r.bucket, expected.bucket);
                CHECK_EQ(r.slot, expected.slot);
                CHECK_EQ(r.moves, expected.moves);
                CHECK_EQ(r.buckets_searched, expected.buckets_searched);
                CHECK(t.tags == whole.tags);
            }
        }
        CHECK(searches_found > 100);  // the searches did find room, through chains of moves
    }
}

TEST_CASE(batches_stop_when_asked_between_blocks) {
    const uint64_t n = 200, m = 256;
    Filter base(m, 4, 16, 500, 17);
    const std::vector<uint64_t> keys = distinct_keys(n, 17);
    for (uint64_t stop_at_poll : {1u, 2u, 3u, 7u, 8u}) {
        // should_stop() is polled before each block of kBatchBlock keys: stopping at the p-th poll
        // completes p - 1 blocks.
        const uint64_t expected = std::min<uint64_t>(n, (stop_at_poll - 1) * cuckoo::kBatchBlock);
        cktest::context() = "stop at poll " + std::to_string(stop_at_poll);
        unsigned polls = 0;
        auto stop = [&] { return ++polls >= stop_at_poll; };

        Filter fl = base;
        bool full = true;
        polls = 0;
        CHECK_EQ(fl.insert_batch(n, IntKeys{&fl, &keys}, Filter::InsertMode::Always, nullptr, full, stop), expected);
        CHECK(!full);
        CHECK_EQ(fl.size(), expected);
        Filter scalar = base;
        for (uint64_t i = 0; i < expected; ++i) scalar.insert_hash(scalar.hash_int(keys[i]));
        CHECK(bytes_of(fl) == bytes_of(scalar));

        std::vector<uint8_t> out(n, 9);
        polls = 0;
        CHECK_EQ(fl.contains_batch(n, IntKeys{&fl, &keys}, out.data(), stop), expected);
        for (uint64_t i = 0; i < n; ++i) CHECK_EQ(out[i], i < expected ? 1 : 9);
        polls = 0;
        CHECK_EQ(fl.count_batch(n, IntKeys{&fl, &keys}, out.data(), stop), expected);
        polls = 0;
        CHECK_EQ(fl.erase_batch(n, IntKeys{&fl, &keys}, static_cast<bool*>(nullptr), stop), expected);
        CHECK_EQ(fl.size(), 0u);
    }
}

// ---- whole-filter operations ---------------------------------------------------------------------

TEST_CASE(copy_is_deep) {
    Filter a(64, 4, 12, 500, 19);
    const std::vector<uint64_t> keys = distinct_keys(150, 19);
    for (uint64_t i = 0; i < 100; ++i) REQUIRE(a.insert_hash(a.hash_int(keys[i])));
    const std::vector<unsigned char> a_bytes = bytes_of(a);

    Filter b = a;
    CHECK(b.table().data() != a.table().data());
    CHECK(b == a);
    for (uint64_t i = 100; i < 150; ++i) REQUIRE(b.insert_hash(b.hash_int(keys[i])));
    for (uint64_t i = 0; i < 10; ++i) REQUIRE(b.erase_hash(b.hash_int(keys[i])));
    CHECK(bytes_of(a) == a_bytes);
    CHECK_EQ(a.size(), 100u);
    CHECK_EQ(b.size(), 140u);
    CHECK(a != b);

    Filter c(8, 2, 4, 1, 0);
    c = a;  // copy assignment
    CHECK(c == a);
    CHECK_EQ(c.seed(), a.seed());
    CHECK_EQ(c.max_kicks(), a.max_kicks());
    c.clear();
    CHECK(bytes_of(a) == a_bytes);
    CHECK_EQ(c.size(), 0u);
    CHECK_EQ(c.count_occupied(), 0u);

    // Copies made from copies, then destroyed in any order: no shared buffer (ASan would see a
    // double free or a use after free).
    {
        auto d = std::make_unique<Filter>(a);
        Filter e = *d;
        d.reset();
        CHECK(e == a);
        e.insert_hash(e.hash_int(12345));
    }
    CHECK(bytes_of(a) == a_bytes);
}

TEST_CASE(equality_ignores_slot_order_within_a_bucket) {
    const uint64_t m = 64;
    Filter empty(m, 4, 16, 500, 23);
    // Two keys with the same first bucket and different fingerprints.
    uint64_t k1 = 0, k2 = 0;
    bool found = false;
    for (uint64_t x = 1; x < 100000 && !found; ++x) {
        for (uint64_t y = 0; y < x && !found; ++y) {
            const cuckoo::KeyHash a = empty.locate(empty.hash_int(x)), b = empty.locate(empty.hash_int(y));
            if (a.i1 == b.i1 && a.fp != b.fp) {
                k1 = x;
                k2 = y;
                found = true;
            }
        }
    }
    REQUIRE(found);
    Filter ab = empty, ba = empty;
    REQUIRE(ab.insert_hash(ab.hash_int(k1)));
    REQUIRE(ab.insert_hash(ab.hash_int(k2)));
    REQUIRE(ba.insert_hash(ba.hash_int(k2)));
    REQUIRE(ba.insert_hash(ba.hash_int(k1)));
    CHECK(bytes_of(ab) != bytes_of(ba));  // different slot order ...
    CHECK(ab == ba);                      // ... same filter
    CHECK(!(ab != ba));

    // Not equal: different content, different count, different seed or shape.
    Filter other = empty;
    REQUIRE(other.insert_hash(other.hash_int(k1)));
    CHECK(ab != other);
    REQUIRE(other.insert_hash(other.hash_int(k1)));
    CHECK(ab != other);  // same count, {k1, k1} vs {k1, k2}
    Filter seeded(m, 4, 16, 500, 24);
    CHECK(empty != seeded);
    CHECK(empty != Filter(m, 4, 12, 500, 23));
    CHECK(empty != Filter(m, 2, 16, 500, 23));
    CHECK(empty != Filter(m + 8, 4, 16, 500, 23));
    CHECK(empty == Filter(m, 4, 16, 7, 23));  // max_kicks is not part of the content
    // Equal after the same operations, also through erase.
    REQUIRE(ab.erase_hash(ab.hash_int(k1)));
    REQUIRE(ba.erase_hash(ba.hash_int(k1)));
    CHECK(ab == ba);
}

TEST_CASE(clear_empties_the_filter) {
    Filter fl(128, 4, 16, 500, 29);
    const std::vector<uint64_t> keys = distinct_keys(400, 29);
    for (uint64_t k : keys) REQUIRE(fl.insert_hash(fl.hash_int(k)));
    fl.clear();
    CHECK_EQ(fl.size(), 0u);
    CHECK_EQ(fl.count_occupied(), 0u);
    CHECK(fl == Filter(128, 4, 16, 500, 29));
    uint64_t found = 0;
    for (uint64_t k : keys) found += fl.contains_hash(fl.hash_int(k));
    CHECK_EQ(found, 0u);
    for (uint64_t k : keys) REQUIRE(fl.insert_hash(fl.hash_int(k)));
    CHECK_EQ(fl.size(), keys.size());
}

TEST_CASE(insert_statistics) {
    Filter fl(64, 4, 16, 500, 31);
    const std::vector<uint64_t> keys = distinct_keys(300, 31);
    uint64_t ok = 0, failed = 0;
    for (uint64_t k : keys) (fl.insert_hash(fl.hash_int(k)) ? ok : failed)++;
    CHECK(failed > 0);
    CHECK_EQ(fl.stats().inserts, ok);
    CHECK_EQ(fl.stats().failed_inserts, failed);
    CHECK(fl.stats().kicked_inserts > 0);
    CHECK(fl.stats().moves >= fl.stats().kicked_inserts);
    CHECK(fl.stats().buckets_searched > 0);
}

TEST_CASE(measured_fpr_matches_expected_fpr) {
    // Deterministic (fixed keys and seed); the tolerance is many standard errors wide.
    for (unsigned b : kBucketSizes) {
        for (unsigned f : {6u, 8u}) {
            const uint64_t n = 20000;
            Filter fl = Filter::for_capacity(n, 0.5, f, b, 500, 37);
            cktest::context() = params(fl.bucket_count(), b, f);
            const std::vector<uint64_t> keys = distinct_keys(n, 37);
            for (uint64_t k : keys) REQUIRE(fl.insert_hash(fl.hash_int(k)));
            const uint64_t queries = 400000;
            uint64_t positives = 0;
            for (uint64_t q = 0; q < queries; ++q) positives += fl.contains_hash(fl.hash_int(~q));  // absent keys
            const double measured = static_cast<double>(positives) / static_cast<double>(queries);
            const double expected = fl.expected_fpr();
            CHECK_MSG(std::fabs(measured - expected) <= 0.05 * expected,
                      "measured " + cktest::show(measured) + " expected " + cktest::show(expected));
            CHECK(measured <= fl.fpr_bound());
        }
    }
}

// CUCKOO_CPU (cuckoo/cpu.hpp): a known level the CPU has is obeyed; an unknown name or a level
// above the CPU's best is not (the caller then runs the detected level and says why).
TEST_CASE(cpu_level_request_and_switch) {
    using cuckoo::CpuLevel;
    using R = cuckoo::CpuLevelRequest;
    CHECK_EQ(cuckoo::read_cpu_level_request(nullptr, CpuLevel::avx512).status, R::unset);
    CHECK_EQ(cuckoo::read_cpu_level_request("portable", CpuLevel::portable).status, R::obeyed);
    CHECK_EQ(cuckoo::read_cpu_level_request("avx2", CpuLevel::avx512).status, R::obeyed);
    CHECK(cuckoo::read_cpu_level_request("avx2", CpuLevel::avx512).level == CpuLevel::avx2);
    CHECK_EQ(cuckoo::read_cpu_level_request("avx512", CpuLevel::avx512).status, R::obeyed);
    CHECK_EQ(cuckoo::read_cpu_level_request("avx512", CpuLevel::avx2).status, R::unsupported);
    CHECK_EQ(cuckoo::read_cpu_level_request("avx2", CpuLevel::portable).status, R::unsupported);
    for (const char* bad : {"", "AVX2", "avx", "sse2", "avx2 ", "native"})
        CHECK_EQ(cuckoo::read_cpu_level_request(bad, CpuLevel::avx512).status, R::unknown_name);
    // Switching: only to a level the CPU has, and use_avx2/use_avx512 follow it.
    const CpuLevel before = cuckoo::cpu_level();
    for (int k = 0; k < cuckoo::kCpuLevelCount; ++k) {
        const CpuLevel level = static_cast<CpuLevel>(k);
        const bool ok = cuckoo::set_cpu_level(level);
        CHECK_EQ(ok, cuckoo::cpu_supports(level));
        if (!ok) continue;
        CHECK(cuckoo::cpu_level() == level);
        CHECK_EQ(cuckoo::kernels::use_avx2(), level >= CpuLevel::avx2);
        CHECK_EQ(cuckoo::kernels::use_avx512(), level == CpuLevel::avx512);
    }
    CHECK(cuckoo::cpu_supports(CpuLevel::portable));
    CHECK(cuckoo::set_cpu_level(before));
}

// The block kernels (cuckoo/locate.hpp) compute exactly Locator's scalar formulas, in every copy
// this machine can run (the AVX2 copy only where the CPU has AVX2), for every table geometry:
// the smallest and largest bucket counts (2^32 included), block counts that are odd or a power of
// two, and every fingerprint width.
TEST_CASE(block_kernels_equal_the_scalar_locator) {
    cktest::Rng rng(50);
    const uint64_t bucket_counts[] = {8, 16, 24, 4096, 267384, 1000008, (uint64_t(1) << 31) + 8,
                                      cuckoo::kMaxBucketCount - 8, cuckoo::kMaxBucketCount};
    using LocateFn = void (*)(const cuckoo::Locator&, uint64_t, unsigned, cuckoo::LocatedBlock&);
    std::vector<LocateFn> copies{cuckoo::kernels::locate_block_generic, cuckoo::locate_block};
#if CUCKOO_X86_DISPATCH
    if (cuckoo::kernels::use_avx2()) copies.push_back(cuckoo::kernels::locate_block_avx2);
#endif
    for (uint64_t m : bucket_counts) {
        for (unsigned f = cuckoo::kMinFingerprintBits; f <= cuckoo::kMaxFingerprintBits; ++f) {
            const cuckoo::Locator loc{m, m >> cuckoo::kBlockShift, f};
            const uint64_t bucket_bits = 4 * f;
            for (LocateFn locate : copies) {
                cuckoo::LocatedBlock block;
                for (unsigned round = 0; round < 8; ++round) {
                    const unsigned len = round == 0 ? cuckoo::kBatchBlock : 1 + static_cast<unsigned>(rng.below(32));
                    for (unsigned x = 0; x < len; ++x) {
                        uint64_t h = rng.next();
                        if (x == 0) h = 0;  // extremes: i1 = 0, smallest fingerprint
                        if (x == 1) h = ~uint64_t(0);  // i1 = m - 1, largest fingerprint
                        block.hash[x] = h;
                    }
                    locate(loc, bucket_bits, len, block);
                    for (unsigned x = 0; x < len; ++x) {
                        const cuckoo::KeyHash k = loc.locate(block.hash[x]);
                        CHECK_EQ(uint64_t(block.i1[x]), k.i1);
                        CHECK_EQ(uint64_t(block.i2[x]), k.i2);
                        CHECK_EQ(block.fp[x], k.fp);
                        CHECK_EQ(block.bit1[x], k.i1 * bucket_bits);
                        CHECK_EQ(block.bit2[x], k.i2 * bucket_bits);
                    }
                }
            }
        }
    }
}

// The AVX2 lookup kernel's locate step (cuckoo/lookup_avx2.hpp, its own formulas in intrinsics)
// gives the bit positions and fingerprint patterns of Locator and TableProbe, for the same
// geometries as above and every bucket size.
TEST_CASE(lookup_kernel_locates_like_the_scalar_locator) {
#if CUCKOO_X86_DISPATCH
    if (!cuckoo::kernels::use_avx2()) return;
    cktest::Rng rng(52);
    const uint64_t bucket_counts[] = {8, 16, 24, 4096, 267384, 1000008, (uint64_t(1) << 31) + 8,
                                      cuckoo::kMaxBucketCount - 8, cuckoo::kMaxBucketCount};
    for (uint64_t m : bucket_counts) {
        for (unsigned b : kBucketSizes) {
            for (unsigned f = cuckoo::kMinFingerprintBits; f <= cuckoo::kMaxFingerprintBits; ++f) {
                cktest::context() = params(m, b, f);
                const cuckoo::Locator loc{m, m >> cuckoo::kBlockShift, f};
                const cuckoo::PackedTable layout(cuckoo::kBlockBuckets, b, f);  // lane constants of (b, f)
                const cuckoo::TableProbe probe = layout.probe();
                alignas(32) uint64_t hash[cuckoo::kBatchBlock];
                cuckoo::kernels::LocatedLanes at;
                for (unsigned round = 0; round < 8; ++round) {
                    // Rounds 4-7 take the AVX-512 steps where this CPU has them (else AVX2 again).
                    const bool avx512 = round >= 4;
                    const unsigned len = round % 4 == 0 ? cuckoo::kBatchBlock : 1 + static_cast<unsigned>(rng.below(32));
                    for (unsigned x = 0; x < len; ++x) hash[x] = x == 0 ? 0 : x == 1 ? ~uint64_t(0) : rng.next();
                    uint64_t copy[cuckoo::kBatchBlock];
                    std::copy(hash, hash + len, copy);
                    cuckoo::kernels::locate_lanes_avx2(loc, probe, hash, len, at, avx512);
                    for (unsigned x = 0; x < len; ++x) {
                        const cuckoo::KeyHash k = loc.locate(copy[x]);
                        CHECK_EQ(at.bit1[x], probe.bit_of(k.i1));
                        CHECK_EQ(at.bit2[x], probe.bit_of(k.i2));
                        CHECK_EQ(at.pattern[x], probe.pattern_of(k.fp));
                    }
                }
            }
        }
    }
#endif
}

// Both ways through the AVX2 lookup kernel (one pass for cache-resident tables, two passes with
// bucket 2 read only when needed for larger ones) answer exactly like contains_hash, whatever
// the table size: here called directly on small tables, for every (b, f) the kernel reads, batch
// lengths around the block size, and every output type; a stopped batch reports the keys done and
// writes nothing past them.
TEST_CASE(lookup_kernel_passes_equal_contains_hash) {
#if CUCKOO_X86_DISPATCH
    if (!cuckoo::kernels::use_avx2()) return;
    cktest::Rng rng(53);
    for (unsigned b : kBucketSizes) {
        for (unsigned f = cuckoo::kMinFingerprintBits; f <= cuckoo::kMaxFingerprintBits; ++f) {
            const uint64_t m = 1024;
            Filter fl(m, b, f, 500, 23);
            const cuckoo::TableProbe probe = fl.table().probe();
            const bool readable = probe.with_shape([](auto shape) { return cuckoo::lookup_kernel_reads(decltype(shape)::value); });
            if (!readable) continue;
            // ~90% load: many keys sit in their second bucket.
            const std::vector<uint64_t> stored = distinct_keys(m * b * 9 / 10, f);
            uint64_t inserted = 0;
            for (uint64_t k : stored) inserted += fl.insert_hash(fl.hash_int(k));
            CHECK(inserted > m * b * 8 / 10);
            for (uint64_t n : {0u, 1u, 3u, 31u, 32u, 33u, 64u, 65u, 97u, 1000u}) {
                cktest::context() = params(m, b, f) + " n=" + std::to_string(n);
                std::vector<uint64_t> keys(n);
                for (uint64_t& k : keys) k = rng.below(2) ? stored[rng.below(stored.size())] : rng.next();
                for (int pass = 1; pass <= 2; ++pass) {
                    std::unique_ptr<bool[]> found(new bool[n + 1]);
                    std::vector<uint8_t> found8(n + 1, 7);
                    std::vector<uint32_t> found32(n + 1, 7);
                    IntKeys source{&fl, &keys};
                    auto never = [] { return false; };
                    probe.with_shape([&](auto shape) {
                        constexpr cuckoo::BucketShape kShape = decltype(shape)::value;
                        if constexpr (cuckoo::lookup_kernel_reads(kShape)) {
                            using namespace cuckoo::kernels;
                            if (pass == 1) {
                                CHECK_EQ(lookup_one_pass_avx2<kShape>(fl.locator(), probe, n, source, found.get(), never), n);
                                CHECK_EQ(lookup_one_pass_avx2<kShape>(fl.locator(), probe, n, source, found8.data(), never), n);
                                CHECK_EQ(lookup_one_pass_avx2<kShape>(fl.locator(), probe, n, source, found32.data(), never), n);
                            } else {
                                CHECK_EQ(lookup_two_pass_avx2<kShape>(fl.locator(), probe, n, source, found.get(), never), n);
                                CHECK_EQ(lookup_two_pass_avx2<kShape>(fl.locator(), probe, n, source, found8.data(), never), n);
                                CHECK_EQ(lookup_two_pass_avx2<kShape>(fl.locator(), probe, n, source, found32.data(), never), n);
                            }
                            // Buckets read with loads instead of gathers: the same answers.
                            VectorIntKeys vector_source{&fl, &keys};
                            std::vector<uint8_t> loaded(n + 1, 7);
                            if (pass == 1)
                                CHECK_EQ(lookup_one_pass_avx2<kShape>(fl.locator(), probe, n, vector_source, loaded.data(), never), n);
                            else
                                CHECK_EQ(lookup_two_pass_avx2<kShape>(fl.locator(), probe, n, vector_source, loaded.data(), never), n);
                            CHECK(loaded == found8);
                        }
                        return 0;
                    });
                    for (uint64_t i = 0; i < n; ++i) {
                        const bool expected = fl.contains_hash(fl.hash_int(keys[i]));
                        CHECK_EQ(found[i], expected);
                        CHECK_EQ(found8[i], uint8_t(expected));
                        CHECK_EQ(found32[i], uint32_t(expected));
                    }
                    CHECK_EQ(found8[n], 7);  // nothing written past n
                    CHECK_EQ(found32[n], 7u);
                    // Stopped at the third poll: two blocks done, nothing written after them.
                    unsigned polls = 0;
                    auto stop = [&] { return ++polls >= 3; };
                    std::vector<uint8_t> partial(n, 9);
                    const uint64_t expected_done = std::min<uint64_t>(n, 2 * cuckoo::kBatchBlock);
                    probe.with_shape([&](auto shape) {
                        constexpr cuckoo::BucketShape kShape = decltype(shape)::value;
                        if constexpr (cuckoo::lookup_kernel_reads(kShape)) {
                            using namespace cuckoo::kernels;
                            const uint64_t done = pass == 1
                                ? lookup_one_pass_avx2<kShape>(fl.locator(), probe, n, source, partial.data(), stop)
                                : lookup_two_pass_avx2<kShape>(fl.locator(), probe, n, source, partial.data(), stop);
                            CHECK_EQ(done, expected_done);
                        }
                        return 0;
                    });
                    if (n > 2 * cuckoo::kBatchBlock)
                        for (uint64_t i = expected_done; i < n; ++i) CHECK_EQ(partial[i], 9);
                }
            }
        }
    }
#endif
}

// The scalar two-pass lookup (tables beyond the caches at the portable level, and shapes the AVX2
// kernel does not read) answers exactly like contains_hash: called directly on small tables, for
// every (b, f) and so every bucket shape, batch lengths around the block size, both output types;
// a stopped batch reports the keys done and writes nothing past them.
TEST_CASE(scalar_two_pass_lookup_equals_contains_hash) {
    cktest::Rng rng(55);
    for (unsigned b : kBucketSizes) {
        for (unsigned f = cuckoo::kMinFingerprintBits; f <= cuckoo::kMaxFingerprintBits; ++f) {
            const uint64_t m = 1024;
            Filter fl(m, b, f, 500, 31);
            const cuckoo::TableProbe probe = fl.table().probe();
            // ~90% load: many keys sit in their second bucket.
            const std::vector<uint64_t> stored = distinct_keys(m * b * 9 / 10, f + 100);
            for (uint64_t k : stored) fl.insert_hash(fl.hash_int(k));
            for (uint64_t n : {0u, 1u, 31u, 32u, 33u, 65u, 97u, 1000u}) {
                cktest::context() = params(m, b, f) + " n=" + std::to_string(n);
                std::vector<uint64_t> keys(n);
                for (uint64_t& k : keys) k = rng.below(2) ? stored[rng.below(stored.size())] : rng.next();
                IntKeys source{&fl, &keys};
                auto never = [] { return false; };
                std::unique_ptr<bool[]> found(new bool[n + 1]);
                std::vector<uint32_t> found32(n + 1, 7);
                std::vector<uint8_t> partial(n, 9);
                unsigned polls = 0;
                auto stop = [&] { return ++polls >= 3; };  // two blocks done
                const uint64_t expected_done = std::min<uint64_t>(n, 2 * cuckoo::kBatchBlock);
                probe.with_shape([&](auto shape) {
                    constexpr cuckoo::BucketShape kShape = decltype(shape)::value;
                    CHECK_EQ(fl.contains_two_pass<kShape>(probe, n, source, found.get(), never), n);
                    CHECK_EQ(fl.contains_two_pass<kShape>(probe, n, source, found32.data(), never), n);
                    CHECK_EQ(fl.contains_two_pass<kShape>(probe, n, source, partial.data(), stop), expected_done);
                    return 0;
                });
                for (uint64_t i = 0; i < n; ++i) {
                    const bool expected = fl.contains_hash(fl.hash_int(keys[i]));
                    CHECK_EQ(found[i], expected);
                    CHECK_EQ(found32[i], uint32_t(expected));
                    if (i < expected_done) CHECK_EQ(partial[i], uint8_t(expected));
                    else CHECK_EQ(partial[i], 9);
                }
                CHECK_EQ(found32[n], 7u);
            }
        }
    }
}

// The AVX2 count kernel, both ways (without prefetches as for cache-resident tables, with them
// as for larger ones: chosen here by the table size it is told), counts exactly like count_hash:
// every (b, f) the kernel reads, keys stored up to three times, batch lengths around the block
// size, both output types; a stopped batch reports the keys done and writes nothing past them.
TEST_CASE(count_kernel_equals_count_hash) {
#if CUCKOO_X86_DISPATCH
    if (!cuckoo::kernels::use_avx2()) return;
    cktest::Rng rng(54);
    for (unsigned b : kBucketSizes) {
        for (unsigned f = cuckoo::kMinFingerprintBits; f <= cuckoo::kMaxFingerprintBits; ++f) {
            const uint64_t m = 1024;
            Filter fl(m, b, f, 500, 29);
            const cuckoo::TableProbe probe = fl.table().probe();
            const bool readable = probe.with_shape([](auto shape) { return cuckoo::lookup_kernel_reads(decltype(shape)::value); });
            if (!readable) continue;
            // Key i is stored 1 + i % 3 times, up to ~80% load (b = 2 fills up earlier; small f
            // also gives chance collisions, which count too).
            const std::vector<uint64_t> stored = distinct_keys(m * b * 4 / 10, f);
            for (uint64_t i = 0; i < stored.size(); ++i)
                for (uint64_t copy = 0; copy <= i % 3; ++copy) fl.insert_hash(fl.hash_int(stored[i]));
            CHECK(fl.size() > m * b / 2);
            for (uint64_t n : {0u, 1u, 3u, 31u, 32u, 33u, 64u, 65u, 97u, 1000u}) {
                cktest::context() = params(m, b, f) + " n=" + std::to_string(n);
                std::vector<uint64_t> keys(n);
                for (uint64_t& k : keys) k = rng.below(3) ? stored[rng.below(stored.size())] : rng.next();
                IntKeys source{&fl, &keys};
                auto never = [] { return false; };
                for (uint64_t table_bytes : {fl.table_bytes(), cuckoo::kTwoPassMinBytes + 1}) {
                    std::vector<uint8_t> counts8(n + 1, 77);
                    std::vector<uint32_t> counts32(n + 1, 77);
                    std::vector<uint8_t> partial(n, 99);
                    const uint64_t expected_done = std::min<uint64_t>(n, 2 * cuckoo::kBatchBlock);
                    unsigned polls = 0;
                    auto stop = [&] { return ++polls >= 3; };  // stops at the third poll: two blocks done
                    probe.with_shape([&](auto shape) {
                        constexpr cuckoo::BucketShape kShape = decltype(shape)::value;
                        if constexpr (cuckoo::lookup_kernel_reads(kShape)) {
                            using cuckoo::kernels::count_batch_avx2;
                            CHECK_EQ(count_batch_avx2<kShape>(fl.locator(), probe, table_bytes, n, source, counts8.data(), never), n);
                            CHECK_EQ(count_batch_avx2<kShape>(fl.locator(), probe, table_bytes, n, source, counts32.data(), never), n);
                            VectorIntKeys vector_source{&fl, &keys};  // buckets read with loads
                            std::vector<uint8_t> loaded(n + 1, 77);
                            CHECK_EQ(count_batch_avx2<kShape>(fl.locator(), probe, table_bytes, n, vector_source, loaded.data(), never), n);
                            CHECK(loaded == counts8);
                            CHECK_EQ(count_batch_avx2<kShape>(fl.locator(), probe, table_bytes, n, source, partial.data(), stop),
                                     expected_done);
                        }
                        return 0;
                    });
                    for (uint64_t i = 0; i < n; ++i) {
                        const unsigned expected = fl.count_hash(fl.hash_int(keys[i]));
                        CHECK_EQ(counts8[i], expected);
                        CHECK_EQ(counts32[i], expected);
                        if (i < expected_done) CHECK_EQ(partial[i], expected);
                        else CHECK_EQ(partial[i], 99);
                    }
                    CHECK_EQ(counts8[n], 77);  // nothing written past n
                    CHECK_EQ(counts32[n], 77u);
                }
            }
        }
    }
#endif
}

TEST_CASE(block_hash_equals_hash_u64) {
    cktest::Rng rng(51);
    uint64_t values[cuckoo::kBatchBlock], out[cuckoo::kBatchBlock];
    for (unsigned round = 0; round < 64; ++round) {
        const uint64_t seed = round < 2 ? round : rng.next();
        const unsigned len = round == 0 ? cuckoo::kBatchBlock : static_cast<unsigned>(rng.below(33));
        for (unsigned x = 0; x < len; ++x) values[x] = x < 2 ? x : rng.next();
        cuckoo::hash_u64_block(values, len, seed, out);
        for (unsigned x = 0; x < len; ++x) CHECK_EQ(out[x], cuckoo::hash_u64(values[x], seed));
        cuckoo::kernels::hash_u64_block_generic(values, len, seed, out);
        for (unsigned x = 0; x < len; ++x) CHECK_EQ(out[x], cuckoo::hash_u64(values[x], seed));
    }
}

int main(int argc, char** argv) { return cktest::run_all(argc, argv); }
