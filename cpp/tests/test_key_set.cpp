// cuckoo::KeySet (cpp/include/cuckoo/key_set.hpp) against std::unordered_set: exact answers
// through growth, the stash (many keys of one hash), retain() (in-place compaction over chunks of
// several sizes) and keys longer than a chunk.
#include "cuckoo/key_set.hpp"

#include <cstring>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "check.hpp"

namespace {

cuckoo::KeySpan span(const std::string& s) {
    return cuckoo::KeySpan{reinterpret_cast<const unsigned char*>(s.data()), s.size()};
}

uint64_t hash_of(const cuckoo::KeySet& set, const std::string& s) { return set.hasher().hash_key(s.data(), s.size()); }

std::string random_key(std::mt19937_64& rng, uint64_t space) {
    const uint64_t id = rng() % space;
    // Lengths 0..40, the same for the same id (a key is its id's text, padded).
    std::string k = std::to_string(id);
    k.resize(id % 41, static_cast<char>('a' + id % 26));
    return k;
}

}  // namespace

// equal_bytes (the key compare of a tag match: overlapping loads up to 16 bytes) answers as
// memcmp for every length 0..40 and a difference at every position, on buffers that end right
// after the n bytes (a read past them is an ASan error in CI's sanitizer job).
TEST_CASE(equal_bytes_agrees_with_memcmp_at_every_length_and_position) {
    std::mt19937_64 rng(3);
    for (size_t n = 0; n <= 40; ++n) {
        for (int trial = 0; trial < 20; ++trial) {
            std::vector<unsigned char> a(n), b(n);
            for (size_t i = 0; i < n; ++i) a[i] = b[i] = static_cast<unsigned char>(rng());
            CHECK(cuckoo::equal_bytes(a.data(), b.data(), n));
            for (size_t at = 0; at < n; ++at) {
                std::vector<unsigned char> c = b;
                c[at] ^= static_cast<unsigned char>(1u << (rng() % 8));
                CHECK_EQ(cuckoo::equal_bytes(a.data(), c.data(), n), std::memcmp(a.data(), c.data(), n) == 0);
                CHECK(!cuckoo::equal_bytes(a.data(), c.data(), n));
            }
        }
    }
}

TEST_CASE(key_set_equals_a_hash_set_through_growth) {
    std::mt19937_64 rng(3);
    for (uint64_t expected : {uint64_t(0), uint64_t(100000)}) {
        cuckoo::KeySet set(cuckoo::KeyHasher{7}, expected);
        std::unordered_set<std::string> model;
        std::vector<std::string> keys;
        for (int round = 0; round < 40; ++round) {
            keys.clear();
            for (int j = 0; j < 2500; ++j) keys.push_back(random_key(rng, 60000));
            std::vector<cuckoo::KeySpan> spans;
            std::vector<uint64_t> hashes;
            std::vector<uint32_t> picked;
            for (size_t j = 0; j < keys.size(); ++j) {
                spans.push_back(span(keys[j]));
                hashes.push_back(hash_of(set, keys[j]));
                if (j % 7 != 3) picked.push_back(static_cast<uint32_t>(j));  // some keys are not picked
            }
            std::unique_ptr<bool[]> is_new(new bool[keys.size()]);
            for (size_t j = 0; j < keys.size(); ++j) is_new[j] = false;
            set.insert_unique(static_cast<uint32_t>(picked.size()), picked.data(),
                              [&spans](size_t j) { return spans[j]; }, hashes.data(), is_new.get());
            for (uint32_t j : picked) CHECK_EQ(is_new[j], model.insert(keys[j]).second);
            CHECK_EQ(set.size(), model.size());
        }
        for (uint64_t id = 0; id < 60000; id += 97) {
            std::string k = std::to_string(id);
            k.resize(id % 41, static_cast<char>('a' + id % 26));
            CHECK_EQ(set.contains(span(k), hash_of(set, k)), model.count(k) == 1);
            std::string absent = k + "#";
            CHECK(!set.contains(span(absent), hash_of(set, absent)));
        }
        if (expected == 0) CHECK(set.grows() > 0);
        else CHECK_EQ(set.grows(), 0u);
        CHECK(set.memory_bytes() >= set.arena_bytes());
    }
}

TEST_CASE(key_set_stash_holds_keys_of_one_hash) {
    cuckoo::KeySet set(cuckoo::KeyHasher{1}, 1000);
    const uint64_t h = 0x123456789abcdefull;  // every key given the same hash: 8 slots, then the stash
    for (int k = 0; k < 30; ++k) CHECK(set.add(span("key" + std::to_string(k)), h));
    for (int k = 0; k < 30; ++k) CHECK(!set.add(span("key" + std::to_string(k)), h));
    CHECK(set.stash_size() >= 22u);
    CHECK_EQ(set.size(), 30u);
    for (int k = 0; k < 30; ++k) CHECK(set.contains(span("key" + std::to_string(k)), h));
    CHECK(!set.contains(span("key30"), h));
}

TEST_CASE(key_set_stash_keys_survive_a_failed_insert_and_growth) {
    // A growth re-places the arena's records, so the arena must hold exactly the set's keys: a
    // key whose stash entry could not be allocated leaves no record behind.
    cuckoo::KeySet set(cuckoo::KeyHasher{3}, 64);
    const uint64_t h = 0xfedcba9876543210ull;
    for (int k = 0; k < 30; ++k) CHECK(set.add(span("same" + std::to_string(k)), h));
    CHECK(set.stash_size() >= 22u);
    const uint64_t arena = set.arena_bytes();
    cuckoo::fault::arm(1);  // the next allocation: the stash's entry for the 31st key
    bool threw = false;
    try {
        set.add(span("same30"), h);
    } catch (const std::bad_alloc&) {
        threw = true;
    }
    cuckoo::fault::arm(0);
    CHECK(threw);
    CHECK_EQ(set.arena_bytes(), arena);
    CHECK_EQ(set.size(), 30u);
    CHECK(!set.contains(span("same30"), h));
    // Other keys until the index grows twice: the stash's keys are placed again, none twice. (A
    // growth places the index's keys under their own hash, the stash's under the hash they came
    // with: the test's shared hash is not their own, so a key answers under one of the two.)
    std::vector<std::string> others;
    for (int j = 0; set.grows() < 2; ++j) {
        others.push_back("other" + std::to_string(j));
        CHECK(set.add(span(others.back()), hash_of(set, others.back())));
    }
    CHECK_EQ(set.size(), 30u + others.size());
    for (int k = 0; k < 30; ++k) {
        const std::string key = "same" + std::to_string(k);
        CHECK(set.contains(span(key), h) || set.contains(span(key), hash_of(set, key)));
    }
    CHECK(!set.contains(span("same30"), h) && !set.contains(span("same30"), hash_of(set, "same30")));
    for (const std::string& k : others) CHECK(set.contains(span(k), hash_of(set, k)));
}

TEST_CASE(key_set_retain_compacts_in_place) {
    std::mt19937_64 rng(5);
    cuckoo::KeySet set(cuckoo::KeyHasher{9}, 0);
    std::vector<std::string> keys;
    // Enough bytes for several chunks (1, 2, 4 MiB ...), a key longer than the largest chunk,
    // and small ones after it.
    for (int j = 0; j < 200000; ++j) keys.push_back(std::to_string(rng()) + std::string(rng() % 40, 'x'));
    keys.push_back(std::string((size_t(1) << cuckoo::KeySet::kChunkShift) + 5, 'L'));
    for (int j = 0; j < 1000; ++j) keys.push_back("after" + std::to_string(j));
    for (const std::string& k : keys) set.add(span(k), hash_of(set, k));
    const uint64_t before = set.memory_bytes();
    auto lower = [](uint64_t h) { return (cuckoo::mix64(h) >> 63) == 0; };
    const uint64_t kept = set.retain(lower);
    uint64_t want = 0;
    for (const std::string& k : keys) {
        const uint64_t h = hash_of(set, k);
        CHECK_EQ(set.contains(span(k), h), lower(h));
        want += lower(h);
    }
    CHECK_EQ(kept, want);
    CHECK_EQ(set.size(), want);
    CHECK(set.memory_bytes() < before);
    // The set goes on after a retain: new keys, and the kept ones still answer.
    for (int j = 0; j < 5000; ++j) {
        const std::string k = "new" + std::to_string(j);
        CHECK(set.add(span(k), hash_of(set, k)));
    }
    for (const std::string& k : keys) {
        const uint64_t h = hash_of(set, k);
        CHECK_EQ(set.contains(span(k), h), lower(h));
    }
    set.retain([](uint64_t) { return false; });
    CHECK_EQ(set.size(), 0u);
    CHECK(set.add(span(keys[0]), hash_of(set, keys[0])));
}

// clear() keeps the arena's chunks for the keys after it (a dedup pass refills them): the keys
// before it are gone, the keys after it answer exactly, through several clears, a retain between
// them and a key longer than every chunk kept.
TEST_CASE(key_set_cleared_reuses_its_chunks_exactly) {
    std::mt19937_64 rng(11);
    cuckoo::KeySet set(cuckoo::KeyHasher{13}, 0);
    std::vector<std::string> previous;
    for (int round = 0; round < 4; ++round) {
        std::vector<std::string> keys;
        // About 5-9 MiB of keys a round: chunks of 1, 2 and 4 MiB (and 8 in later rounds).
        const int count = 150000 + round * 30000;
        for (int j = 0; j < count; ++j)
            keys.push_back(std::to_string(round) + ":" + std::to_string(rng() % 400000) + std::string(rng() % 40, 'y'));
        if (round == 2) keys.push_back(std::string((size_t(1) << cuckoo::KeySet::kChunkShift) + 3, 'L'));
        std::unordered_set<std::string> model;
        for (const std::string& k : keys) CHECK_EQ(set.add(span(k), hash_of(set, k)), model.insert(k).second);
        CHECK_EQ(set.size(), model.size());
        for (const std::string& k : previous) CHECK(!set.contains(span(k), hash_of(set, k)));  // other rounds' keys
        if (round == 1) {
            auto lower = [](uint64_t h) { return (cuckoo::mix64(h) >> 63) == 0; };
            set.retain(lower);
            for (const std::string& k : keys) {
                const uint64_t h = hash_of(set, k);
                CHECK_EQ(set.contains(span(k), h), lower(h));
            }
        } else {
            for (const std::string& k : keys) CHECK(set.contains(span(k), hash_of(set, k)));
        }
        set.clear();
        CHECK_EQ(set.size(), 0u);
        CHECK_EQ(set.arena_bytes(), 0u);
        for (size_t j = 0; j < keys.size(); j += 101) CHECK(!set.contains(span(keys[j]), hash_of(set, keys[j])));
        previous = keys;
    }
}

TEST_CASE(key_set_allocation_failure_leaves_it_as_it_was) {
    // Fail each allocation of a growing set in turn: the add throws bad_alloc and the set answers
    // as before it.
    for (uint64_t n = 1; n < 40; ++n) {
        cuckoo::KeySet set(cuckoo::KeyHasher{2}, 0);
        std::vector<std::string> added;
        cuckoo::fault::arm(n);
        bool failed = false;
        for (int j = 0; j < 20000 && !failed; ++j) {
            const std::string k = "k" + std::to_string(j) + std::string(j % 50, 'p');
            try {
                set.add(span(k), hash_of(set, k));
                added.push_back(k);
            } catch (const std::bad_alloc&) {
                failed = true;
                CHECK(!set.contains(span(k), hash_of(set, k)));
            }
        }
        cuckoo::fault::arm(0);
        CHECK_EQ(set.size(), added.size());
        for (const std::string& k : added) CHECK(set.contains(span(k), hash_of(set, k)));
    }
}

TEST_CASE(key_set_values_ride_with_their_keys_through_growth_and_retain) {
    // value_bytes: the caller's bytes after each key (cuckoo/window.hpp keeps positions there).
    cuckoo::KeySet set(cuckoo::KeyHasher{5}, 0, 8);
    std::vector<std::string> keys;
    for (uint64_t i = 0; i < 50000; ++i) keys.push_back(std::to_string(i * 7919) + std::string(i % 30, 'v'));
    for (uint64_t i = 0; i < keys.size(); ++i) {
        bool is_new = false;
        unsigned char* v = set.add_value(span(keys[i]), hash_of(set, keys[i]), is_new);
        REQUIRE(is_new);
        uint64_t zero = 1;
        std::memcpy(&zero, v, 8);
        CHECK_EQ(zero, uint64_t(0));  // a new key's value starts zeroed
        std::memcpy(v, &i, 8);
    }
    CHECK(set.grows() > 0);
    auto value = [&](uint64_t i) {
        const unsigned char* v = set.find_value(span(keys[i]), hash_of(set, keys[i]));
        uint64_t x = ~uint64_t(0);
        if (v) std::memcpy(&x, v, 8);
        return x;
    };
    for (uint64_t i = 0; i < keys.size(); ++i) CHECK_EQ(value(i), i);
    set.retain([](uint64_t h) { return h % 2 == 0; });
    for (uint64_t i = 0; i < keys.size(); ++i)
        CHECK_EQ(value(i), hash_of(set, keys[i]) % 2 == 0 ? i : ~uint64_t(0));
    uint64_t seen = 0;
    set.for_each_key([&](cuckoo::KeySpan) { ++seen; });
    CHECK_EQ(seen, set.size());
    bool is_new = true;
    set.add_value(span(keys[0]), hash_of(set, keys[0]), is_new);
    CHECK_EQ(is_new, hash_of(set, keys[0]) % 2 != 0);
}

int main(int argc, char** argv) { return cktest::run_all(argc, argv); }
