// Tests of cuckoo/store.hpp without Python: the store against a std::map model through scalar and
// bulk operations, with full and very short tags (so that tag matches and log verification
// happen all the time), growth, reopening with and without the snapshot, compaction, and
// recovery from a log cut or flipped at every byte of its last record.
#include "cuckoo/store.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "check.hpp"

namespace {

using Model = std::map<std::string, std::string>;

std::string temp_dir() {
    char tmpl[] = "/tmp/cuckoo-store-test-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    REQUIRE(d != nullptr);
    return d;
}

void remove_store(const std::string& path) {
    for (const char* ext : {"", ".idx", ".lock", ".compact", ".idx.tmp"}) ::unlink((path + ext).c_str());
}

cuckoo::Store::Options options(unsigned tag_bits) {
    cuckoo::Store::Options o;
    o.tag_bits = tag_bits;
    o.log_id = 0x1234 + tag_bits;
    o.seed = 7;
    return o;
}

uint64_t hash_of(const cuckoo::Store& s, const std::string& k) { return s.hasher().hash_key(k.data(), k.size()); }

std::string key_of(uint64_t i) { return "key-" + std::to_string(i) + std::string(i % 7, 'x'); }

// Every key of the model is found with its value, and `absent` keys are not.
void check_against(cuckoo::Store& s, const Model& m, uint64_t absent_from, uint64_t absent_n) {
    CHECK_EQ(s.size(), m.size());
    std::string v;
    for (const auto& kv : m) {
        REQUIRE(s.get(kv.first.data(), kv.first.size(), hash_of(s, kv.first), &v));
        CHECK(v == kv.second);
    }
    for (uint64_t i = absent_from; i < absent_from + absent_n; ++i) {
        const std::string k = "absent-" + std::to_string(i);
        CHECK(!s.get(k.data(), k.size(), hash_of(s, k), nullptr));
    }
    // The live records are exactly the model's keys.
    uint64_t n = 0;
    for (uint64_t off : s.live_offsets()) {
        const cuckoo::RecordView r = s.read_record(off);
        const std::string k(reinterpret_cast<const char*>(r.key), r.key_len);
        auto it = m.find(k);
        REQUIRE(it != m.end());
        CHECK(std::string(reinterpret_cast<const char*>(r.value), r.value_len) == it->second);
        ++n;
    }
    CHECK_EQ(n, m.size());
}

// Random scalar and bulk operations, applied to the store and the model.
void random_ops(cuckoo::Store& s, Model& m, std::mt19937_64& rng, uint64_t rounds, uint64_t key_range) {
    for (uint64_t r = 0; r < rounds; ++r) {
        const unsigned op = rng() % 6;
        if (op < 3) {  // scalar put / erase / get
            const std::string k = key_of(rng() % key_range);
            const uint64_t h = hash_of(s, k);
            if (op == 0) {
                const std::string v = "v" + std::to_string(rng() % 1000);
                s.put(k.data(), k.size(), h, v.data(), v.size());
                m[k] = v;
            } else if (op == 1) {
                CHECK_EQ(s.erase(k.data(), k.size(), h), m.erase(k) == 1);
            } else {
                CHECK_EQ(s.get(k.data(), k.size(), h, nullptr), m.count(k) == 1);
            }
            continue;
        }
        // a bulk chunk with repeated keys
        const uint64_t n = 1 + rng() % 200;
        std::vector<std::string> keys(n), values(n);
        std::vector<cuckoo::KeySpan> spans(n), vspans(n);
        std::vector<uint64_t> hashes(n);
        for (uint64_t j = 0; j < n; ++j) {
            keys[j] = key_of(rng() % key_range);
            values[j] = "w" + std::to_string(rng() % 1000);
            spans[j] = {reinterpret_cast<const unsigned char*>(keys[j].data()), keys[j].size()};
            vspans[j] = {reinterpret_cast<const unsigned char*>(values[j].data()), values[j].size()};
            hashes[j] = hash_of(s, keys[j]);
        }
        std::unique_ptr<bool[]> out(new bool[n]);
        uint64_t done = 0;
        if (op == 3) {
            s.apply_chunk(cuckoo::Store::Op::AddUnique, n, spans.data(), hashes.data(), nullptr, out.get(), done);
            for (uint64_t j = 0; j < n; ++j) {
                const bool fresh = m.count(keys[j]) == 0;
                CHECK_EQ(out[j], fresh);
                if (fresh) m[keys[j]] = "";
            }
        } else if (op == 4) {
            s.apply_chunk(cuckoo::Store::Op::Put, n, spans.data(), hashes.data(), vspans.data(), out.get(), done);
            for (uint64_t j = 0; j < n; ++j) {
                CHECK_EQ(out[j], m.count(keys[j]) == 0);
                m[keys[j]] = values[j];
            }
        } else {
            s.apply_chunk(cuckoo::Store::Op::Discard, n, spans.data(), hashes.data(), nullptr, out.get(), done);
            for (uint64_t j = 0; j < n; ++j) CHECK_EQ(out[j], m.erase(keys[j]) == 1);
        }
        CHECK_EQ(done, n);
        // bulk lookups equal the model
        std::vector<uint64_t> offs(n);
        s.locate_chunk(n, spans.data(), hashes.data(), offs.data());
        for (uint64_t j = 0; j < n; ++j) CHECK_EQ(offs[j] != cuckoo::Store::kNone, m.count(keys[j]) == 1);
    }
}

TEST_CASE(store_equals_a_map_model_with_every_tag_width) {
    const std::string dir = temp_dir();
    for (unsigned tag_bits : {16u, 4u, 1u}) {
        const std::string path = dir + "/s" + std::to_string(tag_bits);
        Model m;
        std::mt19937_64 rng(tag_bits);
        {
            auto s = cuckoo::Store::open(path, options(tag_bits));
            random_ops(*s, m, rng, 400, 3000);
            check_against(*s, m, 0, 2000);
            s->close();
        }
        {  // reopen from the snapshot
            auto s = cuckoo::Store::open(path, options(tag_bits));
            CHECK(s->stats().snapshot_used);
            check_against(*s, m, 0, 500);
            random_ops(*s, m, rng, 100, 3000);
            s->sync();
        }  // no close, as after a crash: the old snapshot still holds, the records after it are replayed
        {
            auto s = cuckoo::Store::open(path, options(tag_bits));
            CHECK(s->stats().snapshot_used);
            CHECK(s->stats().replayed_records > 0);
            check_against(*s, m, 0, 500);
            s->compact(99);
            CHECK_EQ(s->stats().log_bytes, cuckoo::store_format::kHeaderSize + s->stats().live_bytes);
            check_against(*s, m, 0, 500);
            random_ops(*s, m, rng, 50, 3000);
            check_against(*s, m, 0, 500);
            s->close();
        }
        {  // read-only reopen sees the same
            cuckoo::Store::Options o = options(tag_bits);
            o.readonly = true;
            auto s = cuckoo::Store::open(path, o);
            check_against(*s, m, 0, 500);
            CHECK_THROWS(s->put("a", 1, hash_of(*s, "a"), "b", 1), cuckoo::ReadOnlyError);
        }
        remove_store(path);
    }
    ::rmdir(dir.c_str());
}

TEST_CASE(store_grows_and_keeps_its_index_small) {
    const std::string dir = temp_dir();
    const std::string path = dir + "/g";
    auto s = cuckoo::Store::open(path, options(16));
    const uint64_t n = 200000;
    std::vector<std::string> keys(n);
    std::vector<cuckoo::KeySpan> spans(n);
    std::vector<uint64_t> hashes(n);
    for (uint64_t i = 0; i < n; ++i) {
        keys[i] = key_of(i);
        spans[i] = {reinterpret_cast<const unsigned char*>(keys[i].data()), keys[i].size()};
        hashes[i] = hash_of(*s, keys[i]);
    }
    std::unique_ptr<bool[]> out(new bool[n]);
    uint64_t done = 0;
    // In chunks of 1000 keys, so that the index grows many times (a chunk makes room for all of
    // its new keys at once).
    for (uint64_t at = 0; at < n; at += 1000)
        s->apply_chunk(cuckoo::Store::Op::AddUnique, 1000, spans.data() + at, hashes.data() + at, nullptr, out.get() + at, done);
    for (uint64_t i = 0; i < n; ++i) REQUIRE(out[i]);
    CHECK_EQ(s->size(), n);
    CHECK(s->stats().grows > 5);
    CHECK_EQ(s->stats().stash, 0u);
    // at most 10 bytes of index per key, whatever the moment of growth
    CHECK(double(s->stats().index_bytes) / double(n) <= 10.0);
    s->apply_chunk(cuckoo::Store::Op::AddUnique, n, spans.data(), hashes.data(), nullptr, out.get(), done);
    for (uint64_t i = 0; i < n; ++i) REQUIRE(!out[i]);
    s->close();
    remove_store(path);
    ::rmdir(dir.c_str());
}

TEST_CASE(store_with_index_bits_grows_from_memory) {
    // keep_index_bits(): every growth re-places the entries from their kept hash bits (no log
    // read), and they are all found where the hash puts them; after a reopen from the snapshot
    // (no bits), the next growth reads the log once, and the ones after it are in memory again.
    const std::string dir = temp_dir();
    const std::string path = dir + "/m";
    const uint64_t n = 120000;
    std::vector<std::string> keys(n);
    std::vector<cuckoo::KeySpan> spans(n);
    std::vector<uint64_t> hashes(n);
    std::unique_ptr<bool[]> out(new bool[n]);
    uint64_t done = 0;
    {
        auto s = cuckoo::Store::open(path, options(16));
        s->keep_index_bits();
        for (uint64_t i = 0; i < n; ++i) {
            keys[i] = key_of(i);
            spans[i] = {reinterpret_cast<const unsigned char*>(keys[i].data()), keys[i].size()};
            hashes[i] = hash_of(*s, keys[i]);
        }
        for (uint64_t at = 0; at < n / 4; at += 500)
            s->apply_chunk(cuckoo::Store::Op::AddUnique, 500, spans.data() + at, hashes.data() + at, nullptr,
                           out.get() + at, done);
        CHECK(s->stats().grows > 5);
        CHECK_EQ(s->stats().grows_from_memory, s->stats().grows);
        for (uint64_t i = 0; i < n; ++i) CHECK_EQ(s->get(spans[i].data, spans[i].len, hashes[i], nullptr), i < n / 4);
        s->close();
    }
    auto s = cuckoo::Store::open(path, options(16));
    CHECK(s->stats().snapshot_used);
    s->keep_index_bits();
    for (uint64_t at = n / 4; at < n; at += 500)
        s->apply_chunk(cuckoo::Store::Op::AddUnique, 500, spans.data() + at, hashes.data() + at, nullptr,
                       out.get() + at, done);
    CHECK(s->stats().grows >= 2);
    CHECK_EQ(s->stats().grows_from_memory + 1, s->stats().grows);
    CHECK_EQ(s->size(), n);
    for (uint64_t i = 0; i < n; ++i) CHECK(s->get(spans[i].data, spans[i].len, hashes[i], nullptr));
    s->close();
    remove_store(path);
    ::rmdir(dir.c_str());
}

// Cuts the log at every byte of its last record, and flips each byte of it: the store reopens to
// the records before it, reports what it cut, and accepts writes.
TEST_CASE(store_recovers_a_torn_or_corrupt_last_record) {
    const std::string dir = temp_dir();
    const std::string path = dir + "/r";
    Model m;
    uint64_t last_at = 0, full = 0;
    {
        auto s = cuckoo::Store::open(path, options(16));
        for (int i = 0; i < 50; ++i) {
            const std::string k = key_of(static_cast<uint64_t>(i)), v = "value" + std::to_string(i);
            s->put(k.data(), k.size(), hash_of(*s, k), v.data(), v.size());
            m[k] = v;
        }
        s->sync();
        last_at = s->stats().log_bytes;
        const std::string k = "the-last-key", v = "the-last-value";
        s->put(k.data(), k.size(), hash_of(*s, k), v.data(), v.size());
        s->close();
        full = s->stats().log_bytes;
        ::unlink((path + ".idx").c_str());
    }
    std::vector<unsigned char> bytes(full);
    {
        FILE* f = std::fopen(path.c_str(), "rb");
        REQUIRE(f && std::fread(bytes.data(), 1, full, f) == full);
        std::fclose(f);
    }
    auto write_file = [&](const std::vector<unsigned char>& b, uint64_t synced_end) {
        std::vector<unsigned char> c = b;
        // Mark only the data before the last record as synced, as after a crash before sync().
        cuckoo::store_le64(c.data() + 48, synced_end);
        cuckoo::store_format::put32(c.data() + 56, cuckoo::store_format::checksum32(c.data() + 48, 8, 0));
        FILE* f = std::fopen(path.c_str(), "wb");
        std::fwrite(c.data(), 1, c.size(), f);
        std::fclose(f);
    };
    auto expect_prefix = [&](uint64_t cut_bytes) {
        auto s = cuckoo::Store::open(path, options(16));
        CHECK_EQ(s->size(), m.size());
        CHECK_EQ(s->stats().recovered_at, last_at);
        CHECK_EQ(s->stats().recovered_bytes, cut_bytes);
        check_against(*s, m, 0, 20);
        const std::string k = "after", v = "recovery";
        s->put(k.data(), k.size(), hash_of(*s, k), v.data(), v.size());
        std::string got;
        CHECK(s->get(k.data(), k.size(), hash_of(*s, k), &got) && got == v);
    };
    for (uint64_t cut = last_at + 1; cut < full; ++cut) {
        write_file(std::vector<unsigned char>(bytes.begin(), bytes.begin() + static_cast<long>(cut)), last_at);
        expect_prefix(cut - last_at);
    }
    for (uint64_t at = last_at; at < full; ++at) {
        std::vector<unsigned char> b = bytes;
        b[at] ^= 0x20;
        write_file(b, last_at);
        if (at - last_at >= 12 + 12 + 14) {
            // the padding after the record is not covered by its checksum: the record stays
            auto s = cuckoo::Store::open(path, options(16));
            CHECK_EQ(s->size(), m.size() + 1);
            continue;
        }
        expect_prefix(full - last_at);
    }
    // The same damage before the synced end is corruption, not a torn tail: an error, with the offset.
    std::vector<unsigned char> b = bytes;
    b[cuckoo::store_format::kHeaderSize + 13] ^= 1;  // a key byte of the first record
    write_file(b, full);
    CHECK_THROWS(cuckoo::Store::open(path, options(16)), cuckoo::FormatError);
    remove_store(path);
    ::rmdir(dir.c_str());
}

// Every allocation of reserve() and of a put that grows the index fails in turn (the fault hook,
// cuckoo/fault.hpp): each failure throws std::bad_alloc and leaves the store as it was. Swept for
// the default store and for one that keeps its index bits (keep_index_bits(): growths re-place
// entries from memory, allocating the new bits array beside the new table), and for
// keep_index_bits() itself on a store that already holds entries.
TEST_CASE(allocation_failure_leaves_the_store_as_it_was) {
    for (bool bits : {false, true}) {
        const std::string dir = temp_dir();
        const std::string path = dir + "/f";
        auto s = cuckoo::Store::open(path, options(16));
        if (bits) s->keep_index_bits();  // empty: every entry gets its bits, so growths are from memory
        Model m;
        auto put = [&](const std::string& k) {
            s->put(k.data(), k.size(), hash_of(*s, k), k.data(), k.size());
            m[k] = k;
        };
        for (uint64_t i = 0; i < 240; ++i) put(key_of(i));  // the next new key makes the 64-bucket index grow
        for (int call = 0; call < 2; ++call) {
            const uint64_t buckets = s->stats().bucket_count, log_bytes = s->stats().log_bytes;
            const uint64_t from_memory = s->stats().grows_from_memory;
            uint64_t failed = 0;
            for (uint64_t n = 1;; ++n) {
                cuckoo::fault::arm(n);
                try {
                    if (call == 0) put(key_of(100000));
                    else s->reserve(5000);
                } catch (const std::bad_alloc&) {
                    cuckoo::fault::arm(0);
                    ++failed;
                    CHECK_EQ(s->stats().bucket_count, buckets);
                    CHECK_EQ(s->stats().log_bytes, log_bytes);
                    CHECK_EQ(s->stats().grows_from_memory, from_memory);
                    check_against(*s, m, 0, 50);
                    continue;
                }
                cuckoo::fault::arm(0);
                break;
            }
            // default: the list of live offsets and the new table; with bits: the new table and bits
            CHECK(failed >= 2);
            CHECK(s->stats().bucket_count > buckets);
            CHECK_EQ(s->stats().grows_from_memory, from_memory + (bits ? 1 : 0));
        }
        check_against(*s, m, 0, 50);
        if (!bits) {
            // keep_index_bits() on a store with entries allocates one array: failing, it changes
            // nothing (the next growth still reads the log); then it takes effect.
            cuckoo::fault::arm(1);
            CHECK_THROWS(s->keep_index_bits(), std::bad_alloc);
            cuckoo::fault::arm(0);
            s->reserve(20000);
            CHECK_EQ(s->stats().grows_from_memory, 0u);
            s->keep_index_bits();
            s->reserve(40000);  // the entries placed before have no bits yet: this growth reads the log
            s->reserve(80000);  // and gave them bits: this one is from memory
            CHECK_EQ(s->stats().grows_from_memory, 1u);
            check_against(*s, m, 0, 50);
        }
        s->close();
        remove_store(path);
        ::rmdir(dir.c_str());
    }
}

// A log cut at a record boundary before its synced end lost synced records: refused unless
// repair is asked for, which cuts there and records the smaller synced end.
TEST_CASE(store_refuses_a_log_cut_before_its_synced_end) {
    const std::string dir = temp_dir();
    const std::string path = dir + "/c";
    uint64_t cut = 0;
    {
        auto s = cuckoo::Store::open(path, options(16));
        for (int i = 0; i < 20; ++i) {
            const std::string k = key_of(static_cast<uint64_t>(i));
            if (i == 10) cut = s->stats().log_bytes;
            s->put(k.data(), k.size(), hash_of(*s, k), "v", 1);
        }
        s->close();
    }
    for (bool with_snapshot : {true, false}) {
        if (!with_snapshot) ::unlink((path + ".idx").c_str());
        REQUIRE(::truncate(path.c_str(), static_cast<off_t>(cut)) == 0);
        CHECK_THROWS(cuckoo::Store::open(path, options(16)), cuckoo::FormatError);
        cuckoo::Store::Options ro = options(16);
        ro.readonly = true;
        CHECK_THROWS(cuckoo::Store::open(path, ro), cuckoo::FormatError);
    }
    cuckoo::Store::Options o = options(16);
    o.repair = true;
    CHECK_EQ(cuckoo::Store::open(path, o)->size(), 10u);
    CHECK_EQ(cuckoo::Store::open(path, options(16))->size(), 10u);
    remove_store(path);
    ::rmdir(dir.c_str());
}

// A failed bulk call (an injected ENOSPC at each write) changes nothing, in memory or in the log;
// a rolled-back batch neither; a committed one is all there after a reopen.
TEST_CASE(store_calls_and_batches_are_all_or_nothing) {
    const std::string dir = temp_dir();
    const std::string path = dir + "/a";
    const uint64_t n = 20000;
    std::vector<std::string> keys(n), values(n);
    std::vector<cuckoo::KeySpan> spans(n), vspans(n);
    std::vector<uint64_t> hashes(n);
    std::unique_ptr<bool[]> out(new bool[n]);
    auto s = cuckoo::Store::open(path, options(16));
    for (uint64_t i = 0; i < n; ++i) {
        keys[i] = key_of(i);
        values[i] = std::string(100, char('a' + i % 26));
        spans[i] = {reinterpret_cast<const unsigned char*>(keys[i].data()), keys[i].size()};
        vspans[i] = {reinterpret_cast<const unsigned char*>(values[i].data()), values[i].size()};
        hashes[i] = hash_of(*s, keys[i]);
    }
    uint64_t done = 0;
    s->apply_chunk(cuckoo::Store::Op::Put, n / 2, spans.data(), hashes.data(), vspans.data(), out.get(), done);
    Model m;
    for (uint64_t i = 0; i < n / 2; ++i) m[keys[i]] = values[i];
    for (int64_t nth = 1; nth <= 3; ++nth) {  // the chunk below writes twice (2.6 MB in 1 MiB flushes)
        const uint64_t end = s->stats().log_bytes;
        cuckoo::io_testing::arm(nth, ENOSPC, false);
        CHECK_THROWS(s->apply_chunk(cuckoo::Store::Op::Put, n, spans.data(), hashes.data(), vspans.data(), out.get(),
                                    done),
                     std::system_error);
        cuckoo::io_testing::arm(0, 0, false);
        CHECK_EQ(s->stats().log_bytes, end);
        check_against(*s, m, 0, 10);
    }
    s->begin_batch();
    s->apply_chunk(cuckoo::Store::Op::Discard, n, spans.data(), hashes.data(), nullptr, out.get(), done);
    CHECK_EQ(s->size(), 0u);
    CHECK_THROWS(s->sync(), std::logic_error);
    s->rollback_batch();
    check_against(*s, m, 0, 10);
    s->begin_batch();
    s->apply_chunk(cuckoo::Store::Op::Put, n, spans.data(), hashes.data(), vspans.data(), out.get(), done);
    s->commit_batch();
    for (uint64_t i = 0; i < n; ++i) m[keys[i]] = values[i];
    s->close();
    s = cuckoo::Store::open(path, options(16));
    check_against(*s, m, 0, 10);
    s->close();
    remove_store(path);
    ::rmdir(dir.c_str());
}

TEST_CASE(second_writer_is_refused) {
    const std::string dir = temp_dir();
    const std::string path = dir + "/w";
    auto a = cuckoo::Store::open(path, options(16));
    CHECK_THROWS(cuckoo::Store::open(path, options(16)), cuckoo::StoreLockedError);
    cuckoo::Store::Options ro = options(16);
    ro.readonly = true;
    CHECK_NOTHROW(cuckoo::Store::open(path, ro));
    a->close();
    CHECK_NOTHROW(cuckoo::Store::open(path, options(16)));
    remove_store(path);
    ::rmdir(dir.c_str());
}

#ifdef CUCKOO_TEST_DATA
// tests/data/golden_store_v1.ckv, written on a little-endian machine by make_golden_store.py,
// reads the same on this one (run under qemu-user for big-endian s390x and aarch64 in CI).
TEST_CASE(golden_store_file_reads_on_every_platform) {
    const std::string dir = temp_dir();
    for (bool with_snapshot : {true, false}) {
        const std::string path = dir + "/g.ckv";
        for (const char* ext : {"", ".idx"}) {
            if (!with_snapshot && ext[0]) continue;
            FILE* in = std::fopen((std::string(CUCKOO_TEST_DATA) + "/golden_store_v1.ckv" + ext).c_str(), "rb");
            REQUIRE(in != nullptr);
            FILE* out = std::fopen((path + ext).c_str(), "wb");
            int c;
            while ((c = std::fgetc(in)) != EOF) std::fputc(c, out);
            std::fclose(in);
            std::fclose(out);
        }
        cuckoo::Store::Options o;
        o.readonly = true;
        auto s = cuckoo::Store::open(path, o);
        CHECK_EQ(s->stats().snapshot_used, with_snapshot);
        CHECK_EQ(s->size(), 101u);
        CHECK_EQ(s->header().seed, 0x5EEDu);
        std::string v;
        const std::string k7 = "k7", k42 = "k42", k95 = "k95";
        CHECK(s->get(k7.data(), 2, hash_of(*s, k7), &v) && v == "new-7");
        CHECK(s->get(k42.data(), 3, hash_of(*s, k42), &v) && v == "value-42value-42");
        CHECK(!s->get(k95.data(), 3, hash_of(*s, k95), nullptr));
        unsigned char three[8];
        cuckoo::store_le64(three, 3);
        CHECK(s->get(three, 8, s->hasher().hash_key(three, 8), &v) && v == "int-3");
        s->close();
        remove_store(path);
    }
    ::rmdir(dir.c_str());
}
#endif

}  // namespace

int main(int argc, char** argv) { return cktest::run_all(argc, argv); }
